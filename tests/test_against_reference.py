"""The engine (`engine.ops.forward`) against the independent float64 loop reference.

Part 1 tests the reference itself (closed forms, special cases, splitting a sequence); it runs
without the engine. Part 2 compares every variant and every form of the engine with it.
"""
import functools
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from inputs import VARIANTS, make_inputs, rel_rms
from reference import reference

import lineare.engine.ops as ops

B, D_K, D_V = 2, 8, 6  # d_k != d_v so transposed states cannot pass
TOL = {torch.float64: 1e-10, torch.float32: 1e-5}
TOL_STRONG_F32 = 1e-4  # engine/README.md, "Contract": strong decays agree within 1e-4 in float32
DECAYING = ("retnet", "mamba2", "gla", "gated_deltanet", "rwkv6", "rwkv7", "mlstm")
# (variant, normalize): linear attention is checked with and without the z normalizer
CASES = [(v, False) for v in VARIANTS] + [("linear", True)]
CASE_IDS = [v + ("_norm" if n else "") for v, n in CASES]
TIME_GATES = ("g", "beta", "a", "b", "i", "f")  # gates indexed by time (except retnet's g)


def _call(variant, q, k, v, gates, **kw):
    return reference(variant, q, k, v, **kw, **gates)


def _parts(state):
    return [state] if torch.is_tensor(state) else list(state)


def _split_gates(variant, gates, sl):
    out = {}
    for name, x in gates.items():
        timed = name in TIME_GATES and not (variant == "retnet" and name == "g")
        out[name] = x[:, sl] if timed else x
    return out


# ---------------------------------------------------------------------------------------------
# Part 1 — the reference itself (no engine needed)
# ---------------------------------------------------------------------------------------------

def _decay_weights(g_cum, t, i):
    """exp of the summed log decays of steps i+1..t (g_cum is the inclusive cumulative sum)."""
    return np.exp(g_cum[t] - g_cum[i])


@pytest.mark.parametrize("normalize", [False, True])
def test_reference_linear_closed_form(normalize):
    q, k, v, gates = make_inputs("linear", B=2, T=9, H=2, normalize=normalize, seed=1)
    o, state = _call("linear", q, k, v, gates)
    qs = q * D_K ** -0.5
    # o = tril(q̃ kᵀ) v, per batch and head
    A = torch.einsum("bthd,bshd->bhts", qs, k).tril()
    num = torch.einsum("bhts,bshe->bthe", A, v)
    if normalize:
        num = num / (A.sum(-1).permute(0, 2, 1)[..., None] + 1e-10)
    assert rel_rms(o, num) < 1e-13
    S = state[0] if normalize else state
    assert rel_rms(S, torch.einsum("bthe,bthd->bhed", v, k)) < 1e-13
    if normalize:
        assert rel_rms(state[1], k.sum(1)) < 1e-13


@pytest.mark.parametrize("variant", ["retnet", "mamba2", "gla", "rwkv6"])
def test_reference_decay_closed_form(variant):
    q, k, v, gates = make_inputs(variant, B=2, T=11, H=2, seed=2)
    o, S = _call(variant, q, k, v, gates)
    qs, k, v = (x.numpy() for x in (q * D_K ** -0.5, k, v))
    g = gates["g"].numpy()
    Bn, T, H, _ = qs.shape
    for b in range(Bn):
        for h in range(H):
            if variant == "retnet":
                gh = np.repeat(g[h], T)[:, None] * np.ones(D_K)
            elif variant == "mamba2":
                gh = g[b, :, h][:, None] * np.ones(D_K)
            else:
                gh = g[b, :, h]
            cum = np.cumsum(gh, axis=0)  # [T, d_k]
            for t in range(T):
                exp = np.zeros(D_V)
                for i in range(t + 1):
                    if variant == "rwkv6":
                        if i == t:
                            kk = gates["u"].numpy()[h] * k[b, i, h]
                        else:  # S_{t-1}: decays of steps i+1..t-1
                            kk = k[b, i, h] * _decay_weights(cum, t - 1, i)
                    else:
                        kk = k[b, i, h] * _decay_weights(cum, t, i)
                    exp += (kk @ qs[b, t, h]) * v[b, i, h]
                assert np.allclose(o[b, t, h].numpy(), exp, rtol=1e-12, atol=1e-13)
            S_exp = sum(np.outer(v[b, i, h], k[b, i, h] * _decay_weights(cum, T - 1, i))
                        for i in range(T))
            assert np.allclose(S[b, h].numpy(), S_exp, rtol=1e-12, atol=1e-13)


def test_reference_deltanet_recalls_latest_value():
    # β = 1 with keys from an orthonormal set: writing replaces the value stored under a key
    T, d_k = 30, 4
    gen = torch.Generator().manual_seed(3)
    basis = torch.linalg.qr(torch.randn(d_k, d_k, generator=gen, dtype=torch.float64))[0].T
    kid = torch.randint(0, d_k, (T,), generator=gen)
    qid = torch.randint(0, d_k, (T,), generator=gen)
    k = basis[kid].reshape(1, T, 1, d_k)
    q = basis[qid].reshape(1, T, 1, d_k)
    v = torch.randn(1, T, 1, D_V, generator=gen, dtype=torch.float64)
    beta = torch.ones(1, T, 1, dtype=torch.float64)
    o, _ = reference("deltanet", q, k, v, scale=1.0, beta=beta)
    for t in range(T):
        writes = [s for s in range(t + 1) if kid[s] == qid[t]]
        expected = v[0, writes[-1], 0] if writes else torch.zeros(D_V, dtype=torch.float64)
        assert torch.allclose(o[0, t, 0], expected, atol=1e-12), t


def test_reference_mlstm_no_forgetting_is_normalized_linear():
    q, k, v, gates = make_inputs("mlstm", B=2, T=13, H=2, seed=4)
    k = 0.3 * k  # so that both branches of max(|n·q|, 1) occur
    i = torch.zeros_like(gates["i"])
    f = torch.full_like(gates["f"], 60.0)  # σ(f) = 1 to double precision
    o, (C, n, m) = reference("mlstm", q, k, v, i=i, f=f)
    qs = q * D_K ** -0.5
    A = torch.einsum("bthd,bshd->bhts", qs, k).tril()
    num = torch.einsum("bhts,bshe->bthe", A, v)
    den = A.sum(-1).permute(0, 2, 1).abs().clamp_min(1.0)[..., None]
    assert (den > 1).any() and (den == 1).any()
    assert rel_rms(o, num / den) < 1e-13
    assert rel_rms(C, torch.einsum("bthe,bthd->bhed", v, k)) < 1e-13
    assert rel_rms(n, k.sum(1)) < 1e-13
    assert torch.equal(m, torch.zeros_like(m))


@pytest.mark.parametrize("with_state", [False, True])
def test_reference_mlstm_matches_unstabilized(with_state):
    # With C_t = C̄_t e^{-m_t}: o_t = C̄_t q̃ / max(|n̄_t·q̃|, 1) for the unstabilized C̄, n̄
    q, k, v, gates = make_inputs("mlstm", B=1, T=10, H=2, seed=5)
    i, f = gates["i"], gates["f"] - 3  # moderate forgetting, no overflow without stabilizer
    gen = torch.Generator().manual_seed(6)
    C0 = torch.randn(1, 2, D_V, D_K, generator=gen, dtype=torch.float64)
    n0 = torch.randn(1, 2, D_K, generator=gen, dtype=torch.float64)
    m0 = torch.randn(1, 2, generator=gen, dtype=torch.float64)
    init = (C0, n0, m0) if with_state else None
    o, (C, n, m) = reference("mlstm", q, k, v, i=i, f=f, initial_state=init)
    qs = q * D_K ** -0.5
    for h in range(2):
        Cb = (C0[0, h] * m0[0, h].exp()) if with_state else torch.zeros(D_V, D_K, dtype=torch.float64)
        nb = (n0[0, h] * m0[0, h].exp()) if with_state else torch.zeros(D_K, dtype=torch.float64)
        mm = m0[0, h].item() if with_state else 0.0
        for t in range(10):
            sf, ei = torch.sigmoid(f[0, t, h]), i[0, t, h].exp()
            Cb = sf * Cb + ei * torch.outer(v[0, t, h], k[0, t, h])
            nb = sf * nb + ei * k[0, t, h]
            mm = max(F.logsigmoid(f[0, t, h]).item() + mm, i[0, t, h].item())
            expected = Cb @ qs[0, t, h] / max(abs(nb @ qs[0, t, h]).item(), 1.0)
            assert rel_rms(o[0, t, h], expected) < 1e-12
        assert abs(m[0, h].item() - mm) < 1e-12
        assert rel_rms(C[0, h], Cb * math.exp(-mm)) < 1e-12
        assert rel_rms(n[0, h], nb * math.exp(-mm)) < 1e-12


@pytest.mark.parametrize("cache", [0, 4])
def test_reference_softmax_closed_form(cache):
    q, k, v, _ = make_inputs("softmax", B=2, T=9, H=2, seed=7)
    gen = torch.Generator().manual_seed(8)
    kc = torch.randn(2, cache, 2, D_K, generator=gen, dtype=torch.float64)
    vc = torch.randn(2, cache, 2, D_V, generator=gen, dtype=torch.float64)
    o, (k_all, v_all) = reference("softmax", q, k, v, initial_state=(kc, vc) if cache else None)
    K, V = torch.cat([kc, k], 1), torch.cat([vc, v], 1)
    scores = torch.einsum("bthd,bshd->bhts", q * D_K ** -0.5, K)
    allowed = torch.ones(9, cache + 9, dtype=torch.bool).tril(diagonal=cache)
    P = scores.masked_fill(~allowed, float("-inf")).softmax(-1)
    assert rel_rms(o, torch.einsum("bhts,bshe->bthe", P, V)) < 1e-13
    assert torch.equal(k_all, K) and torch.equal(v_all, V)


def test_reference_special_cases_agree():
    """Variants that reduce to one another for particular gates give the same numbers."""
    T, H = 12, 2
    q, k, v, gd = make_inputs("gated_deltanet", B=2, T=T, H=H, seed=9)
    beta, zero_bt = gd["beta"], torch.zeros(2, T, H, dtype=torch.float64)
    o_delta, S_delta = reference("deltanet", q, k, v, beta=beta)
    # Gated DeltaNet without decay is DeltaNet
    o, S = reference("gated_deltanet", q, k, v, g=zero_bt, beta=beta)
    assert rel_rms(o, o_delta) < 1e-14 and rel_rms(S, S_delta) < 1e-14
    # RWKV-7 with w = 1, a = −k, b = βk and key βk is DeltaNet
    bk = beta[..., None] * k
    o, S = reference("rwkv7", q, bk, v, g=torch.zeros_like(k), a=-k, b=bk)
    assert rel_rms(o, o_delta) < 1e-13 and rel_rms(S, S_delta) < 1e-13

    q, k, v, gr = make_inputs("retnet", B=2, T=T, H=H, seed=10, strong=True)
    o_ret, S_ret = reference("retnet", q, k, v, **gr)
    g_bt = gr["g"].expand(2, T, H).clone()
    o_m2, S_m2 = reference("mamba2", q, k, v, g=g_bt)  # constant scalar decay = RetNet
    assert rel_rms(o_m2, o_ret) < 1e-14 and rel_rms(S_m2, S_ret) < 1e-14
    g_btd = g_bt[..., None].expand(2, T, H, D_K).clone()
    o, S = reference("gla", q, k, v, g=g_btd)  # per-channel decay equal across channels
    assert rel_rms(o, o_ret) < 1e-13 and rel_rms(S, S_ret) < 1e-13
    o, S = reference("rwkv7", q, k, v, g=g_btd, a=torch.zeros_like(k), b=torch.randn_like(k))
    assert rel_rms(o, o_ret) < 1e-13 and rel_rms(S, S_ret) < 1e-13
    o, S = reference("retnet", q, k, v, g=torch.zeros(H, dtype=torch.float64))
    o_lin, S_lin = reference("linear", q, k, v)
    assert rel_rms(o, o_lin) < 1e-14 and rel_rms(S, S_lin) < 1e-14


@pytest.mark.parametrize("variant,normalize", CASES, ids=CASE_IDS)
def test_reference_split_sequence(variant, normalize):
    """Feeding the final state back as initial_state continues the sequence exactly."""
    q, k, v, gates = make_inputs(variant, B=2, T=10, H=2, seed=11, normalize=normalize)
    o, state = reference(variant, q, k, v, **gates)
    cut = 4
    first, second = slice(0, cut), slice(cut, None)
    o1, s1 = reference(variant, q[:, first], k[:, first], v[:, first],
                       **_split_gates(variant, gates, first))
    o2, s2 = reference(variant, q[:, second], k[:, second], v[:, second], initial_state=s1,
                       **_split_gates(variant, gates, second))
    assert rel_rms(torch.cat([o1, o2], 1), o) < 1e-13
    for a, b in zip(_parts(s2), _parts(state)):
        assert rel_rms(a, b) < 1e-13


def test_reference_accepts_float32_and_scale():
    q, k, v, gates = make_inputs("gla", B=1, T=5, H=1, dtype=torch.float32, seed=12)
    o, S = reference("gla", q, k, v, scale=0.37, **gates)
    assert o.dtype == torch.float64 and S.dtype == torch.float64
    o64, _ = reference("gla", 0.37 / D_K ** -0.5 * q.double(), k.double(), v.double(),
                       **{n: x.double() for n, x in gates.items()})
    assert rel_rms(o, o64) < 1e-14


# ---------------------------------------------------------------------------------------------
# Part 2 — the engine against the reference
# ---------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _case(variant, normalize, T, H, dtype, strong, seed, d_k=D_K, d_v=D_V):
    """Inputs and their reference output; cached because the reference loops are slow."""
    q, k, v, gates = make_inputs(variant, B=B, T=T, H=H, d_k=d_k, d_v=d_v, dtype=dtype,
                                 seed=seed, strong=strong, normalize=normalize)
    return (q, k, v, gates), reference(variant, q, k, v, **gates)


def _run_engine(variant, form, cs, q, k, v, gates, **kw):
    """The engine's output: an error it raises fails the test (softmax has a chunked form too: blocks of the
    parallel one over a growing cache)."""
    if form == "chunked":
        kw["chunk_size"] = cs
    return ops.forward(variant, q, k, v, form=form, **kw, **gates)


def _compare(variant, form, out, ref, tol, dtype):
    o, state = out
    o_ref, state_ref = ref
    assert o.shape == o_ref.shape, f"o shape {tuple(o.shape)} != {tuple(o_ref.shape)}"
    assert o.dtype == dtype, f"o dtype {o.dtype}, inputs {dtype}"
    assert torch.isfinite(o).all(), "non-finite output"
    err = rel_rms(o, o_ref)
    assert err <= tol, f"{variant}/{form}: o rel RMS {err:.3e} > {tol:.0e}"
    got, want = _parts(state), _parts(state_ref)
    assert len(got) == len(want), f"state has {len(got)} parts, expected {len(want)}"
    names = {"linear": ("S", "z"), "mlstm": ("C", "n", "m"), "softmax": ("k", "v")}.get(
        variant, ("S",))
    for name, a, b in zip(names, got, want):
        assert a.shape == b.shape, f"state {name} shape {tuple(a.shape)} != {tuple(b.shape)}"
        assert torch.isfinite(a).all(), f"non-finite state {name}"
        err = rel_rms(a, b)
        assert err <= tol, f"{variant}/{form}: state {name} rel RMS {err:.3e} > {tol:.0e}"


# T = 1 (a single token), 7 (shorter than a chunk) and 65 (several chunks plus a ragged tail).
# The long sequence runs with H = 3 only: it is the slow case, and H = 1 is covered by T = 1, 7.
SHAPES = [(1, 1), (1, 3), (7, 1), (7, 3), (65, 3)]


def _chunk_sizes(form, T, dtype):
    if form != "chunked":
        return (None,)
    # cs = 64 on T = 65 (one full chunk + one token) in float64 only, to keep the run short
    return (16,) if (T == 65 and dtype == torch.float32) else (16, 64)


def _main_params():
    params = []
    for (variant, normalize), vid in zip(CASES, CASE_IDS):
        for strong in ((False, True) if variant in DECAYING else (False,)):
            for dtype in (torch.float64, torch.float32):
                for form in ("recurrent", "parallel", "chunked"):
                    for T, H in SHAPES:
                        for cs in _chunk_sizes(form, T, dtype):
                            pid = "-".join([vid, "strong" if strong else "mild",
                                            str(dtype)[6:], form, f"T{T}", f"H{H}"]
                                           + ([f"cs{cs}"] if cs else []))
                            params.append(pytest.param(variant, normalize, strong, dtype,
                                                       form, T, H, cs, id=pid))
    return params


@pytest.mark.parametrize("variant,normalize,strong,dtype,form,T,H,cs", _main_params())
def test_engine_matches_reference(variant, normalize, strong, dtype, form, T, H, cs):
    (q, k, v, gates), ref = _case(variant, normalize, T, H, dtype, strong, seed=10 * T + H)
    out = _run_engine(variant, form, cs, q, k, v, gates)
    tol = TOL_STRONG_F32 if (strong and dtype == torch.float32) else TOL[dtype]
    _compare(variant, form, out, ref, tol, dtype)


@pytest.mark.parametrize("form,cs", [("recurrent", None), ("parallel", None), ("chunked", 16)])
@pytest.mark.parametrize("variant,normalize", CASES, ids=CASE_IDS)
def test_engine_wide_values(variant, normalize, form, cs):
    """d_v > d_k as well (the main grid has d_k > d_v)."""
    (q, k, v, gates), ref = _case(variant, normalize, 21, 2, torch.float64, False, seed=99,
                                  d_k=4, d_v=10)
    _compare(variant, form, _run_engine(variant, form, cs, q, k, v, gates), ref,
             TOL[torch.float64], torch.float64)


@pytest.mark.parametrize("form", ["recurrent", "parallel", "chunked"])
@pytest.mark.parametrize("variant,normalize", CASES, ids=CASE_IDS)
def test_engine_scale_override(variant, normalize, form):
    (q, k, v, gates), _ = _case(variant, normalize, 7, 2, torch.float64, False, seed=13)
    ref = reference(variant, q, k, v, scale=0.37, **gates)
    out = _run_engine(variant, form, 4, q, k, v, gates, scale=0.37)
    _compare(variant, form, out, ref, TOL[torch.float64], torch.float64)


def _random_state(variant, normalize, H, dtype, seed):
    """A random initial state of the right structure (as plain tensors / tuples)."""
    gen = torch.Generator().manual_seed(seed)
    randn = lambda *s: torch.randn(*s, generator=gen, dtype=torch.float64).to(dtype)
    S = randn(B, H, D_V, D_K)
    if variant == "linear" and normalize:
        z = (torch.rand(B, H, D_K, generator=gen, dtype=torch.float64) + 0.5).to(dtype)
        return "LinearState", (S.abs(), z)  # positive like a sum of positive features
    if variant == "mlstm":
        return "MLSTMState", (S, randn(B, H, D_K), 2 * randn(B, H))
    if variant == "softmax":
        return "KVCache", (randn(B, 3, H, D_K), randn(B, 3, H, D_V))
    return None, S


def _as_engine_state(ops, kind, state):
    """Wrap tuples in the engine's named tuple when it exports one (fields in the same order)."""
    if kind is None:
        return state
    cls = getattr(ops, kind, None)
    return cls(*state) if cls is not None else tuple(state)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("T", [1, 20])
@pytest.mark.parametrize("form,cs", [("recurrent", None), ("parallel", None), ("chunked", 16)])
@pytest.mark.parametrize("variant,normalize", CASES, ids=CASE_IDS)
def test_engine_initial_state(variant, normalize, form, cs, T, dtype):
    H = 3
    q, k, v, gates = make_inputs(variant, B=B, T=T, H=H, dtype=dtype, seed=20 + T,
                                 normalize=normalize)
    kind, state = _random_state(variant, normalize, H, dtype, seed=30 + T)
    ref = reference(variant, q, k, v, initial_state=state, **gates)
    out = _run_engine(variant, form, cs, q, k, v, gates,
                      initial_state=_as_engine_state(ops, kind, state))
    _compare(variant, form, out, ref, TOL[dtype], dtype)


@pytest.mark.parametrize("form,cs", [("recurrent", None), ("parallel", None), ("chunked", 16)])
@pytest.mark.parametrize("variant,normalize", CASES, ids=CASE_IDS)
def test_engine_state_fed_back(variant, normalize, form, cs):
    """The engine's own final_state, fed back, continues the sequence like the reference."""
    (q, k, v, gates), ref = _case(variant, normalize, 40, 3, torch.float64, False, seed=40)
    first, second = slice(0, 23), slice(23, None)  # both cuts fall inside a chunk of 16
    o1, s1 = _run_engine(variant, form, cs, q[:, first], k[:, first], v[:, first],
                         _split_gates(variant, gates, first))
    o2, s2 = _run_engine(variant, form, cs, q[:, second], k[:, second], v[:, second],
                         _split_gates(variant, gates, second), initial_state=s1)
    _compare(variant, form, (torch.cat([o1, o2], 1), s2), ref, TOL[torch.float64], torch.float64)
