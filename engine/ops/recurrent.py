"""Recurrent form: one token at a time, constant memory. The only form that can record.

Each `step_<variant>` takes the state before the token and that token's tensors
(q already scaled; q, k [B,H,d_k], v [B,H,d_v]; gates sliced to the token) and returns
(o_t [B,H,d_v], new state, write term). The write term is what the token adds to the state
(None for softmax, which appends to its cache instead).
"""

import torch
import torch.nn.functional as F

from lineare.engine.ops.states import KVCache, LinearState, MLSTMState


def outer(v, k):
    """v kᵀ for a batch of heads: [B,H,d_v] × [B,H,d_k] → [B,H,d_v,d_k]"""
    return v.unsqueeze(-1) * k.unsqueeze(-2)


def apply(S, x):
    """S x: [B,H,d_v,d_k] × [B,H,d_k] → [B,H,d_v]"""
    return (S @ x.unsqueeze(-1)).squeeze(-1)


def step_linear(S, q, k, v):
    if isinstance(S, LinearState):  # normalized: divide by z·q, z the running sum of keys
        write = outer(v, k)
        S_new, z = S.S + write, S.z + k
        o = apply(S_new, q) / ((z * q).sum(-1, keepdim=True) + 1e-10)
        return o, LinearState(S_new, z), write
    write = outer(v, k)
    S = S + write
    return apply(S, q), S, write


def step_retnet(S, q, k, v, g):
    write = outer(v, k)
    S = g.exp()[None, :, None, None] * S + write          # g [H]: one fixed decay per head
    return apply(S, q), S, write


def step_mamba2(S, q, k, v, g):
    write = outer(v, k)
    S = g.exp()[..., None, None] * S + write              # g [B,H]
    return apply(S, q), S, write


def step_gla(S, q, k, v, g):
    write = outer(v, k)
    S = S * g.exp().unsqueeze(-2) + write                 # g [B,H,d_k]: S diag(exp g)
    return apply(S, q), S, write


def step_deltanet(S, q, k, v, beta):
    # S (I − β k kᵀ) + β v kᵀ  =  S + β (v − S k) kᵀ: one SGD step on ½‖S k − v‖²
    write = outer(beta[..., None] * v, k)
    S = S + outer(beta[..., None] * (v - apply(S, k)), k)
    return apply(S, q), S, write


def step_gated_deltanet(S, q, k, v, g, beta):
    write = outer(beta[..., None] * v, k)
    S = g.exp()[..., None, None] * S                      # α S, then the delta correction
    S = S + outer(beta[..., None] * (v - apply(S, k)), k)
    return apply(S, q), S, write


def step_rwkv6(S, q, k, v, g, u):
    write = outer(v, k)
    o = apply(S, q) + (u * k * q).sum(-1, keepdim=True) * v   # reads S_{t-1}, plus the bonus u
    S = S * g.exp().unsqueeze(-2) + write
    return o, S, write


def step_rwkv7(S, q, k, v, g, a, b):
    write = outer(v, k)
    S = S * g.exp().unsqueeze(-2) + outer(apply(S, a), b) + write   # S (diag(w) + a bᵀ) + v kᵀ
    return apply(S, q), S, write


def step_mlstm(state, q, k, v, i, f):
    C, n, m = state
    log_f = F.logsigmoid(f)
    m_new = torch.maximum(log_f + m, i)
    f_stab, i_stab = (log_f + m - m_new).exp(), (i - m_new).exp()
    write = outer(i_stab[..., None] * v, k)
    C = f_stab[..., None, None] * C + write
    n = f_stab[..., None] * n + i_stab[..., None] * k
    denominator = torch.maximum((n * q).sum(-1).abs(), (-m_new).exp())
    return apply(C, q) / denominator[..., None], MLSTMState(C, n, m_new), write


def step_softmax(cache, q, k, v):
    keys = torch.cat([cache.k, k.unsqueeze(1)], 1)        # [B, t+1, H, d_k]
    values = torch.cat([cache.v, v.unsqueeze(1)], 1)
    weights = torch.einsum("bhd,bthd->bht", q, keys).softmax(-1)
    return torch.einsum("bht,bthd->bhd", weights, values), KVCache(keys, values), None


STEPS = {name[len("step_"):]: fn for name, fn in globals().items() if name.startswith("step_")}

# gates that hold one value per token (sliced at each step); the others are per head
TIME_GATES = {"g", "beta", "a", "b", "i", "f"}


def gates_at(variant, gates, t):
    if variant == "retnet":
        return gates
    return {name: (x[:, t] if name in TIME_GATES else x) for name, x in gates.items()}


def recurrent(variant, q, k, v, state, gates):
    """Token-by-token loop. q (scaled), k, v [B,T,H,·]; returns (o [B,T,H,d_v], final state)."""
    step = STEPS[variant]
    if variant == "softmax":  # preallocate the cache rather than concatenating T times
        return _softmax_recurrent(q, k, v, state)
    outputs = []
    for t in range(q.shape[1]):
        o, state, _ = step(state, q[:, t], k[:, t], v[:, t], **gates_at(variant, gates, t))
        outputs.append(o)
    return torch.stack(outputs, dim=1), state


def _softmax_recurrent(q, k, v, cache):
    T0, T = cache.k.shape[1], q.shape[1]
    # the whole cache is laid out at once, but token t reads only its first T0 + t + 1 entries
    keys = torch.cat([cache.k, k], 1)
    values = torch.cat([cache.v, v], 1)
    outputs = []
    for t in range(T):
        visible = T0 + t + 1
        weights = torch.einsum("bhd,bthd->bht", q[:, t], keys[:, :visible]).softmax(-1)
        outputs.append(torch.einsum("bht,bthd->bhd", weights, values[:, :visible]))
    return torch.stack(outputs, dim=1), KVCache(keys, values)


# ---------------------------------------------------------------- in place, for generation
# The same steps as above, for a decoder that owns its state and only wants o_t: the state is
# updated where it lies (no new state tensor, no write term), and every update is one fused
# batched multiply-add. Tensors come as [B·H, ·, ·] batches of matrices: S [BH,d_v,d_k],
# q, k, a, b [BH,d_k,1], v [BH,d_v,1]; per-head gates [BH,1,1], per-channel gates [BH,1,d_k].
# q is not scaled: `scale` multiplies the read-out instead (o = scale · S q).

def _read(S, q, scale):
    return torch.bmm(S, q).mul_(scale)                                           # [BH, d_v, 1]


def _write(S, v, k):
    return S.baddbmm_(v, k.mT)                                                   # S += v kᵀ


def _delta(S, k, v, beta):
    return S.baddbmm_(torch.baddbmm(v, S, k, alpha=-1).mul_(beta), k.mT)       # S += β (v − S k) kᵀ


def in_place_linear(S, q, k, v, scale):
    return _read(_write(S, v, k), q, scale)


def in_place_retnet(S, q, k, v, scale, g):
    return _read(_write(S.mul_(g.exp()), v, k), q, scale)


in_place_mamba2 = in_place_gla = in_place_retnet      # scalar or per-channel decay: the gate's shape says which


def in_place_deltanet(S, q, k, v, scale, beta):
    return _read(_delta(S, k, v, beta), q, scale)


def in_place_gated_deltanet(S, q, k, v, scale, g, beta):
    return _read(_delta(S.mul_(g.exp()), k, v, beta), q, scale)


def in_place_rwkv6(S, q, k, v, scale, g, u):
    bonus = torch.bmm((u * k).mT, q)                                             # (u ⊙ k)·q [BH,1,1]
    o = torch.baddbmm(v * bonus, S, q).mul_(scale)                               # reads S_{t-1}
    _write(S.mul_(g.exp()), v, k)
    return o


def in_place_rwkv7(S, q, k, v, scale, g, a, b):
    recalled = torch.bmm(S, a)                                                   # S_{t-1} a
    _write(_write(S.mul_(g.exp()), recalled, b), v, k)                           # S diag(w) + (S a) bᵀ + v kᵀ
    return _read(S, q, scale)


def in_place_mlstm(state, q, k, v, scale, i, f):
    C, n, m = state                                                              # [BH,d_v,d_k], [BH,d_k,1], [BH,1,1]
    log_f = F.logsigmoid(f)
    m_new = torch.maximum(log_f + m, i)
    f_stab, i_stab = (log_f + m - m_new).exp_(), (i - m_new).exp_()
    C.mul_(f_stab).baddbmm_(v * i_stab, k.mT)
    n.mul_(f_stab).add_(k * i_stab)
    m.copy_(m_new)
    denominator = torch.maximum(torch.bmm(n.mT, q).abs_().mul_(scale), (-m_new).exp_())   # [BH,1,1]
    return torch.bmm(C, q).mul_(scale).div_(denominator)


IN_PLACE = {name[len("in_place_"):]: fn for name, fn in globals().items() if name.startswith("in_place_")}
