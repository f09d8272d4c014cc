"""The chapter's words: the glossary of the landing page, key/value/query defined on the first page, and the
words no text may use (Cruscotti, cancello, a pie for the three forms, an input gate "i_t = 0")."""
import re

import pytest
from babel.messages import pofile

from lineare.app.dashboards import DASHBOARDS
from lineare.app.dashboards.home import GLOSSARY, build as build_home
from lineare.app.i18n import language, po_path
from lineare.app.i18n.catalogs import extract
from lineare.app.session import Session
from lineare.app.variants import REGISTRY

# the chapter's vocabulary at Elementare, per language: token, state, key, value, query, KV cache, knob
CHAPTER = {"it": ("parola", "riassunto", "etichetta", "informazione", "domanda", "archivio di appunti", "manopola"),
           "en": ("word", "summary", "label", "information", "question", "notebook of notes", "knob")}


def catalog(lang):
    with open(po_path(lang), "rb") as source:
        return pofile.read_po(source, locale=lang)


def landing(lang, level):
    with language(lang):
        session = Session(language=lang, level=level)
        page = build_home(session)
        top, _lessons, glossary, cards = page.main.objects
        return session, top, glossary, cards


@pytest.mark.parametrize("lang", ["it", "en"])
def test_the_landing_page_has_a_collapsed_glossary_of_the_chapters_words_at_both_levels(lang):
    session, top, glossary, _cards = landing(lang, "elementare")
    plain = glossary.object
    assert plain.startswith("<details>") and "<details open" not in plain        # folded: the cards stay in view
    assert all(word in plain for word in CHAPTER[lang]) and "<math" not in plain
    assert plain.count("<dt>") == len(GLOSSARY)
    with language(lang):
        session.level = "superiore"                                            # the level switches live
    formulas = glossary.object
    assert formulas != plain and "<math" in formulas and formulas.count("<dt>") == len(GLOSSARY)


@pytest.mark.parametrize("lang,words", [("it", "Da dove cominciare"), ("en", "Where to start")])
def test_the_landing_page_says_where_to_start(lang, words):
    _session, top, _glossary, _cards = landing(lang, "elementare")
    first = DASHBOARDS[0].slug
    start = re.search(r'<p class="start">(.*?)</p>', top.object).group(1)
    assert words in start and f'href="./{first}?lang={lang}&amp;level=elementare"' in start


@pytest.mark.parametrize("lang", ["it", "en"])
def test_key_value_and_query_are_defined_on_the_first_laboratory(lang):
    """Two bills, the first laboratory (after the lesson "Take away the softmax", whose own test checks the
    same words), names label (key), information (value), question (query) and the notebook of notes
    (KV cache) in its Elementare introduction."""
    from lineare.app.dashboards.two_bills.model import GenerationStore
    from lineare.app.dashboards.two_bills.view import TwoBillsView

    assert [d.slug for d in DASHBOARDS[:2]] == ["softmax", "two-bills"]
    with language(lang):
        view = TwoBillsView(store=GenerationStore(tokens=16, heads=1, dim=16), session=Session(language=lang))
    plain = view.intro.elementare
    terms = {"it": ("**etichetta** (chiave)", "**informazione** (valore)", "**domanda** (query)",
                    "**archivio di appunti** (cache KV)", "**riassunto** (stato)"),
             "en": ("**label** (key)", "**information** (value)", "**question** (query)",
                    "**notebook of notes** (KV cache)", "**summary** (state)")}[lang]
    assert all(term in plain for term in terms), plain


def test_no_text_says_cruscotti_or_cancello():
    """The chapter calls the pages laboratories, and a gate a gate."""
    italian = {m.id: m.string for m in catalog("it") if m.id and isinstance(m.string, str)}
    assert not [s for s in italian.values() if re.search(r"[Cc]ruscott|\bcancell[oi]\b", s)]
    english = [m.id if isinstance(m.id, str) else " ".join(m.id) for m in extract() if m.id]
    assert "Dashboards" not in english and "Laboratories" in english and italian["Laboratories"] == "Laboratori"


def test_no_input_gate_is_said_to_be_zero():
    """mLSTM's input gate is i_t = exp(ĩ_t): with the pre-activation ĩ_t = 0 it is 1, never 0."""
    texts = [m.id if isinstance(m.id, str) else " ".join(m.id) for m in extract() if m.id]
    texts += [r.formula for r in REGISTRY.values()]
    texts += [m.string for m in catalog("it") if m.id and isinstance(m.string, str)]
    zero = re.compile(r"\bi_t = 0\b|input gate is 0|gate d'ingresso vale 0|gate di ingresso vale 0")
    assert not [t for t in texts if zero.search(t)]
    assert r"\tilde\imath_t = 0" in REGISTRY["mlstm"].special_formula and "i_t = e^0 = 1" in \
        REGISTRY["mlstm"].special_formula


def test_the_pie_belongs_to_softmax():
    """The chapter's pie (or cake) is the softmax's shares; no other text uses it."""
    english = [m.id if isinstance(m.id, str) else " ".join(m.id) for m in extract() if m.id]
    italian = [m.string for m in catalog("it") if m.id and isinstance(m.string, str)]
    pies = [t for t in english if re.search(r"\b(pie|cake)s?\b", t, re.I)]
    pies += [t for t in italian if re.search(r"\btort[ae]\b", t, re.I)]
    assert pies and all("softmax" in t.lower() or "scores" in t or "punteggi" in t for t in pies), pies


@pytest.mark.parametrize("lang", ["it", "en"])
def test_many_numbers_are_written_as_one_number_is(lang):
    """format_numbers (a run's cell labels at once) writes each number exactly as format_number does: the
    separators of the language, half to even, large numbers grouped."""
    import numpy as np

    from lineare.app.i18n import format_number, format_numbers

    rng = np.random.default_rng(0)
    numbers = [*rng.normal(0, 3, 500), *np.round(rng.normal(0, 3, 500), 1), 0.25, 0.35, -0.05, 1234.55, -98765.25,
               0.0, 1e6 / 3]
    with language(lang):
        for decimals in (0, 1, 2, 3):
            assert format_numbers(numbers, decimals) == [format_number(float(x), decimals) for x in numbers]
