"""The catalogs' command line (Babel under the hood); the app itself needs only `app.i18n`.

    python -m lineare.app.i18n extract   # scan app/ for _() and N_() → i18n/lineare.pot
    python -m lineare.app.i18n update    # merge the template into i18n/<lang>/LC_MESSAGES/lineare.po
    python -m lineare.app.i18n compile   # .po → .mo (also done automatically when a .mo is missing or older)
    python -m lineare.app.i18n check     # list messages without a translation; exit status 1 if any
    python -m lineare.app.i18n translate it.json   # update, then fill in {msgid: Italian} (English = msgid)

Plurals: `ngettext(singular, plural, n)` in app/ gives a plural entry (keyed by its singular msgid); its
Italian in translate's JSON is a list [one, other] (the catalog's Plural-Forms choose at run time).
"""
import argparse
import contextlib
import json
import os
import re
import sys
from pathlib import Path

from lineare.app.i18n import CATALOGS, DOMAIN, LANGUAGES, ROOT, compile_catalogs, po_path

SOURCES = ROOT / "app"


def extract():
    """The message template: every _() and N_() string in app/, as a Babel Catalog."""
    from babel.messages.catalog import Catalog
    from babel.messages.extract import extract_from_dir

    template = Catalog(domain=DOMAIN, project="Lineare")
    for filename, lineno, message, comments, context in extract_from_dir(
            SOURCES, method_map=[("**.py", "python")], keywords={"_": None, "N_": None, "ngettext": (1, 2)}):
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
    with open(CATALOGS / ".lock", "a+") as lock:
        if os.name == "nt":                            # pragma: no cover - Windows
            import msvcrt
            msvcrt.locking(lock.fileno(), msvcrt.LK_LOCK, 1)
        else:
            import fcntl
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            if os.name == "nt":                        # pragma: no cover - Windows
                lock.seek(0)
                msvcrt.locking(lock.fileno(), msvcrt.LK_UNLCK, 1)
            else:
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
            if entry.pluralizable != isinstance(text, list):
                raise ValueError(f"give a plural message a list of its forms, any other a string: {message_id!r}")
            entry.flags.discard("fuzzy")                  # a text given here is checked, not a guess
            if lang == "it" and entry.pluralizable:     # [one, other]: CLDR's Italian adds "many" (a
                forms = list(text)                        # million), written as "other"
                entry.string = tuple(forms + forms[-1:] * (catalog.num_plurals - len(forms)))
            elif lang == "it":
                entry.string = text
            else:
                entry.string = entry.id
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
        name = message.id[0] if message.pluralizable else message.id
        if entry is None:
            found.append((name, "missing"))
        elif message.pluralizable:
            found.extend((name, why) for why in _plural_problems(message, entry, catalog.num_plurals))
        elif not entry.string:
            found.append((name, "empty"))
        elif entry.fuzzy:
            found.append((name, "fuzzy"))
        elif sorted(PLACEHOLDER.findall(message.id)) != sorted(PLACEHOLDER.findall(entry.string)):
            found.append((name, "placeholders differ"))
    return found


def _plural_problems(message, entry, forms):
    """A plural entry: one non-empty text per plural form of the language, each with the placeholders of the
    English plural (the singular may leave out the number, as "one step" does)."""
    strings = entry.string if isinstance(entry.string, (list, tuple)) else (entry.string,)
    wanted = sorted(PLACEHOLDER.findall(message.id[1]))
    if not entry.pluralizable or len(strings) != forms:
        return ["not a plural entry with {} forms".format(forms)]
    if not all(strings):
        return ["empty"]
    if entry.fuzzy:
        return ["fuzzy"]
    if any(not set(PLACEHOLDER.findall(text)) <= set(wanted) for text in strings) \
            or sorted(PLACEHOLDER.findall(strings[-1])) != wanted:
        return ["placeholders differ"]
    return []


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m lineare.app.i18n", description=__doc__.split("\n\n")[0])
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
