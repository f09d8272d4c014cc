"""One token-mixing layer per variant, with the gate parametrizations of the papers (engine/README.md, "The family
in one table").

Every layer reads x [B,T,D] the same way:

    x ─ qkv projection ─ short causal conv (kernel 4) ─ SiLU ─ variant's feature map ─┐
    x ─ gate projections (β, log decay, …) ───────────────────────────────────────────┴─ mixer
    mixer read-out o [B,T,H,d_v] ─ per-head RMS norm ─ output projection ─ y [B,T,D]

The short convolution lets a single layer see the previous token, so the key written at a value's
position can be the key that came just before it (MQAR needs exactly that binding).

`forward(x)` runs whole sequences with the engine's chunked form (training); `step(x_t, cache)` runs
one token with `engine.stepping.step` and returns its StepRecord (the app draws those). Both share
`mixer_inputs`, so they compute the same function.
"""
import math
from typing import Any, NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F
from einops import rearrange

from lineare.engine import ops, stepping


# Lowest log decay per step handed to the engine: a decay of e^−5 ≈ 0.007 already wipes the memory
# in one token. Unbounded gates (−exp(·), Δ·A) drift far lower in training (−10⁸ seen with RWKV-6),
# where the float32 cumulative sums of the chunked form lose every digit and turn into NaN.
LOG_DECAY_FLOOR = -5.0


class LayerCache(NamedTuple):
    """What a layer carries from one token to the next."""
    conv: torch.Tensor    # the last kernel−1 inputs of the short convolution [B, kernel−1, channels]
    state: Any            # the engine's state: S [B,H,d_v,d_k], LinearState, MLSTMState or KVCache


class ShortConv(nn.Module):
    """Causal depthwise convolution over time: y_t = Σ_j w_j ⊙ x_{t−kernel+1+j}."""

    def __init__(self, channels, kernel=4):
        super().__init__()
        self.kernel = kernel
        self.weight = nn.Parameter(torch.empty(channels, kernel))
        nn.init.uniform_(self.weight, -kernel ** -0.5, kernel ** -0.5)

    def forward(self, x):                                                       # x [B,T,C]
        T = x.shape[1]
        padded = F.pad(x, (0, 0, self.kernel - 1, 0))                            # [B,kernel−1+T,C]
        # a sum of shifted copies: the same numbers as conv1d, and much faster to differentiate on CPU
        return sum(padded[:, j:j + T] * self.weight[:, j] for j in range(self.kernel))

    def step(self, x_t, window):
        """One token x_t [B,C], window [B,kernel−1,C] of the inputs before it → (y_t [B,C], new window)."""
        full = torch.cat([window, x_t.unsqueeze(1)], 1)                         # [B,kernel,C]
        return torch.einsum("bkc,ck->bc", full, self.weight), full[:, 1:]


def inverse_softplus(x):
    return x + torch.log(-torch.expm1(-x))


def mamba_dt_bias(heads, dt_min=1e-3, dt_max=0.1):
    """Δ at initialization spread log-uniformly over [dt_min, dt_max] (Mamba's recipe)."""
    dt = torch.exp(torch.rand(heads) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min))
    return inverse_softplus(dt)


def slow_to_fast(heads, d_k):
    """Per-channel decay pre-activations z from −6 to −1 within each head (RWKV's spread at init):
    log decays from −0.0025 (remembers for hundreds of tokens) to −0.37 as RWKV-6's −exp(z),
    from −0.0015 to −0.16 as RWKV-7's −e^(−½)σ(z)."""
    channel = torch.arange(heads * d_k) % d_k / max(d_k - 1, 1)
    return -6 + 5 * channel ** 0.7


class LowRank(nn.Sequential):
    """D → rank → out: the cheap data-dependent gate projection of GLA and RWKV."""

    def __init__(self, d_in, rank, d_out, bias=True):
        super().__init__(nn.Linear(d_in, rank, bias=False), nn.Linear(rank, d_out, bias=bias))


class Mixer(nn.Module):
    """Everything the ten layers share; a subclass names its variant and makes its gates."""
    variant = None
    scale = None                                     # query scale passed to the engine (None: d_k^-½)

    def __init__(self, d_model, n_heads, d_k, d_v, conv_size=4, chunk_size=64):
        super().__init__()
        self.H, self.d_k, self.d_v, self.chunk_size = n_heads, d_k, d_v, chunk_size
        self.qkv = nn.Linear(d_model, n_heads * (2 * d_k + d_v), bias=False)
        self.conv = ShortConv(n_heads * (2 * d_k + d_v), conv_size)
        self.o_norm = nn.RMSNorm(d_v)
        self.out = nn.Linear(n_heads * d_v, d_model, bias=False)

    # ---------------------------------------------------------------- what each variant changes

    def gates(self, x, q, k, v):
        """Gate keywords for the engine and the final q, k, v. x [B,T,D]; q, k, v [B,T,H,·]."""
        return q, k, v, {}

    def skip(self, v):
        """A term added to the read-out before the norm, from the raw values (Mamba-2's D x)."""
        return None

    def engine_options(self):
        return {}

    # ---------------------------------------------------------------- shared plumbing

    def mixer_inputs(self, x, mixed):
        """x [B,T,D] and the convolved projection [B,T,channels] → (q, k, v, gates, skip)."""
        q, k, v = F.silu(mixed).split([self.H * self.d_k, self.H * self.d_k, self.H * self.d_v], -1)
        heads = lambda t: rearrange(t, "b t (h d) -> b t h d", h=self.H)
        q, k, v = heads(q), heads(k), heads(v)                                   # [B,T,H,·]
        q_, k_, v_, gates = self.gates(x, q, k, v)
        if "g" in gates:
            gates["g"] = gates["g"].clamp(min=LOG_DECAY_FLOOR)
        return q_, k_, v_, gates, self.skip(v)

    def project_out(self, o, skip):
        o = self.o_norm(o if skip is None else o + skip)                         # [B,T,H,d_v]
        return self.out(rearrange(o, "b t h d -> b t (h d)"))                    # [B,T,D]

    def forward(self, x, *, form="chunked", return_state=False):
        q, k, v, gates, skip = self.mixer_inputs(x, self.conv(self.qkv(x)))
        o, state = ops.forward(self.variant, q, k, v, form=form, chunk_size=self.chunk_size,
                               scale=self.scale, **self.engine_options(), **gates)
        y = self.project_out(o, skip)
        return (y, state) if return_state else y

    def init_cache(self, batch=1, *, dtype=None, device=None):
        w = self.conv.weight
        dtype, device = dtype or w.dtype, device or w.device
        window = torch.zeros(batch, self.conv.kernel - 1, w.shape[0], dtype=dtype, device=device)
        state = stepping.init_state(self.variant, batch=batch, heads=self.H, d_k=self.d_k, d_v=self.d_v,
                                    dtype=dtype, device=device, **self.engine_options())
        return LayerCache(window, state)

    def step(self, x_t, cache=None):
        """One token x_t [B,D] → (y_t [B,D], new cache, the engine's StepRecord)."""
        if cache is None:
            cache = self.init_cache(x_t.shape[0], dtype=x_t.dtype, device=x_t.device)
        mixed, window = self.conv.step(self.qkv(x_t), cache.conv)               # [B,channels]
        x = x_t.unsqueeze(1)                                                     # a sequence of one token
        q, k, v, gates, skip = self.mixer_inputs(x, mixed.unsqueeze(1))
        per_token = lambda name, t: t[:, 0] if ops.GATES[self.variant][name].startswith("BT") else t
        o, state, record = stepping.step(self.variant, cache.state, q[:, 0], k[:, 0], v[:, 0], scale=self.scale,
                                         **{name: per_token(name, t) for name, t in gates.items()})
        y = self.project_out(o.unsqueeze(1), skip)[:, 0]
        return y, LayerCache(window, state), record


# -------------------------------------------------------------------- the ten variants

FEATURE_MAPS = {
    "elu1": lambda x: F.elu(x) + 1,                  # Katharopoulos et al. 2020: positive features
    "relu": F.relu,
    "identity": lambda x: x,
}


class LinearAttention(Mixer):
    """S_t = S_{t-1} + v φ(k)ᵀ; o = S φ(q), optionally divided by z·φ(q)."""
    variant = "linear"

    def __init__(self, *args, feature_map="elu1", normalize=False, **kw):
        super().__init__(*args, **kw)
        if feature_map not in FEATURE_MAPS:
            raise ValueError(f"unknown feature map {feature_map!r}; choose one of {', '.join(FEATURE_MAPS)}")
        self.feature_map, self.normalize = feature_map, normalize

    def gates(self, x, q, k, v):
        phi = FEATURE_MAPS[self.feature_map]
        return phi(q), phi(k), v, {}

    def engine_options(self):
        return {"normalize": True} if self.normalize else {}


class RetNet(Mixer):
    """A fixed decay per head, γ_h = 1 − 2^(−5−h) (RetNet, Sun et al. 2023)."""
    variant = "retnet"

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        h = torch.arange(self.H, dtype=torch.float64)
        self.register_buffer("log_gamma", torch.log1p(-(2.0 ** (-5 - h))).float())    # [H]

    def gates(self, x, q, k, v):
        return q, k, v, {"g": self.log_gamma.to(q.dtype)}


class Mamba2(Mixer):
    """SSD: α_t = exp(Δ_t A_h), A = −exp(A_log), Δ = softplus(proj + dt_bias); v = Δ x, k = B, q = C, + D x."""
    variant = "mamba2"
    scale = 1.0                                       # y = C_tᵀ h_t, no query scale in SSD

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.dt = nn.Linear(self.qkv.in_features, self.H, bias=False)
        self.dt_bias = nn.Parameter(mamba_dt_bias(self.H))
        self.A_log = nn.Parameter(torch.log(torch.empty(self.H).uniform_(1, 16)))
        self.D = nn.Parameter(torch.ones(self.H))

    def gates(self, x, C, B, X):                      # the projection's q, k, v are Mamba's C, B, x
        delta = F.softplus(self.dt(x) + self.dt_bias)                            # [B,T,H]
        A = -torch.exp(self.A_log)                                               # [H]
        return C, B, delta.unsqueeze(-1) * X, {"g": delta * A}

    def skip(self, X):
        return self.D[:, None] * X                                               # D x, per head


class GLA(Mixer):
    """Per-channel decay: log α = logsigmoid(low-rank proj)/16 (Yang et al. 2024)."""
    variant = "gla"

    def __init__(self, *args, gate_rank=16, gate_temperature=16, **kw):
        super().__init__(*args, **kw)
        self.gate = LowRank(self.qkv.in_features, gate_rank, self.H * self.d_k)
        self.gate_temperature = gate_temperature

    def gates(self, x, q, k, v):
        g = F.logsigmoid(self.gate(x)) / self.gate_temperature
        return q, k, v, {"g": rearrange(g, "b t (h d) -> b t h d", h=self.H)}


class DeltaNet(Mixer):
    """S_t = S_{t-1}(I − β k kᵀ) + β v kᵀ with β = sigmoid(proj) (×2: eigenvalues down to −1)."""
    variant = "deltanet"

    def __init__(self, *args, allow_neg_eigval=False, **kw):
        super().__init__(*args, **kw)
        self.beta = nn.Linear(self.qkv.in_features, self.H)
        self.beta_max = 2.0 if allow_neg_eigval else 1.0

    def delta_inputs(self, x, q, k):
        beta = self.beta_max * torch.sigmoid(self.beta(x))                       # [B,T,H]
        return F.normalize(q, dim=-1), F.normalize(k, dim=-1), beta

    def gates(self, x, q, k, v):
        q, k, beta = self.delta_inputs(x, q, k)
        return q, k, v, {"beta": beta}


class GatedDeltaNet(DeltaNet):
    """DeltaNet with a decay α_t: log α = −exp(A_log)·softplus(proj + dt_bias) (Yang et al. 2025)."""
    variant = "gated_deltanet"

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.alpha = nn.Linear(self.qkv.in_features, self.H, bias=False)
        self.dt_bias = nn.Parameter(mamba_dt_bias(self.H))
        self.A_log = nn.Parameter(torch.log(torch.empty(self.H).uniform_(1, 16)))

    def gates(self, x, q, k, v):
        q, k, beta = self.delta_inputs(x, q, k)
        g = -torch.exp(self.A_log) * F.softplus(self.alpha(x) + self.dt_bias)    # [B,T,H]
        return q, k, v, {"g": g, "beta": beta}


class RWKV6(Mixer):
    """Per-channel decay log w = −exp(w0 + low-rank proj); reads S_{t-1} plus a bonus u ⊙ k."""
    variant = "rwkv6"

    def __init__(self, *args, gate_rank=16, **kw):
        super().__init__(*args, **kw)
        self.decay = LowRank(self.qkv.in_features, gate_rank, self.H * self.d_k, bias=False)
        self.w0 = nn.Parameter(slow_to_fast(self.H, self.d_k))
        self.u = nn.Parameter(0.5 * torch.ones(self.H, self.d_k))

    def gates(self, x, q, k, v):
        g = -torch.exp(self.w0 + self.decay(x))
        return q, k, v, {"g": rearrange(g, "b t (h d) -> b t h d", h=self.H), "u": self.u.to(q.dtype)}


class RWKV7(Mixer):
    """S_t = S_{t-1}(diag(w_t) − κ̂ (a_t ⊙ κ̂)ᵀ) + v k̃ᵀ: a generalized delta rule (Peng et al. 2025).

    κ̂ = normalize(k ⊙ ξ) is the removal key, a_t = sigmoid(proj) the in-context learning rate,
    log w = −e^(−½) sigmoid(proj) keeps every decay in [e^(−e^(−½)), 1), and the written key is
    k̃ = k ⊙ (1 + (a_t − 1) ⊙ k_a).
    """
    variant = "rwkv7"

    def __init__(self, *args, gate_rank=16, **kw):
        super().__init__(*args, **kw)
        D, HK = self.qkv.in_features, self.H * self.d_k
        self.decay = LowRank(D, gate_rank, HK)
        self.rate = LowRank(D, gate_rank, HK)
        with torch.no_grad():
            self.decay[1].bias.copy_(slow_to_fast(self.H, self.d_k))              # most channels start slow
        self.removal_scale = nn.Parameter(torch.full((self.H, self.d_k), 0.85))   # ξ
        self.rate_mix = nn.Parameter(torch.ones(self.H, self.d_k))                # k_a

    def gates(self, x, q, k, v):
        heads = lambda t: rearrange(t, "b t (h d) -> b t h d", h=self.H)
        g = -math.exp(-0.5) * torch.sigmoid(heads(self.decay(x)))
        rate = torch.sigmoid(heads(self.rate(x)))                                 # [B,T,H,d_k]
        kappa = F.normalize(k * self.removal_scale, dim=-1)                       # κ̂
        k = k * (1 + (rate - 1) * self.rate_mix)
        return q, k, v, {"g": g, "a": -kappa, "b": kappa * rate}


class MLSTM(Mixer):
    """xLSTM's matrix memory: exponential input gate i = exp(ĩ), forget gate σ(f̃), stabilizer m."""
    variant = "mlstm"

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        D = self.qkv.in_features
        self.input_gate, self.forget_gate = nn.Linear(D, self.H), nn.Linear(D, self.H)
        with torch.no_grad():
            self.forget_gate.bias.copy_(torch.linspace(3.0, 6.0, self.H))         # start remembering
            self.input_gate.bias.zero_()

    def gates(self, x, q, k, v):
        return q, k, v, {"i": self.input_gate(x), "f": self.forget_gate(x)}


class SoftmaxAttention(Mixer):
    """The baseline: causal softmax attention over a growing KV cache."""
    variant = "softmax"


LAYERS = {cls.variant: cls for cls in (LinearAttention, RetNet, Mamba2, GLA, DeltaNet, GatedDeltaNet,
                                        RWKV6, RWKV7, MLSTM, SoftmaxAttention)}


def make_layer(variant, d_model, n_heads, d_k, d_v, **options):
    """The layer of `variant`; options reach only the layers that take them (feature_map, …)."""
    if variant not in LAYERS:
        raise ValueError(f"unknown variant {variant!r}; choose one of {', '.join(LAYERS)}")
    taken = {"linear": ("feature_map", "normalize"), "gla": ("gate_rank",), "rwkv6": ("gate_rank",),
             "rwkv7": ("gate_rank",), "deltanet": ("allow_neg_eigval",),
             "gated_deltanet": ("allow_neg_eigval",)}.get(variant, ())
    shared = ("conv_size", "chunk_size")
    kw = {name: value for name, value in options.items() if name in taken or name in shared}
    return LAYERS[variant](d_model, n_heads, d_k, d_v, **kw)
