"""Dashboard "Architectures" (app/dashboards/architectures/) without a browser: the transitions, their
eigenvalues and the forgetting curves against closed forms and the engine's own recurrence, the links
against the stores of the pages they open, the URL, both languages."""
import subprocess
import sys
from urllib.parse import parse_qs, urlsplit

import numpy as np
import pytest
import torch

from lineare.app.dashboards import BY_SLUG
from lineare.app.dashboards.architectures import model as arch
from lineare.app.dashboards.architectures import view as arch_view
from lineare.app.dashboards.state_fills_up.model import StateStore
from lineare.app.dashboards.transition.model import TransitionStore, match
from lineare.app.i18n import language
from lineare.app.session import Session
from lineare.app.urlstate import read_query
from lineare.app.variants import REGISTRY
from lineare.engine.gates import channel_spread
from lineare.engine.ops.states import MLSTMState
from lineare.engine.stepping import step

D = arch.D
I = np.eye(D)
SPREAD = channel_spread(D).numpy()
per_channel = lambda alpha: np.diag(alpha ** SPREAD)
KNOB_OF = {name: record.knob for name, record in REGISTRY.items() if record.knob}
GAMMA = 1 - 2 ** -5                                                  # RetNet's first head


def closed_form(variant, k, beta=1.0):
    """A_t written out from the unified table (the registry's table_formula) for a unit key k, at the
    page's illustrative gates."""
    erase = I - beta * np.outer(k, k)
    return {
        "linear": I,
        "retnet": GAMMA * I,
        "mamba2": 0.8 * I,
        "gla": per_channel(0.7),
        "rwkv6": per_channel(0.7),                                   # the same transition as GLA
        "mlstm": 0.9 * I,                                            # f_t I, the forget gate σ(f) = 0.9
        "deltanet": erase,                                           # β = 1: removes the direction k
        "gated_deltanet": 0.8 * erase,
        "rwkv7": per_channel(0.7) - np.outer(k, k),                  # diag(w) − κ̂(a ⊙ κ̂)ᵀ, a = 1, κ̂ = k
    }[variant]


def as_args(link):
    """A card's link as Panel's session_args ({key: [bytes]}), and its path."""
    parts = urlsplit(link)
    return parts.path, {key: [value.encode() for value in values] for key, values in parse_qs(parts.query).items()}


# ------------------------------------------------------------------------------ transitions and eigenvalues

def test_every_card_is_an_architecture_of_the_engine():
    assert set(arch.ARCHITECTURES) == set(REGISTRY) - {"softmax"}
    assert BY_SLUG["architectures"].build is not None


@pytest.mark.parametrize("variant", arch.ARCHITECTURES)
def test_the_transition_read_off_the_engine_is_the_closed_form(variant):
    _first, later = arch.texts()
    keys = later[0, :3]                                              # three tokens, three keys
    A = arch.transitions(variant, keys).numpy()
    for t in range(3):
        np.testing.assert_allclose(A[t], closed_form(variant, keys[t].numpy()), atol=1e-12)


@pytest.mark.parametrize("variant", arch.ARCHITECTURES)
def test_the_transition_predicts_the_engine_from_any_state(variant):
    """S_t = S_{t-1} A_t + W_t for a random S_{t-1} and a real value, with the engine's own step and write."""
    generator = torch.Generator().manual_seed(3)
    S = torch.randn(1, 1, D, D, generator=generator, dtype=torch.float64)
    value = torch.randn(1, 1, D, generator=generator, dtype=torch.float64)
    key = arch.texts()[1][0, :1]                                     # [1, D]
    state = MLSTMState(S, torch.zeros(1, 1, D, dtype=torch.float64), torch.zeros(1, 1, dtype=torch.float64)) \
        if variant == "mlstm" else S
    _o, after, record = step(variant, state, key.view(1, 1, D), key.view(1, 1, D), value, scale=1.0,
                             **arch.token_gates(variant, key))
    scale = np.exp(record.extras["m"][0, 0]) if variant == "mlstm" else 1.0    # mLSTM stores C e^{−m}
    stored = (after.C if variant == "mlstm" else after)[0, 0].numpy()
    expected = S[0, 0].numpy() @ arch.transitions(variant, key)[0].numpy() + scale * record.write[0, 0]
    np.testing.assert_allclose(scale * stored, expected, atol=1e-12)


@pytest.mark.parametrize("variant", arch.ARCHITECTURES)
def test_the_eigenvalues_are_those_of_the_transition_matrix(variant):
    k = arch.texts()[1][0, 0].numpy()                                # the key of the token drawn
    expected = np.sort(np.linalg.eigvalsh(closed_form(variant, k)))  # every A_t here is symmetric
    np.testing.assert_allclose(arch.eigenvalues(variant), expected, atol=1e-10)


def test_the_eigenvalues_say_keep_fade_erase_and_flip():
    np.testing.assert_allclose(arch.eigenvalues("linear"), np.ones(D))
    np.testing.assert_allclose(arch.eigenvalues("retnet"), np.full(D, GAMMA))
    np.testing.assert_allclose(arch.eigenvalues("gla"), np.sort(0.7 ** SPREAD))
    # the delta rule: 1 − β along k, 1 elsewhere (times α when gated): β = 1 erases, β = 2 flips
    for variant, alpha in (("deltanet", 1.0), ("gated_deltanet", 0.8)):
        for beta, along_k in ((1.0, 0.0), (2.0, -1.0)):
            values = arch.eigenvalues(variant, beta)
            np.testing.assert_allclose(values, alpha * np.array([along_k] + [1.0] * (D - 1)), atol=1e-12)
    rwkv7 = arch.eigenvalues("rwkv7")
    assert rwkv7.min() < 0 < rwkv7.max() < 1                         # fades, and erases past zero along κ̂
    with pytest.raises(ValueError, match="β above 1"):
        arch.eigenvalues("rwkv7", 2.0)


@pytest.mark.parametrize("variant", arch.ARCHITECTURES)
def test_the_forgetting_curve_is_what_the_recurrence_leaves_of_the_pair(variant):
    """Run the engine's step from S_0 = v₀ k₀ᵀ over the later tokens (values 0: only the pair is in the
    state), and read the pair back with its own key: v₀ · S_n k₀ / |v₀|², averaged over the texts."""
    first, later = arch.texts()
    B = len(first)
    v0 = torch.randn(B, 1, D, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    S = torch.einsum("bhv,bhk->bhvk", v0, first.unsqueeze(1))
    state = MLSTMState(S, torch.zeros(B, 1, D, dtype=torch.float64), torch.zeros(B, 1, dtype=torch.float64)) \
        if variant == "mlstm" else S
    gates = arch.token_gates(variant, later.reshape(-1, D))          # [B·T, 1, …]: token t of text b at b·T + t
    T = later.shape[1]
    shares = [1.0]
    for t in range(T):
        token = {name: (x.view(B, T, *x.shape[1:])[:, t] if x.shape[0] == B * T else x) for name, x in gates.items()}
        key = later[:, t].unsqueeze(1)
        _o, state, record = step(variant, state, key, key, torch.zeros(B, 1, D, dtype=torch.float64), scale=1.0,
                                 **token)
        C = (state.C * torch.exp(state.m)[..., None, None]) if variant == "mlstm" else state
        read = torch.einsum("bhvk,bhk->bhv", C, first.unsqueeze(1))
        shares.append(float(((read * v0).sum(-1) / (v0 * v0).sum(-1)).mean()))
    np.testing.assert_allclose(arch.forgetting_curve(variant), shares, atol=1e-10)


def test_the_forgetting_curves_in_closed_form():
    n = np.arange(arch.TOKENS + 1)
    first = arch.texts()[0].numpy()
    np.testing.assert_allclose(arch.forgetting_curve("linear"), 1.0)
    np.testing.assert_allclose(arch.forgetting_curve("retnet"), GAMMA ** n, rtol=1e-12)
    np.testing.assert_allclose(arch.forgetting_curve("mamba2"), 0.8 ** n, rtol=1e-12)
    np.testing.assert_allclose(arch.forgetting_curve("mlstm"), 0.9 ** n, rtol=1e-9)
    gla = ((first ** 2)[:, None, :] * (0.7 ** SPREAD)[None, None, :] ** n[None, :, None]).sum(-1).mean(0)
    np.testing.assert_allclose(arch.forgetting_curve("gla"), gla, rtol=1e-10)
    np.testing.assert_allclose(arch.forgetting_curve("rwkv6"), gla, rtol=1e-10)     # GLA's transition
    # Gated DeltaNet = DeltaNet's erasures times α per token; DeltaNet forgets only by overwriting
    np.testing.assert_allclose(arch.forgetting_curve("gated_deltanet"), 0.8 ** n * arch.forgetting_curve("deltanet"),
                               rtol=1e-9, atol=1e-15)
    # a random unit key erases on average 1/d_k of every direction: (1 − 1/d_k)^n is left (the mean of
    # 32 texts lies near it)
    np.testing.assert_allclose(arch.forgetting_curve("deltanet"), (1 - 1 / D) ** n, atol=0.1)


# ------------------------------------------------------------------------------ the links

@pytest.mark.parametrize("variant", arch.ARCHITECTURES)
def test_the_state_link_opens_that_model(variant):
    path, args = as_args(arch_view.state_link(variant, "it", "superiore"))
    assert path == "./state"
    values, notices = read_query(StateStore, StateStore.URL, args)
    assert values == {"variant": variant} and notices == []
    assert read_query(Session, Session.URL, args) == ({"language": "it", "level": "superiore"}, [])


@pytest.mark.parametrize("variant", arch.ARCHITECTURES)
def test_the_knob_link_lands_on_the_model_or_its_nearest_setting(variant):
    path, args = as_args(arch_view.knob_link(variant, "en", "elementare"))
    assert path == "./transition"
    values, notices = read_query(TransitionStore, TransitionStore.URL, args)
    assert notices == [] and set(values) <= {"gate", "alpha", "beta"}
    store = TransitionStore(**values)
    found = match(store.gate, store.alpha, store.beta).exact
    gate, alpha, beta, exact = arch.knob_setting(variant)
    assert (store.gate, store.beta) == (gate, beta)
    if variant in KNOB_OF:
        assert exact and variant in found and (store.gate, store.beta) == KNOB_OF[variant]
    else:                                                            # RWKV-6 and mLSTM: said plainly on the card
        assert not exact and found == {"rwkv6": ("gla",), "mlstm": ("mamba2",), "rwkv7": ()}[variant]
        assert variant in match(store.gate, store.alpha, store.beta).close      # the lamp says "close to …"
    if gate != "none":                                               # the knob fades as the picture does
        assert store.alpha == pytest.approx(arch.card_alpha(variant), abs=1e-4)
    assert read_query(Session, Session.URL, args) == ({"language": "en", "level": "elementare"}, [])


def test_cards_say_when_a_model_is_not_on_the_knob():
    with language("en"):
        for variant in arch.ARCHITECTURES:
            text = arch_view.card_html(variant, superiore=False)
            assert ("Not exactly on the knob" in text) == (variant not in KNOB_OF)
        links = arch_view.links_html("mlstm", "en", "elementare")
    assert "Open the nearest knob setting" in links and "gate=scalar" in links and "variant=mlstm" in links


# ------------------------------------------------------------------------------ URL and languages

def test_a_malformed_arch_falls_back_with_a_notice():
    for bad in ("gpt", "<b>x</b>", "", "retnet" * 50):
        with language("en"):
            values, notices = read_query(arch.ArchitecturesStore, arch.ArchitecturesStore.URL,
                                         {"arch": [bad.encode()]} if bad else {})
        if not bad:                                                  # absent: the default, quietly
            assert values == {} and notices == []
            continue
        assert values == {"arch": "linear"} and len(notices) == 1 and "“arch”" in notices[0]
    values, notices = read_query(arch.ArchitecturesStore, arch.ArchitecturesStore.URL, {"arch": [b"rwkv7"]})
    assert values == {"arch": "rwkv7"} and notices == []


@pytest.mark.parametrize("lang,words", [("en", ("One card per model", "Open on the transition knob")),
                                        ("it", ("Una scheda per modello", "Apri sulla manopola della transizione"))])
def test_the_page_renders_in_both_languages_and_levels(lang, words):
    with language(lang):
        session = Session(language=lang)
        store = arch.ArchitecturesStore(arch="deltanet")
        view = arch_view.ArchitecturesView(store=store, session=session)
        page = view.__panel__()
        texts = [card["text"].object for card in view.cards.values()]
        links = " ".join(card["links"].object for card in view.cards.values())
        assert words[1] in links and f"lang={lang}" in links and "level=elementare" in links
        assert all("<math" not in t for t in texts) and "DeltaNet" in view.lamp.object
        assert view.cards["deltanet"]["button"].variant == "solid"
        assert [c["button"].variant for c in view.cards.values()].count("solid") == 1
        session.level = "superiore"                                  # the level switches live
        texts = [card["text"].object for card in view.cards.values()]
        assert all("<math" in t for t in texts) and "level=superiore" in view.cards["gla"]["links"].object
        assert "Yang et al. 2024" in view.cards["gla"]["text"].object   # paper names at Superiore
        store.arch = "rwkv6"
        assert "RWKV-6" in view.lamp.object and view.cards["deltanet"]["button"].variant == "outline"
        headings = [o.object for o in page.objects if hasattr(o, "object") and isinstance(o.object, str)]
        assert any(words[0] in h for h in headings)


def test_the_model_imports_without_panel():
    code = ("import sys; import app.dashboards.architectures.model; "
            "assert 'panel' not in sys.modules and 'bokeh' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("variant", arch.ARCHITECTURES)
def test_superiore_says_what_our_tiny_version_leaves_out(variant):
    """The banner at Superiore (and the state page's description of the model) names what the paper's layer has
    and ours does not: RetNet's xPos, Mamba-2's output gate, RWKV's token shift…"""
    from lineare.app.dashboards.state_fills_up.model import StateStore
    from lineare.app.dashboards.state_fills_up.view import StateView
    from lineare.app.i18n import _

    with language("it"):
        session = Session(language="it", level="superiore")
        view = arch_view.ArchitecturesView(store=arch.ArchitecturesStore(arch=variant), session=session)
        left_out = _(REGISTRY[variant].left_out)
        assert left_out in view.rule.superiore and left_out not in view.rule.elementare
        state = StateView(store=StateStore(variant=variant), session=session)
        assert left_out == state.left_out.superiore and not state.left_out.elementare   # under the pictures
    assert "xPos" in REGISTRY["retnet"].left_out and "output gate" in REGISTRY["mamba2"].left_out
    assert "token shift" in REGISTRY["rwkv6"].left_out and "token shift" in REGISTRY["rwkv7"].left_out
