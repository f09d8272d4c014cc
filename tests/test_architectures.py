"""Dashboard "Architectures" (app/dashboards/architectures/) without a browser: the pictures against
closed forms and the engine, the links against the stores of the pages they open, the URL, both languages."""
import subprocess
import sys
from urllib.parse import parse_qs, urlsplit

import numpy as np
import pytest
import torch

from app.dashboards import BY_SLUG
from app.dashboards.architectures import model as arch
from app.dashboards.architectures import view as arch_view
from app.dashboards.state_fills_up.model import StateStore
from app.dashboards.transition.model import TransitionStore, match
from app.i18n import language
from app.session import Session
from app.urlstate import read_query
from app.variants import REGISTRY
from engine.gates import channel_spread
from engine.ops.states import MLSTMState
from engine.stepping import step

D = arch.D
I = np.eye(D)
k = arch.KEY.numpy()
per_channel = lambda alpha: np.diag(alpha ** channel_spread(D).numpy())
KNOB_OF = {name: record.knob for name, record in REGISTRY.items() if record.knob}

# A_t written out from the unified table (the registry's table_formula), with the cards' illustrative gates
CLOSED_FORM = {
    "linear": I,
    "retnet": (1 - 2 ** -5) * I,                                     # γ of the first head
    "mamba2": 0.8 * I,
    "gla": per_channel(0.7),
    "rwkv6": per_channel(0.7),                                       # the same transition as GLA
    "mlstm": 0.9 * I,                                                # f_t I, the forget gate σ(f) = 0.9
    "deltanet": I - np.outer(k, k),                                  # β = 1: removes the direction k
    "gated_deltanet": 0.8 * (I - np.outer(k, k)),
    "rwkv7": per_channel(0.7) - np.outer(k, k),                      # diag(w) + a bᵀ, a = −k, b = k
}


def as_args(link):
    """A card's link as Panel's session_args ({key: [bytes]}), and its path."""
    parts = urlsplit(link)
    return parts.path, {key: [value.encode() for value in values] for key, values in parse_qs(parts.query).items()}


# ------------------------------------------------------------------------------ the pictures

def test_every_card_is_an_architecture_of_the_engine():
    assert set(arch.ARCHITECTURES) == set(CLOSED_FORM)
    assert BY_SLUG["architectures"].build is not None


@pytest.mark.parametrize("variant", arch.ARCHITECTURES)
def test_the_picture_is_the_closed_form_transition(variant):
    np.testing.assert_allclose(arch.transition_matrix(variant), CLOSED_FORM[variant], atol=1e-12)


@pytest.mark.parametrize("variant", arch.ARCHITECTURES)
def test_the_picture_predicts_the_engine_from_any_state(variant):
    """S_t = S_{t-1} A_t + W_t for a random S_{t-1}, with the engine's own step and recorded write."""
    S = torch.randn(1, 1, D, D, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    state = MLSTMState(S, torch.zeros(1, 1, D, dtype=torch.float64), torch.zeros(1, 1, dtype=torch.float64)) \
        if variant == "mlstm" else S
    key, value = arch.KEY.view(1, 1, D), arch.VALUE.view(1, 1, D)
    _o, after, record = step(variant, state, key, key, value, scale=1.0, **arch.card_gates(variant))
    scale = np.exp(record.extras["m"][0, 0]) if variant == "mlstm" else 1.0    # mLSTM stores C e^{−m}
    stored = (after.C if variant == "mlstm" else after)[0, 0].numpy()
    expected = S[0, 0].numpy() @ arch.transition_matrix(variant) + scale * record.write[0, 0]
    np.testing.assert_allclose(scale * stored, expected, atol=1e-12)


@pytest.mark.parametrize("variant", ["retnet", "mamba2", "gla", "rwkv6", "gated_deltanet", "rwkv7"])
def test_the_picture_agrees_with_the_records_decay_and_low_rank_part(variant):
    _A, record = arch.transition_step(variant)
    decay = np.broadcast_to(np.asarray(record.decay[0, 0], dtype=float).reshape(-1), (D,))
    low_rank = np.zeros((D, D)) if record.a is None else np.outer(record.a[0, 0], record.b[0, 0])
    diagonal_plus_low_rank = np.diag(decay) + low_rank
    if record.beta is not None:                                      # the delta rule: D (I − β k kᵀ)
        diagonal_plus_low_rank = diagonal_plus_low_rank @ (I - record.beta[0, 0] * np.outer(k, k))
    np.testing.assert_allclose(arch.transition_matrix(variant), diagonal_plus_low_rank, atol=1e-12)


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
        assert not exact and found == {"rwkv6": ("gla", "rwkv6"), "mlstm": ("mamba2",)}[variant]
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
        assert view.cards["deltanet"]["button"].button_style == "solid"
        assert [c["button"].button_style for c in view.cards.values()].count("solid") == 1
        session.level = "superiore"                                  # the level switches live
        texts = [card["text"].object for card in view.cards.values()]
        assert all("<math" in t for t in texts) and "level=superiore" in view.cards["gla"]["links"].object
        assert "Yang et al. 2024" in view.cards["gla"]["text"].object   # paper names at Superiore
        store.arch = "rwkv6"
        assert "RWKV-6" in view.lamp.object and view.cards["deltanet"]["button"].button_style == "outline"
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
    from app.dashboards.state_fills_up.model import StateStore
    from app.dashboards.state_fills_up.view import StateView
    from app.i18n import _

    with language("it"):
        session = Session(language="it", level="superiore")
        view = arch_view.ArchitecturesView(store=arch.ArchitecturesStore(arch=variant), session=session)
        left_out = _(REGISTRY[variant].left_out)
        assert left_out in view.rule.superiore and left_out not in view.rule.elementare
        state = StateView(store=StateStore(variant=variant), session=session)
        assert left_out in state.rule.superiore and left_out not in state.rule.elementare
    assert "xPos" in REGISTRY["retnet"].left_out and "output gate" in REGISTRY["mamba2"].left_out
    assert "token shift" in REGISTRY["rwkv6"].left_out and "token shift" in REGISTRY["rwkv7"].left_out
