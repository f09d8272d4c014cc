"""The mixer layers: the sequence form equals stepping token by token; gates stay in range."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from lineare.engine.layers import LAYERS, LayerCache, make_layer
from lineare.engine.stepping import StepRecord

D_MODEL, HEADS, D_K, D_V = 16, 2, 8, 6          # d_k != d_v so a transposed state cannot pass
T, CHUNK = 11, 4                                  # several chunks and a shorter last one

# (variant, options): every variant, plus the selectable feature maps and β ∈ (0, 2)
CASES = [(v, {}) for v in LAYERS] + [
    ("linear", {"normalize": True}), ("linear", {"feature_map": "relu"}),
    ("linear", {"feature_map": "identity"}), ("deltanet", {"allow_neg_eigval": True}),
    ("gated_deltanet", {"allow_neg_eigval": True}),
]
IDS = [v + "".join(f"-{k}={o}" for k, o in opts.items()) for v, opts in CASES]


def layer_and_input(variant, seed=0, dtype=torch.float64, **options):
    torch.manual_seed(seed)
    layer = make_layer(variant, D_MODEL, HEADS, D_K, D_V, chunk_size=CHUNK, **options).to(dtype)
    x = torch.randn(2, T, D_MODEL, dtype=dtype)
    return layer, x


def step_through(layer, x):
    cache, outputs, records = None, [], []
    for t in range(x.shape[1]):
        y, cache, record = layer.step(x[:, t], cache)
        outputs.append(y)
        records.append(record)
    return torch.stack(outputs, 1), cache, records


@pytest.mark.parametrize("variant,options", CASES, ids=IDS)
def test_sequence_form_equals_stepping(variant, options):
    layer, x = layer_and_input(variant, **options)
    with torch.no_grad():
        y_seq, state_seq = layer(x, return_state=True)
        y_step, cache, records = step_through(layer, x)
    assert y_seq.shape == (2, T, D_MODEL)
    assert (y_step - y_seq).abs().max().item() < 1e-10 * max(1.0, y_seq.abs().max().item())
    # the final engine states agree too
    parts = lambda s: [s] if torch.is_tensor(s) else list(s)
    for a, b in zip(parts(cache.state), parts(state_seq)):
        assert torch.allclose(a, b, rtol=1e-9, atol=1e-12)
    assert isinstance(cache, LayerCache) and cache.conv.shape == (2, 3, layer.conv.weight.shape[0])
    assert all(isinstance(r, StepRecord) and r.variant == variant for r in records)
    assert records[-1].output.shape == (2, HEADS, D_V)


@pytest.mark.parametrize("variant", LAYERS)
def test_layer_is_causal(variant):
    """Changing token t changes no output before t (the short convolution looks back only)."""
    layer, x = layer_and_input(variant)
    changed = x.clone()
    changed[:, 6] += 1.0
    with torch.no_grad():
        y, y_changed = layer(x), layer(changed)
    assert torch.equal(y[:, :6], y_changed[:, :6])
    assert not torch.allclose(y[:, 6:], y_changed[:, 6:])


def test_short_convolution_reaches_three_tokens_back():
    layer, x = layer_and_input("deltanet")
    changed = x.clone()
    changed[:, 2] += 1.0
    with torch.no_grad():
        mixed, mixed_changed = layer.conv(layer.qkv(x)), layer.conv(layer.qkv(changed))
    differs = (mixed - mixed_changed).abs().amax(dim=(0, 2)) > 0
    assert differs.tolist() == [False, False, True, True, True, True] + [False] * (T - 6)


def gates_of(variant, seed=0, scale=0.3, **options):
    """The gates a layer hands to the engine, with weights moved well away from initialization."""
    layer, x = layer_and_input(variant, seed=seed, **options)
    with torch.no_grad():
        for p in layer.parameters():        # random weights well beyond initialization
            p.add_(scale * torch.randn_like(p))
        mixed = layer.conv(layer.qkv(x))
        q, k, v, gates, _ = layer.mixer_inputs(x, mixed)
    return q, k, v, gates


@pytest.mark.parametrize("variant", ["retnet", "mamba2", "gla", "gated_deltanet", "rwkv6", "rwkv7"])
@pytest.mark.parametrize("seed", [0, 1])
def test_decays_in_unit_interval(variant, seed):
    _, _, _, gates = gates_of(variant, seed)
    decay = gates["g"].exp()
    assert (gates["g"] <= 0).all() and (decay > 0).all() and (decay <= 1).all()


def test_retnet_decays_are_fixed_per_head():
    layer, x = layer_and_input("retnet")
    _, _, _, gates = layer.mixer_inputs(x, layer.conv(layer.qkv(x)))[:4]
    gamma = gates["g"].exp()
    assert gamma.shape == (HEADS,)
    assert torch.allclose(gamma, torch.tensor([1 - 2 ** (-5 - h) for h in range(HEADS)], dtype=gamma.dtype))


def test_gla_gate_is_logsigmoid_over_16():
    _, _, _, gates = gates_of("gla")
    assert (gates["g"] >= -math.inf).all() and (gates["g"] < 0).all()
    assert gates["g"].shape == (2, T, HEADS, D_K)
    # logsigmoid/16 cannot fall below −(|x|+log 2)/16; with moderate inputs decays stay near 1
    layer, x = layer_and_input("gla")
    with torch.no_grad():
        g = layer.mixer_inputs(x, layer.conv(layer.qkv(x)))[3]["g"]
    assert g.exp().min() > 0.9


def test_rwkv7_decay_floor():
    _, _, _, gates = gates_of("rwkv7")
    assert (gates["g"] >= -math.exp(-0.5) - 1e-12).all()


@pytest.mark.parametrize("variant,beta_max", [("deltanet", 1.0), ("gated_deltanet", 1.0)])
@pytest.mark.parametrize("negative", [False, True])
def test_delta_rule_beta_and_unit_keys(variant, beta_max, negative):
    q, k, _, gates = gates_of(variant, allow_neg_eigval=negative)
    top = 2.0 if negative else beta_max
    beta = gates["beta"]
    assert beta.shape == (2, T, HEADS)
    assert (beta > 0).all() and (beta < top).all()
    if negative:
        assert beta.max() > 1.0                  # (0, 2): eigenvalues of I − β k kᵀ reach below 0
    assert torch.allclose(k.norm(dim=-1), torch.ones(2, T, HEADS, dtype=k.dtype))
    assert torch.allclose(q.norm(dim=-1), torch.ones(2, T, HEADS, dtype=q.dtype))


def test_rwkv7_removal_key_and_rate():
    _, _, _, gates = gates_of("rwkv7")
    kappa = -gates["a"]
    assert torch.allclose(kappa.norm(dim=-1), torch.ones(2, T, HEADS, dtype=kappa.dtype))
    rate = gates["b"] / kappa
    assert (rate > 0).all() and (rate < 1).all()


def test_mlstm_gates_are_preactivations_with_open_forget_gate():
    layer, x = layer_and_input("mlstm", dtype=torch.float32)
    with torch.no_grad():
        gates = layer.mixer_inputs(x, layer.conv(layer.qkv(x)))[3]
    assert gates["i"].shape == gates["f"].shape == (2, T, HEADS)
    assert torch.sigmoid(gates["f"]).mean() > 0.9         # starts out remembering


def test_mamba2_delta_positive_and_value_scaled():
    layer, x = layer_and_input("mamba2")
    with torch.no_grad():
        mixed = layer.conv(layer.qkv(x))
        q, k, v, gates, skip = layer.mixer_inputs(x, mixed)
        delta = F.softplus(layer.dt(x) + layer.dt_bias)
        X = F.silu(mixed)[..., -HEADS * D_V:].unflatten(-1, (HEADS, D_V))
    assert (delta > 0).all()
    assert torch.allclose(gates["g"], delta * -torch.exp(layer.A_log))
    assert torch.allclose(v, delta.unsqueeze(-1) * X)
    assert torch.allclose(skip, layer.D[:, None] * X)


def test_linear_feature_maps():
    for name, check in (("elu1", lambda t: (t > 0).all()), ("relu", lambda t: (t >= 0).all())):
        q, k, _, _ = gates_of("linear", feature_map=name)
        assert check(q) and check(k)


def test_records_carry_delta_rule_error():
    layer, x = layer_and_input("deltanet")
    _, _, records = step_through(layer, x)
    r = records[5]
    assert r.beta.shape == (2, HEADS) and r.prediction.shape == (2, HEADS, D_V)
    assert np.allclose(r.error, r.target - r.prediction)


def test_unknown_variant_and_feature_map():
    with pytest.raises(ValueError, match="unknown variant"):
        make_layer("transformer", D_MODEL, HEADS, D_K, D_V)
    with pytest.raises(ValueError, match="unknown feature map"):
        make_layer("linear", D_MODEL, HEADS, D_K, D_V, feature_map="cosine")


@pytest.mark.parametrize("variant", ["mamba2", "gla", "gated_deltanet", "rwkv6"])
def test_runaway_decay_gates_stay_finite(variant):
    """Gates pushed to log decays of −10⁸ per step are floored, so float32 training stays finite."""
    layer, x = layer_and_input(variant, dtype=torch.float32)
    with torch.no_grad():
        for name, p in layer.named_parameters():
            if name in ("w0", "A_log", "dt_bias") or name.startswith("gate.1.bias"):
                p.fill_(20.0 if name != "gate.1.bias" else -1e9)
        g = layer.mixer_inputs(x, layer.conv(layer.qkv(x)))[3]["g"]
    assert g.min() >= -5.0
    y = layer(x)
    y.sum().backward()
    assert torch.isfinite(y).all()
    assert all(torch.isfinite(p.grad).all() for p in layer.parameters() if p.grad is not None)
