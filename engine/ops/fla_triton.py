"""An optional GPU backend: fla-core's Triton kernels behind the engine's contract.

    from lineare.engine.ops import fla_triton
    if fla_triton.available(q.device):
        o, S = fla_triton.forward("gla", q, k, v, g=g, initial_state=S0)        # CUDA tensors
        o, states = fla_triton.snapshots("gla", q, k, v, every=256, g=g)        # a state every 256 tokens

Same inputs and outputs as `engine.ops.forward(..., form="chunked")`, for the variants fla has
chunked kernels for (SUPPORTED): q, k [B,T,H,d_k], v [B,T,H,d_v], gates as the contract names
them, states in our layout [B,H,d_v,d_k]. fla keeps its states as [B,H,d_k,d_v] in float32, so
they are transposed on the way in and out. fla (and Triton) are imported only when a call needs
them: the engine imports, and its tests run, on machines that have neither.
"""
import importlib
import importlib.util

import torch

from lineare.engine.ops import check_inputs, check_scale, check_state

# variant → (fla function, how our gates become its keywords)
KERNELS = {
    "linear": ("chunk_linear_attn", lambda gates: {"normalize": False}),
    "retnet": ("chunk_simple_gla", lambda gates: {"g_gamma": gates["g"]}),
    "mamba2": ("chunk_simple_gla", lambda gates: {"g": gates["g"]}),
    "gla": ("chunk_gla", lambda gates: {"g": gates["g"]}),
    "deltanet": ("chunk_delta_rule", lambda gates: {"beta": gates["beta"]}),
    "gated_deltanet": ("chunk_gated_delta_rule", lambda gates: {"g": gates["g"], "beta": gates["beta"]}),
    "rwkv6": ("chunk_rwkv6", lambda gates: {"w": gates["g"], "u": gates["u"]}),
    "rwkv7": ("chunk_dplr_delta_rule", lambda gates: {"a": gates["a"], "b": gates["b"], "gk": gates["g"]}),
}
SUPPORTED = tuple(KERNELS)


def available(device=None):
    """True when fla's Triton kernels can run here: CUDA (on `device`, if given), Triton and fla-core."""
    if not torch.cuda.is_available() or (device is not None and torch.device(device).type != "cuda"):
        return False
    if importlib.util.find_spec("triton") is None or importlib.util.find_spec("fla") is None:
        return False
    try:
        importlib.import_module("fla.ops")
    except Exception:
        return False
    return True


def _kernel(variant):
    if variant not in KERNELS:
        raise ValueError(f"fla_triton runs {', '.join(SUPPORTED)}; for {variant!r} use engine.ops.forward")
    return getattr(importlib.import_module("fla.ops"), KERNELS[variant][0])


def forward(variant, q, k, v, *, scale=None, initial_state=None, kernel=None, **gates):
    """fla's chunked kernel for `variant`; returns (o [B,T,H,d_v], final state [B,H,d_v,d_k]).

    Checks its inputs as engine.ops.forward does. `kernel` replaces the fla function (tests pass a
    stand-in with the same signature where no GPU is lent).
    """
    if gates.get("normalize"):
        raise ValueError("fla's linear attention normalizes differently; for normalize=True use engine.ops.forward")
    gates.pop("normalize", None)
    B, T, H, K, V = check_inputs(variant, "chunked", q, k, v, gates, 1)
    if q.dtype != torch.float32:
        raise ValueError("fla's kernels compute in float32 (float64 stays with engine.ops.forward)")
    if variant not in KERNELS:
        raise ValueError(f"fla_triton runs {', '.join(SUPPORTED)}; for {variant!r} use engine.ops.forward")
    state = check_state(variant, False, initial_state, q, B, H, K, V)
    run = kernel or _kernel(variant)
    o, fla_state = run(q, k, v, **KERNELS[variant][1](gates), scale=check_scale(scale, K),
                       initial_state=state.mT.float().contiguous(),   # ours [B,H,d_v,d_k] → fla's [B,H,d_k,d_v]
                       output_final_state=True)
    return o.to(q.dtype), fla_state.mT.to(q.dtype)


def snapshots(variant, q, k, v, *, every, scale=None, initial_state=None, kernel=None, **gates):
    """The sequence in pieces of `every` tokens chained through initial_state: (o, [state after
    each piece]) — the states the app draws, from a kernel that keeps only the last one."""
    T = q.shape[1]
    timed = lambda name, x: (torch.is_tensor(x) and x.dim() >= 3 and name != "u"
                             and not (variant == "retnet" and name == "g"))
    outputs, states, state = [], [], initial_state
    for start in range(0, T, every):
        piece = slice(start, min(start + every, T))
        piece_gates = {name: (x[:, piece] if timed(name, x) else x) for name, x in gates.items()}
        o, state = forward(variant, q[:, piece], k[:, piece], v[:, piece], scale=scale, initial_state=state,
                           kernel=kernel, **piece_gates)
        outputs.append(o)
        states.append(state)
    return torch.cat(outputs, 1), states
