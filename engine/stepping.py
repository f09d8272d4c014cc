"""One token at a time, with a record of everything that happened inside (engine/README.md, "Contract").

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

from lineare.engine.ops import VARIANTS, check_inputs, check_normalize, check_scale, check_state, initial_state
from lineare.engine.ops.recurrent import IN_PLACE, STEPS, TIME_GATES, apply
from lineare.engine.ops.states import KVCache, LinearState, MLSTMState, state_bytes

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
    key: np.ndarray | None = None          # k_t [B,H,d_k] (what the delta rule's transition depends on)
    query: np.ndarray | None = None        # q_t as read, scale applied [B,H,d_k] (o_t = S_t q_t)


def init_state(variant, *, batch=1, heads=1, d_k, d_v, dtype=torch.float32, device="cpu", normalize=False):
    """The empty state to start stepping from."""
    check_normalize(variant, normalize)
    return initial_state(variant, batch, heads, d_k, d_v, dtype=dtype, device=device, normalize=normalize)


def step(variant, state, q, k, v, *, scale=None, **gates):
    """Feed one token; returns (o_t [B,H,d_v], new state, StepRecord)."""
    normalize = isinstance(state, LinearState)
    B, H, K, V = check_token(variant, normalize, q, k, v, gates)
    state = check_state(variant, normalize, state, q, B, H, K, V)
    q_scaled = q * check_scale(scale, K)

    with torch.no_grad():
        S_before = state.C if variant == "mlstm" else (state.S if normalize else state)
        prediction = apply(S_before, k) if variant != "softmax" else None
        o, new_state, write = STEPS[variant](state, q_scaled, k, v, **gates)
        record = _record(variant, state, new_state, o, write, prediction, k, v, q_scaled, gates)
    return o, new_state, record


def check_token(variant, normalize, q, k, v, gates):
    """The checks of `forward` for one token (q, k [B,H,d_k], v [B,H,d_v], gates sliced to it); pops
    `normalize` from gates. Returns (B, H, d_k, d_v)."""
    if "normalize" in gates and bool(gates.pop("normalize")) != normalize:
        raise ValueError("normalize must match the state: init_state(..., normalize=True) gives a LinearState")
    as_sequence = lambda x: x.unsqueeze(1) if torch.is_tensor(x) and x.dim() == 3 else x   # [B,H,·] → [B,1,H,·]
    sequence_gates = {name: (x.unsqueeze(1) if name in TIME_GATES and variant != "retnet" and torch.is_tensor(x) else x)
                      for name, x in gates.items()}
    B, _, H, K, V = check_inputs(variant, "recurrent", as_sequence(q), as_sequence(k), as_sequence(v),
                                  sequence_gates, 1)
    return B, H, K, V


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
    if variant == "rwkv6":                     # o_t = S_{t-1} q + (u ⊙ k)·q v: the bonus of the token itself
        extras = {"u": numpy(gates["u"])}                                          # [H,d_k]
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
        key=numpy(k),
        query=numpy(q_scaled),
    )


def transition(record):
    """The matrix A_t of S_t = S_{t-1} A_t + write, [B,H,d_k,d_k] (None for softmax, which keeps a cache).

    Diagonal for the decays (α I, diag(w)); the delta rule multiplies by I − β k kᵀ, which keeps every
    direction but k and scales k by 1 − β; RWKV-7 adds a bᵀ to diag(w) (Peng et al. 2025). mLSTM: the
    forget gate f (its stabilized form rescales the state too, which is not a transition of S)."""
    if record.state is None:
        return None
    B, H, _d_v, d_k = record.state.shape
    eye = np.eye(d_k)
    decay = np.ones((B, H)) if record.decay is None else record.decay.astype(np.float64)
    if decay.ndim == 2:                                                   # a scalar per head
        A = decay[..., None, None] * eye                                  # [B,H,d_k,d_k]
    else:                                                                 # one per key channel
        A = decay[..., None, :] * eye
    if record.variant in ("deltanet", "gated_deltanet"):
        k = record.key.astype(np.float64)                                 # [B,H,d_k]
        beta = record.beta.astype(np.float64)[..., None, None]
        A = A @ (eye - beta * k[..., :, None] * k[..., None, :])
    elif record.variant == "rwkv7":
        A = A + record.a[..., :, None].astype(np.float64) * record.b[..., None, :]
    return A



class Decoder:
    """Token-by-token generation without records: checked once, then updated in place.

        decoder = Decoder("gla", state)                 # any state init_state or forward gives
        decoder.check(q, k, v, g=g)                     # optional: `step`'s checks, for one token
        o = decoder.step(q, k, v, g=g)                  # q, k [B,H,d_k], v [B,H,d_v] → o [B,H,d_v]
        decoder.state                                   # the state now, in the layout forward takes

    `step` checks nothing (the caller has, once) and keeps no record: the path for generation and
    for timing the recurrence; `engine.stepping.step` stays the one that records. The decoder
    works on its own copy of the state, updated where it lies; `decoder.state` shows that copy
    live (clone it for a snapshot). Softmax keeps its KV cache in buffers that double when full,
    as a decoder's preallocated cache does.
    """

    def __init__(self, variant, state, *, scale=None):
        if variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; choose one of {', '.join(VARIANTS)}")
        self.variant, self.normalize = variant, isinstance(state, LinearState)
        first = state[0] if isinstance(state, tuple) else state                 # S, C, or the cached keys
        if not torch.is_tensor(first) or first.dim() != 4:
            raise TypeError(f"state must be what init_state({variant!r}, ...) returns")
        if variant == "softmax":
            B, _, H, K = first.shape
            V = state[1].shape[-1]
        else:
            B, H, V, K = first.shape
        check_state(variant, self.normalize, state, first, B, H, K, V)
        self.batch, self.heads, self.d_k, self.d_v = B, H, K, V
        self.scale = check_scale(scale, K)
        BH = B * H
        matrices = lambda x: x.reshape(BH, *x.shape[2:]).clone()                 # [B,H,·,·] → own [BH,·,·]
        if variant == "softmax":
            keys, values = (x.transpose(1, 2).reshape(BH, -1, x.shape[-1]) for x in state)   # [BH,T0,·]
            self._length = keys.shape[1]
            self._keys = torch.cat([keys, keys.new_empty(BH, max(64, self._length), K)], 1)
            self._values = torch.cat([values, values.new_empty(BH, max(64, self._length), V)], 1)
        elif variant == "mlstm":
            C, n, m = state
            self._state = (matrices(C), n.reshape(BH, K, 1).clone(), m.reshape(BH, 1, 1).clone())
        elif self.normalize:  # z rides along as one more row of S, written by a value of 1
            self._state = matrices(torch.cat([state.S, state.z.unsqueeze(-2)], -2))
        else:
            self._state = matrices(state)

    def check(self, q, k, v, **gates):
        """Every check `step` skips, for one token; raises ValueError or TypeError."""
        B, H, K, V = check_token(self.variant, self.normalize, q, k, v, dict(gates))
        if (B, H, K, V) != (self.batch, self.heads, self.d_k, self.d_v):
            raise ValueError(f"token of batch {B}, heads {H}, d_k {K}, d_v {V}; the state has "
                             f"{self.batch}, {self.heads}, {self.d_k}, {self.d_v}")

    def step(self, q, k, v, **gates):
        """Feed one token (unchecked); returns o_t [B,H,d_v]."""
        BH = self.batch * self.heads
        column = lambda x: x.reshape(BH, -1, 1)                                  # [B,H,d] → [BH,d,1]
        if self.variant == "softmax":
            return self._attend(column(q), column(k), column(v))
        if self.normalize:
            v = torch.cat([v, torch.ones_like(v[..., :1])], -1)
        gates = {name: self._gate(name, x) for name, x in gates.items()}
        o = IN_PLACE[self.variant](self._state, column(q), column(k), column(v), self.scale, **gates)
        if self.normalize:
            o = o[:, :-1] / (o[:, -1:] + 1e-10)
        return o.view(self.batch, self.heads, self.d_v)

    def _gate(self, name, x):
        """A gate as the in-place steps take it: vectors a, b, u as [BH,d_k,1] columns; g, β, i, f
        as [BH,1,1] (one per head) or [BH,1,d_k] rows (one per channel, scaling S's columns)."""
        if name == "u" or (name == "g" and self.variant == "retnet"):
            x = x.expand(self.batch, *x.shape)                                   # per head: every batch element
        if name in ("a", "b", "u"):
            return x.reshape(self.batch * self.heads, -1, 1)
        return x.reshape(self.batch * self.heads, 1, -1)

    def _attend(self, q, k, v):
        """Softmax: store k, v in the next free slot (doubling the buffers when full), read them all."""
        if self._length == self._keys.shape[1]:
            self._keys = torch.cat([self._keys, torch.empty_like(self._keys)], 1)
            self._values = torch.cat([self._values, torch.empty_like(self._values)], 1)
        self._keys[:, self._length], self._values[:, self._length] = k[..., 0], v[..., 0]
        self._length += 1
        keys, values = self._keys[:, :self._length], self._values[:, :self._length]   # [BH,L,·]
        weights = torch.bmm(q.mT, keys.mT).mul_(self.scale).softmax(-1)         # [BH,1,L]
        return torch.bmm(weights, values).view(self.batch, self.heads, self.d_v)

    @property
    def state(self):
        B, H = self.batch, self.heads
        heads = lambda x: x.view(B, H, *x.shape[1:])
        if self.variant == "softmax":
            cache = lambda x: x[:, :self._length].view(B, H, self._length, -1).transpose(1, 2)   # [B,L,H,·]
            return KVCache(cache(self._keys), cache(self._values))
        if self.variant == "mlstm":
            C, n, m = self._state
            return MLSTMState(heads(C), n.view(B, H, -1), m.view(B, H))
        if self.normalize:
            S = heads(self._state)
            return LinearState(S[..., :-1, :], S[..., -1, :])
        return heads(self._state)
