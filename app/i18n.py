"""Every user-visible string goes through `_()`; the catalogs live in `i18n/` (gettext, built with Babel).

    from app.i18n import _, N_
    _("Play")                      # translated into the current session's language
    TITLE = N_("The state fills up")  # marked for extraction at import time, translated later with _()

The language belongs to the browser session (two visitors can read two languages at once): the page
shell calls `set_language()` when a session starts, and `_()` looks it up from `pn.state.curdoc`.

Command line (Babel under the hood):

    python -m app.i18n extract   # scan app/ for _() and N_() → i18n/lineare.pot
    python -m app.i18n update    # merge the template into i18n/<lang>/LC_MESSAGES/lineare.po
    python -m app.i18n compile   # .po → .mo (also done automatically when a .mo is missing or older)
    python -m app.i18n check     # list messages without a translation; exit status 1 if any
    python -m app.i18n translate it.json   # update, then fill in {msgid: Italian} (English = msgid)
"""
import argparse
import contextlib
import contextvars
import fcntl
import gettext
import json
import os
import re
import sys
import tempfile
import threading
import weakref
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CATALOGS = ROOT / "i18n"
SOURCES = ROOT / "app"
DOMAIN = "lineare"
LANGUAGES = ("it", "en")
DEFAULT_LANGUAGE = "en"            # when the browser asks for neither Italian nor English

_session_language = weakref.WeakKeyDictionary()     # Bokeh document → language code
_forced = contextvars.ContextVar("lineare_language", default=None)
_loaded = {}
_lock = threading.Lock()


def N_(message):
    """Mark a string for extraction without translating it (module-level constants)."""
    return message


def _(message):
    """The message in the current session's language."""
    return translations(current_language()).gettext(message)


def format_number(number, decimals=None):
    """A number written the way the current language writes it (1.024,5 in Italian, 1,024.5 in English)."""
    from babel.numbers import format_decimal

    pattern = None if decimals is None else "#,##0." + "0" * decimals
    return format_decimal(number, format=pattern, locale=current_language())


def current_language():
    forced = _forced.get()
    if forced:
        return forced
    doc = _current_doc()
    return _session_language.get(doc, DEFAULT_LANGUAGE) if doc is not None else DEFAULT_LANGUAGE


def set_language(language, doc=None):
    """Make `language` the language of this session (of `doc`, or of the current Bokeh document)."""
    if language not in LANGUAGES:
        raise ValueError(f"unknown language {language!r}; choose one of {', '.join(LANGUAGES)}")
    doc = doc if doc is not None else _current_doc()
    if doc is None:
        raise RuntimeError("set_language() needs a session; use `with language(...)` outside one")
    _session_language[doc] = language


class language:
    """`with language("it"): ...` translates into Italian inside the block (scripts, tests)."""

    def __init__(self, code):
        if code not in LANGUAGES:
            raise ValueError(f"unknown language {code!r}")
        self.code = code

    def __enter__(self):
        self._token = _forced.set(self.code)
        return self

    def __exit__(self, *exc):
        _forced.reset(self._token)


def negotiate(accept_language):
    """The best of LANGUAGES for an HTTP Accept-Language header (q-values respected), else the default."""
    choices = []
    for position, part in enumerate((accept_language or "").split(",")):
        fields = part.strip().split(";")
        tag = fields[0].strip().lower()
        quality = 1.0
        for field in fields[1:]:
            name, _sep, value = field.strip().partition("=")
            if name.strip() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        primary = tag.split("-")[0]
        if primary in LANGUAGES and quality > 0:
            choices.append((-quality, position, primary))
    return min(choices)[2] if choices else DEFAULT_LANGUAGE


def _current_doc():
    try:
        import panel as pn
    except ImportError:                                   # pragma: no cover - panel is a dependency
        return None
    return pn.state.curdoc


# ------------------------------------------------------------------------------- catalogs

def po_path(lang):
    return CATALOGS / lang / "LC_MESSAGES" / f"{DOMAIN}.po"


def mo_path(lang):
    return po_path(lang).with_suffix(".mo")


def translations(lang):
    """The compiled catalog of `lang` (compiled first if its .mo is missing or older than the .po)."""
    found = _loaded.get(lang)
    if found is None:
        with _lock:
            found = _loaded.get(lang)
            if found is None:
                compile_catalogs(only_stale=True)
                with open(mo_path(lang), "rb") as mo:
                    found = gettext.GNUTranslations(mo)
                _loaded[lang] = found
    return found


def compile_catalogs(only_stale=False):
    """Compile every .po into its .mo (atomically: several server processes may start at once)."""
    from babel.messages import mofile, pofile

    compiled = []
    for lang in LANGUAGES:
        po, mo = po_path(lang), mo_path(lang)
        if only_stale and mo.exists() and mo.stat().st_mtime >= po.stat().st_mtime:
            continue
        with open(po, "rb") as source:
            catalog = pofile.read_po(source, locale=lang, domain=DOMAIN)
        handle, temporary = tempfile.mkstemp(dir=mo.parent, suffix=".mo.tmp")
        with os.fdopen(handle, "wb") as target:
            mofile.write_mo(target, catalog)
        os.replace(temporary, mo)
        compiled.append(mo)
    _loaded.clear()
    return compiled


def extract():
    """The message template: every _() and N_() string in app/, as a Babel Catalog."""
    from babel.messages.catalog import Catalog
    from babel.messages.extract import extract_from_dir

    template = Catalog(domain=DOMAIN, project="Lineare")
    for filename, lineno, message, comments, context in extract_from_dir(
            SOURCES, method_map=[("**.py", "python")], keywords={"_": None, "N_": None}):
        template.add(message, locations=[(f"app/{filename}", lineno)], auto_comments=comments)
    return template


def write_template():
    from babel.messages import pofile

    template = extract()
    with open(CATALOGS / f"{DOMAIN}.pot", "wb") as target:
        pofile.write_po(target, template, width=100, omit_header=False)
    return template


@contextlib.contextmanager
def _catalog_lock():
    """Several developers (or helpers) may rewrite the .po files at once: one at a time."""
    with open(CATALOGS / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def update_catalogs(italian=None):
    """Merge the current template into each language's .po (new messages arrive untranslated).

    `italian` ({msgid: Italian text}) fills in translations on the way; English gets the msgid itself.
    """
    with _catalog_lock():
        _update_catalogs(italian or {})


def _update_catalogs(italian):
    from babel.messages import pofile

    template = write_template()
    for lang in LANGUAGES:
        path = po_path(lang)
        if path.exists():
            with open(path, "rb") as source:
                catalog = pofile.read_po(source, locale=lang, domain=DOMAIN)
        else:
            from babel.messages.catalog import Catalog
            path.parent.mkdir(parents=True, exist_ok=True)
            catalog = Catalog(locale=lang, domain=DOMAIN, project="Lineare")
        catalog.update(template, no_fuzzy_matching=True)
        for message_id, text in italian.items():
            entry = catalog.get(message_id)
            if entry is None:
                raise ValueError(f"not a message of app/ (run from a tree that uses it): {message_id!r}")
            entry.string = text if lang == "it" else message_id
        with open(path, "wb") as target:
            pofile.write_po(target, catalog, width=100, ignore_obsolete=True)


PLACEHOLDER = re.compile(r"\{(\w*)\}")


def problems(lang):
    """Messages used in app/ that `lang` does not translate properly (missing, empty, fuzzy, placeholders)."""
    from babel.messages import pofile

    with open(po_path(lang), "rb") as source:
        catalog = pofile.read_po(source, locale=lang, domain=DOMAIN)
    found = []
    for message in extract():
        if not message.id:
            continue
        entry = catalog.get(message.id)
        if entry is None:
            found.append((message.id, "missing"))
        elif not entry.string:
            found.append((message.id, "empty"))
        elif entry.fuzzy:
            found.append((message.id, "fuzzy"))
        elif sorted(PLACEHOLDER.findall(message.id)) != sorted(PLACEHOLDER.findall(entry.string)):
            found.append((message.id, "placeholders differ"))
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m app.i18n", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("extract", "update", "compile", "check", "translate"))
    parser.add_argument("file", nargs="?", help="translate: a JSON object {English msgid: Italian text}")
    args = parser.parse_args(argv)
    command = args.command
    if command == "extract":
        print(f"{len(write_template())} messages → {CATALOGS / (DOMAIN + '.pot')}")
    elif command in ("update", "translate"):
        italian = None
        if command == "translate":
            if not args.file:
                parser.error("translate needs a JSON file {English msgid: Italian text}")
            italian = json.loads(Path(args.file).read_text(encoding="utf-8"))
        update_catalogs(italian)
        print("updated:", ", ".join(str(po_path(lang)) for lang in LANGUAGES))
    elif command == "compile":
        for mo in compile_catalogs():
            print("compiled", mo)
    else:
        failures = [(lang, message, why) for lang in LANGUAGES for message, why in problems(lang)]
        for lang, message, why in failures:
            print(f"{lang}: {why}: {message!r}")
        print(f"{len(failures)} problem(s)")
        return 1 if failures else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
