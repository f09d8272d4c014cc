"""`forward`: every variant of the family, in any of its three forms (engine/README.md, "Contract").

    o, final_state = forward("gla", q, k, v, form="chunked", g=g)

q, k [B,T,H,d_k]; v [B,T,H,d_v]; o [B,T,H,d_v]; states [B,H,d_v,d_k] (S ∈ R^{d_v×d_k}, o_t = S_t q_t).
Decays come in log space (g ≤ 0); β, u, a, b as given; q is scaled by `scale` (default d_k^-½).
"""
import math

import torch
from einops import rearrange

from lineare.engine.ops import chunked as _chunked, parallel as _parallel
from lineare.engine.ops.recurrent import recurrent as _recurrent
from lineare.engine.ops.states import KVCache, LinearState, MLSTMState, state_bytes

VARIANTS = ("linear", "retnet", "mamba2", "gla", "deltanet", "gated_deltanet",
            "rwkv6", "rwkv7", "mlstm", "softmax")
FORMS = ("recurrent", "parallel", "chunked")

# The gate keywords each variant takes, with their shapes (B, T, H, K: batch, time, heads, d_k).
GATES = {
    "linear": {},
    "retnet": {"g": "H"},
    "mamba2": {"g": "BTH"},
    "gla": {"g": "BTHK"},
    "deltanet": {"beta": "BTH"},
    "gated_deltanet": {"g": "BTH", "beta": "BTH"},
    "rwkv6": {"g": "BTHK", "u": "HK"},
    "rwkv7": {"g": "BTHK", "a": "BTHK", "b": "BTHK"},
    "mlstm": {"i": "BTH", "f": "BTH"},
    "softmax": {},
}

__all__ = ["forward", "VARIANTS", "FORMS", "GATES", "LinearState", "MLSTMState", "KVCache",
           "state_bytes", "initial_state"]


def forward(variant, q, k, v, *, form, chunk_size=64, scale=None, initial_state=None, **gates):
    """Run `variant` over whole sequences in `form`; returns (o, final_state).

    final_state is a tensor [B,H,d_v,d_k], or LinearState (with normalize=True), MLSTMState or
    KVCache; it can be passed back as `initial_state` to continue the sequence.
    """
    normalize = check_normalize(variant, gates.pop("normalize", False))
    B, T, H, K, V = check_inputs(variant, form, q, k, v, gates, chunk_size)
    scale = check_scale(scale, K)
    state = check_state(variant, normalize, initial_state, q, B, H, K, V)

    if form == "recurrent":
        q = q * scale
        if normalize:  # keep the key sum z with the state, as one more row of S (see below)
            state = torch.cat([state.S, state.z.unsqueeze(-2)], -2)
            v = torch.cat([v, torch.ones_like(v[..., :1])], -1)
            o, state = _recurrent(variant, q, k, v, state, gates)
            return _split_normalized(o, state)
        return _recurrent(variant, q, k, v, state, gates)

    # parallel and chunked work head-first: [B, H, T, ·]
    heads_first = lambda x: rearrange(x, "b t h ... -> b h t ...")
    q, k, v = heads_first(q), heads_first(k), heads_first(v)
    chunk = T if form == "parallel" else chunk_size

    if variant == "softmax":
        if form == "parallel":
            o, (keys, values) = _parallel.softmax_parallel(q * scale, k, v, heads_first(state.k), heads_first(state.v))
        else:
            o, (keys, values) = _chunked.softmax_chunked(q, k, v, heads_first(state.k), heads_first(state.v), chunk,
                                                         scale)
        back = lambda x: rearrange(x, "b h t ... -> b t h ...")
        return back(o), KVCache(back(keys), back(values))

    if variant == "mlstm":
        i, f = heads_first(gates["i"]), heads_first(gates["f"])
        o, (C, n, m) = _chunked.mlstm_chunked(q, k, v, i, f, *state, chunk, scale=scale)
        return rearrange(o, "b h t d -> b t h d"), MLSTMState(C, n, m)

    if normalize:
        # z_t = z_{t-1} + k_t is linear attention with a value that is always 1: append it to v,
        # carry z as the last row of S, and divide by that extra output at the end.
        S0 = torch.cat([state.S, state.z.unsqueeze(-2)], -2)
        v = torch.cat([v, torch.ones_like(v[..., :1])], -1)
    else:
        S0 = state
    spec = _as_dplr(variant, k, B, T, H, gates, heads_first)
    v = v * spec.pop("beta") if "beta" in spec else v                         # delta rule writes β v kᵀ
    o, S = _chunked.dplr_chunked(q, k, v, S0, chunk, **spec, scale=scale)
    o = rearrange(o, "b h t d -> b t h d")
    return _split_normalized(o, S) if normalize else (o, S)


def _split_normalized(o, S_aug):
    o, qz = o[..., :-1], o[..., -1:]
    return o / (qz + 1e-10), LinearState(S_aug[..., :-1, :], S_aug[..., -1, :])


def _as_dplr(variant, k, B, T, H, gates, heads_first):
    """Each variant as a case of S_t = S_{t-1}(diag(exp g_t) + a_t b_tᵀ) + v_t k_tᵀ (see chunked.py)."""
    g = gates.get("g")
    if variant == "retnet":
        g = g.view(1, H, 1, 1).expand(B, H, T, 1)
    elif variant in ("mamba2", "gated_deltanet"):
        g = heads_first(g).unsqueeze(-1)                                     # [B,H,T,1]
    elif g is not None:
        g = heads_first(g)                                                   # [B,H,T,K]
    spec = {"g": g}
    if variant in ("deltanet", "gated_deltanet"):
        # S α(I − β k kᵀ) + β v kᵀ: diagonal α, a = k, b = −αβ k, and the write β v kᵀ
        beta = heads_first(gates["beta"]).unsqueeze(-1)                       # [B,H,T,1]
        alpha = g.exp() if g is not None else 1.0
        spec.update(a=k, b=-alpha * beta * k, beta=beta)
    elif variant == "rwkv6":
        spec.update(u=gates["u"][:, None, None, :], read_before=True)         # u [H,1,1,K]
    elif variant == "rwkv7":
        spec.update(a=heads_first(gates["a"]), b=heads_first(gates["b"]))
    return spec


# ---------------------------------------------------------------- checking what comes in

_DTYPES = (torch.float32, torch.float64)


def initial_state(variant, batch, heads, d_k, d_v, *, dtype=torch.float32, device="cpu", normalize=False):
    """The empty state of a variant: zeros (and m = 0 for mLSTM, an empty cache for softmax)."""
    zeros = lambda *shape: torch.zeros(*shape, dtype=dtype, device=device)
    if variant == "softmax":
        return KVCache(zeros(batch, 0, heads, d_k), zeros(batch, 0, heads, d_v))
    if variant == "mlstm":
        return MLSTMState(zeros(batch, heads, d_v, d_k), zeros(batch, heads, d_k), zeros(batch, heads))
    if normalize:
        return LinearState(zeros(batch, heads, d_v, d_k), zeros(batch, heads, d_k))
    return zeros(batch, heads, d_v, d_k)


def check_normalize(variant, normalize):
    if not isinstance(normalize, bool):
        raise TypeError(f"normalize must be True or False, not {normalize!r}")
    if normalize and variant != "linear":
        raise ValueError(f"normalize applies to variant 'linear' only, not {variant!r}")
    return normalize


def _check_tensor(name, x, shape, dtype, device):
    """Type, dtype, device and shape of one input, and that it is finite."""
    if not torch.is_tensor(x):
        raise TypeError(f"{name} must be a torch.Tensor, not {type(x).__name__}")
    if x.dtype != dtype:
        raise ValueError(f"{name} has dtype {x.dtype}, but q has {dtype}; use one of float32, float64 for all")
    if x.device != device:
        raise ValueError(f"{name} is on {x.device}, but q is on {device}; put all inputs on one device")
    if tuple(x.shape) != tuple(shape):
        raise ValueError(f"{name} has shape {tuple(x.shape)}, expected {tuple(shape)}")
    # One cheap pass: a sum is finite only if every element is (a NaN or ±inf anywhere makes it NaN
    # or ±inf). Only a sum that overflowed needs the exact look, at both ends (a NaN makes both NaN).
    if x.numel() and not math.isfinite(x.sum().item()):
        if not all(math.isfinite(end) for end in torch.stack(torch.aminmax(x)).tolist()):
            raise ValueError(f"{name} contains NaN or infinite values")


def check_inputs(variant, form, q, k, v, gates, chunk_size):
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; choose one of {', '.join(VARIANTS)}")
    if form not in FORMS:
        raise ValueError(f"unknown form {form!r}; choose one of {', '.join(FORMS)}")
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer, not {chunk_size!r}")
    for name, x in (("q", q), ("k", k), ("v", v)):
        if not torch.is_tensor(x):
            raise TypeError(f"{name} must be a torch.Tensor, not {type(x).__name__}")
        if x.dim() != 4:
            raise ValueError(f"{name} must have 4 dimensions [B, T, H, d], got shape {tuple(x.shape)}")
    if q.dtype not in _DTYPES:
        raise ValueError(f"q has dtype {q.dtype}; the engine computes in float32 or float64")
    B, T, H, K = q.shape
    V = v.shape[-1]
    if T == 0 or min(B, H, K, V) == 0:
        raise ValueError(f"empty input: q has shape {tuple(q.shape)}, v {tuple(v.shape)}")
    _check_tensor("q", q, (B, T, H, K), q.dtype, q.device)
    _check_tensor("k", k, (B, T, H, K), q.dtype, q.device)
    _check_tensor("v", v, (B, T, H, V), q.dtype, q.device)

    expected = GATES[variant]
    extra = sorted(set(gates) - set(expected))
    missing = sorted(set(expected) - set(gates))
    if extra:
        raise ValueError(f"variant {variant!r} takes no gate {', '.join(extra)}"
                         f" (it takes: {', '.join(expected) or 'none'})")
    if missing:
        raise ValueError(f"variant {variant!r} needs gate {', '.join(missing)}")
    sizes = {"B": B, "T": T, "H": H, "K": K}
    for name, dims in expected.items():
        _check_tensor(name, gates[name], [sizes[d] for d in dims], q.dtype, q.device)
        if name == "g" and gates[name].amax().item() > 0:
            raise ValueError("g holds log decays and must be ≤ 0 (a decay of at most 1 per step)")
    return B, T, H, K, V


def check_scale(scale, K):
    if scale is None:
        return K ** -0.5
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale) or scale <= 0:
        raise ValueError(f"scale must be a positive finite number, not {scale!r}")
    return float(scale)


def check_state(variant, normalize, state, q, B, H, K, V):
    empty = initial_state(variant, B, H, K, V, dtype=q.dtype, device=q.device, normalize=normalize)
    if state is None:
        return empty
    kind = type(empty)
    if kind is torch.Tensor:
        _check_tensor("initial_state", state, empty.shape, q.dtype, q.device)
        return state
    if not isinstance(state, tuple) or len(state) != len(empty):
        raise TypeError(f"initial_state for {variant!r} must be a {kind.__name__}{kind._fields}")
    state = kind(*state)
    for name, x, ref in zip(kind._fields, state, empty):
        shape = list(ref.shape)
        if kind is KVCache and torch.is_tensor(x) and x.dim() == 4:
            shape[1] = x.shape[1]  # a cache holds any number of past tokens
        _check_tensor(f"initial_state.{name}", x, shape, q.dtype, q.device)
    return state
