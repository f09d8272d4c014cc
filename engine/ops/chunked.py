"""Chunked forms: matrix multiplies inside each chunk, the state passed across chunks.

Every fixed-state variant except mLSTM is a case of one recurrence (DESIGN §3), in the paper
convention S ∈ R^{d_v×d_k}:

    S_t = S_{t-1} (diag(exp g_t) + a_t b_tᵀ) + v_t k_tᵀ,     o_t = S_t q_t

(RWKV-6 reads S_{t-1} instead, plus a bonus term). Inside a chunk that starts from S_0, with
G_t = g_1 + … + g_t the cumulative log decay, only *relative* decays exp(G_t − G_j), j ≤ t, appear,
so every exponent is ≤ 0 and nothing can overflow however strong the decay (no division by a
cumulative product anywhere). The low-rank part needs r_t = S_{t-1} a_t, which depends on the
earlier r_j: a unit lower-triangular system, solved once per chunk (the WY/UT trick of DeltaNet).

Shapes: inputs arrive as [B, H, N, C, ·] (N chunks of C tokens); g is [.., C, 1] for one decay per
token and head, [.., C, d_k] for one per channel, or None for no decay.
"""
import math

import torch
import torch.nn.functional as F

# Largest temporary (in elements) built for decay masks; bounds memory for long sequences.
_BUDGET = 2 ** 22


def _causal_mask(C, strict, device):
    return torch.ones(C, C, dtype=torch.bool, device=device).tril(-1 if strict else 0)


def decayed_scores(x, gx, y, gy, strict=False):
    """scores[.., t, j] = Σ_d x[t,d] y[j,d] exp(gx[t,d] − gy[j,d]) for j ≤ t (j < t if strict), else 0.

    Exponents are taken only where the mask keeps them, where gx − gy ≤ 0.
    """
    C, D = x.shape[-2], x.shape[-1]
    mask = _causal_mask(C, strict, x.device)
    if gx is None:
        return (x @ y.transpose(-1, -2)).masked_fill(~mask, 0.0)
    if gx.shape[-1] == 1:  # one decay per token: a [C, C] mask, as in SSD, in row blocks
        rows = max(1, _BUDGET // (x[..., :1, :1].numel() * C))
        blocks = []
        for t0 in range(0, C, rows):
            rs = slice(t0, t0 + rows)
            log_mask = (gx[..., rs, :] - gy.transpose(-1, -2)).masked_fill(~mask[rs], -math.inf)
            blocks.append((x[..., rs, :] @ y.transpose(-1, -2)) * log_mask.exp())
        return torch.cat(blocks, dim=-2)
    return _per_channel_scores(x, gx, y, gy, strict)


def _per_channel_scores(x, gx, y, gy, strict):
    """`decayed_scores` with one decay per channel, in row blocks of c ≈ √C tokens.

    Block I (rows s_I … s_I+c−1) meets every earlier column j through a reference R_I, the
    cumulative decay just before the block: exp(gx_t − gy_j) = exp(gx_t − R_I) · exp(R_I − gy_j),
    both factors ≤ 1 because gy never increases. So one matrix multiply serves the block, and only
    the c × c diagonal blocks need the exact [c, c, D] tensor of decays. (Fused kernels split at a
    reference inside the block instead, where one factor is ≥ 1 and can overflow.)
    """
    C, D = x.shape[-2], x.shape[-1]
    c = max(1, math.isqrt(C))
    n = -(-C // c)                                                              # row blocks
    pad = n * c - C
    extend = lambda t: torch.cat([t, t[..., -1:, :].expand(*t.shape[:-2], pad, D)], -2) if pad else t
    x, y = F.pad(x, (0, 0, 0, pad)), F.pad(y, (0, 0, 0, pad))                  # zero rows: no effect
    gx, gy = extend(gx), extend(gy)                                             # repeated: exponents stay ≤ 0
    blocks = lambda t: t.unflatten(-2, (n, c))                                   # [.., n, c, D]
    xb, gxb, yb, gyb = blocks(x), blocks(gx), blocks(y), blocks(gy)

    # earlier columns: R_0 = 0 (block 0 has none), R_I = gy at s_I − 1
    R = torch.cat([torch.zeros_like(gy[..., :1, :]), gy[..., c - 1:-1:c, :]], -2)[..., :n, :].unsqueeze(-2)  # [.., n, 1, D]
    earlier = torch.arange(n * c, device=x.device)[None, :] < torch.arange(n, device=x.device)[:, None] * c
    group = max(1, _BUDGET // (x[..., :1, :1].numel() * n * c * D))
    off = []
    for i in range(0, n, group):
        bs = slice(i, i + group)
        x_ref = xb[..., bs, :, :] * (gxb[..., bs, :, :] - R[..., bs, :, :]).exp()            # [.., g, c, D]
        log_y = (R[..., bs, :, :] - gy.unsqueeze(-3)).masked_fill(~earlier[bs, :, None], -math.inf)
        off.append(x_ref @ (y.unsqueeze(-3) * log_y.exp()).transpose(-1, -2))               # [.., g, c, n·c]
    off = torch.cat(off, -3)

    log_d = (gxb.unsqueeze(-2) - gyb.unsqueeze(-3)).masked_fill(~_causal_mask(c, strict, x.device)[:, :, None], -math.inf)
    diag = (xb.unsqueeze(-2) * log_d.exp() * yb.unsqueeze(-3)).sum(-1)                  # [.., n, c, c]
    scores = off.unflatten(-1, (n, c)) + torch.einsum("...iab,ij->...iajb", diag, torch.eye(n, dtype=x.dtype, device=x.device))
    return scores.flatten(-4, -3).flatten(-2, -1)[..., :C, :C]


def dplr_blocks(q, k, v, g=None, a=None, b=None, u=None, read_before=False):
    """Everything one chunk can compute without knowing the state it starts from.

    Returns (o_intra, q_state, transition, write) such that, for a chunk starting from S_0,
        o = o_intra + q_state @ S_0ᵀ     and     S_end = S_0 · transition + write,
    where transition is a [.., 1, d_k] diagonal (to broadcast) or a [.., d_k, d_k] matrix.
    """
    G = g.cumsum(-2) if g is not None else None          # inclusive cumulative log decay
    G_before = G - g if g is not None else None           # decay up to the previous token
    G_read = G_before if read_before else G
    exp_or_one = (lambda x: x.exp()) if g is not None else (lambda x: 1.0)

    q_state = q * exp_or_one(G_read)                                             # [.., C, d_k]
    to_end = exp_or_one(G[..., -1:, :] - G) if g is not None else 1.0            # decay j → chunk end
    diagonal = exp_or_one(G[..., -1:, :]) if g is not None else torch.ones_like(q[..., :1, :1])
    diagonal = diagonal.expand(*q.shape[:-2], 1, q.shape[-1])                    # [.., 1, d_k]
    write = v.transpose(-1, -2) @ (k * to_end)                                   # [.., d_v, d_k]

    if a is None:
        o_intra = decayed_scores(q, G_read, k, G, strict=read_before) @ v      # [.., C, d_v]
        if u is not None:  # RWKV-6 bonus: the current token read through u, before it is written
            o_intra = o_intra + (q * u * k).sum(-1, keepdim=True) * v
        return o_intra, q_state, diagonal, write

    # the same decays weigh keys k and vectors b: build each mask once for both
    Q_k, Q_b = decayed_scores(q, G, torch.stack([k, b]), G)                      # [.., C, C] each
    A_ak, A_ab = decayed_scores(a, G_before, torch.stack([k, b]), G, strict=True)
    # r_t = S_{t-1} a_t = S_0 (a_t ⊙ exp(G_{t-1})) + Σ_{j<t} [A_ab]_tj r_j + [A_ak]_tj v_j
    unit_lower = torch.eye(q.shape[-2], dtype=q.dtype, device=q.device) - A_ab
    solve = lambda rhs: torch.linalg.solve_triangular(unit_lower, rhs, upper=False, unitriangular=True)
    r_intra = solve(A_ak @ v)                                                    # [.., C, d_v]
    r_state = solve(a * exp_or_one(G_before))                                    # [.., C, d_k]: r = r_intra + r_state S_0ᵀ
    o_intra = Q_k @ v + Q_b @ r_intra
    q_state = q_state + Q_b @ r_state
    b_end = b * to_end
    write = write + r_intra.transpose(-1, -2) @ b_end
    transition = torch.diag_embed(diagonal.squeeze(-2)) + r_state.transpose(-1, -2) @ b_end   # [.., d_k, d_k]
    return o_intra, q_state, transition, write


def scan_states(S0, transition, write):
    """States at the start of every chunk: S_{n+1} = S_n · transition_n + write_n (the only sequential part).

    S0 [B,H,d_v,d_k]; transition [B,H,N,1,d_k] (diagonal) or [B,H,N,d_k,d_k]; write [B,H,N,d_v,d_k].
    Returns (starts [B,H,N,d_v,d_k], final [B,H,d_v,d_k]).
    """
    diagonal = transition.shape[-2] == 1
    starts, S = [], S0
    for n in range(write.shape[2]):
        starts.append(S)
        S = (S * transition[:, :, n] if diagonal else S @ transition[:, :, n]) + write[:, :, n]
    return torch.stack(starts, dim=2), S


def split_chunks(x, C):
    """[B, H, N*C, ·] → [B, H, N, C, ·]"""
    return x.unflatten(2, (x.shape[2] // C, C))


def dplr_chunked(q, k, v, S0, chunk_size, g=None, a=None, b=None, u=None, read_before=False):
    """The chunked form. Tensors [B, H, T, ·]; S0 [B, H, d_v, d_k]. Returns (o [B,H,T,d_v], S_T).

    Full chunks are computed together; a shorter last chunk follows from their final state.
    """
    T = q.shape[2]
    full = (T // chunk_size) * chunk_size
    outputs, S = [], S0
    for start, stop, C in ((0, full, chunk_size), (full, T, T - full)):
        if stop == start:
            continue
        part = lambda x: None if x is None else split_chunks(x[:, :, start:stop], C)
        o_intra, q_state, transition, write = dplr_blocks(
            part(q), part(k), part(v), part(g), part(a), part(b), u, read_before)
        starts, S = scan_states(S, transition, write)
        o = o_intra + q_state @ starts.transpose(-1, -2)                        # [B,H,N,C,d_v]
        outputs.append(o.flatten(2, 3))
    return torch.cat(outputs, dim=2), S


def mlstm_blocks(q, k, v, i, f):
    """mLSTM inside chunks [B,H,N,C,·], in log space with the chunk's own stabilizer.

    With F_t = Σ_{s≤t} logσ(f_s), token j reaches token t with log weight D_tj = F_t − F_j + i_j;
    m_intra_t = max_j D_tj keeps every exp(D_tj − m_intra_t) ≤ 1.
    """
    log_f = F.logsigmoid(f).cumsum(-1)                               # [B,H,N,C]
    C = q.shape[-2]
    D = (log_f[..., :, None] - log_f[..., None, :] + i[..., None, :]).masked_fill(
        ~_causal_mask(C, False, q.device), -math.inf)                           # [B,H,N,C,C]
    m_intra = D.amax(-1)                                                         # [B,H,N,C]
    scores = (q @ k.transpose(-1, -2)) * (D - m_intra[..., None]).exp()
    h_intra = scores @ v                                                         # [B,H,N,C,d_v]
    n_intra = scores.sum(-1)                                                     # Σ_j w_tj k_j·q_t
    w_end = (D[..., -1, :] - m_intra[..., -1:]).exp()                            # weights into the chunk end
    write_C = (v * w_end[..., None]).transpose(-1, -2) @ k                       # [B,H,N,d_v,d_k]
    write_n = (k * w_end[..., None]).sum(-2)                                     # [B,H,N,d_k]
    return log_f, m_intra, h_intra, n_intra, write_C, write_n


def mlstm_scan(C0, n0, m0, log_f_end, m_end_intra, write_C, write_n):
    """(C, n, m) at the start of every chunk, and after the last one. Both factors are ≤ 1."""
    starts, C, n, m = [], C0, n0, m0
    for c in range(write_C.shape[2]):
        starts.append((C, n, m))
        m_new = torch.maximum(log_f_end[:, :, c] + m, m_end_intra[:, :, c])
        keep, add = (log_f_end[:, :, c] + m - m_new).exp(), (m_end_intra[:, :, c] - m_new).exp()
        C = keep[..., None, None] * C + add[..., None, None] * write_C[:, :, c]
        n = keep[..., None] * n + add[..., None] * write_n[:, :, c]
        m = m_new
    return [torch.stack(x, dim=2) for x in zip(*starts)], (C, n, m)


def mlstm_chunked(q, k, v, i, f, C0, n0, m0, chunk_size):
    """The chunked mLSTM. Tensors [B,H,T,·], i, f [B,H,T]. Returns (o, (C, n, m))."""
    T = q.shape[2]
    full = (T // chunk_size) * chunk_size
    outputs, state = [], (C0, n0, m0)
    for start, stop, C in ((0, full, chunk_size), (full, T, T - full)):
        if stop == start:
            continue
        part = lambda x: split_chunks(x[:, :, start:stop], C)
        qc = part(q)
        log_f, m_intra, h_intra, n_intra, write_C, write_n = mlstm_blocks(qc, part(k), part(v), part(i), part(f))
        (C_s, n_s, m_s), state = mlstm_scan(*state, log_f[..., -1], m_intra[..., -1], write_C, write_n)
        m = torch.maximum(log_f + m_s[..., None], m_intra)                       # the recurrence's m_t
        from_state, from_chunk = (log_f + m_s[..., None] - m).exp(), (m_intra - m).exp()
        h = from_state[..., None] * (qc @ C_s.transpose(-1, -2)) + from_chunk[..., None] * h_intra
        qn = from_state * (qc * n_s[..., None, :]).sum(-1) + from_chunk * n_intra
        o = h / torch.maximum(qn.abs(), (-m).exp())[..., None]
        outputs.append(o.flatten(2, 3))
    return torch.cat(outputs, dim=2), state


def softmax_chunked(q, k, v, k_cache, v_cache, chunk_size):
    """Softmax attention in blocks of queries (chunked prefill): each block reads the cache so far.

    Tensors [B,H,T,·], caches [B,H,T0,·]. Work stays quadratic; memory per block is C × (T0 + T).
    """
    keys, values = torch.cat([k_cache, k], 2), torch.cat([v_cache, v], 2)
    T0, T = k_cache.shape[2], q.shape[2]
    outputs = []
    for start in range(0, T, chunk_size):
        stop = min(start + chunk_size, T)
        visible = T0 + stop
        scores = q[:, :, start:stop] @ keys[:, :, :visible].transpose(-1, -2)   # [B,H,c,visible]
        row = torch.arange(start, stop, device=q.device)[:, None] + T0
        scores = scores.masked_fill(torch.arange(visible, device=q.device)[None, :] > row, -math.inf)
        outputs.append(scores.softmax(-1) @ values[:, :, :visible])
    return torch.cat(outputs, dim=2), (keys, values)
