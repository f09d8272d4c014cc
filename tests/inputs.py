"""Random inputs for every variant, shaped by the engine contract (DESIGN §4).

`make_inputs` draws q, k, v and the gate keywords a variant needs, with values in the
range a trained layer would produce (or, with ``strong=True``, log decays down to -5 per step).
"""
import math

import torch
import torch.nn.functional as F

VARIANTS = ("linear", "retnet", "mamba2", "gla", "deltanet", "gated_deltanet",
            "rwkv6", "rwkv7", "mlstm", "softmax")


def rel_rms(x, ref):
    """Relative RMS error ‖x − ref‖ / ‖ref‖ (the fla `assert_close` measure)."""
    x, ref = x.double(), ref.double()
    return ((x - ref).pow(2).mean().sqrt() / ref.pow(2).mean().sqrt().clamp_min(1e-300)).item()


def make_inputs(variant, *, B=2, T=17, H=2, d_k=8, d_v=6, dtype=torch.float64, seed=0,
                strong=False, normalize=False):
    gen = torch.Generator().manual_seed(seed)

    def randn(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float64)

    def rand(*shape):
        return torch.rand(*shape, generator=gen, dtype=torch.float64)

    def log_decay(*shape):
        # strong: log decay anywhere in (-5, 0); mild: close to 1 as trained gates are
        return -5 * rand(*shape) if strong else F.logsigmoid(randn(*shape) + 3)

    q, k, v = randn(B, T, H, d_k), randn(B, T, H, d_k), randn(B, T, H, d_v)
    gates = {}
    if variant == "linear" and normalize:
        q, k = F.elu(q) + 1, F.elu(k) + 1  # positive features keep z·q away from zero
        gates["normalize"] = True
    elif variant == "retnet":
        gates["g"] = (-5 * rand(H) if strong
                      else torch.tensor([math.log(1 - 2 ** (-5 - h)) for h in range(H)],
                                        dtype=torch.float64))
    elif variant in ("mamba2", "gated_deltanet"):
        gates["g"] = log_decay(B, T, H)
    elif variant in ("gla", "rwkv6", "rwkv7"):
        gates["g"] = log_decay(B, T, H, d_k)
    if variant in ("deltanet", "gated_deltanet"):
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
        gates["beta"] = torch.sigmoid(randn(B, T, H))
    if variant == "rwkv6":
        gates["u"] = 0.5 * randn(H, d_k)
    if variant == "rwkv7":
        kk = F.normalize(randn(B, T, H, d_k), dim=-1)
        in_context_lr = torch.sigmoid(randn(B, T, H, d_k))
        gates["a"], gates["b"] = -kk, kk * in_context_lr
        k = 0.5 * k
    if variant == "mlstm":
        gates["i"] = randn(B, T, H)
        gates["f"] = randn(B, T, H) + (-5 if strong else 3)
    cast = lambda x: x.to(dtype) if torch.is_tensor(x) and x.is_floating_point() else x
    return cast(q), cast(k), cast(v), {name: cast(x) for name, x in gates.items()}
