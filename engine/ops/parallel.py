"""Parallel forms: the whole sequence at once, as one T×T computation (good for training on GPUs).

For the fixed-state variants this is the chunked algorithm with a single chunk that covers the
whole sequence: o = (Q Kᵀ ⊙ L) V + (Q ⊙ decay) S_0ᵀ, with L the decay mask of SSD (and, for the
delta-rule family, the UT/WY triangular solve over all T tokens). Nothing is passed across chunks,
so no recurrence is left: every output is a masked matrix product.
"""
import math

import torch

from lineare.engine.ops.chunked import decayed_scores, dplr_chunked, mlstm_chunked


def decay_mask(g, T=None):
    """The decay mask L[t, j] = exp(G_t − G_j) for j ≤ t (0 above the diagonal), for drawing.

    g: log decays [T] (one per token) or a single float (a fixed decay, RetNet); returns [T, T].
    """
    g = torch.full((T,), float(g), dtype=torch.float64) if not torch.is_tensor(g) else g.double()
    G = g.cumsum(0)[:, None]
    ones = torch.ones_like(G)
    return decayed_scores(ones, G, ones, G)


def dplr_parallel(q, k, v, S0, g=None, a=None, b=None, u=None, read_before=False):
    return dplr_chunked(q, k, v, S0, q.shape[2], g, a, b, u, read_before)


def mlstm_parallel(q, k, v, i, f, C0, n0, m0):
    return mlstm_chunked(q, k, v, i, f, C0, n0, m0, q.shape[2])


def softmax_parallel(q, k, v, k_cache, v_cache):
    """Causal softmax attention over the cache and the new tokens. Tensors [B,H,T,·]."""
    keys, values = torch.cat([k_cache, k], 2), torch.cat([v_cache, v], 2)
    T0, T = k_cache.shape[2], q.shape[2]
    scores = q @ keys.transpose(-1, -2)                                          # [B,H,T,T0+T]
    future = torch.ones(T, T0 + T, dtype=torch.bool, device=q.device).triu(T0 + 1)
    return scores.masked_fill(future, -math.inf).softmax(-1) @ values, (keys, values)
