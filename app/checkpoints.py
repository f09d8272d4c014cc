"""The shipped trained checkpoints (assets/checkpoints/), for the dashboards that run a real model.

    model, sidecar = load_model("deltanet")          # loaded on first use, then shared by every session
    logits, layers = step_through(model, tokens)     # token by token, with every layer's StepRecord

Loading goes through `engine.checkpoint.load`, which verifies the checksums; a missing file raises
FileNotFoundError, anything else wrong ValueError, both with a message that names the file. Failures
are not cached, so a repaired file is picked up by the next visitor. The model and the sidecar are
shared between sessions: read them, never change them.
"""
import contextlib
import threading
from pathlib import Path

import numpy as np
import torch

from engine import checkpoint
from engine.ops import VARIANTS

FOLDER = Path(__file__).resolve().parents[1] / "assets" / "checkpoints"

_loaded = {}                          # checkpoint path → (model, sidecar)
_lock = threading.Lock()


def path_of(variant):
    return FOLDER / f"{variant}.safetensors"


def load_model(variant):
    """(TinyLM in eval mode, sidecar dict) of `variant`'s shipped checkpoint, loaded once per process."""
    if variant not in VARIANTS:
        raise ValueError(f"no checkpoint for {variant!r}: choose one of {', '.join(VARIANTS)}")
    path = path_of(variant)
    with _lock:                       # two sessions asking at once load the file once
        if path not in _loaded:
            model, sidecar = checkpoint.load(path)
            if model.config.variant != variant:
                raise ValueError(f"{path.name} holds a {model.config.variant!r} model, not {variant!r}")
            _loaded[path] = model, sidecar
        return _loaded[path]


@contextlib.contextmanager
def one_thread():
    """PyTorch on one thread inside the block: one token of a tiny model gains nothing from a pool,
    and the other visitors keep the other cores. (The server runs one callback at a time.)"""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def step_through(model, tokens):
    """Run `model` over one sequence of token ids, one `model.step` per token.

    Returns (logits [T, V] as NumPy, records[layer][t]: the engine's StepRecord of each layer and token).
    """
    tokens = torch.as_tensor(tokens, dtype=torch.long).reshape(1, -1)              # [1,T]
    cache, logits, layers = None, [], [[] for _ in model.blocks]
    with one_thread(), torch.no_grad():
        for t in range(tokens.shape[1]):
            step_logits, cache, records = model.step(tokens[:, t], cache)        # [1,V], one record per layer
            logits.append(step_logits[0].numpy())
            for layer, record in zip(layers, records):
                layer.append(record)
    return np.stack(logits), layers                                                # [T,V]
