"""The one gate recipe (engine.gates): the knobs mean the same for every variant."""
import math

import pytest
import torch
import torch.nn.functional as F

from lineare.engine.gates import SPREAD, channel_spread, make_gates, retnet_log_decay
from lineare.engine.ops import GATES, VARIANTS, forward
from tests.inputs import rel_rms

SHAPE = (2, 7, 3, 5)          # B, T, H, d_k


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_variant_gets_exactly_the_keywords_its_op_takes(variant):
    keys = torch.randn(*SHAPE)
    gates = make_gates(variant, SHAPE, alpha=0.8, beta=0.5, keys=keys)
    assert set(gates) == set(GATES[variant])
    for name, x in gates.items():
        expected = {"H": (3,), "BTH": (2, 7, 3), "BTHK": SHAPE, "HK": (3, 5)}[GATES[variant][name]]
        assert x.shape == expected and x.dtype == torch.float32


@pytest.mark.parametrize("variant", ["retnet", "mamba2", "gated_deltanet"])
def test_alpha_is_the_share_kept_per_step(variant):
    g = make_gates(variant, SHAPE, alpha=0.8, dtype=torch.float64)["g"]
    assert torch.allclose(g.exp(), torch.full_like(g, 0.8))


@pytest.mark.parametrize("variant", ["gla", "rwkv6", "rwkv7"])
def test_per_channel_decays_spread_around_alpha(variant):
    keys = torch.randn(*SHAPE)
    g = make_gates(variant, SHAPE, alpha=0.8, keys=keys, dtype=torch.float64)["g"]
    spread = channel_spread(SHAPE[-1])
    assert spread[0] == SPREAD[0] and spread[-1] == SPREAD[1] and spread.mean() == pytest.approx(1.0)
    assert torch.allclose(g[0, 0, 0], math.log(0.8) * spread)
    assert torch.allclose(g.mean(-1), torch.full(SHAPE[:3], math.log(0.8), dtype=torch.float64))


def test_beta_and_rwkv7_vectors():
    keys = torch.randn(*SHAPE, dtype=torch.float64)
    beta = make_gates("deltanet", SHAPE, beta=0.3)["beta"]
    assert torch.all(beta == 0.3)
    rwkv7 = make_gates("rwkv7", SHAPE, beta=0.3, keys=keys, dtype=torch.float64)
    unit = keys / keys.norm(dim=-1, keepdim=True)
    assert torch.allclose(rwkv7["a"], -unit) and torch.allclose(rwkv7["b"], 0.3 * unit)


def test_mlstm_forget_gate_is_alpha_and_input_gate_is_one():
    gates = make_gates("mlstm", SHAPE, alpha=0.9, dtype=torch.float64)
    assert torch.allclose(torch.sigmoid(gates["f"]), torch.full(SHAPE[:3], 0.9, dtype=torch.float64))
    assert torch.all(gates["i"] == 0)                     # i = e^ĩ = 1
    assert torch.isfinite(make_gates("mlstm", SHAPE, alpha=1.0)["f"]).all()


def test_active_tokens_alone_fade_except_retnet():
    active = torch.tensor([1, 0, 1, 0, 0, 1, 1], dtype=torch.bool)
    g = make_gates("mamba2", SHAPE, alpha=0.5, active=active)["g"]
    assert torch.all(g[:, ~active] == 0) and torch.all(g[:, active] < 0)
    assert torch.all(make_gates("retnet", SHAPE, alpha=0.5, active=active)["g"] < 0)


def test_seeded_gates_are_random_around_the_knobs_and_the_same_in_every_dtype():
    shape = (4, 500, 2, 8)
    gates = make_gates("gated_deltanet", shape, alpha=0.9, beta=0.6, seed=3, dtype=torch.float64)
    g, beta = gates["g"], gates["beta"]
    assert g.min() > 2 * math.log(0.9) and g.max() < 0 and g.mean().item() == pytest.approx(math.log(0.9), rel=0.05)
    assert beta.min() > 0 and beta.max() < 0.6 and g.std() > 0
    again = make_gates("gated_deltanet", shape, alpha=0.9, beta=0.6, seed=3, dtype=torch.float32)
    assert torch.equal(again["g"], g.float()) and not torch.equal(
        make_gates("gated_deltanet", shape, alpha=0.9, beta=0.6, seed=4)["g"], g.float())


def uniform_share(x):
    """x scaled to (0, 1) tested for a uniform law: range, mean and quartiles (n in the thousands)."""
    x = x.flatten()
    assert x.numel() >= 4000 and x.min() > 0 and x.max() < 1
    quartiles = torch.quantile(x, torch.tensor([0.25, 0.5, 0.75], dtype=x.dtype))
    assert torch.allclose(quartiles, torch.tensor([0.25, 0.5, 0.75], dtype=x.dtype), atol=0.03), quartiles
    assert x.mean().item() == pytest.approx(0.5, abs=0.02)


def seeded_log_decay(variant, gates):
    """The log decay a seeded recipe drew: g, or log σ(f) for mLSTM's forget gate."""
    return F.logsigmoid(gates["f"]) if variant == "mlstm" else gates["g"]


@pytest.mark.parametrize("variant", [v for v in VARIANTS if "g" in GATES[v] or v == "mlstm"])
def test_every_seeded_decay_is_uniform_between_twice_log_alpha_and_zero(variant):
    """The module's promise for every variant: each log decay uniform in (2 log α, 0), so the decays keep
    α a step on average in log space. RetNet's is one rate per head and held over every token, as the
    paper's γ_h = 1 − 2^(−5−h) (drawn at random around α here instead of from that ladder)."""
    alpha, shape = 0.9, (1, 1, 4000, 4) if variant == "retnet" else (2, 1000, 2, 4)
    gates = make_gates(variant, shape, alpha=alpha, beta=0.6, seed=7, dtype=torch.float64)
    g = seeded_log_decay(variant, gates)
    if variant == "retnet":
        assert g.shape == (4000,)                             # per head, the same at every token
    uniform_share(g / (2 * math.log(alpha)))


@pytest.mark.parametrize("variant", [v for v in VARIANTS if "beta" in GATES[v] or v == "rwkv7"])
def test_every_seeded_correction_is_uniform_between_zero_and_beta(variant):
    shape, beta = (2, 1000, 2, 4), 0.6
    gates = make_gates(variant, shape, alpha=0.9, beta=beta, seed=7, dtype=torch.float64)
    if variant == "rwkv7":                                    # b = β_i κ̂ with β_i per channel, a = −κ̂
        step = gates["b"] / -gates["a"]
    else:
        step = gates["beta"]
    uniform_share(step / beta)


def test_seeded_trials_draw_different_rates():
    first, second = (make_gates("retnet", SHAPE, alpha=0.9, seed=s)["g"] for s in (1, 2))
    assert not torch.equal(first, second) and torch.equal(first, make_gates("retnet", SHAPE, alpha=0.9, seed=1)["g"])


def test_retnet_paper_decays():
    assert torch.allclose(retnet_log_decay(3, torch.float64).exp(),
                          torch.tensor([1 - 2 ** -5, 1 - 2 ** -6, 1 - 2 ** -7], dtype=torch.float64))


@pytest.mark.parametrize("bad, message", [(dict(alpha=0.0), "alpha"), (dict(alpha=1.5), "alpha"),
                                          (dict(beta=-0.1), "beta"), (dict(beta=2.0), "beta")])
def test_out_of_range_knobs_are_refused(bad, message):
    with pytest.raises(ValueError, match=message):
        make_gates("gated_deltanet", SHAPE, **bad)


def test_unknown_variant_and_rwkv7_without_keys_are_refused():
    with pytest.raises(ValueError, match="unknown variant"):
        make_gates("mamba3", SHAPE)
    with pytest.raises(ValueError, match="keys"):
        make_gates("rwkv7", SHAPE)


@pytest.mark.parametrize("variant", [v for v in VARIANTS if v != "softmax"])
def test_recipe_gates_run_the_same_in_every_form(variant):
    B, T, H, K = 1, 23, 2, 8
    q, k, v = (torch.randn(B, T, H, K, dtype=torch.float64) for _ in range(3))
    gates = make_gates(variant, (B, T, H, K), alpha=0.7, beta=0.9, seed=1, dtype=torch.float64)
    o_rec, _ = forward(variant, q, k, v, form="recurrent", **gates)
    o_chunk, _ = forward(variant, q, k, v, form="chunked", chunk_size=8, **gates)
    assert rel_rms(o_chunk, o_rec) < 1e-10
