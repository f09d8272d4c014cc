"""The peers `python -m lineare.engine bench` measures itself against: fla-core's pure-torch references.

flash-linear-attention (fla-core on PyPI) ships, beside its Triton kernels, a readable `naive`
function per operation, written in plain torch. They are the CPU implementations a practitioner
would reach for, so the bench times our chunked form against them on the same inputs and checks
that both compute the same outputs.

fla-core is an optional extra (`pip install -e .[peers]`), never a dependency of the engine. Its
package imports Triton on import, which a CPU machine may not have, so each `naive` module (torch
and einops only) is loaded from its file without importing the package around it.

    peers = available()                       # {variant: Peer}, empty without fla-core
    o = peers["gla"].run(q, k, v, **gates)    # our layouts in and out: [B,T,H,·] → [B,T,H,d_v]

Layouts: fla takes [B,T,H,·] (some naive functions [B,H,T,·]) and stores the state transposed,
[B,H,d_k,d_v]; these wrappers convert, so a peer looks like `engine.ops.forward`'s output.
Scaling: each call gets our default scale d_k^-½ (some naive functions hard-code it).
"""
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from einops import rearrange

# where each naive module lives inside the fla package
_FILES = {
    "linear_attn": "ops/linear_attn/naive.py",
    "simple_gla": "ops/simple_gla/naive.py",
    "gla": "ops/gla/naive.py",
    "delta_rule": "ops/delta_rule/naive.py",
    "gated_delta_rule": "ops/gated_delta_rule/naive.py",
    "rwkv6": "ops/rwkv6/chunk_naive.py",
    "dplr": "ops/generalized_delta_rule/dplr/naive.py",
}


@dataclass(frozen=True)
class Peer:
    """One fla-core reference function, wrapped to take and return our layouts."""
    variant: str
    name: str          # the fla function, as `module.function`
    kind: str          # "chunked" or "recurrent": what the reference does
    chunk: int         # the sequence length must be a multiple of this (1: any length)
    run: Callable      # (q, k, v, **gates) -> o [B,T,H,d_v]


def fla_version():
    """fla-core's installed version, or None."""
    try:
        from importlib.metadata import version
        return version("fla-core")
    except Exception:
        return None


def _load(key):
    """The naive module `key` from the installed fla package, loaded from its file (no Triton)."""
    spec = importlib.util.find_spec("fla")                # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / _FILES[key]
    if not path.exists():
        return None
    module_spec = importlib.util.spec_from_file_location(f"lineare_fla_naive_{key}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def available():
    """{variant: Peer} for every variant with a fla-core reference; {} when fla-core is missing."""
    modules = {}
    for key in _FILES:
        try:
            modules[key] = _load(key)
        except Exception:                                  # an fla release that moved or changed a file
            modules[key] = None
    peers = {}
    for variant, key, function, kind, multiple, call in _PEERS:
        fn = getattr(modules[key], function, None) if modules[key] is not None else None
        if fn is not None:
            run = lambda q, k, v, _fn=fn, _call=call, **gates: _call(_fn, q, k, v, **gates)
            peers[variant] = Peer(variant, f"{key}.{function}", kind, multiple, run)
    return peers


# ---------------------------------------------------------------- one wrapper per variant
# (variant, module, function, kind, length multiple, call): `call(fn, q, k, v, **gates)` converts our
# layouts to the reference's and back. `hf`/`tf` switch [B,T,H,·] ↔ [B,H,T,·] for the references
# that work head-first; the states they return ([B,H,d_k,d_v], transposed) are not used.

hf = lambda x: rearrange(x, "b t h ... -> b h t ...")
tf = lambda x: rearrange(x, "b h t ... -> b t h ...")
d_k_scale = lambda q: q.shape[-1] ** -0.5

_PEERS = (
    ("linear", "linear_attn", "naive_chunk_linear_attn", "chunked", 64,
     lambda fn, q, k, v: fn(q, k, v, scale=d_k_scale(q))),
    # RetNet's fixed decay per head, repeated at every token: the scalar-gate (simple GLA) reference
    ("retnet", "simple_gla", "naive_chunk_simple_gla", "chunked", 1,
     lambda fn, q, k, v, g: fn(q, k, v, g.expand(*q.shape[:3]), chunk_size=64)[0]),
    ("mamba2", "simple_gla", "naive_chunk_simple_gla", "chunked", 1,
     lambda fn, q, k, v, g: fn(q, k, v, g, chunk_size=64)[0]),
    # fla-core has no pure-torch chunked GLA: its reference is the token loop
    ("gla", "gla", "naive_recurrent_gla", "recurrent", 1,
     lambda fn, q, k, v, g: fn(q, k, v, g)[0]),
    ("deltanet", "delta_rule", "delta_rule_chunkwise", "chunked", 32,
     lambda fn, q, k, v, beta: tf(fn(hf(q), hf(k), hf(v), hf(beta), chunk_size=32)[0])),
    ("gated_deltanet", "gated_delta_rule", "naive_chunk_gated_delta_rule", "chunked", 1,
     lambda fn, q, k, v, g, beta: fn(q, k, v, g, beta, chunk_size=64)[0]),
    # this reference applies no scale of its own: q comes in scaled
    ("rwkv6", "rwkv6", "naive_chunk_rwkv6", "chunked", 32,
     lambda fn, q, k, v, g, u: tf(fn(hf(q * d_k_scale(q)), hf(k), hf(v), hf(g), u, chunk_size=32))),
    # fla's generalized delta rule S ← S diag(exp gk) + (S α) βᵀ + v kᵀ, with our a, b as α, β
    ("rwkv7", "dplr", "dplr_chunkwise", "chunked", 32,
     lambda fn, q, k, v, g, a, b: tf(fn(hf(q), hf(k), hf(v), hf(a), hf(b), hf(g), chunk_size=32)[0])),
)
