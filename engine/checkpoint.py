"""Checkpoints: safetensors weights, a JSON sidecar, and a checksum manifest (engine/README.md, "Tasks and checkpoints").

    save("assets/checkpoints/deltanet.safetensors", model, command=..., data_seeds=..., ...)
    model, sidecar = load("assets/checkpoints/deltanet.safetensors")

`name.safetensors` holds the weights only (never a pickle); `name.json` beside it holds the model
config, how the weights were made (command, data seeds, training time, final validation accuracy)
and the sha256 of the weights file; `MANIFEST.json` in the same folder maps every file to its
sha256. Loading checks all three and refuses anything that does not match with a ValueError
(FileNotFoundError when a file is missing).
"""
import hashlib
import json
import os
import tempfile
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from engine.model import ModelConfig, TinyLM

FORMAT = "lineare-checkpoint"
VERSION = 1
MANIFEST = "MANIFEST.json"


def sidecar_path(path):
    return Path(path).with_suffix(".json")


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def save(path, model, **info):
    """Write the weights, the sidecar (config + `info`) and update the folder's manifest."""
    path = Path(path)
    if path.suffix != ".safetensors":
        raise ValueError(f"checkpoint path must end in .safetensors, not {path.name!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    weights = {name: t.detach().to("cpu").contiguous() for name, t in model.state_dict().items()}
    # one metadata entry only: safetensors writes its metadata map in an arbitrary order, so two
    # entries would give the same weights a different sha256 from one run to the next
    _write_atomically(path, lambda tmp: save_file(weights, tmp, metadata={"format": "pt"}))
    sidecar = {"format": FORMAT, "version": VERSION, "weights": path.name, "sha256": sha256_file(path),
               "config": model.config.to_dict(), **info}
    _write_json(sidecar_path(path), sidecar)
    update_manifest(path.parent, [path, sidecar_path(path)])
    return sidecar


def load(path, *, device="cpu"):
    """(TinyLM in eval mode, sidecar dict) after checking checksums, keys and shapes."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    side = sidecar_path(path)
    if not side.is_file():
        raise FileNotFoundError(f"checkpoint {path.name} has no sidecar {side.name} beside it")
    check_manifest(path.parent, [path, side])
    sidecar = read_sidecar(side)
    if sidecar["weights"] != path.name:
        raise ValueError(f"sidecar {side.name} describes {sidecar['weights']!r}, not {path.name!r}")
    actual = sha256_file(path)
    if actual != sidecar["sha256"]:
        raise ValueError(f"checksum mismatch for {path.name}: the sidecar says {sidecar['sha256']}, the file "
                         f"hashes to {actual}; the file is corrupted or was replaced")
    try:
        weights = load_file(path)
    except (SafetensorError, OSError, ValueError) as error:
        raise ValueError(f"{path.name} is not a readable safetensors file: {error}") from None
    model = TinyLM(model_config(sidecar))
    _check_weights(path.name, model, weights)
    model.load_state_dict(weights, strict=True)
    return model.to(device).eval(), sidecar


def read_sidecar(side):
    try:
        sidecar = json.loads(Path(side).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"sidecar {Path(side).name} is not valid JSON: {error}") from None
    if not isinstance(sidecar, dict) or sidecar.get("format") != FORMAT:
        raise ValueError(f"{Path(side).name} is not a Lineare checkpoint sidecar (no \"format\": \"{FORMAT}\")")
    if sidecar.get("version") != VERSION:
        raise ValueError(f"{Path(side).name} has version {sidecar.get('version')!r}; this engine reads {VERSION}")
    for key in ("weights", "sha256", "config"):
        if key not in sidecar:
            raise ValueError(f"sidecar {Path(side).name} lacks {key!r}")
    model_config(sidecar)                                                      # fails early if malformed
    return sidecar


def model_config(sidecar):
    try:
        return ModelConfig.from_dict(sidecar["config"])
    except (TypeError, ValueError) as error:
        raise ValueError(f"the sidecar's model config is not valid: {error}") from None


def _check_weights(name, model, weights):
    expected = model.state_dict()
    missing, unexpected = sorted(set(expected) - set(weights)), sorted(set(weights) - set(expected))
    if missing or unexpected:
        raise ValueError(f"{name} does not fit a {model.config.variant} TinyLM with this config: "
                         f"missing {missing[:5]}{'…' if len(missing) > 5 else ''}, "
                         f"unexpected {unexpected[:5]}{'…' if len(unexpected) > 5 else ''}")
    for key, t in weights.items():
        if tuple(t.shape) != tuple(expected[key].shape):
            raise ValueError(f"{name}: {key} has shape {tuple(t.shape)}, the config expects "
                             f"{tuple(expected[key].shape)}")
        if not t.is_floating_point():
            raise ValueError(f"{name}: {key} has dtype {t.dtype}, expected floating point")
        if not torch.isfinite(t).all():
            raise ValueError(f"{name}: {key} holds NaN or infinite values")


# ------------------------------------------------------------------------------- manifest

def read_manifest(folder):
    path = Path(folder) / MANIFEST
    if not path.is_file():
        return {}
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path} is not valid JSON: {error}") from None
    if not isinstance(manifest, dict) or not all(isinstance(v, str) for v in manifest.values()):
        raise ValueError(f"{path} must map file names to sha256 strings")
    return manifest


def update_manifest(folder, files):
    manifest = read_manifest(folder)
    manifest.update({Path(f).name: sha256_file(f) for f in files})
    _write_json(Path(folder) / MANIFEST, dict(sorted(manifest.items())))


def check_manifest(folder, files=None):
    """Every listed file (or just `files`) must exist and hash as the manifest says.

    Files the manifest does not list are left to the sidecar's own checksum.
    """
    manifest = read_manifest(folder)
    names = manifest if files is None else [Path(f).name for f in files if Path(f).name in manifest]
    for name in names:
        path = Path(folder) / name
        if not path.is_file():
            raise FileNotFoundError(f"{MANIFEST} lists {name}, but there is no such file in {folder}")
        actual = sha256_file(path)
        if actual != manifest[name]:
            raise ValueError(f"checksum mismatch for {name}: {MANIFEST} says {manifest[name]}, the file hashes "
                             f"to {actual}; it is corrupted or was replaced")


def _write_json(path, data):
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    _write_atomically(Path(path), lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))


def _write_atomically(path, write):
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)                         # mkstemp makes 0600; checkpoints are shared
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
