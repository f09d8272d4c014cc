"""Random inputs for every variant, shaped by the engine contract (engine/README.md).

`make_inputs` draws q, k, v and the gate keywords a variant needs, with values in the
range a trained layer would produce (or, with ``strong=True``, log decays down to -5 per step).
"""
import math

import torch
import torch.nn.functional as F

from lineare.engine.gates import make_gates
from lineare.engine.ops import VARIANTS  # noqa: F401  (the tests import it from here: every engine variant)


def rel_rms(x, ref):
    """Relative RMS error ‖x − ref‖ / ‖ref‖ (the fla `assert_close` measure)."""
    x, ref = x.double(), ref.double()
    return ((x - ref).pow(2).mean().sqrt() / ref.pow(2).mean().sqrt().clamp_min(1e-300)).item()


def make_inputs(variant, *, B=2, T=17, H=2, d_k=8, d_v=6, dtype=torch.float64, seed=0,
                strong=False, normalize=False):
    """Random q, k, v and the variant's gates from the one gate recipe (engine.gates), drawn around
    α = 0.95 per step as trained gates are, or (strong) with log decays anywhere in (−5, 0)."""
    gen = torch.Generator().manual_seed(seed)

    def randn(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float64)

    q, k, v = randn(B, T, H, d_k), randn(B, T, H, d_k), randn(B, T, H, d_v)
    alpha = math.exp(-2.5) if strong else 0.95
    gates = make_gates(variant, (B, T, H, d_k), alpha=alpha, beta=1.0, seed=seed + 1, dtype=torch.float64)
    if variant == "linear" and normalize:
        q, k = F.elu(q) + 1, F.elu(k) + 1  # positive features keep z·q away from zero
        gates["normalize"] = True
    if variant in ("deltanet", "gated_deltanet"):
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
    if variant == "rwkv7":
        k = 0.5 * k
    cast = lambda x: x.to(dtype) if torch.is_tensor(x) and x.is_floating_point() else x
    return cast(q), cast(k), cast(v), {name: cast(x) for name, x in gates.items()}
