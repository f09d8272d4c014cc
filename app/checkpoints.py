"""The shipped trained checkpoints (assets/checkpoints/), for the dashboards that run a real model.

    model, sidecar = load_model("deltanet")          # loaded on first use, then shared by every session
    logits, layers = step_through(model, tokens)     # token by token, with every layer's StepRecord

Loading goes through `engine.checkpoint.load`, which verifies the checksums, the bounds and the
shapes before it allocates anything; a missing file raises FileNotFoundError, anything else wrong a
CheckpointError (a ValueError, so pages catch both with `except (FileNotFoundError, ValueError)`),
with a message that names the file. Failures are not cached, so a repaired file is picked up by the
next visitor. The model and the sidecar are shared between sessions: read them, never change them.

The manifest is pinned: MANIFEST_SHA256 is its sha256, so editing files and re-hashing the manifest
is refused too. After retraining, ./scripts/train_checkpoints writes the new pin here (and a test
fails until the pin and the manifest agree).
"""
import contextlib
import threading

import numpy as np
import torch

from lineare.engine import checkpoint
from lineare.engine.ops import VARIANTS

FOLDER = checkpoint.SHIPPED
MANIFEST_SHA256 = "221b7bc92a326903e6d03edbeacd04b69d7b1440e139ea7f98f3dfa7ef89a077"   # see the docstring

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
            model, sidecar = _load_checked(path)
            if model.config.variant != variant:
                raise ValueError(f"{path.name} holds a {model.config.variant!r} model, not {variant!r}")
            _loaded[path] = model, sidecar
        return _loaded[path]


def _load_checked(path):
    if not path.is_file():                             # "missing" before "damaged": the page says which
        raise FileNotFoundError(f"no checkpoint at {path}")
    manifest = path.parent / checkpoint.MANIFEST
    if not manifest.is_file() or checkpoint.sha256_file(manifest) != MANIFEST_SHA256:
        raise checkpoint.CheckpointError(f"{manifest} is missing or is not the manifest this version of "
                                         "Lineare was shipped with")
    try:
        return checkpoint.load(path)
    except (RuntimeError, MemoryError) as error:       # e.g. under a memory limit: a notice, not a broken page
        raise checkpoint.CheckpointError(f"{path.name} could not be loaded: {type(error).__name__}: "
                                         f"{error}") from None


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
