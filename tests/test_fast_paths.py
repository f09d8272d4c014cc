"""The engine's fast paths compute what the plain ones do.

- chunked form: blocks of chunks chained through the state, the factored decay scores and their
  exact fallback (both taken, in one call);
- the one-token Decoder (in place, no records) against the recorded step;
- softmax's chunked form through scaled_dot_product_attention, with and without a cache;
- the cheap validation still rejects every NaN and infinity, and accepts finite inputs whose sum
  overflows.
"""
import math

import numpy as np
import pytest
import torch

from lineare.engine.ops import chunked, forward
from lineare.engine.stepping import Decoder, init_state, run
from inputs import VARIANTS, make_inputs, rel_rms
from reference import reference

PER_CHANNEL = ("gla", "rwkv6", "rwkv7")
TIME_GATES = ("g", "beta", "a", "b", "i", "f")


def parts(state):
    return (state,) if torch.is_tensor(state) else tuple(state)


def assert_same(o, s, o_ref, s_ref, tol):
    assert rel_rms(o, o_ref) <= tol, rel_rms(o, o_ref)
    for x, ref in zip(parts(s), parts(s_ref)):
        assert rel_rms(x, ref) <= tol, rel_rms(x, ref)


# ---------------------------------------------------------------- chunked: blocks and decay paths

@pytest.mark.parametrize("variant", VARIANTS)
def test_one_chunk_per_block_equals_default_blocks(variant, monkeypatch):
    """Blocks are a cache optimization only: one chunk per block gives the same result."""
    q, k, v, gates = make_inputs(variant, B=2, T=150, H=3, strong=True)
    o_ref, s_ref = forward(variant, q, k, v, form="chunked", chunk_size=16, **gates)
    monkeypatch.setattr(chunked, "_BLOCK_ELEMENTS", 1)
    assert len(list(chunked.blocks(150, 16, 3 * 2 * 16))) == 10                 # 9 whole chunks, 1 short
    o, s = forward(variant, q, k, v, form="chunked", chunk_size=16, **gates)
    assert_same(o, s, o_ref, s_ref, 1e-12)


@pytest.mark.parametrize("kind", ["per-token", "per-channel", "per-channel-read-before", "low-rank"])
def test_factored_chunk_equals_the_exact_one(kind, monkeypatch):
    """One chunk's pieces (read-out, state read, write, transition) with exp(G_t) · exp(−G_j) in one
    matmul, against the same chunk with the factored path switched off."""
    gen = torch.Generator().manual_seed(0)
    randn = lambda *shape: torch.randn(2, 3, 4, *shape, generator=gen, dtype=torch.float64)   # [B,H,N,·]
    C, K = 23, 7
    q, k, v = randn(C, K), randn(C, K), randn(C, 5)
    g = -0.4 * torch.rand(2, 3, 4, C, 1 if kind == "per-token" else K, generator=gen, dtype=torch.float64)
    extra = {"per-token": {}, "per-channel": {}, "per-channel-read-before": {"read_before": True},
             "low-rank": {"a": 0.3 * randn(C, K), "b": 0.3 * randn(C, K)}}[kind]
    factored = chunked.dplr_blocks(q, k, v, g, **extra)
    monkeypatch.setattr(chunked, "factor_limit", lambda dtype: -1.0)
    exact = chunked.dplr_blocks(q, k, v, g, **extra)
    for x, ref in zip(factored, exact):
        assert (x is None) == (ref is None)
        if x is not None:
            assert rel_rms(x, ref) <= 1e-13


@pytest.mark.parametrize("variant", ["mamba2", "gla", "gated_deltanet", "rwkv6", "rwkv7"])
def test_one_call_takes_both_decay_paths(variant, monkeypatch):
    """Mild decays in the first half (factored), −60 per step in the second (beyond float32's
    factor limit: exact). Small blocks put the halves in different blocks; both must agree with
    the float64 recurrence, and both paths must have run."""
    q, k, v, gates = make_inputs(variant, B=1, T=128, H=2, dtype=torch.float32)
    gates["g"] = gates["g"].clone()
    gates["g"][:, 64:] = -60 * torch.rand_like(gates["g"][:, 64:])
    monkeypatch.setattr(chunked, "_BLOCK_ELEMENTS", 1)                          # one chunk per block
    exact_calls = []
    exact = chunked.decayed_scores
    monkeypatch.setattr(chunked, "decayed_scores", lambda *a, **kw: exact_calls.append(1) or exact(*a, **kw))
    o, s = forward(variant, q, k, v, form="chunked", chunk_size=16, **gates)
    double = lambda x: x.double() if torch.is_tensor(x) else x
    o_ref, s_ref = forward(variant, double(q), double(k), double(v), form="recurrent",
                           **{n: double(x) for n, x in gates.items()})
    # the 4 strong blocks take the exact path (the low-rank ones need 4 score matrices), the 4 mild ones do not
    assert len(exact_calls) == 4 * (4 if variant in ("gated_deltanet", "rwkv7") else 1)
    assert torch.isfinite(o).all() and torch.isfinite(s).all()
    assert_same(o, s, o_ref, s_ref, 1e-4)


@pytest.mark.parametrize("variant", ["retnet", "mamba2", "gla", "gated_deltanet", "rwkv6", "rwkv7"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["fp32", "fp64"])
def test_exact_path_alone_matches_the_reference(variant, dtype, monkeypatch):
    """With the factored path switched off, every decaying variant still meets the contract."""
    monkeypatch.setattr(chunked, "factor_limit", lambda dtype: -1.0)
    q, k, v, gates = make_inputs(variant, B=2, T=45, H=2, d_k=8, d_v=6, dtype=dtype)
    o, s = forward(variant, q, k, v, form="chunked", chunk_size=16, **gates)
    o_ref, s_ref = reference(variant, q, k, v, **gates)
    assert_same(o, s, o_ref, s_ref, {torch.float32: 1e-5, torch.float64: 1e-10}[dtype])


# ---------------------------------------------------------------- the one-token Decoder

CASES = [("linear", False), ("linear", True)] + [(v, False) for v in VARIANTS if v != "linear"]


@pytest.mark.parametrize("variant,normalize", CASES, ids=[v + ("-normalized" if n else "") for v, n in CASES])
def test_decoder_equals_the_recorded_step(variant, normalize):
    T = 150 if variant == "softmax" else 13                                       # past the cache's first 64 slots
    q, k, v, gates = make_inputs(variant, B=2, T=T, H=3, strong=True, normalize=normalize)
    gates.pop("normalize", None)
    o_ref, s_ref, _ = run(variant, q, k, v, normalize=normalize, **gates)
    start = init_state(variant, batch=2, heads=3, d_k=8, d_v=6, dtype=torch.float64, normalize=normalize)
    untouched = [x.clone() for x in parts(start)]
    decoder = Decoder(variant, start)
    at = lambda name, x, t: x[:, t] if name in TIME_GATES and variant != "retnet" else x
    outputs = []
    for t in range(T):
        token_gates = {name: at(name, x, t) for name, x in gates.items()}
        if t == 0:
            decoder.check(q[:, t], k[:, t], v[:, t], **token_gates)
        outputs.append(decoder.step(q[:, t], k[:, t], v[:, t], **token_gates))
    assert_same(torch.stack(outputs, 1), decoder.state, o_ref, s_ref, 1e-12)
    assert all(torch.equal(x, y) for x, y in zip(parts(start), untouched))       # works on its own copy


def test_decoder_continues_a_state_and_checks_when_asked():
    q, k, v, gates = make_inputs("gla", B=1, T=9, H=2, d_k=4, d_v=3)
    _, state = forward("gla", q[:, :5], k[:, :5], v[:, :5], form="chunked", g=gates["g"][:, :5])
    decoder = Decoder("gla", state, scale=0.3)
    o_ref, s_ref = forward("gla", q[:, 5:], k[:, 5:], v[:, 5:], form="recurrent", scale=0.3, initial_state=state,
                           g=gates["g"][:, 5:])
    o = torch.stack([decoder.step(q[:, t], k[:, t], v[:, t], g=gates["g"][:, t]) for t in range(5, 9)], 1)
    assert_same(o, decoder.state, o_ref, s_ref, 1e-12)
    with pytest.raises(ValueError, match="needs gate g"):
        decoder.check(q[:, 0], k[:, 0], v[:, 0])
    with pytest.raises(ValueError, match="contains NaN"):
        decoder.check(q[:, 0] * math.nan, k[:, 0], v[:, 0], g=gates["g"][:, 0])
    with pytest.raises(ValueError, match="the state has"):
        decoder.check(q[:, 0, :1], k[:, 0, :1], v[:, 0, :1], g=gates["g"][:, 0, :1])
    with pytest.raises(ValueError, match="unknown variant"):
        Decoder("gru", state)
    with pytest.raises(TypeError, match="MLSTMState"):
        Decoder("mlstm", state)


# ---------------------------------------------------------------- softmax through SDPA

@pytest.mark.parametrize("cached", [0, 9])
@pytest.mark.parametrize("chunk_size", [4, 64])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["fp32", "fp64"])
def test_softmax_chunked_through_sdpa_matches_the_reference(cached, chunk_size, dtype, monkeypatch):
    calls = []
    sdpa = torch.nn.functional.scaled_dot_product_attention
    monkeypatch.setattr(chunked.F, "scaled_dot_product_attention", lambda *a, **kw: calls.append(1) or sdpa(*a, **kw))
    q, k, v, _ = make_inputs("softmax", B=2, T=cached + 23, H=3, dtype=dtype)
    cache = forward("softmax", q[:, :cached], k[:, :cached], v[:, :cached], form="recurrent")[1] if cached else None
    o, (keys, values) = forward("softmax", q[:, cached:], k[:, cached:], v[:, cached:], form="chunked",
                                chunk_size=chunk_size, initial_state=cache)
    o_ref, _ = reference("softmax", q, k, v)
    assert calls and rel_rms(o, o_ref[:, cached:]) <= {torch.float32: 1e-6, torch.float64: 1e-12}[dtype]
    assert torch.equal(keys, k) and torch.equal(values, v)


# ---------------------------------------------------------------- validation

@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("name", ["q", "k", "v", "g", "a", "b", "initial_state"])
@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_every_nan_and_infinity_is_rejected(bad, name, where):
    """Anywhere in a tensor large enough for vectorized loops, first element, middle and last."""
    q, k, v, gates = make_inputs("rwkv7", B=1, T=64, H=2, d_k=16, d_v=16, dtype=torch.float32)
    tensors = {"q": q, "k": k, "v": v, **gates, "initial_state": torch.zeros(1, 2, 16, 16)}
    spoiled = tensors[name].clone()
    index = {"first": 0, "middle": spoiled.numel() // 2 + 3, "last": -1}[where]
    spoiled.view(-1)[index] = bad if not (name == "g" and bad == math.inf) else math.nan   # +inf in g: "≤ 0" says so
    tensors[name] = spoiled
    with pytest.raises(ValueError, match=f"{name} contains NaN or infinite values"):
        forward("rwkv7", tensors["q"], tensors["k"], tensors["v"], form="chunked",
                initial_state=tensors["initial_state"], g=tensors["g"], a=tensors["a"], b=tensors["b"])


def test_finite_inputs_whose_sum_overflows_are_accepted():
    q, k, v, _ = make_inputs("linear", B=1, T=8, H=1, d_k=4, d_v=3, dtype=torch.float32)
    huge = torch.full_like(v, 3e38)                                               # finite; its sum is inf
    o, _ = forward("linear", q, k * 0, huge, form="chunked")
    assert o.shape == v.shape
    np.testing.assert_array_equal(o.numpy(), 0)
