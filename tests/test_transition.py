"""The transition knob (app/dashboards/transition/): its numbers against closed forms and the engine."""
import html
import subprocess
import sys

import numpy as np
import pytest
import torch

from lineare.app import mechanism
from lineare.app.dashboards.transition import model as knob
from lineare.app.dashboards.transition.model import Match, TransitionStore, match
from lineare.app.dashboards.transition.pictures import table_html
from lineare.app.i18n import language
from lineare.app.urlstate import read_query
from lineare.app.variants import KNOB_GATES, REGISTRY
from lineare.engine.gates import channel_spread
from lineare.engine.ops import VARIANTS, forward

KNOB_OF = {name: record.knob for name, record in REGISTRY.items() if record.knob}

TOKENS = mechanism.parse(knob.PRESETS["update"])[0]
SETTINGS = [(gate, alpha, beta) for gate in KNOB_GATES for alpha in (1.0, 0.7, 0.0) for beta in (0.0, 0.4, 1.0)]


def reference_knob(gate, alpha, beta, tokens, seed=0):
    """The knob's rule written out in NumPy: S ← S D_t (I − β k kᵀ) + v kᵀ, o_t = S q_t."""
    q, k, v = (x[0, :, 0].double().numpy() for x in knob.encode(tokens, seed))
    spread = channel_spread(mechanism.D_K).numpy()
    S, outputs = np.zeros((mechanism.D_V, mechanism.D_K)), []
    kept = max(alpha, knob.ALPHA_FLOOR)
    for t, token in enumerate(tokens):
        writes = token.kind == "write"
        D = {"none": np.ones(mechanism.D_K),
             "fixed": np.full(mechanism.D_K, kept),
             "scalar": np.full(mechanism.D_K, kept if writes else 1.0),
             "channel": kept ** spread if writes else np.ones(mechanism.D_K)}[gate]
        if alpha >= 1:
            D = np.ones(mechanism.D_K)
        S = S @ np.diag(D) @ (np.eye(mechanism.D_K) - beta * np.outer(k[t], k[t])) + np.outer(v[t], k[t])
        outputs.append(S @ q[t])
    return S, np.array(outputs)


def sequence(preset="update", seed=0):
    return knob.make_sequence(preset, seed)


# ----------------------------------------------------------------------- where the knob is

def test_the_knob_lights_the_named_models():
    assert match("none", 1.0, 0.0) == Match(exact=("linear",))
    assert match("fixed", 0.9, 0.0) == Match(exact=("retnet",))
    assert match("scalar", 0.9, 0.0) == Match(exact=("mamba2",), close=("mlstm",))
    assert match("channel", 0.9, 0.0) == Match(exact=("gla",), close=("rwkv6",))     # RWKV-6 reads before it writes
    assert match("none", 1.0, 1.0) == Match(exact=("deltanet",))
    assert match("scalar", 0.8, 1.0) == Match(exact=("gated_deltanet",))
    assert match("channel", 0.8, 0.3) == match("channel", 0.8, 1.0) == Match(close=("rwkv7",))   # off the knob


def test_exactly_on_is_the_registrys_knob_and_close_its_nearest():
    """One source for "exactly on the knob": the registry's `knob` positions. At every setting the lamp's models
    are those the registry puts there, a model off the knob (`knob` None: RWKV-6, RWKV-7, mLSTM) is at most
    "close", at its `nearest` setting; the page's lamp and table say the same (RWKV-6 close, as RWKV-7 is), and
    where the knob is on Mamba-2 the lamp says that its skip D x_t is left out."""
    from tests.italian_pages import model_texts, session_document, visible

    off = {name for name, record in REGISTRY.items() if record.knob is None}
    assert {"rwkv6", "rwkv7", "mlstm"} <= off
    for gate in KNOB_GATES:
        for alpha in (0.9, 1.0):
            for beta in (0.0, 0.5, 1.0):
                found = match(gate, alpha, beta)
                kept = knob.effective_gate(gate, alpha)
                assert {REGISTRY[name].knob for name in found.exact} <= {(kept, beta)}
                assert set(found.exact) == {name for name, place in KNOB_OF.items() if place == (kept, beta)}
                assert not set(found.exact) & off and set(found.close) <= off
                assert all(REGISTRY[name].nearest[0] == kept for name in found.close)
                assert found.exact or found.between or found.close                # the lamp always names one
    for name in off - {"softmax"}:                                               # each is close at its nearest
        gate, beta = REGISTRY[name].nearest
        assert name in match(gate, 0.9, beta).close and name not in match(gate, 0.9, beta).exact
    def lamp(args):
        doc, _session = session_document("transition", args)
        lamps = [" ".join(visible(text).split()) for _where, text in model_texts(doc)
                 if 'class="lamp"' in html.unescape(text)]
        assert len(lamps) == 1
        return lamps[0]

    for lang, on, near, skip in (("en", "The knobs are on: GLA (close to: RWKV-6)", "close to RWKV-6, not on it",
                                  "(D x_t)"),
                                 ("it", "Le manopole sono su: GLA (vicine a: RWKV-6)",
                                  "vicine a RWKV-6, ma non su di esso", "(D x_t)")):
        said = lamp({"gate": "channel", "alpha": "0.9", "beta": "0", "lang": lang})
        assert on in said and near in said, said
        with language(lang):
            table = table_html(match("channel", 0.9, 0.0), False)
        assert 'class="near" data-variant="rwkv6"' in table and 'class="lit" data-variant="gla"' in table
        said = lamp({"gate": "scalar", "alpha": "0.9", "beta": "0", "lang": lang})
        assert "Mamba-2" in said and skip in said and "mLSTM" in said, said


def test_between_models_and_gates_that_keep_everything():
    assert match("none", 1.0, 0.5) == Match(between=("linear", "deltanet"))
    assert match("scalar", 0.9, 0.5) == Match(between=("mamba2", "gated_deltanet"))
    assert match("fixed", 0.9, 1.0).exact == ()                       # a fixed-rate DeltaNet: no row of the table
    for gate in KNOB_GATES:                                           # α = 1: a gate that never fades is no gate
        assert match(gate, 1.0, 0.0) == Match(exact=("linear",))
        assert match(gate, 1.0, 1.0) == Match(exact=("deltanet",))
    for variant, (gate, beta) in KNOB_OF.items():                     # every jump lands on its own row
        assert variant in match(gate, 0.9, beta).exact


# ------------------------------------------------------------------------ the numbers

@pytest.mark.parametrize("gate,alpha,beta", SETTINGS)
def test_the_knob_runs_its_rule(gate, alpha, beta):
    s = sequence()
    run = knob.run_knob(s, gate, alpha, beta, seed=0)
    S, outputs = reference_knob(gate, alpha, beta, s.tokens)
    assert np.isfinite(run.state).all()
    np.testing.assert_allclose(run.state, S, atol=1e-5)
    asked = [q.position for q in run.recall.questions]
    cosine = lambda o, c: o @ mechanism.embedding(c, "value", 0, 0) / np.linalg.norm(o)
    for question in run.recall.questions:
        if np.linalg.norm(outputs[question.position]) < 1e-6:        # everything forgotten: no answer
            assert question.answer is None and not question.right
            continue
        expected = [cosine(outputs[question.position], c) for c in run.recall.candidates]
        np.testing.assert_allclose(question.cosines, expected, atol=1e-5)
    assert len(asked) == sum(t.kind == "ask" for t in s.tokens)


@pytest.mark.parametrize("variant", ["linear", "retnet", "mamba2", "gla", "deltanet", "gated_deltanet"])
def test_on_a_named_point_the_knob_is_that_model(variant):
    """The knob (the engine's DPLR step) equals the engine's own variant, step for step."""
    s = sequence()
    gate, beta = KNOB_OF[variant]
    alpha = 0.8
    o_knob, S_knob = forward("rwkv7", s.q, s.k, s.v, form="recurrent", scale=1.0,
                             **knob.knob_gates(gate, alpha, beta, s.tokens, s.k))
    o_named, S_named = forward(variant, s.q, s.k, s.v, form="recurrent", scale=1.0,
                               **knob.named_gates(variant, alpha, s.tokens, s.k))
    torch.testing.assert_close(S_knob, S_named, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(o_knob, o_named, atol=1e-6, rtol=1e-5)
    named, turned = knob.run_named(s, variant, alpha, 0), knob.run_knob(s, gate, alpha, beta, 0)
    assert [q.answer for q in named.recall.questions] == [q.answer for q in turned.recall.questions]
    assert np.allclose(named.memory, turned.state, atol=1e-6)                  # small multiple = knob


def test_rwkv6_has_the_transition_of_gla():
    s = sequence()
    assert np.allclose(knob.run_named(s, "rwkv6", 0.7, 0).memory, knob.run_named(s, "gla", 0.7, 0).memory)


def test_closed_forms_of_the_sum_and_of_decay():
    s = sequence()
    writes = [t for t, token in enumerate(s.tokens) if token.kind == "write"]
    k, v = s.k[0, :, 0].double().numpy(), s.v[0, :, 0].double().numpy()
    T, alpha = len(s.tokens), 0.6
    summed = sum(np.outer(v[t], k[t]) for t in writes)
    faded_every_token = sum(alpha ** (T - 1 - t) * np.outer(v[t], k[t]) for t in writes)
    faded_on_writes = sum(alpha ** sum(u > t for u in writes) * np.outer(v[t], k[t]) for t in writes)
    assert np.allclose(knob.run_knob(s, "none", alpha, 0.0, 0).state, summed, atol=1e-5)
    assert np.allclose(knob.run_knob(s, "fixed", alpha, 0.0, 0).state, faded_every_token, atol=1e-5)
    assert np.allclose(knob.run_knob(s, "scalar", alpha, 0.0, 0).state, faded_on_writes, atol=1e-5)


def test_the_transition_picture_is_the_transition():
    s = sequence()
    assert s.tokens[s.shown_at].text == "Anna:99"                     # the write that changes a number
    k = s.k[0, s.shown_at, 0].numpy()
    I = np.eye(mechanism.D_K)
    assert np.allclose(knob.run_knob(s, "none", 0.7, 0.0, 0).transition, I)
    assert np.allclose(knob.run_knob(s, "none", 0.7, 1.0, 0).transition, I - np.outer(k, k), atol=1e-6)
    assert np.allclose(knob.run_knob(s, "scalar", 0.7, 0.5, 0).transition,
                       0.7 * (I - 0.5 * np.outer(k, k)), atol=1e-6)
    per_channel = np.diag(0.7 ** channel_spread(mechanism.D_K).numpy()) @ (I - 0.3 * np.outer(k, k))
    assert np.allclose(knob.run_knob(s, "channel", 0.7, 0.3, 0).transition, per_channel, atol=1e-6)
    # the transition acts on S: I − k kᵀ projects k away, so S (I − k kᵀ) k = 0
    assert np.allclose((I - np.outer(k, k)) @ k, 0, atol=1e-6)



def test_on_rwkv7s_row_the_text_says_what_the_knob_computes():
    """The knob is close to RWKV-7's row, not on it: it fades before it erases: diag(α) − β(α⊙k)kᵀ, not RWKV-7's own
    diag(w) − κ̂(a⊙κ̂)ᵀ (here κ̂ = k, a = β); the Superiore text says which is which."""
    from lineare.app.dashboards.transition.view import KNOB_ON_RWKV7
    from lineare.engine.gates import make_gates

    s, alpha, beta = sequence(), 0.7, 0.6
    t = s.shown_at
    k = s.k[0, t, 0].double().numpy()
    kept = alpha ** channel_spread(mechanism.D_K).numpy()
    assert match("channel", alpha, beta).close == ("rwkv7",) and REGISTRY["rwkv7"].knob is None
    computed = knob.run_knob(s, "channel", alpha, beta, 0).transition
    assert np.allclose(computed, np.diag(kept) - beta * np.outer(kept * k, k), atol=1e-6)
    own = make_gates("rwkv7", tuple(s.k.shape), alpha=alpha, beta=beta, keys=s.k, dtype=torch.float64)
    a, b = own["a"][0, t, 0].numpy(), own["b"][0, t, 0].numpy()
    rwkv7 = np.diag(np.exp(own["g"][0, t, 0].numpy())) + np.outer(a, b)
    assert np.allclose(rwkv7, np.diag(kept) - beta * np.outer(k, k), atol=1e-6)      # κ̂ = k, rate a_t = β
    assert not np.allclose(computed, rwkv7, atol=1e-3)
    assert r"\mathrm{diag}(\alpha_t) - \beta\, (\alpha_t \odot k_t)" in KNOB_ON_RWKV7
    assert r"\mathrm{diag}(w_t) - \hat\kappa_t (a_t \odot \hat\kappa_t)^\top" in KNOB_ON_RWKV7

def test_the_story_of_the_changed_number():
    """Anna's old number is stored twice, then changed: the sum keeps the old one, correcting fixes it."""
    s = sequence()
    anna = lambda run: next(q for q in run.recall.questions if q.token.key == "Anna")
    summed = anna(knob.run_knob(s, "none", 1.0, 0.0, 0))
    assert summed.answer == "21" and summed.expected == "99"
    corrected = knob.run_knob(s, "none", 1.0, 1.0, 0)
    assert anna(corrected).right and anna(corrected).cosines.max() > 0.9
    assert corrected.recall.correct == len(corrected.recall.questions)
    assert anna(knob.run_knob(s, "none", 1.0, 0.5, 0)).right        # half a correction is enough here
    assert anna(knob.run_knob(s, "scalar", 0.7, 0.0, 0)).right      # forgetting enough is too
    bruno = lambda run: next(q for q in run.recall.questions if q.token.key == "Bruno")
    assert not bruno(knob.run_knob(s, "scalar", 0.3, 0.0, 0)).right  # forgetting too much loses the old ones


def test_decoding_agrees_with_mechanism_mode():
    for preset in ("phonebook", "overwrite"):
        s = sequence(preset)
        for variant in ("linear", "deltanet"):
            mine = knob.run_named(s, variant, 1.0, 0).recall
            theirs = mechanism.run_sequence(variant, s.tokens)
            for question in mine.questions:
                answer = theirs.answers[question.position]
                assert (question.answer, question.expected, question.tied) == (answer.value, answer.expected,
                                                                               answer.tied)
                assert question.cosines.max() == pytest.approx(answer.similarity, abs=1e-5)


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_model_can_be_compared(variant):
    s = sequence("crowd")
    for alpha in (0.0, 0.9, 1.0):
        comparison = knob.run_named(s, variant, alpha, 0)
        assert np.isfinite(comparison.memory).all()
        rows = len(s.tokens) if variant == "softmax" else mechanism.D_V
        assert comparison.memory.shape == (rows, mechanism.D_V if variant == "softmax" else mechanism.D_K)
        assert len(comparison.recall.questions) == 8


# ----------------------------------------------------------------------------- the store

def test_the_store_recomputes_only_what_a_knob_reaches():
    store = TransitionStore()
    assert store.knob.match == Match(exact=("linear",))
    assert [c.variant for c in store.compared] == ["linear", "mamba2", "deltanet"]
    first = list(store.compared)
    store.beta = 1.0                                                  # the knob only
    assert store.knob.match == Match(exact=("deltanet",)) and store.compared == first
    store.model2 = "gla"                                              # one small multiple
    assert store.compared[0] is first[0] and store.compared[2] is first[2] and store.compared[1].variant == "gla"
    store.alpha = 0.5                                                 # the knob and every forgetting model
    assert all(a is not b for a, b in zip(store.compared, first))
    store.jump("gated_deltanet")
    assert (store.gate, store.beta, store.alpha) == ("scalar", 1.0, 0.5)
    store.param.update(alpha=1.0, gate="none")
    store.jump("retnet")                                              # α = 1 would not fade: it becomes 0.9
    assert (store.gate, store.beta, store.alpha) == ("fixed", 0.0, knob.DEFAULT_DECAY)


def test_url_values_are_checked():
    args = lambda **values: {k: [v.encode()] for k, v in values.items()}
    with language("en"):
        values, notices = read_query(TransitionStore, TransitionStore.URL, args(
            gate="<script>", alpha="7", beta="nan", preset="nope", seed="-4", model1="gpt", model3="gla"))
    assert values == {"gate": "none", "alpha": 1.0, "beta": 0.0, "preset": "update", "seed": 0,
                      "model1": "linear", "model3": "gla"}
    assert len(notices) == 6
    store = TransitionStore(**values)
    assert store.compared[2].variant == "gla"


def test_work_per_request_is_bounded():
    for preset in knob.PRESETS:
        tokens, problems = mechanism.parse(knob.PRESETS[preset])
        assert problems == [] and len(tokens) <= mechanism.MAX_TOKENS


def test_the_table_lights_the_row_and_follows_the_level():
    with language("en"):
        plain = table_html(match("scalar", 0.9, 1.0), superiore=False)
        formulas = table_html(match("none", 1.0, 0.5), superiore=True)
    assert 'class="lit" data-variant="gated_deltanet"' in plain and "<math" not in plain
    assert plain.count('class="lit"') == 1
    assert formulas.count('class="near"') == 2 and 'class="near" data-variant="deltanet"' in formulas
    assert "<math" in formulas and formulas.count("<tr") == 1 + len(VARIANTS)
    with language("it"):
        assert "il riassunto" in table_html(match("none", 1.0, 0.0), superiore=False)


def test_the_model_imports_without_panel():
    code = ("import sys; import app.dashboards.transition.model; "
            "assert 'panel' not in sys.modules and 'bokeh' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
