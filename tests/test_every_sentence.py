"""Every sentence true: what the pages say about the models, checked against the engine's numbers
(issue 21). Each test recomputes a number or a formula a page states, from the engine, and compares."""
import html

import numpy as np
import pytest
import torch

from lineare.app.dashboards import DASHBOARDS
from lineare.app.dashboards.memory_fails.lesson import CARDS as MEMORY_CARDS
from lineare.app.dashboards.memory_fails.model import MemoryStore, recall
from lineare.app.i18n import language
from lineare.app.urlstate import read_query


def memory_store(setup):
    return MemoryStore(**read_query(MemoryStore, MemoryStore.URL, {k: [v.encode()] for k, v in setup.items()})[0])


def test_a_tie_is_a_miss_on_where_memory_fails():
    """Orthogonal keys, 8 of 16 names rewritten, sum rule: every rewritten name reads back v_old + v_new,
    an exact tie between its two numbers. The page counts it as a miss, as engine.capacity.measure does."""
    run = recall("sum", 16, "orthogonal", 16, 8, 0)
    cosines = run.values @ run.readouts.T                                     # [W, N]
    rewritten = run.targets >= 16                                             # the latest write of a changed name
    assert rewritten.sum() == 8
    for q in np.flatnonzero(rewritten):                                       # old and new number equally close
        old = int(np.flatnonzero(run.key_of == run.key_of[run.targets[q]])[0])
        assert old != run.targets[q] and abs(cosines[old, q] - cosines[run.targets[q], q]) < 1e-12
    assert run.right.sum() == 8 and not run.right[rewritten].any() and run.right[~rewritten].all()
    card = MEMORY_CARDS[3]
    store = memory_store(card.setup)
    assert int(store.run.right.sum()) == 8 and card.correct(store) == 1       # "some, not all"
    for lang, said in (("en", "8 of 16 right"), ("it", "Giuste: 8 su 16")):
        with language(lang):
            assert card.observe(store).startswith(said)


def _outer(x, y):
    return np.einsum("i,j->ij", x, y)


# each variant's ΔS_t as the state page writes it (pictures.CHANGE), evaluated term by term from the
# gates the engine stepped with: S the state before, k, v the token's, g the gates (numpy, one head)
WRITTEN_CHANGE = {
    r"v_t k_t^\top": lambda S, k, v, g: _outer(v, k),
    r"(\gamma - 1)\, S_{t-1} + v_t k_t^\top": lambda S, k, v, g: (np.exp(g["g"]) - 1) * S + _outer(v, k),
    r"(\alpha_t - 1)\, S_{t-1} + v_t k_t^\top": lambda S, k, v, g: (np.exp(g["g"]) - 1) * S + _outer(v, k),
    r"S_{t-1} (\mathrm{diag}(\alpha_t) - I) + v_t k_t^\top":
        lambda S, k, v, g: S @ (np.diag(np.exp(g["g"])) - np.eye(len(k))) + _outer(v, k),
    r"\beta_t (v_t - S_{t-1} k_t)\, k_t^\top": lambda S, k, v, g: g["beta"] * _outer(v - S @ k, k),
    r"(\alpha_t - 1)\, S_{t-1} + \beta_t (v_t - \alpha_t S_{t-1} k_t)\, k_t^\top":
        lambda S, k, v, g: (np.exp(g["g"]) - 1) * S + g["beta"] * _outer(v - np.exp(g["g"]) * S @ k, k),
    r"S_{t-1} (\mathrm{diag}(w_t) - I) + v_t k_t^\top":
        lambda S, k, v, g: S @ (np.diag(np.exp(g["g"])) - np.eye(len(k))) + _outer(v, k),
    # the engine's a = −κ̂, b = κ̂ ⊙ a_t (engine.gates), its write v kᵀ with k = k̃
    r"S_{t-1} (\mathrm{diag}(w_t) - I) - (S_{t-1} \hat\kappa_t)(a_t \odot \hat\kappa_t)^\top + v_t \tilde k_t^\top":
        lambda S, k, v, g: (S @ (np.diag(np.exp(g["g"])) - np.eye(len(k))) - _outer(S @ -g["a"], g["b"])
                            + _outer(v, k)),
    r"(f_t - 1)\, C_{t-1} + i_t\, v_t k_t^\top":
        lambda S, k, v, g: (1 / (1 + np.exp(-g["f"])) - 1) * S + np.exp(g["i"]) * _outer(v, k),
}


def test_every_variants_written_change_is_the_engines_change():
    """ΔS_t on the state page's "What changes now" card, for every fixed-state variant, equals S_t − S_{t−1}
    of the engine's step from a random state with random gates."""
    from lineare.app.dashboards.state_fills_up.pictures import CHANGE, change_formula
    from lineare.app.variants import ORDER
    from lineare.engine.gates import make_gates
    from lineare.engine.ops.recurrent import gates_at
    from lineare.engine.ops.states import MLSTMState
    from lineare.engine.stepping import step

    assert set(CHANGE) == set(ORDER)
    d = 6
    generator = torch.Generator().manual_seed(21)
    for variant in ORDER:
        written_terms = " ".join(CHANGE[variant])
        assert written_terms in WRITTEN_CHANGE, variant
        with language("it"):
            assert all(term in change_formula(variant) for term in CHANGE[variant])
        S = torch.randn(1, 1, d, d, generator=generator, dtype=torch.float64)
        q, k, v = (torch.randn(1, 1, d, generator=generator, dtype=torch.float64) for _ in range(3))
        k = torch.nn.functional.normalize(k, dim=-1)
        gates = gates_at(variant, make_gates(variant, (1, 1, 1, d), alpha=0.7, beta=0.6, seed=3, keys=k[:, None],
                                             dtype=torch.float64), 0)
        m = torch.full((1, 1), 0.4, dtype=torch.float64)
        state = MLSTMState(S * (-m).exp()[..., None, None], torch.zeros(1, 1, d, dtype=torch.float64), m) \
            if variant == "mlstm" else S
        _o, _state, record = step(variant, state, q, k, v, scale=1.0, **gates)
        after = record.state[0, 0]                                            # S_t from the step's record
        if variant == "mlstm":                                                # the stored C_t times e^{m_t}
            after = after * np.exp(np.asarray(record.extras["m"]).reshape(-1)[0])
        engine_change = after - S[0, 0].numpy()
        values = {name: (x[0, 0] if x.dim() > 1 else x[0]).numpy() for name, x in gates.items()}
        written = WRITTEN_CHANGE[written_terms](S[0, 0].numpy(), k[0, 0].numpy(), v[0, 0].numpy(), values)
        assert np.allclose(written, engine_change, atol=1e-10), variant


def test_rwkv7_is_off_the_knob_and_its_nearest_setting_is_not_rwkv7():
    """RWKV-7 has no place on the transition knob: at its nearest setting (gate "channel", β = 1, the card's α)
    the knob computes diag(α) − (α ⊙ k) kᵀ, RWKV-7 (engine gates, κ̂ = k, a = 1) diag(w) − κ̂ (a ⊙ κ̂)ᵀ."""
    from lineare.app.dashboards.architectures.model import knob_setting
    from lineare.app.dashboards.transition import model as knob
    from lineare.app.variants import REGISTRY
    from lineare.engine.gates import make_gates

    record = REGISTRY["rwkv7"]
    assert record.knob is None and record.nearest == ("channel", 1.0) and record.off_knob
    assert "rwkv7" not in knob.JUMPS
    gate, alpha, beta, exact = knob_setting("rwkv7")
    assert (gate, beta, exact) == ("channel", 1.0, False)
    found = knob.match(gate, alpha, beta)
    assert found.close == ("rwkv7",) and found.exact == () and found.between == ()
    s = knob.make_sequence("update", 0)
    t = s.shown_at
    k = s.k[0, t, 0].double().numpy()
    computed = knob.run_knob(s, gate, alpha, beta, 0).transition
    own = make_gates("rwkv7", tuple(s.k.shape), alpha=alpha, beta=beta, keys=s.k, dtype=torch.float64)
    w = np.exp(own["g"][0, t, 0].numpy())
    rwkv7 = np.diag(w) + np.outer(own["a"][0, t, 0].numpy(), own["b"][0, t, 0].numpy())
    assert np.allclose(computed, np.diag(w) - np.outer(w * k, k), atol=1e-6)        # fade, then erase
    assert np.allclose(rwkv7, np.diag(w) - np.outer(k, k), atol=1e-6)               # erase the unfaded memory
    assert np.abs(computed - rwkv7).max() > 0.05
    from tests.italian_pages import model_texts, session_document, visible

    for lang, words in (("en", "The knobs are close to: RWKV-7"), ("it", "Le manopole sono vicine a: RWKV-7")):
        doc, _session = session_document("transition", {"gate": gate, "alpha": str(alpha), "beta": "1", "lang": lang})
        lamps = [visible(text) for where, text in model_texts(doc) if 'class="lamp"' in html.unescape(text)]
        assert len(lamps) == 1 and words in " ".join(lamps[0].split())


def test_architectures_card_1_names_the_settings_that_make_mamba2_fastest():
    """Mamba-2 fades fastest on the page only because the page gives it α = 0.8 against RetNet's γ ≈ 0.97
    (the engine's own gates); the card says so, and that a trained Mamba-2 picks α per token."""
    from lineare.app.dashboards.architectures import lesson
    from lineare.app.dashboards.architectures.model import card_alpha, token_gates, texts

    keys = texts()[1][0, :1]
    assert np.exp(float(token_gates("mamba2", keys)["g"][0, 0])) == pytest.approx(card_alpha("mamba2")) == 0.8
    assert np.exp(float(token_gates("retnet", keys)["g"][0])) == pytest.approx(1 - 2 ** -5)
    card = lesson.CARDS[0]
    assert card.choices[card.correct(None)] == "Mamba-2"
    for lang, alpha, gamma in (("en", "0.8", "0.97"), ("it", "0,8", "0,97")):
        with language(lang):
            said = card.observe(None)
        assert f"α = {alpha}" in said and gamma in said and "Mamba-2" in said


def test_linear_attention_blurs_from_the_second_pair_with_random_keys():
    """The registry's sentence: random labels leak from the second pair on; perpendicular ones stay apart up
    to d_k pairs (sum rule, engine.capacity)."""
    from lineare.app.variants import REGISTRY
    from lineare.engine.capacity import capacity

    assert capacity("sum", d_k=16, pairs=[2], keys="random")[0]["error"] > 1e-3
    assert capacity("sum", d_k=16, pairs=[16], keys="orthogonal")[0]["error"] < 1e-12
    assert "second pair" in REGISTRY["linear"].special and "perpendicular" in REGISTRY["linear"].special


def test_beta_up_to_two_is_credited_to_grazzi():
    from lineare.app.variants import REGISTRY

    for text in (REGISTRY["deltanet"].left_out, REGISTRY["deltanet"].table_formula[3]):
        assert "Grazzi et al. 2025" in text


def test_the_eigenvalues_the_state_page_names_are_the_engines():
    """The spectrum card: along the label the bar drops to 1 − β (DeltaNet), α(1 − β) (Gated DeltaNet), below
    0 for RWKV-7 at full strength; the other directions keep 1 or α. Eigenvalues of A_t read off the engine."""
    from lineare.app.dashboards.architectures.model import card_alpha, texts, transitions
    from lineare.app.dashboards.state_fills_up.pictures import HeadPanel

    keys = texts()[1][0, :1]
    beta = 0.6
    eig = lambda variant, b: np.sort(np.linalg.eigvals(transitions(variant, keys, b)[0].numpy()).real)
    delta, gated, rwkv7 = eig("deltanet", beta), eig("gated_deltanet", beta), eig("rwkv7", 1.0)
    alpha = card_alpha("gated_deltanet")
    assert delta[0] == pytest.approx(1 - beta) and np.allclose(delta[1:], 1)
    assert gated[0] == pytest.approx(alpha * (1 - beta)) and np.allclose(gated[1:], alpha)
    assert rwkv7[0] < -0.05 and 0 < rwkv7[1]
    with language("en"):
        _picture, plain, formulas = HeadPanel(0, None, False)._make("spectrum")
    for said in ("1 − β for DeltaNet", "α(1 − β)", "RWKV-7", "below 0", "between 0 and 1"):
        assert said in plain
    assert r"\alpha_t(1 - \beta_t)" in formulas


def test_every_literal_given_to_the_translation_functions_is_extracted():
    """A _("…") inside an f-string's braces is invisible to Babel's extractor: the page then shows English to
    an Italian class. Every literal passed to _() or N_() anywhere in app/ must be in the template."""
    import ast
    from pathlib import Path

    from lineare.app.i18n.catalogs import SOURCES, extract

    extracted = {m.id if isinstance(m.id, str) else m.id[0] for m in extract() if m.id}
    missing = []
    for path in sorted(Path(SOURCES).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("_", "N_")
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
                    and node.args[0].value not in extracted):
                missing.append(f"{path.name}:{node.lineno}: {node.args[0].value[:60]!r}")
    assert not missing, missing


def test_plurals_follow_the_catalogs_plural_forms(tmp_path, monkeypatch):
    """ngettext picks the form by the language's Plural-Forms ("1 risposta", "2 risposte"; "1 step" in English),
    and the catalog check reports a plural entry with a form missing."""
    import types

    from lineare.app.dashboards.parallel_recurrent.view import FormsView
    from lineare.app.dashboards.transition.pictures import answers_html
    from lineare.app.i18n import catalogs, ngettext

    with language("it"):
        assert [ngettext("{count} step", "{count} steps", n).format(count=n) for n in (1, 4)] == ["1 passo", "4 passi"]
        assert "1 risposta su 64" in FormsView._strip_title("recurrent", 64, 16, 1)
        assert "2 risposte su 64" in FormsView._strip_title("recurrent", 64, 16, 2)
    from lineare.app.dashboards.transition.model import Recall

    with language("it"):
        asked = lambda right: types.SimpleNamespace(right=right, expected="21", answer="21" if right else "47", tied=(),
                                                    token=types.SimpleNamespace(text="Anna?"), cosines=np.ones(1))
        one = Recall(["21", "47"], [asked(True), asked(False)])
        assert "1 risposta giusta su 2" in answers_html(one)
    with language("en"):
        assert ngettext("{count} step", "{count} steps", 1).format(count=1) == "1 step"
    assert catalogs.problems("it") == []
    from babel.messages import pofile

    with open(catalogs.po_path("it"), "rb") as source:
        catalog = pofile.read_po(source, locale="it")
    entry = catalog.get("{count} step")
    entry.string = (entry.string[0], "", entry.string[2])
    broken = tmp_path / "it.po"
    with open(broken, "wb") as target:
        pofile.write_po(target, catalog)
    monkeypatch.setattr(catalogs, "po_path", lambda lang: broken)
    assert ("{count} step", "empty") in catalogs.problems("it")


def test_italian_plural_forms_for_none_one_and_two():
    """Italian: 0 and 2 take the plural («0 risposte giuste»), 1 the singular; English likewise."""
    import types

    from lineare.app.dashboards.transition.model import Recall
    from lineare.app.dashboards.transition.pictures import answers_html
    from lineare.app.i18n import ngettext

    def recall(right):
        asked = lambda ok: types.SimpleNamespace(right=ok, expected="21", answer="21" if ok else "47",
                                                 token=types.SimpleNamespace(text="Anna?"), cosines=np.ones(1),
                                                 tied=())
        return Recall(["21", "47"], [asked(i < right) for i in range(2)])

    expected = {"it": (["0 passi", "1 passo", "2 passi"],
                       ["0 risposte giuste su 2", "1 risposta giusta su 2", "2 risposte giuste su 2"]),
                "en": (["0 steps", "1 step", "2 steps"], ["0 of 2", "1 of 2", "2 of 2"])}
    for code, (steps, answers) in expected.items():
        with language(code):
            assert [ngettext("{count} step", "{count} steps", n).format(count=n) for n in (0, 1, 2)] == steps
            for n, words in zip((0, 1, 2), answers):
                assert words in answers_html(recall(n)), (code, n, answers_html(recall(n)))


@pytest.mark.parametrize("number, elided", [
    ("1", True), ("8", True), ("11", True), ("80", True), ("83", True), ("800", True), ("8.000", True),
    ("11.000", True), ("11.999", True), ("1,5", True), ("0", False), ("10", False), ("18", False), ("50", False),
    ("111", False), ("1.000", False), ("12.000", False), ("110.000", False)])
def test_italian_elides_the_article_before_a_number_read_with_a_vowel_first(number, elided):
    """uno, otto, undici, ottanta, undicimila … take l', all', dell'; zero, dieci, mille, dodicimila do not."""
    from lineare.app.i18n import elide

    assert elide(f"al {number}%") == (f"all'{number}%" if elided else f"al {number}%")
    assert elide(f"Il {number}") == (f"L'{number}" if elided else f"Il {number}")


def test_italian_elides_the_article_before_numbers_read_with_a_vowel():
    from lineare.app.i18n import _, elide

    assert elide("sicuro al 83%, il 8%, del 11% e al 50%") == "sicuro all'83%, l'8%, dell'11% e al 50%"
    with language("it"):
        assert _("sure at {percent}%").format(percent=83) == "sicuro all'83%"


def _italian_texts():
    from babel.messages import pofile

    from lineare.app.i18n.catalogs import po_path

    with open(po_path("it"), "rb") as source:
        catalog = pofile.read_po(source, locale="it")
    for message in catalog:
        if message.id:
            yield from (message.string if isinstance(message.string, (list, tuple)) else [message.string])


def test_one_italian_term_per_concept():
    """The glossary (app/i18n/glossary.py): no Italian text uses a forbidden variant of a term."""
    from lineare.app.i18n.glossary import TERMS, forbidden_in

    found = [(text[:60], hit) for text in _italian_texts() for hit in forbidden_in(text)]
    assert not found, found
    assert forbidden_in("il gate dell'oblio e la regola delta con oblio, una query e un prompt") == [
        ("forget gate", "gate dell'oblio"), ("gated delta rule", "regola delta con oblio"),
        ("prompt", "prompt"), ("query", "query")]
    assert forbidden_in("una domanda (query) su un testo iniziale (prompt), $q$ e `input`") == []
    # a sentence's first word, a title: the variants in any case
    assert forbidden_in("Gate dell'oblio. La Loss, il PROMPT e una Query") == [
        ("forget gate", "Gate dell'oblio"), ("loss", "La Loss"), ("prompt", "PROMPT"), ("query", "Query")]
    used = "\n".join(_italian_texts())
    assert all(term.split(" (")[0] in used for term, _variants in TERMS.values())


def _italian_in_notebooks():
    """(file, text) of the notebooks' Italian: every **IT** paragraph (to the **EN** one, or the cell's end) of the
    .ipynb files' markdown cells and of the .py scripts that write them, and the Italian half of each heading
    «Italiano · English»."""
    import json
    import re
    from pathlib import Path

    folder = Path(__file__).resolve().parents[1] / "notebooks"
    for path in sorted(folder.glob("*.ipynb")) + sorted(folder.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".ipynb":
            text = "\n\n".join("".join(cell["source"]) for cell in json.loads(text)["cells"]
                                if cell["cell_type"] == "markdown")
        for found in re.finditer(r"\*\*IT\*\*(.*?)(?=\*\*EN\*\*|\"\"\"|\Z)", text, re.S):
            yield path.name, found.group(1)
        for found in re.finditer(r"^#+ (.*?) · ", text, re.M):
            yield path.name, found.group(1)


def test_one_italian_term_per_concept_in_the_notebooks():
    """The glossary holds in the notebooks too (both .ipynb and the .py that writes each), partial forms and any
    case included: «delta rule con gate», «regola con oblio» are the regola delta con gate."""
    from collections import Counter

    from lineare.app.i18n.glossary import forbidden_in

    paragraphs = list(_italian_in_notebooks())
    per_file = Counter(name for name, _text in paragraphs)
    assert set(per_file) == {"laboratories.ipynb", "make_laboratories.py", "parallel_equals_recurrent.ipynb",
                             "make_parallel_equals_recurrent.py"} and min(per_file.values()) >= 8, per_file
    found = [(name, hit, text[:60]) for name, text in paragraphs for hit in forbidden_in(text)]
    assert not found, found
    assert [hit for _c, hit in forbidden_in("la Regola con Oblio e la DELTA RULE CON GATE")] == [
        "Regola con Oblio", "DELTA RULE CON"]


def test_formulas_on_italian_pages_write_decimal_commas():
    """Every formula of the Italian catalog and of the registry, rendered for an Italian page: no <mn> with a
    decimal point, and 0,99 is one number element (not 0, an operator and 99)."""
    import re

    from lineare.app.components.text import to_html
    from lineare.app.variants import REGISTRY

    texts = list(_italian_texts()) + [r.formula for r in REGISTRY.values()]
    texts += [cell for r in REGISTRY.values() for cell in r.table_formula if "$" in cell]
    with language("it"):
        rendered = [to_html(text) for text in texts if "$" in text]
        assert "<mn>0,99</mn>" in to_html(r"$\alpha = 0.99$")
        gla = to_html(_it(REGISTRY["gla"].special_formula))
    points = [mn for html in rendered for mn in re.findall(r"<mn>([^<]*)</mn>", html) if "." in mn]
    assert not points, points
    assert "<mn>0,7</mn>" in gla and "0,25" in gla
    with language("en"):
        assert "<mn>0.99</mn>" in to_html(r"$\alpha = 0.99$")


def _it(msgid):
    from lineare.app.i18n import _
    return _(msgid)


PAGES = ["home", *(dashboard.slug for dashboard in DASHBOARDS)]


@pytest.mark.parametrize("slug", PAGES)
def test_an_italian_page_shows_no_english_word(slug):
    """Every page built server-side in Italian (tests/italian_pages.py), read at both levels: titles, labels,
    legends, hover labels, options and texts hold no English word outside formulas, code and names."""
    from panel.io.state import set_curdoc

    from lineare.app.shell import frame_html
    from tests.italian_pages import english_words, model_texts, session_document, visible

    doc, session = session_document(None if slug == "home" else slug, {"lang": "it", "level": "elementare"})
    texts = model_texts(doc)
    with set_curdoc(doc):
        session.level = "superiore"
    texts += model_texts(doc)
    with set_curdoc(doc):
        texts += [(f"frame {part}", text) for part, text in frame_html(session, slug).items()]   # header, sidebar
    assert len(texts) > 10                        # the page was built (the home page holds the fewest models)
    found = {}
    for where, text in texts:
        seen = visible(text)
        if english_words(seen):
            found[seen.strip()[:150]] = (where, english_words(seen))
    assert not found, found


def _lesson_cards():
    from lineare.app.lessons import LESSONS
    return [(slug, number) for slug, cards in LESSONS.items() for number in range(1, len(cards) + 1)]


@pytest.mark.parametrize("slug", sorted({slug for slug, _number in _lesson_cards()}))
def test_every_lesson_card_speaks_italian_after_the_choice_and_after_the_action(slug):
    """The walk above reads each page as it opens; a lesson shows more. Each card's page, opened as its link opens
    it (?lesson=…&card=…, the card's settings), with a choice made (the veiled texts shown, the card's verdict and
    observation), holds every frame its action plays (each step's strip, caption and answer are sent with the
    run). Read at both levels: no English word, no variant the glossary forbids."""
    from panel.io.state import set_curdoc

    from lineare.app.i18n.glossary import forbidden_in
    from lineare.app.lessons import LESSONS
    from tests.italian_pages import english_words, model_texts, session_document, visible

    found, observed = {}, 0
    for number in range(1, len(LESSONS[slug]) + 1):
        doc, session = session_document(slug, {"lang": "it", "level": "elementare", "lesson": slug,
                                               "card": str(number)})
        cards = [m for m in doc.models if "observe" in m.properties() and "chosen" in m.properties()]
        assert len(cards) == 1, (slug, number)
        texts = model_texts(doc)
        with set_curdoc(doc):
            session.level = "superiore"
        texts += model_texts(doc)
        observation = " ".join(_lesson_observation(slug, number).split())
        observed += any(observation in " ".join(visible(text).split()) for _where, text in texts)
        for where, text in texts:
            seen = visible(text)
            if english_words(seen) or forbidden_in(seen):
                found[seen.strip()[:150]] = (number, where, english_words(seen), forbidden_in(seen))
    assert not found, found
    assert observed == len(LESSONS[slug])                    # each card's observation was among the texts read


def _lesson_observation(slug, number):
    """The observation card `number` of `slug` says on its own settings, in Italian (as the page sends it)."""
    from lineare.app.components.text import inline_html
    from lineare.app.lessons import LESSONS
    from tests.test_lessons import store_for

    card = LESSONS[slug][number - 1]
    store, _values = store_for(slug, card)
    with language("it"):
        return visible_text(inline_html(card.observe(store)))


def visible_text(text):
    from tests.italian_pages import visible
    return visible(text)


def test_the_lesson_cards_speak_italian():
    """Every lesson card's question, choices and observation, in Italian, without an English word."""
    from tests.italian_pages import english_words
    from tests.test_lessons import CARDS, store_for
    from lineare.app.i18n import _
    from lineare.app.lessons import LESSONS

    found = []
    for slug, number in CARDS:
        card = LESSONS[slug][number - 1]
        store, _values = store_for(slug, card)
        with language("it"):
            texts = [_(card.prompt), *(_(c) for c in card.choices), card.observe(store)]
            texts += [_(card.press)] if card.press else []
        found += [(slug, number, words, text[:80]) for text in texts if (words := english_words(text))]
    assert not found, found


def test_the_state_lesson_names_the_panel_as_the_page_titles_it():
    from lineare.app.dashboards.state_fills_up.lesson import CARDS
    from lineare.app.i18n import _

    named = [card.press for card in CARDS if "«What fades or is erased»" in card.press]
    assert named
    for lang in ("it", "en"):
        with language(lang):
            assert all(f"«{_('What fades or is erased')}»" in _(press) for press in named)


def test_where_memory_fails_names_one_point_when_the_curve_stops_at_d_k():
    """Perpendicular keys: the curve stops at N = d_k, and the point says its error once (it said "0,00 con
    N = 16 e 0,00 con N = 16")."""
    from tests.italian_pages import model_texts, session_document, visible

    doc, _session = session_document("memory-fails", {"lang": "it", "keys": "orthogonal", "dk": "16"})
    said = " ".join(" ".join(visible(text).split()) for _where, text in model_texts(doc))
    assert "con 16 coppie, il massimo provato qui" in said and "e 0,00 con 16 coppie" not in said
