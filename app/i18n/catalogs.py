"""The catalogs' command line (Babel under the hood); the app itself needs only `app.i18n`.

    python -m app.i18n extract   # scan app/ for _() and N_() → i18n/lineare.pot
    python -m app.i18n update    # merge the template into i18n/<lang>/LC_MESSAGES/lineare.po
    python -m app.i18n compile   # .po → .mo (also done automatically when a .mo is missing or older)
    python -m app.i18n check     # list messages without a translation; exit status 1 if any
    python -m app.i18n translate it.json   # update, then fill in {msgid: Italian} (English = msgid)
"""
import argparse
import contextlib
import json
import os
import re
import sys
from pathlib import Path

from app.i18n import CATALOGS, DOMAIN, LANGUAGES, ROOT, compile_catalogs, po_path

SOURCES = ROOT / "app"


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
