"""The optional GPU backend on fla-core's Triton kernels (engine.ops.fla_triton).

On a machine without CUDA only the kernel runs are skipped: the layout and gate conversions are
checked with stand-in kernels (fla-core's own pure-torch recurrences, which keep fla's state
layout [B,H,d_k,d_v]) against the engine's chunked form.
"""
import pytest
import torch

from lineare.engine import peers
from lineare.engine.ops import forward
from lineare.engine.ops import fla_triton
from inputs import make_inputs, rel_rms

ON_GPU = fla_triton.available()
needs_gpu = pytest.mark.skipif(not ON_GPU, reason="needs CUDA, Triton and fla-core")


def test_not_available_on_cpu_tensors():
    assert fla_triton.available("cpu") is False
    if not torch.cuda.is_available():
        assert fla_triton.available() is False


def test_refuses_what_it_does_not_run():
    q, k, v, gates = make_inputs("mlstm", B=1, T=8, H=2, dtype=torch.float32)
    with pytest.raises(ValueError, match="use engine.ops.forward"):
        fla_triton.forward("mlstm", q, k, v, **gates)
    q, k, v, gates = make_inputs("linear", B=1, T=8, H=2, dtype=torch.float32, normalize=True)
    with pytest.raises(ValueError, match="normalize"):
        fla_triton.forward("linear", q, k, v, **gates)
    q, k, v, gates = make_inputs("gla", B=1, T=8, H=2, dtype=torch.float64)
    with pytest.raises(ValueError, match="float32"):
        fla_triton.forward("gla", q, k, v, **gates)
    with pytest.raises(ValueError, match="g has shape"):
        fla_triton.forward("gla", q.float(), k.float(), v.float(), g=gates["g"][..., :3].float())


# ---------------------------------------------------------------- stand-ins for the Triton kernels

def _stand_ins():
    """fla-core's naive recurrences behind the chunk_* signatures, or None without fla-core."""
    simple_gla, gla, gated = (peers._load(key) for key in ("simple_gla", "gla", "gated_delta_rule"))
    if None in (simple_gla, gla, gated):
        return None

    def chunk_simple_gla(q, k, v, g=None, g_gamma=None, scale=None, initial_state=None, output_final_state=False):
        g = g if g is not None else g_gamma.expand(*q.shape[:3])
        return simple_gla.naive_recurrent_simple_gla(q, k, v, g, scale, initial_state, output_final_state)

    def chunk_gla(q, k, v, g, scale=None, initial_state=None, output_final_state=False):
        assert scale == q.shape[-1] ** -0.5                 # the naive loop knows only the default
        return gla.naive_recurrent_gla(q, k, v, g, initial_state, output_final_state)

    def chunk_gated_delta_rule(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False):
        return gated.naive_recurrent_gated_delta_rule(q, k, v, beta, g, scale, initial_state, output_final_state)

    return {"retnet": chunk_simple_gla, "mamba2": chunk_simple_gla, "gla": chunk_gla,
            "gated_deltanet": chunk_gated_delta_rule}


STAND_INS = _stand_ins()


@pytest.mark.skipif(STAND_INS is None, reason="needs fla-core (pip install -e .[peers])")
@pytest.mark.parametrize("variant", ["retnet", "mamba2", "gla", "gated_deltanet"])
def test_layouts_and_gates_with_stand_in_kernels(variant):
    """d_k ≠ d_v and a non-zero initial state: a state left untransposed, or a gate passed under
    the wrong name, cannot pass."""
    q, k, v, gates = make_inputs(variant, B=2, T=40, H=3, d_k=8, d_v=6, dtype=torch.float32)
    S0 = 0.1 * torch.randn(2, 3, 6, 8, generator=torch.Generator().manual_seed(3))
    o_ref, S_ref = forward(variant, q, k, v, form="chunked", chunk_size=16, initial_state=S0, **gates)
    o, S = fla_triton.forward(variant, q, k, v, initial_state=S0, kernel=STAND_INS[variant], **gates)
    assert o.shape == o_ref.shape and S.shape == S_ref.shape == (2, 3, 6, 8)
    assert rel_rms(o, o_ref) <= 1e-5 and rel_rms(S, S_ref) <= 1e-5

    o_pieces, states = fla_triton.snapshots(variant, q, k, v, every=16, initial_state=S0,
                                            kernel=STAND_INS[variant], **gates)
    assert len(states) == 3 and rel_rms(o_pieces, o_ref) <= 1e-5 and rel_rms(states[-1], S_ref) <= 1e-5
    cut = {n: (x[:, :16] if x.dim() >= 3 else x) for n, x in gates.items()}
    _, S_16 = forward(variant, q[:, :16], k[:, :16], v[:, :16], form="chunked", initial_state=S0, **cut)
    assert rel_rms(states[0], S_16) <= 1e-5


# ---------------------------------------------------------------- the Triton kernels themselves

GPU_TOLERANCE = 1e-3  # Triton's dot may use TF32 for float32 inputs on recent GPUs


@needs_gpu
@pytest.mark.parametrize("variant", fla_triton.SUPPORTED)
def test_triton_kernels_match_the_engine(variant):
    q, k, v, gates = make_inputs(variant, B=2, T=300, H=4, d_k=64, d_v=64, dtype=torch.float32)
    cuda = lambda x: x.cuda() if torch.is_tensor(x) else x
    q, k, v, gates = cuda(q), cuda(k), cuda(v), {n: cuda(x) for n, x in gates.items()}
    S0 = 0.1 * torch.randn(2, 4, 64, 64, device="cuda")
    o_ref, S_ref = forward(variant, q, k, v, form="chunked", initial_state=S0, **gates)
    o, S = fla_triton.forward(variant, q, k, v, initial_state=S0, **gates)
    assert rel_rms(o, o_ref) <= GPU_TOLERANCE and rel_rms(S, S_ref) <= GPU_TOLERANCE
    o_pieces, states = fla_triton.snapshots(variant, q, k, v, every=128, initial_state=S0, **gates)
    assert len(states) == 3 and rel_rms(o_pieces, o_ref) <= GPU_TOLERANCE
    assert rel_rms(states[-1], S_ref) <= GPU_TOLERANCE
