"""Damaged or hostile checkpoints are refused before anything is allocated, and pages show a notice.

The attacks are those of someone who can edit a deployed assets/checkpoints/ folder: change a file and
re-hash its sidecar and the manifest, drop a file's manifest entry, or ask for a huge model.
"""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from lineare.app import checkpoints
from lineare.engine import checkpoint
from lineare.engine.model import ModelConfig, TinyLM
from lineare.engine.ops import VARIANTS

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "assets" / "checkpoints"


def tiny():
    torch.manual_seed(0)
    return TinyLM(ModelConfig(variant="deltanet", vocab_size=32, d_model=16, n_layers=1, n_heads=2))


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "deltanet.safetensors"
    checkpoint.save(path, tiny())
    return path


def edit_sidecar(path, **changes):
    """Change the sidecar and re-hash everything a hand can re-hash (sidecar checksum, manifest)."""
    side = checkpoint.sidecar_path(path)
    data = json.loads(side.read_text())
    data.update(changes)
    data["sha256"] = checkpoint.sha256_file(path)
    side.write_text(json.dumps(data))
    checkpoint.update_manifest(path.parent, [path, side])


def test_the_manifest_is_pinned():
    actual = checkpoint.sha256_file(SHIPPED / checkpoint.MANIFEST)
    assert actual == checkpoints.MANIFEST_SHA256, (
        "assets/checkpoints/MANIFEST.json changed: if the checkpoints were retrained on purpose, set "
        f"MANIFEST_SHA256 = \"{actual}\" in app/checkpoints.py (scripts/train_checkpoints does it)")


def test_a_rehashed_manifest_is_refused_by_the_pin(monkeypatch, tmp_path):
    for name in ("gla.safetensors", "gla.json", checkpoint.MANIFEST):
        shutil.copy(SHIPPED / name, tmp_path / name)
    monkeypatch.setattr(checkpoints, "FOLDER", tmp_path)
    weights = bytearray((tmp_path / "gla.safetensors").read_bytes())
    weights[-4:] = b"\x00\x00\xc0\x7f"                         # the last weight becomes NaN
    (tmp_path / "gla.safetensors").write_bytes(bytes(weights))
    edit_sidecar(tmp_path / "gla.safetensors")                # sidecar and manifest agree with the edit
    with pytest.raises(checkpoint.CheckpointError, match="NaN"):
        checkpoint.load(tmp_path / "gla.safetensors")          # the engine alone finds the NaN …
    with pytest.raises(checkpoint.CheckpointError, match="manifest this version"):
        checkpoints.load_model("gla")                          # … the app refuses before: its pin


def test_a_file_missing_from_the_manifest_is_refused(saved):
    data = bytearray(saved.read_bytes())
    data[-1] ^= 0x01                                          # a corrupted weight …
    saved.write_bytes(bytes(data))
    edit_sidecar(saved)                                       # … its sidecar re-hashed …
    manifest = json.loads((saved.parent / checkpoint.MANIFEST).read_text())
    del manifest[saved.name]                                  # … and its manifest entry deleted
    (saved.parent / checkpoint.MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(checkpoint.CheckpointError, match="not listed"):
        checkpoint.load(saved)
    (saved.parent / checkpoint.MANIFEST).unlink()             # no manifest at all: refused too
    with pytest.raises(checkpoint.CheckpointError, match="not listed"):
        checkpoint.load(saved)


@pytest.fixture
def built(monkeypatch):
    """The configs of the models the loader builds; reading the tensors fails the test."""
    configs, real = [], checkpoint.TinyLM
    monkeypatch.setattr(checkpoint, "TinyLM", lambda config: configs.append(config) or real(config))
    monkeypatch.setattr(checkpoint, "load_file", lambda *a, **k: pytest.fail("tensors were read"))
    return configs


@pytest.mark.parametrize("changes, message, builds", [
    ({"d_model": 10 ** 6}, "beyond this engine's bounds", False),
    ({"vocab_size": 10 ** 9}, "beyond this engine's bounds", False),
    ({"n_layers": 64, "d_model": 4096, "n_heads": 64}, "more than", False),   # each within bounds: too many weights
    ({"d_model": 512}, "shape", True),                                      # plausible and small, not this file
    ({"n_layers": 3}, "does not fit", True),
])
def test_an_oversized_or_mismatched_config_is_refused_before_any_allocation(saved, built, changes, message,
                                                                            builds):
    config = {**tiny().config.to_dict(), "d_k": None, "d_v": None, **changes}
    edit_sidecar(saved, config=config)
    with pytest.raises(checkpoint.CheckpointError, match=message):
        checkpoint.load(saved)
    assert len(built) == builds                 # an oversized model is never built; no tensor is ever read


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("sizes", [{}, {"d_model": 24, "n_heads": 3, "mlp": True, "gate_rank": 5, "conv_size": 2},
                                   {"d_model": 16, "n_heads": 2, "d_k": 32, "d_v": 4, "n_layers": 3, "vocab_size": 7}])
def test_the_weights_bound_is_an_upper_bound(variant, sizes):
    config = ModelConfig(variant=variant, **{"vocab_size": 32, "d_model": 16, "n_layers": 1, **sizes})
    actual = sum(t.numel() for t in TinyLM(config).state_dict().values())        # what a file holds
    assert actual <= checkpoint.weights_bound(config) <= 4 * actual


def test_a_header_with_integer_tensors_is_refused_before_reading_them(saved, built):
    weights = {key: torch.zeros(t.shape, dtype=torch.int32) for key, t in tiny().state_dict().items()}
    save_file(weights, saved)
    edit_sidecar(saved)
    with pytest.raises(checkpoint.CheckpointError, match="dtype I32"):
        checkpoint.load(saved)


def test_the_oversized_config_of_the_issue_stays_small_in_memory(tmp_path):
    """d_model = 10**6 made the old loader allocate about 1 GB; measured as the process's peak RSS."""
    script = f"""
import json, resource, sys
import torch
from lineare.engine import checkpoint
from lineare.engine.model import ModelConfig, TinyLM
from lineare.engine.ops import VARIANTS
path = {str(tmp_path / 'deltanet.safetensors')!r}
checkpoint.save(path, TinyLM(ModelConfig(variant="deltanet", vocab_size=32, d_model=16, n_layers=1, n_heads=2)))
side = checkpoint.sidecar_path(path)
data = json.loads(side.read_text())
data["config"].update(d_model=10 ** 6, d_k=None, d_v=None)
side.write_text(json.dumps(data))
checkpoint.update_manifest(side.parent, [side])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    checkpoint.load(path)
except checkpoint.CheckpointError as error:
    print("refused:", error, file=sys.stderr)
else:
    sys.exit("loaded")
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "beyond this engine's bounds" in done.stderr
    assert int(done.stdout) < 50, f"peak RSS grew by {done.stdout.strip()} MiB while refusing"


@pytest.mark.parametrize("error", [RuntimeError("not enough memory: you tried to allocate 1 GB"), MemoryError()])
def test_pages_show_a_notice_when_loading_fails(monkeypatch, error):
    from lineare.app.dashboards.memory_fails.model import trained_example
    from lineare.app.dashboards.state_fills_up.model import StateStore

    def fail(path):
        raise error
    monkeypatch.setattr(checkpoint, "load", fail)
    monkeypatch.setattr(checkpoints, "_loaded", {})
    with pytest.raises(checkpoint.CheckpointError, match=type(error).__name__):
        checkpoints.load_model("deltanet")
    store = StateStore(mode="trained", variant="deltanet")
    assert store.trained is None and store.failure == ("invalid", "deltanet.safetensors")
    trained_example.cache_clear()
    try:
        assert trained_example("64-8", 0).predicted == {}               # every model missing, named
        assert "could not be loaded" in trained_example("64-8", 0).missing["deltanet"]
    finally:
        trained_example.cache_clear()
