"""One gate recipe: the gate keywords of `engine.ops.forward` for any variant, from two knobs.

    gates = make_gates("gated_deltanet", (B, T, H, d_k), alpha=0.9, beta=1.0)
    o, S = forward("gated_deltanet", q, k, v, form="chunked", **gates)

The knobs mean the same for every variant:

- **forget α ∈ (0, 1]**: the share of the state a fading transition keeps per step (log decay
  g = log α). RetNet's γ, Mamba-2's and Gated DeltaNet's α_t, mLSTM's forget gate σ(f_t) all take it.
  Per-channel decays (GLA, RWKV-6, RWKV-7) spread it over the key channels, α_i = α^{s_i} with s_i
  evenly from 0.25 to 1.75: channels forget at different speeds around α, as trained gates do.
- **correct β ∈ [0, 1]**: the delta rule's step (DeltaNet, Gated DeltaNet), RWKV-7's in-context
  learning rate (b = β κ̂, a = −κ̂ with κ̂ the unit key).

Without a seed every token gets exactly these values. With a seed the gates are drawn at random
around them, as a benchmark or a test wants: each log decay uniformly in (2 log α, 0) (its mean is
log α), each β uniformly in (0, β), mLSTM's input gate ĩ from a normal law, RWKV-6's bonus u too.
Numbers are drawn in float64 and then cast, so a seed gives the same gates in every dtype.

`active` (a [T] mask) lets only some tokens fade: a data-dependent gate that fades on the tokens that
write and leaves pauses alone. RetNet's rate is fixed per head, so it fades on every token.
"""
import math

import torch
import torch.nn.functional as F

from lineare.engine.ops import GATES, VARIANTS

SPREAD = (0.25, 1.75)            # per-channel decays: α_i = α^{s_i}, s_i evenly over this range
MLSTM_KEEP = (1e-6, 1 - 1e-6)    # σ(f) = α must stay inside (0, 1): its logit is f


def channel_spread(d_k, dtype=torch.float64):
    """s_i for each key channel [d_k] (mean 1)."""
    return torch.linspace(*SPREAD, d_k, dtype=dtype) if d_k > 1 else torch.ones(d_k, dtype=dtype)


def retnet_log_decay(heads, dtype=torch.float32):
    """RetNet's fixed per-head decays γ_h = 1 − 2^(−5−h) (Sun et al. 2023), in log space [H]."""
    return torch.log1p(-torch.pow(2.0, -5.0 - torch.arange(heads, dtype=torch.float64))).to(dtype)


def make_gates(variant, shape, *, alpha=1.0, beta=1.0, seed=None, keys=None, active=None,
               dtype=torch.float32):
    """The gate keywords of `variant` for inputs of `shape` = (B, T, H, d_k).

    keys [B, T, H, d_k]: RWKV-7's κ̂ is the unit key (zero where the key is zero); without keys a seed
    draws random unit vectors. active [T] (bool): tokens on which data-dependent decays act.
    """
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; choose one of {', '.join(VARIANTS)}")
    if not 0 < alpha <= 1:
        raise ValueError(f"alpha must be in (0, 1], got {alpha}")
    if not 0 <= beta <= 1:
        raise ValueError(f"beta must be in [0, 1], got {beta}")
    B, T, H, K = shape
    wanted = GATES[variant]
    generator = torch.Generator().manual_seed(int(seed)) if seed is not None else None

    def uniform(*size):                                                   # in (0, 1), or 1 without a seed
        if generator is None:
            return torch.ones(size, dtype=torch.float64)
        return torch.rand(size, generator=generator, dtype=torch.float64)

    log_alpha = math.log(alpha)
    mask = torch.ones(T, dtype=torch.float64) if active is None else torch.as_tensor(active, dtype=torch.float64)

    def log_decay(per_channel):
        if generator is None:
            spread = channel_spread(K) if per_channel else torch.ones(1, dtype=torch.float64)
            g = (log_alpha * spread).expand(B, T, H, spread.numel())                       # [B,T,H,K|1]
        else:
            g = log_alpha * 2 * uniform(B, T, H, K if per_channel else 1)
        g = g * mask.view(1, T, 1, 1)
        return g if per_channel else g[..., 0]                                              # [B,T,H(,K)]

    found = {}
    if variant == "retnet":
        found["g"] = torch.full((H,), log_alpha, dtype=torch.float64) * (2 * uniform(H) if generator else 1)
    elif wanted.get("g") == "BTH":
        found["g"] = log_decay(per_channel=False)
    elif wanted.get("g") == "BTHK":
        found["g"] = log_decay(per_channel=True)
    if "beta" in wanted:
        found["beta"] = beta * uniform(B, T, H)
    if variant == "rwkv6":
        found["u"] = (0.5 * torch.randn(H, K, generator=generator, dtype=torch.float64) if generator
                      else torch.ones(H, K, dtype=torch.float64))
    if variant == "rwkv7":
        if keys is None:
            if generator is None:
                raise ValueError("rwkv7 needs keys (its κ̂ is the unit key) or a seed to draw them")
            keys = torch.randn(B, T, H, K, generator=generator, dtype=torch.float64)
        unit = F.normalize(keys.to(torch.float64), dim=-1)                                # κ̂ (0 where k = 0)
        found["a"], found["b"] = -unit, unit * beta * uniform(B, T, H, K)
    if variant == "mlstm":
        kept = log_decay(per_channel=False).exp().clamp(*MLSTM_KEEP)                      # σ(f_t)
        found["f"] = torch.log(kept) - torch.log1p(-kept)                                  # its logit
        found["i"] = (torch.randn(B, T, H, generator=generator, dtype=torch.float64) if generator
                      else torch.zeros(B, T, H, dtype=torch.float64))                      # i = e^ĩ
    return {name: x.to(dtype).contiguous() for name, x in found.items()}
