"""Every user-visible string goes through `_()`; the catalogs live in `i18n/` (gettext, built with Babel).

    from lineare.app.i18n import _, N_, ngettext
    _("Play")                      # translated into the current session's language
    TITLE = N_("The state fills up")  # marked for extraction at import time, translated later with _()
    ngettext("{count} step", "{count} steps", n).format(count=n)    # plurals: the catalog's Plural-Forms

The language belongs to the browser session (two visitors can read two languages at once): the page
shell calls `set_language()` when a session starts, and `_()` looks it up from `pn.state.curdoc`.

This module is what the running app needs (gettext reading compiled catalogs, compiled on first use
when stale). The catalog tools — extract, update, translate, check — are `python -m lineare.app.i18n …`,
in `app/i18n/catalogs.py`.
"""
import contextvars
import gettext
import numbers
import os
import re
import tempfile
import threading
import weakref
from pathlib import Path

from lineare.app import data_path

ROOT = Path(__file__).resolve().parents[2]
CATALOGS = data_path("i18n")
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
    text = translations(current_language()).gettext(message)
    return _Italian(text) if current_language() == "it" else text


def ngettext(singular, plural, n):
    """The message for `n` things in the current session's language (the catalog's Plural-Forms choose)."""
    if isinstance(n, numbers.Integral):
        n = int(n)              # a NumPy integer: gettext's plural rule wants a Python int (else it warns)
    text = translations(current_language()).ngettext(singular, plural, n)
    return _Italian(text) if current_language() == "it" else text


# Italian elides the article before a number read with a vowel first (uno, otto, undici, ottanta…):
# "al {percent}%" with 83 must read "all'83%", with 50 "al 50%"
_ELIDED = {"il": "l'", "al": "all'", "del": "dell'", "nel": "nell'", "dal": "dall'", "sul": "sull'"}
_ARTICLE_NUMBER = re.compile(r"\b(il|al|del|nel|dal|sul|Il|Al|Del|Nel|Dal|Sul) (\d[\d.]*)")


def _vowel_first(digits):
    whole = int(digits.replace(".", "")) if digits.replace(".", "") else 0
    return whole in (1, 11) or digits.startswith("8") or 11_000 <= whole < 12_000


def elide(text):
    """Italian articles elided before numbers that are read with a vowel first."""
    def fix(match):
        article, digits = match.groups()
        if not _vowel_first(digits):
            return match.group(0)
        elided = _ELIDED[article.lower()]
        return (elided[0].upper() + elided[1:] if article[0].isupper() else elided) + digits
    return _ARTICLE_NUMBER.sub(fix, text)


class _Italian(str):
    """An Italian message: `.format()` elides the articles in front of the numbers it fills in."""

    def format(self, *args, **kwargs):
        return elide(str.format(self, *args, **kwargs))


def format_number(number, decimals=None):
    """A number written the way the current language writes it (1.024,5 in Italian, 1,024.5 in English)."""
    from babel.numbers import format_decimal

    pattern = None if decimals is None else "#,##0." + "0" * decimals
    return format_decimal(number, format=pattern, locale=current_language())


def format_numbers(numbers, decimals):
    """`format_number(x, decimals)` of each of many numbers, written by Python's own formatting (of the number's
    shortest decimal, rounded half to even, as Babel does) and the language's two separators: a page that labels
    a whole run's cells (hundreds of numbers) spends a tenth of Babel's time on it."""
    from decimal import Decimal

    from babel.numbers import get_decimal_symbol, get_group_symbol

    language = current_language()
    swap = str.maketrans({",": get_group_symbol(language), ".": get_decimal_symbol(language)})
    return [format(Decimal(repr(float(x))), f",.{decimals}f").translate(swap) for x in numbers]


def browser_locale(language=None):
    """The browser's name for the language (Intl's toLocaleString): it-IT or en-US."""
    return {"it": "it-IT"}.get(language or current_language(), "en-US")


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
