"""Checkpoints: safetensors weights, a JSON sidecar, and a checksum manifest (engine/README.md, "Tasks and
checkpoints").

    save("assets/checkpoints/deltanet.safetensors", model, command=..., data_seeds=..., ...)
    model, sidecar = load("assets/checkpoints/deltanet.safetensors")

`name.safetensors` holds the weights only (never a pickle); `name.json` beside it holds the model
config, how the weights were made (command, data seeds, training time, final validation accuracy)
and the sha256 of the weights file; `MANIFEST.json` in the same folder maps every file to its
sha256. Loading checks all three and refuses anything that does not match with a CheckpointError
(a ValueError; FileNotFoundError when a file is missing).

A checkpoint is untrusted input (a deployed folder can be edited), so loading allocates nothing
before the checks that can be made on the files themselves have passed: both files are listed in the
manifest and hash as it says, the config is within LIMITS and its model within MAX_WEIGHTS (counted
from the config by `weights_bound`, before the model is built), and the safetensors header (read
without the tensors) holds at most MAX_WEIGHTS numbers, then exactly the model's tensors, shapes and
float dtypes. (Not a model on PyTorch's meta device: its first use imports torch._dynamo, seconds
and ~100 MB per server process.)
"""
import hashlib
import json
import math
import os
import tempfile
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file

from lineare.engine.model import ModelConfig, TinyLM
from lineare.data import data_path

FORMAT = "lineare-checkpoint"
VERSION = 1
MANIFEST = "MANIFEST.json"
# bounds a loadable config must respect: far above the shipped models (d_model 64, 2 layers, 67k
# weights), far below what would exhaust a server's memory
LIMITS = {"vocab_size": 65_536, "d_model": 4096, "n_layers": 64, "n_heads": 64, "d_k": 4096, "d_v": 4096,
          "mlp_ratio": 16, "conv_size": 64, "gate_rank": 4096, "chunk_size": 4096}
MAX_WEIGHTS = 20_000_000                  # numbers in one checkpoint (80 MB in float32; shipped: 67k)
FLOAT_DTYPES = {"F16", "BF16", "F32", "F64"}
SHIPPED = data_path("assets") / "checkpoints"      # the trained models Lineare ships, one per variant


class CheckpointError(ValueError):
    """A checkpoint that must not be loaded: damaged, replaced, unlisted, or beyond the bounds."""


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


def shipped_names():
    return sorted(p.stem for p in SHIPPED.glob("*.safetensors"))


def find(name_or_path):
    """The checkpoint a user named: a .safetensors file, or the name of one Lineare ships (`deltanet`)."""
    path, names = Path(name_or_path), shipped_names()
    if path.is_file():
        return path
    bare = path.suffix != ".safetensors" and path.name == str(name_or_path)
    if bare and path.name in names:
        return SHIPPED / f"{path.name}.safetensors"
    ours = (f"--checkpoint {path.stem}" if path.stem in names
            else f"give its name alone: {', '.join(names) or '(none found)'}")
    raise FileNotFoundError(f"no checkpoint {'named ' + repr(str(name_or_path)) if bare else 'at ' + str(path)}; "
                            f"for one Lineare ships, {ours} (they are in {SHIPPED})")


def load(path, *, device="cpu"):
    """(TinyLM in eval mode, sidecar dict) after checking the manifest, checksums, bounds, keys and shapes."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    side = sidecar_path(path)
    if not side.is_file():
        raise FileNotFoundError(f"checkpoint {path.name} has no sidecar {side.name} beside it")
    check_manifest(path.parent, [path, side])
    sidecar = read_sidecar(side)
    if sidecar["weights"] != path.name:
        raise CheckpointError(f"sidecar {side.name} describes {sidecar['weights']!r}, not {path.name!r}")
    actual = sha256_file(path)
    if actual != sidecar["sha256"]:
        raise CheckpointError(f"checksum mismatch for {path.name}: the sidecar says {sidecar['sha256']}, the "
                              f"file hashes to {actual}; the file is corrupted or was replaced")
    config = model_config(sidecar)
    header = _read_header(path)
    model = TinyLM(config)                                     # at most MAX_WEIGHTS numbers (model_config)
    _check_header(path, config, header, {key: tuple(t.shape) for key, t in model.state_dict().items()})
    try:
        weights = load_file(path)
    except (SafetensorError, OSError, ValueError) as error:
        raise CheckpointError(f"{path.name} is not a readable safetensors file: {error}") from None
    for key, t in weights.items():
        if not torch.isfinite(t).all():
            raise CheckpointError(f"{path.name}: {key} holds NaN or infinite values")
    model.load_state_dict(weights, strict=True)
    return model.to(device).eval(), sidecar


def read_sidecar(side):
    try:
        sidecar = json.loads(Path(side).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CheckpointError(f"sidecar {Path(side).name} is not valid JSON: {error}") from None
    if not isinstance(sidecar, dict) or sidecar.get("format") != FORMAT:
        raise CheckpointError(f"{Path(side).name} is not a Lineare checkpoint sidecar "
                              f"(no \"format\": \"{FORMAT}\")")
    if sidecar.get("version") != VERSION:
        raise CheckpointError(f"{Path(side).name} has version {sidecar.get('version')!r}; "
                              f"this engine reads {VERSION}")
    for key in ("weights", "sha256", "config"):
        if key not in sidecar:
            raise CheckpointError(f"sidecar {Path(side).name} lacks {key!r}")
    model_config(sidecar)                                                      # fails early if malformed
    return sidecar


def model_config(sidecar):
    """The sidecar's ModelConfig, refused when malformed, beyond LIMITS or above MAX_WEIGHTS."""
    try:
        config = ModelConfig.from_dict(sidecar["config"])
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"the sidecar's model config is not valid: {error}") from None
    too_big = {name: getattr(config, name) for name, limit in LIMITS.items() if getattr(config, name) > limit}
    if too_big:
        raise CheckpointError("the sidecar's model config is beyond this engine's bounds: "
                              + ", ".join(f"{name} = {value} > {LIMITS[name]}" for name, value in too_big.items()))
    if weights_bound(config) > MAX_WEIGHTS:
        raise CheckpointError(f"the sidecar's model config makes more than {MAX_WEIGHTS:,} weights")
    return config


def weights_bound(c):
    """An upper bound of TinyLM(c)'s number of weights, from the config alone (nothing is built).

    Per layer: q, k, v, the output and the short convolution over W = H(2d_k + d_v) channels; up to
    two low-rank gates (D → rank → W at most); up to four per-head gates from D; per-channel vectors;
    norms; the MLP. tests/test_checkpoint_safety.py checks it against every variant."""
    width = c.n_heads * (2 * c.d_k + c.d_v)
    mixer = width * (2 * c.d_model + c.conv_size + 8) + 2 * (c.d_model + width + 1) * c.gate_rank \
        + 4 * c.n_heads * (c.d_model + 1) + c.d_v
    mlp = 2 * c.mlp_ratio * c.d_model ** 2 + (c.mlp_ratio + 2) * c.d_model if c.mlp else 0
    return 2 * c.vocab_size * c.d_model + c.d_model + c.n_layers * (mixer + mlp + 2 * c.d_model)


def _read_header(path):
    """{tensor name: (shape, dtype)} from the file's header alone; refused above MAX_WEIGHTS numbers."""
    try:
        with safe_open(path, framework="pt") as f:
            header = {key: (tuple(f.get_slice(key).get_shape()), f.get_slice(key).get_dtype()) for key in f.keys()}
    except (SafetensorError, OSError, ValueError) as error:
        raise CheckpointError(f"{path.name} is not a readable safetensors file: {error}") from None
    if sum(math.prod(shape) for shape, _dtype in header.values()) > MAX_WEIGHTS:
        raise CheckpointError(f"{path.name} holds more than {MAX_WEIGHTS:,} numbers")
    return header


def _check_header(path, config, header, expected):
    """The header's tensor names, shapes and dtypes against `expected` {key: shape} of the model."""
    missing, unexpected = sorted(set(expected) - set(header)), sorted(set(header) - set(expected))
    if missing or unexpected:
        raise CheckpointError(f"{path.name} does not fit a {config.variant} TinyLM with this config: "
                              f"missing {missing[:5]}{'…' if len(missing) > 5 else ''}, "
                              f"unexpected {unexpected[:5]}{'…' if len(unexpected) > 5 else ''}")
    for key, (shape, dtype) in header.items():
        if shape != expected[key]:
            raise CheckpointError(f"{path.name}: {key} has shape {shape}, the config expects {expected[key]}")
        if dtype not in FLOAT_DTYPES:
            raise CheckpointError(f"{path.name}: {key} has dtype {dtype}, expected floating point")


# ------------------------------------------------------------------------------- manifest

def read_manifest(folder):
    path = Path(folder) / MANIFEST
    if not path.is_file():
        return {}
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CheckpointError(f"{path} is not valid JSON: {error}") from None
    if not isinstance(manifest, dict) or not all(isinstance(v, str) for v in manifest.values()):
        raise CheckpointError(f"{path} must map file names to sha256 strings")
    return manifest


def update_manifest(folder, files):
    manifest = read_manifest(folder)
    manifest.update({Path(f).name: sha256_file(f) for f in files})
    _write_json(Path(folder) / MANIFEST, dict(sorted(manifest.items())))


def check_manifest(folder, files=None):
    """Every file of `files` (default: every listed file) must be listed, exist and hash as the manifest says.

    A file the manifest does not list is refused: re-hashing a replaced file's sidecar is not enough.
    """
    manifest = read_manifest(folder)
    names = list(manifest) if files is None else [Path(f).name for f in files]
    for name in names:
        if name not in manifest:
            where = Path(folder) / MANIFEST
            raise CheckpointError(
                f"{name} is not listed in {where}{'' if where.is_file() else ' (there is none)'}: refused. A "
                f"checkpoint is loaded only from a folder whose {MANIFEST} lists its files with their sha256, so "
                f"that a file replaced or edited since it was written is noticed. A checkpoint moved to another "
                f"folder: copy the {MANIFEST} of the folder it was written in along with it (or, where this "
                f"folder has one, add that manifest's lines for its .safetensors and .json files).")
        path = Path(folder) / name
        if not path.is_file():
            raise FileNotFoundError(f"{MANIFEST} lists {name}, but there is no such file in {folder}")
        actual = sha256_file(path)
        if actual != manifest[name]:
            raise CheckpointError(f"checksum mismatch for {name}: {MANIFEST} says {manifest[name]}, the file "
                                  f"hashes to {actual}; it is corrupted or was replaced")


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
