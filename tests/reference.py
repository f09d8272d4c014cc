"""Independent float64 reference for every sequence-mixing variant (engine/README.md: the table and the contract).

Written as plain loops over batch, head and time, one token at a time, straight from the
recurrences, so that it shares no code and no algebraic shortcut with the engine. It is slow on
purpose: keep B, T, H small when calling it.

Layouts: q, k [B,T,H,d_k], v [B,T,H,d_v]; o [B,T,H,d_v]; state S [B,H,d_v,d_k] with o_t = S_t q̃_t.
"""
import numpy as np
import torch

VARIANTS = ("linear", "retnet", "mamba2", "gla", "deltanet", "gated_deltanet",
            "rwkv6", "rwkv7", "mlstm", "softmax")


def _np(x):
    """Torch tensor (any float dtype) or array -> NumPy float64 copy."""
    if torch.is_tensor(x):
        return x.detach().cpu().to(torch.float64).numpy().copy()
    return np.array(x, dtype=np.float64)


def _t(x):
    return torch.from_numpy(np.ascontiguousarray(x, dtype=np.float64))


def _logsigmoid(x):
    # log σ(x) = −log(1 + e^{−x}), stable for both signs
    return -np.logaddexp(0.0, -x)


def reference(variant, q, k, v, *, scale=None, initial_state=None, **gates):
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}")
    q, k, v = _np(q), _np(k), _np(v)
    B, T, H, d_k = q.shape
    d_v = v.shape[-1]
    assert k.shape == (B, T, H, d_k) and v.shape == (B, T, H, d_v)
    if scale is None:
        scale = d_k ** -0.5
    qs = scale * q  # q̃
    G = {name: (_np(x) if torch.is_tensor(x) or isinstance(x, np.ndarray) else x)
         for name, x in gates.items()}
    if variant == "softmax":
        return _softmax(qs, k, v, initial_state)
    if variant == "mlstm":
        return _mlstm(qs, k, v, G["i"], G["f"], initial_state)
    if variant == "linear" and G.get("normalize", False):
        return _linear_normalized(qs, k, v, initial_state)

    o = np.zeros((B, T, H, d_v))
    S_all = np.zeros((B, H, d_v, d_k))
    if initial_state is not None:
        S_all[:] = _np(initial_state)
    I = np.eye(d_k)
    for b in range(B):
        for h in range(H):
            S = S_all[b, h].copy()
            for t in range(T):
                qt, kt, vt = qs[b, t, h], k[b, t, h], v[b, t, h]
                write = np.outer(vt, kt)
                if variant == "linear":
                    S = S + write
                elif variant == "retnet":
                    S = np.exp(G["g"][h]) * S + write
                elif variant == "mamba2":
                    S = np.exp(G["g"][b, t, h]) * S + write
                elif variant == "gla":
                    S = S @ np.diag(np.exp(G["g"][b, t, h])) + write
                elif variant == "deltanet":
                    beta = G["beta"][b, t, h]
                    S = S @ (I - beta * np.outer(kt, kt)) + beta * write
                elif variant == "gated_deltanet":
                    beta = G["beta"][b, t, h]
                    S = np.exp(G["g"][b, t, h]) * (S @ (I - beta * np.outer(kt, kt))) + beta * write
                elif variant == "rwkv6":
                    # reads S_{t-1} plus the bonus term for the current token, then updates
                    bonus = np.outer(vt, G["u"][h] * kt)
                    o[b, t, h] = (S + bonus) @ qt
                    S = S @ np.diag(np.exp(G["g"][b, t, h])) + write
                    continue
                elif variant == "rwkv7":
                    at, bt = G["a"][b, t, h], G["b"][b, t, h]
                    S = S @ (np.diag(np.exp(G["g"][b, t, h])) + np.outer(at, bt)) + write
                o[b, t, h] = S @ qt
            S_all[b, h] = S
    return _t(o), _t(S_all)


def _linear_normalized(qs, k, v, initial_state):
    B, T, H, d_k = qs.shape
    d_v = v.shape[-1]
    o = np.zeros((B, T, H, d_v))
    S_all, z_all = np.zeros((B, H, d_v, d_k)), np.zeros((B, H, d_k))
    if initial_state is not None:
        S_all[:], z_all[:] = _np(initial_state[0]), _np(initial_state[1])
    for b in range(B):
        for h in range(H):
            S, z = S_all[b, h].copy(), z_all[b, h].copy()
            for t in range(T):
                qt, kt, vt = qs[b, t, h], k[b, t, h], v[b, t, h]
                S = S + np.outer(vt, kt)
                z = z + kt
                o[b, t, h] = (S @ qt) / (z @ qt + 1e-10)
            S_all[b, h], z_all[b, h] = S, z
    return _t(o), (_t(S_all), _t(z_all))


def _mlstm(qs, k, v, i_pre, f_pre, initial_state):
    B, T, H, d_k = qs.shape
    d_v = v.shape[-1]
    o = np.zeros((B, T, H, d_v))
    C_all, n_all, m_all = np.zeros((B, H, d_v, d_k)), np.zeros((B, H, d_k)), np.zeros((B, H))
    if initial_state is not None:
        C_all[:], n_all[:], m_all[:] = (_np(x) for x in initial_state)
    for b in range(B):
        for h in range(H):
            C, n, m = C_all[b, h].copy(), n_all[b, h].copy(), float(m_all[b, h])
            for t in range(T):
                qt, kt, vt = qs[b, t, h], k[b, t, h], v[b, t, h]
                logf, it = float(_logsigmoid(f_pre[b, t, h])), float(i_pre[b, t, h])
                m_new = max(logf + m, it)
                fp = np.exp(logf + m - m_new)
                ip = np.exp(it - m_new)
                C = fp * C + ip * np.outer(vt, kt)
                n = fp * n + ip * kt
                m = m_new
                o[b, t, h] = (C @ qt) / max(abs(n @ qt), np.exp(-m))
            C_all[b, h], n_all[b, h], m_all[b, h] = C, n, m
    return _t(o), (_t(C_all), _t(n_all), _t(m_all))


def _softmax(qs, k, v, initial_state):
    B, T, H, d_k = qs.shape
    d_v = v.shape[-1]
    if initial_state is not None:
        k_all = np.concatenate([_np(initial_state[0]), k], axis=1)
        v_all = np.concatenate([_np(initial_state[1]), v], axis=1)
    else:
        k_all, v_all = k, v
    Tc = k_all.shape[1] - T  # cached tokens come before the new ones
    o = np.zeros((B, T, H, d_v))
    for b in range(B):
        for h in range(H):
            for t in range(T):
                n_seen = Tc + t + 1
                scores = np.array([qs[b, t, h] @ k_all[b, j, h] for j in range(n_seen)])
                w = np.exp(scores - scores.max())
                w = w / w.sum()
                acc = np.zeros(d_v)
                for j in range(n_seen):
                    acc = acc + w[j] * v_all[b, j, h]
                o[b, t, h] = acc
    return _t(o), (_t(k_all), _t(v_all))
