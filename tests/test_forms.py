"""The three forms compute the same thing (engine/README.md, "Contract"), on odd lengths and strong gates."""
import pytest
import torch
import torch.nn.functional as F

from lineare.engine.ops import forward
from inputs import VARIANTS, make_inputs, rel_rms

CASES = [("linear", False), ("linear", True)] + [(v, False) for v in VARIANTS if v != "linear"]
IDS = [f"{v}{'-normalized' if n else ''}" for v, n in CASES]
TOLERANCE = {torch.float32: 1e-5, torch.float64: 1e-10}


def parts(state):
    return (state,) if torch.is_tensor(state) else tuple(state)


def assert_forms_agree(variant, normalize, T, H, chunk_size, dtype, strong, tol, d_k=8, d_v=5, seed=0):
    q, k, v, gates = make_inputs(variant, B=2, T=T, H=H, d_k=d_k, d_v=d_v, dtype=dtype, seed=seed,
                                 strong=strong, normalize=normalize)
    o_rec, s_rec = forward(variant, q, k, v, form="recurrent", **gates)
    for form in ("parallel", "chunked"):
        o, s = forward(variant, q, k, v, form=form, chunk_size=chunk_size, **gates)
        assert o.shape == (2, T, H, d_v) and o.dtype == dtype
        assert torch.isfinite(o).all(), (form, "output not finite")
        assert rel_rms(o, o_rec) <= tol, (form, rel_rms(o, o_rec))
        for x, ref in zip(parts(s), parts(s_rec)):
            assert x.shape == ref.shape and torch.isfinite(x).all()
            assert rel_rms(x, ref) <= tol, (form, "state", rel_rms(x, ref))


@pytest.mark.parametrize("variant,normalize", CASES, ids=IDS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["fp32", "fp64"])
@pytest.mark.parametrize("T", [1, 7, 63, 64, 65, 200])
def test_forms_agree(variant, normalize, dtype, T):
    for H, chunk_size in ((1, 16), (3, 64), (3, 13)):   # chunk sizes that divide T and that do not
        assert_forms_agree(variant, normalize, T, H, chunk_size, dtype, strong=False, tol=TOLERANCE[dtype])


DECAYING = ["retnet", "mamba2", "gla", "gated_deltanet", "rwkv6", "rwkv7", "mlstm"]


@pytest.mark.parametrize("variant", DECAYING)
@pytest.mark.parametrize("T", [7, 65, 200])
def test_strong_decays_stay_finite_and_agree(variant, T):
    """Log decays down to −5 per step: no chunked form may divide by a cumulative product."""
    assert_forms_agree(variant, False, T, 3, 16, torch.float32, strong=True, tol=1e-4)
    assert_forms_agree(variant, False, T, 3, 64, torch.float64, strong=True, tol=1e-10)


@pytest.mark.parametrize("variant", ["mamba2", "gla", "gated_deltanet", "rwkv7"])
def test_extreme_decays_stay_finite(variant):
    """Far beyond float32's range over one chunk (−60 per step, 64 steps): still exact."""
    q, k, v, gates = make_inputs(variant, B=1, T=130, H=2, dtype=torch.float32)
    gates["g"] = -60 * torch.rand_like(gates["g"])
    o_rec, _ = forward(variant, q, k, v, form="recurrent", **gates)
    for form in ("parallel", "chunked"):
        o, s = forward(variant, q, k, v, form=form, **gates)
        assert torch.isfinite(o).all() and torch.isfinite(s).all()
        assert rel_rms(o, o_rec) <= 1e-4


@pytest.mark.parametrize("variant,normalize", CASES, ids=IDS)
@pytest.mark.parametrize("form", ["recurrent", "parallel", "chunked"])
def test_two_pieces_equal_the_whole(variant, normalize, form):
    """Feeding final_state back as initial_state continues the sequence exactly."""
    q, k, v, gates = make_inputs(variant, B=2, T=50, H=3, normalize=normalize, strong=True)
    whole_o, whole_s = forward(variant, q, k, v, form=form, chunk_size=16, **gates)
    cut = 23
    piece = lambda x, sl: x[:, sl] if x.dim() >= 3 and x.shape[1] == 50 else x
    first = {n: piece(x, slice(None, cut)) if torch.is_tensor(x) else x for n, x in gates.items()}
    second = {n: piece(x, slice(cut, None)) if torch.is_tensor(x) else x for n, x in gates.items()}
    o1, s1 = forward(variant, q[:, :cut], k[:, :cut], v[:, :cut], form=form, chunk_size=16, **first)
    o2, s2 = forward(variant, q[:, cut:], k[:, cut:], v[:, cut:], form=form, chunk_size=16,
                     initial_state=s1, **second)
    assert rel_rms(torch.cat([o1, o2], 1), whole_o) <= 1e-10
    for x, ref in zip(parts(s2), parts(whole_s)):
        assert rel_rms(x, ref) <= 1e-10


def orthonormal_keys(n, d, seed=0):
    gen = torch.Generator().manual_seed(seed)
    basis, _ = torch.linalg.qr(torch.randn(d, d, generator=gen, dtype=torch.float64))
    return basis[:, :n].T                                                    # [n, d], orthonormal rows


@pytest.mark.parametrize("variant,beta", [("linear", None), ("deltanet", 1.0)])
@pytest.mark.parametrize("form", ["recurrent", "parallel", "chunked"])
def test_orthonormal_keys_recall_exactly_up_to_d_k(variant, beta, form):
    """N ≤ d_k orthonormal keys: reading key i returns value i exactly, for the sum and delta rules."""
    d_k, d_v = 16, 4
    for n in (1, 5, d_k):
        keys = orthonormal_keys(n, d_k)
        values = torch.randn(n, d_v, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
        # write all pairs, then query every key (queries are never written: v = 0, k = 0)
        k = torch.cat([keys, torch.zeros(n, d_k, dtype=torch.float64)])[None, :, None]
        v = torch.cat([values, torch.zeros(n, d_v, dtype=torch.float64)])[None, :, None]
        q = torch.cat([torch.zeros(n, d_k, dtype=torch.float64), keys])[None, :, None]
        gates = {} if beta is None else {"beta": torch.full((1, 2 * n, 1), beta, dtype=torch.float64)}
        o, _ = forward(variant, q, k, v, form=form, chunk_size=7, scale=1.0, **gates)
        assert torch.allclose(o[0, n:, 0], values, atol=1e-12)


@pytest.mark.parametrize("form", ["recurrent", "parallel", "chunked"])
def test_repeated_key_delta_keeps_latest_sum_adds(form):
    """Writing one key three times: DeltaNet (β = 1) recalls the latest value, linear attention the sum."""
    d_k, d_v = 8, 3
    key = F.normalize(torch.randn(d_k, dtype=torch.float64), dim=0)
    values = torch.randn(3, d_v, dtype=torch.float64)
    k = torch.stack([key, key, key, torch.zeros(d_k, dtype=torch.float64)])[None, :, None]
    v = torch.cat([values, torch.zeros(1, d_v, dtype=torch.float64)])[None, :, None]
    q = torch.stack([torch.zeros(d_k, dtype=torch.float64)] * 3 + [key])[None, :, None]
    o_delta, _ = forward("deltanet", q, k, v, form=form, chunk_size=3, scale=1.0,
                         beta=torch.ones(1, 4, 1, dtype=torch.float64))
    o_sum, _ = forward("linear", q, k, v, form=form, chunk_size=3, scale=1.0)
    assert torch.allclose(o_delta[0, -1, 0], values[-1], atol=1e-12)
    assert torch.allclose(o_sum[0, -1, 0], values.sum(0), atol=1e-12)


@pytest.mark.parametrize("variant,normalize", CASES, ids=IDS)
@pytest.mark.parametrize("form", ["parallel", "chunked"])
def test_gradients_match_recurrent(variant, normalize, form):
    """Autograd through the parallel and chunked forms gives the recurrent form's gradients."""
    q, k, v, gates = make_inputs(variant, B=1, T=11, H=2, d_k=4, d_v=3, normalize=normalize, strong=True)
    leaves = {"q": q, "k": k, "v": v, **{n: x for n, x in gates.items() if torch.is_tensor(x)}}

    results = {}
    for f in ("recurrent", form):
        inputs = {n: x.clone().requires_grad_(True) for n, x in leaves.items()}
        extra = {n: x for n, x in gates.items() if not torch.is_tensor(x)}
        gate_inputs = {n: inputs[n] for n in gates if n in inputs}
        o, s = forward(variant, inputs["q"], inputs["k"], inputs["v"], form=f, chunk_size=4,
                       **gate_inputs, **extra)
        weight = torch.linspace(-1, 1, o.numel(), dtype=o.dtype).view_as(o)
        loss = (o * weight).sum() + sum((x ** 2).sum() for x in parts(s))
        results[f] = torch.autograd.grad(loss, list(inputs.values()))
    for name, g_ref, g in zip(leaves, results["recurrent"], results[form]):
        assert torch.isfinite(g).all(), name
        assert rel_rms(g, g_ref) <= 1e-9, (name, rel_rms(g, g_ref))
