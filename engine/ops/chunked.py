"""Chunked forms: matrix multiplies inside each chunk, the state passed across chunks.

Every fixed-state variant except mLSTM is a case of one recurrence (engine/README.md, "The family in one table"),
in the paper convention S ∈ R^{d_v×d_k}:

    S_t = S_{t-1} (diag(exp g_t) + a_t b_tᵀ) + v_t k_tᵀ,     o_t = S_t q_t

(RWKV-6 reads S_{t-1} instead, plus a bonus term). Inside a chunk that starts from S_0, with
G_t = g_1 + … + g_t the cumulative log decay, only *relative* decays exp(G_t − G_j), j ≤ t, appear.
The fast path takes them as exp(G_t) · exp(−G_j), one matmul, where the chunk's total decay keeps
both factors far from overflow (`factor_limit`); beyond that, `decayed_scores` takes exponents
only where they are ≤ 0, so nothing can overflow however strong the decay (no division by a
cumulative product anywhere). The low-rank part needs r_t = S_{t-1} a_t, which depends on the
earlier r_j: a unit lower-triangular system, solved once per chunk (the WY/UT trick of DeltaNet).

Shapes: inputs arrive as [B, H, N, C, ·] (N chunks of C tokens); g is [.., C, 1] for one decay per
token and head, [.., C, d_k] for one per channel, or None for no decay.

Speed: a long sequence is walked in *blocks* of a few chunks, small enough to stay in the
processor's cache; each block starts from the state the previous one left, exactly as if the
sequence had been cut there and continued with `initial_state`.
"""
import math

import torch
import torch.nn.functional as F

# Elements of one [B, H, block, d] tensor in a block of chunks, so that a block's working set
# (inputs, scores, outputs: ~10 such tensors) stays in a core's 2 MB of L2 cache. Measured on the
# project's 2-core Xeon, 1 thread, 4 heads × 64 channels, T = 4096: blocks of 2^16 elements
# (256 tokens) ran linear attention in 9.9 ms, 2^18 in 12.4 ms, all chunks at once in 15.3 ms.
_BLOCK_ELEMENTS = 2 ** 16

# Largest temporary (in elements) built for the exact per-channel decays; bounds memory.
_BUDGET = 2 ** 22


def blocks(T, chunk_size, width):
    """(start, stop, C): runs of whole chunks of C = chunk_size tokens, about _BLOCK_ELEMENTS /
    width tokens each (width: elements per token), then the shorter last chunk on its own."""
    full = (T // chunk_size) * chunk_size
    step = chunk_size * max(1, _BLOCK_ELEMENTS // (width * chunk_size))
    for start in range(0, full, step):
        yield start, min(start + step, full), chunk_size
    if full < T:
        yield full, T, T - full


def _causal_mask(C, strict, device):
    return torch.ones(C, C, dtype=torch.bool, device=device).tril(-1 if strict else 0)


def factor_limit(dtype):
    """Largest span of cumulative log decay in a chunk (−G at its end) over which
    exp(G_t − G_j) is computed as the product exp(G_t) · exp(−G_j) of two factors.

    The factors then lie in [exp(−span), 1] and [1, exp(span)]: with span ≤ ln(max float)/2 they
    stay within exp(±44) in float32 (exp(±354) in float64), far from overflow and from denormal
    numbers, and so does every product, kept or masked."""
    return math.log(torch.finfo(dtype).max) / 2


def decayed_scores(x, gx, y, gy, strict=False):
    """scores[.., t, j] = Σ_d x[t,d] y[j,d] exp(gx[t,d] − gy[j,d]) for j ≤ t (j < t if strict), else 0.

    gx, gy: None (no decay), [.., C, 1] (one per token) or [.., C, D] (one per channel); gx ≤ gy
    wherever the mask keeps an entry, so every decay kept is ≤ 1. Exact for any decay: the
    chunked form's fallback when its factored scores would leave the float range.
    """
    diagonal = -1 if strict else 0
    if gx is None:
        return (x @ y.mT).tril_(diagonal)
    if gx.shape[-1] == 1:
        # one decay per token: a [C, C] mask, as in SSD; above the diagonal gx − gy ≥ 0 is clamped to 0
        # (exp = 1, no overflow) and zeroed with the rest of the upper triangle
        decay = torch.exp(torch.clamp(gx - gy.mT, max=0))                        # [.., C, C]
        return ((x @ y.mT) * decay).tril_(diagonal)
    return _per_channel_scores(x, gx, y, gy, strict)


def _per_channel_scores(x, gx, y, gy, strict):
    """`decayed_scores` with one decay per channel, exact for any decay, in row blocks of c ≈ √C tokens.

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
    blocks_of = lambda t: t.unflatten(-2, (n, c))                               # [.., n, c, D]

    # 1. pad to n·c rows: zero x, y rows add nothing; repeated decays keep every exponent ≤ 0
    extend = lambda t: torch.cat([t, t[..., -1:, :].expand(*t.shape[:-2], pad, D)], -2) if pad else t
    x, y = F.pad(x, (0, 0, 0, pad)), F.pad(y, (0, 0, 0, pad))
    gx, gy = extend(gx), extend(gy)
    xb, gxb, yb, gyb = blocks_of(x), blocks_of(gx), blocks_of(y), blocks_of(gy)

    # 2. references: R_0 = 0 (block 0 has no earlier columns), R_I = gy just before block I
    R = torch.cat([torch.zeros_like(gy[..., :1, :]), gy[..., c - 1:-1:c, :]], -2)[..., :n, :].unsqueeze(-2)
    # R: [.., n, 1, D]
    earlier = torch.arange(n * c, device=x.device)[None, :] < torch.arange(n, device=x.device)[:, None] * c

    # 3. off-diagonal blocks: rows of block I against all earlier columns, one matmul per block
    group = max(1, _BUDGET // (x[..., :1, :1].numel() * n * c * D))
    off = []
    for i in range(0, n, group):
        bs = slice(i, i + group)
        x_ref = xb[..., bs, :, :] * (gxb[..., bs, :, :] - R[..., bs, :, :]).exp()            # [.., g, c, D]
        log_y = (R[..., bs, :, :] - gy.unsqueeze(-3)).masked_fill(~earlier[bs, :, None], -math.inf)
        off.append(x_ref @ (y.unsqueeze(-3) * log_y.exp()).mT)                               # [.., g, c, n·c]
    off = torch.cat(off, -3)

    # 4. diagonal blocks: the exact [c, c, D] decays, exponents taken only where the mask keeps them
    log_d = (gxb.unsqueeze(-2) - gyb.unsqueeze(-3)).masked_fill(~_causal_mask(c, strict, x.device)[:, :, None],
                                                                -math.inf)
    diag = (xb.unsqueeze(-2) * log_d.exp() * yb.unsqueeze(-3)).sum(-1)                  # [.., n, c, c]

    # 5. place the diagonal blocks on the block diagonal of the [n·c, n·c] scores, cut the padding
    scores = off.unflatten(-1, (n, c)) + torch.einsum("...iab,ij->...iajb", diag,
                                                      torch.eye(n, dtype=x.dtype, device=x.device))
    return scores.flatten(-4, -3).flatten(-2, -1)[..., :C, :C]


def dplr_blocks(q, k, v, g=None, a=None, b=None, u=None, read_before=False):
    """Everything one chunk can compute without knowing the state it starts from.

    Returns (o_intra, q_state, write, log_decay, transition) such that, for a chunk from S_0,
        o = o_intra + q_state @ S_0ᵀ     and     S_end = S_0 · A + write,
    with A = diag(exp(log_decay)) (log_decay [.., 1, 1 or d_k], to broadcast) or the matrix
    transition [.., d_k, d_k]; the other is None, both for no decay (A = I).
    """
    # 1. cumulative log decays: G up to and including each token, G_before up to the one before
    G = g.cumsum(-2) if g is not None else None                                  # [.., C, 1 or d_k]
    G_before = G - g if g is not None and (read_before or a is not None) else None
    G_read = G_before if read_before else G

    # 2. the state's side: queries (and RWKV-7's a) read S_0 through exp(G), S_0 and each write
    #    reach the chunk end through exp(G_end), exp(G_end − G_j)
    from_start = (lambda x, G_x: x * G_x.exp()) if g is not None else (lambda x, G_x: x)
    to_end = (lambda y: y * (G[..., -1:, :] - G).exp()) if g is not None else (lambda y: y)
    q_state = from_start(q, G_read)                                              # [.., C, d_k]
    diagonal = G[..., -1:, :].exp() if g is not None else None                   # [.., 1, 1 or d_k]

    # 3. scores[t, j] = x_t · y_j exp(G_x,t − G_j), j ≤ t: seen from the chunk start, x_t exp(G_x,t)
    #    (step 2) against y_j exp(−G_j), one matmul, while the chunk's decay keeps the factors in
    #    range (factor_limit); the exact masks of decayed_scores beyond it
    factored = g is None or (-G[..., -1, :]).amax() <= factor_limit(q.dtype)
    written = (lambda y: y * (-G).exp()) if g is not None else (lambda y: y)
    if factored:  # the write v_j k_jᵀ exp(G_end − G_j) then reuses k_j exp(−G_j)
        k_written = written(k)
        write = v.mT @ k_written * diagonal if g is not None else v.mT @ k     # [.., d_v, d_k]
    else:
        write = v.mT @ to_end(k)

    def scores(x, G_x, x_state, y, strict=False):
        if factored:
            return (x_state @ (k_written if y is k else written(y)).mT).tril_(-1 if strict else 0)   # [.., C, C]
        return decayed_scores(x, G_x, y, G, strict)

    if a is None:
        # 4. inside the chunk: the scores weigh the values
        o_intra = scores(q, G_read, q_state, k, strict=read_before) @ v         # [.., C, d_v]
        if u is not None:  # RWKV-6 bonus: the current token read through u, before it is written
            o_intra = o_intra + (q * u * k).sum(-1, keepdim=True) * v
        return o_intra, q_state, write, (G[..., -1:, :] if g is not None else None), None

    # 4. r_t = S_{t-1} a_t = S_0 (a_t ⊙ exp(G_{t-1})) + Σ_{j<t} [A_ab]_tj r_j + [A_ak]_tj v_j:
    #    one unit lower-triangular solve for both parts, r = r_intra + r_state S_0ᵀ
    a_state = from_start(a, G_before)
    A_ak, A_ab = scores(a, G_before, a_state, k, strict=True), scores(a, G_before, a_state, b, strict=True)
    unit_lower = torch.eye(q.shape[-2], dtype=q.dtype, device=q.device) - A_ab
    r = torch.linalg.solve_triangular(unit_lower, torch.cat([A_ak @ v, a_state], -1), upper=False, unitriangular=True)
    r_intra, r_state = r.split([v.shape[-1], a.shape[-1]], -1)                  # [.., C, d_v], [.., C, d_k]
    # 5. the read-out and the chunk's transition, with the low-rank part folded in
    Q_b = scores(q, G, q_state, b)
    o_intra = scores(q, G, q_state, k) @ v + Q_b @ r_intra
    q_state = q_state + Q_b @ r_state
    b_end = to_end(b)
    write = write + r_intra.mT @ b_end
    low_rank = r_state.mT @ b_end                                                # [.., d_k, d_k]
    identity = torch.eye(q.shape[-1], dtype=q.dtype, device=q.device)
    transition = low_rank + (identity * diagonal if diagonal is not None else identity)
    return o_intra, q_state, write, None, transition


def scan_states(S0, write, log_decay=None, transition=None):
    """States at the start of every chunk, S_{n+1} = S_n · A_n + write_n (the only sequential part),
    and the state after the last one.

    S0 [B,H,d_v,d_k]; write [B,H,N,d_v,d_k]; A_n = diag(exp(log_decay_n)) with log_decay
    [B,H,N,1,1] (one per head) or [B,H,N,1,d_k] (per channel), or the matrix transition
    [B,H,N,d_k,d_k], or the identity when both are None. Returns (starts [B,H,N,d_v,d_k], final).
    """
    starts, S = [], S0
    for n in range(write.shape[2]):
        starts.append(S)
        if transition is None and log_decay is None:
            S = S + write[:, :, n]
        elif transition is None:
            S = torch.addcmul(write[:, :, n], S, log_decay[:, :, n].exp())      # S diag(exp g) + write
        else:
            S = torch.matmul(S, transition[:, :, n]).add_(write[:, :, n])
    return torch.stack(starts, dim=2), S


def in_chunks(x, start, stop, C, scale=None):
    """x[:, :, start:stop] as [B, H, n, C, ·] chunks, copied to one contiguous block (every matmul
    reads it as it is), times `scale` if given. None stays None."""
    if x is None:
        return None
    chunks = x[:, :, start:stop].unflatten(2, (-1, C)).clone(memory_format=torch.contiguous_format)
    return chunks.mul_(scale) if scale is not None else chunks


def dplr_chunked(q, k, v, S0, chunk_size, g=None, a=None, b=None, u=None, read_before=False, scale=None):
    """The chunked form. Tensors [B, H, T, ·]; S0 [B, H, d_v, d_k]; q is multiplied by `scale` on
    the way in. Returns (o [B,H,T,d_v], S_T).

    Blocks of whole chunks (see `blocks`) run one after the other, each from the state the last
    one left; a shorter last chunk follows from their final state.
    """
    B, H, T, K = q.shape
    V = v.shape[-1]
    o = q.new_empty(B, T, H, V).transpose(1, 2)                                  # [B,H,T,d_v], stored [B,T,H,d_v]
    S = S0
    for start, stop, C in blocks(T, chunk_size, B * H * max(K, V, chunk_size)):
        part = lambda x: in_chunks(x, start, stop, C)                            # [B,H,n,C,·]
        o_intra, q_state, write, log_decay, transition = dplr_blocks(
            in_chunks(q, start, stop, C, scale), part(k), part(v), part(g), part(a), part(b), u, read_before)
        starts, S = scan_states(S, write, log_decay, transition)
        batch = lambda x: x.flatten(0, 2)                                        # [B·H·n, ·, ·]
        batch(o_intra).baddbmm_(batch(q_state), batch(starts).mT)               # o_intra += q_state S_startᵀ
        o[:, :, start:stop] = o_intra.flatten(2, 3)                              # [B,H,n·C,d_v]
    return o, S


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
    scores = (q @ k.mT) * (D - m_intra[..., None]).exp()
    h_intra = scores @ v                                                         # [B,H,N,C,d_v]
    n_intra = scores.sum(-1)                                                     # Σ_j w_tj k_j·q_t
    w_end = (D[..., -1, :] - m_intra[..., -1:]).exp()                            # weights into the chunk end
    write_C = (v * w_end[..., None]).mT @ k                                      # [B,H,N,d_v,d_k]
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


def mlstm_chunked(q, k, v, i, f, C0, n0, m0, chunk_size, scale=None):
    """The chunked mLSTM. Tensors [B,H,T,·], i, f [B,H,T]. Returns (o, (C, n, m)), in blocks of chunks."""
    B, H, T, K = q.shape
    V = v.shape[-1]
    o = q.new_empty(B, T, H, V).transpose(1, 2)                                  # [B,H,T,d_v], stored [B,T,H,d_v]
    state = (C0, n0, m0)
    for start, stop, C in blocks(T, chunk_size, B * H * max(K, V, chunk_size)):
        part = lambda x: in_chunks(x, start, stop, C)
        qc = in_chunks(q, start, stop, C, scale)
        log_f, m_intra, h_intra, n_intra, write_C, write_n = mlstm_blocks(qc, part(k), part(v), part(i), part(f))
        (C_s, n_s, m_s), state = mlstm_scan(*state, log_f[..., -1], m_intra[..., -1], write_C, write_n)
        m = torch.maximum(log_f + m_s[..., None], m_intra)                       # the recurrence's m_t
        from_state, from_chunk = (log_f + m_s[..., None] - m).exp(), (m_intra - m).exp()
        h = from_state[..., None] * (qc @ C_s.mT) + from_chunk[..., None] * h_intra
        qn = from_state * (qc * n_s[..., None, :]).sum(-1) + from_chunk * n_intra
        o[:, :, start:stop] = (h / torch.maximum(qn.abs(), (-m).exp())[..., None]).flatten(2, 3)
    return o, state


def softmax_chunked(q, k, v, k_cache, v_cache, chunk_size, scale):
    """Softmax attention in blocks of queries (chunked prefill), by torch's fused attention.

    Tensors [B,H,T,·] (q not yet scaled), caches [B,H,T0,·]. A fresh sequence (no cache) is one
    call of `scaled_dot_product_attention`, whose kernel itself walks blocks of queries and keys
    with a running softmax (memory per block, not T × T). After a cache, each block of chunk_size
    queries reads every key so far, the last ones under a causal mask aligned to the bottom right.
    Work stays quadratic.
    """
    keys, values = torch.cat([k_cache, k], 2), torch.cat([v_cache, v], 2)
    T0, T = k_cache.shape[2], q.shape[2]
    if T0 == 0:
        return F.scaled_dot_product_attention(q, keys, values, is_causal=True, scale=scale), (keys, values)
    outputs = []
    for start in range(0, T, chunk_size):
        stop = min(start + chunk_size, T)
        visible = T0 + stop
        sees = torch.ones(stop - start, visible, dtype=torch.bool, device=q.device).tril(T0 + start)   # [c, visible]
        outputs.append(F.scaled_dot_product_attention(q[:, :, start:stop], keys[:, :, :visible], values[:, :, :visible],
                                                      attn_mask=sees, scale=scale))
    return torch.cat(outputs, dim=2), (keys, values)
