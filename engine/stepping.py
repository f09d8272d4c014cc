"""One token at a time, with a record of everything that happened inside (DESIGN §4).

    state = init_state("deltanet", heads=2, d_k=16, d_v=16)
    o, state, record = step("deltanet", state, q, k, v, beta=beta)     # q, k [B,H,d_k], v [B,H,d_v]

Gates are one token's slice of what `engine.ops.forward` takes: g [B,H] or [B,H,d_k] (RetNet: [H]),
beta, i, f [B,H], a, b [B,H,d_k], u [H,d_k]. Records hold NumPy arrays and numbers only, so the app
can draw them without calling back into torch.
"""
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from engine.ops import _check_inputs, _check_normalize, _check_scale, _check_state, initial_state
from engine.ops.recurrent import STEPS, TIME_GATES, apply
from engine.ops.states import KVCache, LinearState, MLSTMState, state_bytes

DELTA_RULE = ("deltanet", "gated_deltanet", "rwkv7")


@dataclass
class StepRecord:
    """What one token did to one layer, for every batch element and head (arrays lead with [B, H])."""
    variant: str
    output: np.ndarray                     # o_t, the read-out [B,H,d_v]
    state: np.ndarray | None               # S_t [B,H,d_v,d_k] (mLSTM: the stabilized C_t); None for softmax
    write: np.ndarray | None               # what the token writes: v kᵀ, β v kᵀ, or i' v kᵀ [B,H,d_v,d_k]
    decay: np.ndarray | None               # transition's decay: [B,H] scalar or [B,H,d_k] per channel
    beta: np.ndarray | None                # delta-rule step size [B,H]
    a: np.ndarray | None                   # RWKV-7 low-rank transition vectors [B,H,d_k]
    b: np.ndarray | None
    prediction: np.ndarray | None          # S_{t-1} k_t: what the memory already says about this key
    target: np.ndarray                     # v_t
    error: np.ndarray | None               # v_t − S_{t-1} k_t (corrected only by the delta-rule family)
    state_bytes: int                       # bytes of the fixed-size state (0 for softmax)
    kv_cache_bytes: int                    # bytes of the KV cache (softmax only; grows every token)
    extras: dict = field(default_factory=dict)


def init_state(variant, *, batch=1, heads=1, d_k, d_v, dtype=torch.float32, device="cpu", normalize=False):
    """The empty state to start stepping from."""
    _check_normalize(variant, normalize)
    return initial_state(variant, batch, heads, d_k, d_v, dtype=dtype, device=device, normalize=normalize)


def step(variant, state, q, k, v, *, scale=None, **gates):
    """Feed one token; returns (o_t [B,H,d_v], new state, StepRecord)."""
    normalize = isinstance(state, LinearState)
    if "normalize" in gates and bool(gates.pop("normalize")) != normalize:
        raise ValueError("normalize must match the state: init_state(..., normalize=True) gives a LinearState")
    as_sequence = lambda x: x.unsqueeze(1) if torch.is_tensor(x) and x.dim() == 3 else x   # [B,H,·] → [B,1,H,·]
    sequence_gates = {name: (x.unsqueeze(1) if name in TIME_GATES and variant != "retnet" and torch.is_tensor(x) else x)
                      for name, x in gates.items()}
    B, _, H, K, V = _check_inputs(variant, "recurrent", as_sequence(q), as_sequence(k), as_sequence(v),
                                  sequence_gates, 1)
    state = _check_state(variant, normalize, state, q, B, H, K, V)
    q_scaled = q * _check_scale(scale, K)

    with torch.no_grad():
        S_before = state.C if variant == "mlstm" else (state.S if normalize else state)
        prediction = apply(S_before, k) if variant != "softmax" else None
        o, new_state, write = STEPS[variant](state, q_scaled, k, v, **gates)
        record = _record(variant, state, new_state, o, write, prediction, k, v, q_scaled, gates)
    return o, new_state, record


def run(variant, q, k, v, *, scale=None, initial_state=None, normalize=False, **gates):
    """Step through whole sequences [B,T,H,·]; returns (o [B,T,H,d_v], final state, [records])."""
    B, T, H, K = q.shape
    state = initial_state if initial_state is not None else init_state(
        variant, batch=B, heads=H, d_k=K, d_v=v.shape[-1], dtype=q.dtype, device=q.device, normalize=normalize)
    at = lambda name, x, t: x[:, t] if name in TIME_GATES and variant != "retnet" else x
    outputs, records = [], []
    for t in range(T):
        o, state, record = step(variant, state, q[:, t], k[:, t], v[:, t], scale=scale,
                                **{name: at(name, x, t) for name, x in gates.items()})
        outputs.append(o)
        records.append(record)
    return torch.stack(outputs, 1), state, records


def _record(variant, before, after, o, write, prediction, k, v, q_scaled, gates):
    numpy = lambda x: None if x is None else x.detach().cpu().numpy().copy()
    g = gates.get("g")
    decay = None
    if g is not None:
        decay = g.exp()
        if variant == "retnet":
            decay = decay.expand(o.shape[0], -1)                                   # [H] → [B,H]
    extras = {}
    if variant == "mlstm":
        decay = torch.sigmoid(gates["f"])
        log_f = F.logsigmoid(gates["f"])
        extras = {"m": numpy(after.m), "n": numpy(after.n),
                  "forget_stabilized": numpy((log_f + before.m - after.m).exp()),
                  "input_stabilized": numpy((gates["i"] - after.m).exp())}
    if variant == "softmax":
        weights = torch.einsum("bhd,bthd->bht", q_scaled, after.k).softmax(-1)
        extras = {"attention": numpy(weights)}                                     # [B,H,t+1]
    if isinstance(after, LinearState):
        extras = {"z": numpy(after.z)}
    state_matrix = after.C if variant == "mlstm" else (after.S if isinstance(after, LinearState) else after)
    is_cache = isinstance(after, KVCache)
    return StepRecord(
        variant=variant,
        output=numpy(o),
        state=None if is_cache else numpy(state_matrix),
        write=numpy(write),
        decay=numpy(decay),
        beta=numpy(gates.get("beta")),
        a=numpy(gates.get("a")),
        b=numpy(gates.get("b")),
        prediction=numpy(prediction),
        target=numpy(v),
        error=None if prediction is None else numpy(v - prediction),
        state_bytes=0 if is_cache else state_bytes(after),
        kv_cache_bytes=state_bytes(after) if is_cache else 0,
        extras=extras,
    )
