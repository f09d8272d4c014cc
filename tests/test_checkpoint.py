"""Checkpoints: round trip, and every way a file can be wrong ends in a clear error, never a pickle load."""
import json
import pickle

import pytest
import torch
from safetensors.torch import save_file

from lineare.engine import checkpoint
from lineare.engine.model import ModelConfig, TinyLM


def tiny(variant="deltanet", d_model=16):
    torch.manual_seed(0)
    return TinyLM(ModelConfig(variant=variant, vocab_size=32, d_model=d_model, n_layers=1, n_heads=2))


@pytest.fixture(autouse=True)
def no_pickle(monkeypatch):
    """Any pickle-based load during these tests is a failure."""
    def refuse(*args, **kwargs):
        raise AssertionError("a checkpoint must never be loaded with torch.load or pickle")
    monkeypatch.setattr(torch, "load", refuse)
    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)


@pytest.fixture
def saved(tmp_path):
    model = tiny()
    path = tmp_path / "deltanet.safetensors"
    checkpoint.save(path, model, command="python -m lineare.engine train ...", data_seeds={"train": 0, "validation": 1},
                    val_accuracy=0.5, train_seconds=1.0)
    return model, path


def rewrite_sidecar(path, **changes):
    side = checkpoint.sidecar_path(path)
    data = json.loads(side.read_text())
    data.update(changes)
    side.write_text(json.dumps(data))


def rehash(path):
    """What someone who edits a deployed folder can do: list the edited files' new hashes in the manifest,
    so that the checks behind the manifest's are the ones under test."""
    checkpoint.update_manifest(path.parent, [path, checkpoint.sidecar_path(path)])


@pytest.mark.parametrize("variant", ["deltanet", "retnet", "softmax"])
def test_round_trip(tmp_path, variant):
    model = tiny(variant)
    path = tmp_path / f"{variant}.safetensors"
    info = checkpoint.save(path, model, command="cmd", data_seeds={"train": 3}, val_accuracy=0.9, train_seconds=2.5)
    loaded, sidecar = checkpoint.load(path)
    assert loaded.config == model.config and not loaded.training
    for (name, a), (_, b) in zip(model.state_dict().items(), loaded.state_dict().items()):
        assert torch.equal(a, b), name
    x = torch.randint(0, 32, (2, 9))
    with torch.no_grad():
        assert torch.equal(model(x), loaded(x))
    assert sidecar["sha256"] == checkpoint.sha256_file(path) == info["sha256"]
    assert sidecar["command"] == "cmd" and sidecar["data_seeds"] == {"train": 3}
    assert sidecar["val_accuracy"] == 0.9 and sidecar["train_seconds"] == 2.5
    manifest = json.loads((tmp_path / "MANIFEST.json").read_text())
    assert manifest == {path.name: checkpoint.sha256_file(path),
                        f"{variant}.json": checkpoint.sha256_file(checkpoint.sidecar_path(path))}


def test_manifest_accumulates_files(tmp_path):
    checkpoint.save(tmp_path / "a.safetensors", tiny("gla"))
    checkpoint.save(tmp_path / "b.safetensors", tiny("mlstm"))
    assert sorted(json.loads((tmp_path / "MANIFEST.json").read_text())) == ["a.json", "a.safetensors",
                                                                            "b.json", "b.safetensors"]
    checkpoint.check_manifest(tmp_path)


def test_corrupted_weights(saved):
    _, path = saved
    data = bytearray(path.read_bytes())
    data[-10] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="checksum mismatch"):
        checkpoint.load(path)
    checkpoint.update_manifest(path.parent, [path])           # the sidecar's own checksum catches it too
    with pytest.raises(ValueError, match="checksum mismatch"):
        checkpoint.load(path)


def test_wrong_checksum_in_sidecar(saved):
    _, path = saved
    rewrite_sidecar(path, sha256="0" * 64)
    rehash(path)
    with pytest.raises(ValueError, match="checksum mismatch"):
        checkpoint.load(path)


def test_edited_sidecar_is_caught_by_manifest(saved):
    _, path = saved
    rewrite_sidecar(path, val_accuracy=1.0)
    with pytest.raises(ValueError, match="checksum mismatch.*json"):
        checkpoint.load(path)


def test_foreign_safetensors(saved):
    _, path = saved
    save_file({"encoder.weight": torch.ones(3, 3)}, path)
    rewrite_sidecar(path, sha256=checkpoint.sha256_file(path))   # even with a matching checksum
    rehash(path)
    with pytest.raises(ValueError, match="does not fit"):
        checkpoint.load(path)


def test_wrong_shapes(saved, tmp_path):
    _, path = saved
    other = tmp_path / "other" / "wide.safetensors"
    checkpoint.save(other, tiny(d_model=32))
    path.write_bytes(other.read_bytes())                       # same keys, other shapes
    rewrite_sidecar(path, sha256=checkpoint.sha256_file(path))
    rehash(path)
    with pytest.raises(ValueError, match="shape"):
        checkpoint.load(path)


@pytest.mark.parametrize("content", [b"", b"not a checkpoint at all", pickle.dumps({"weight": [1.0, 2.0]})])
def test_not_safetensors(saved, content):
    _, path = saved
    path.write_bytes(content)
    rewrite_sidecar(path, sha256=checkpoint.sha256_file(path))
    rehash(path)
    with pytest.raises(ValueError, match="not a readable safetensors"):
        checkpoint.load(path)


def test_torch_pickle_file_is_refused(saved, monkeypatch):
    _, path = saved
    monkeypatch.undo()                                        # torch.save needs the real pickle module
    torch.save(tiny().state_dict(), path)
    rewrite_sidecar(path, sha256=checkpoint.sha256_file(path))
    monkeypatch.setattr(torch, "load", lambda *a, **k: pytest.fail("torch.load was called"))
    rehash(path)
    with pytest.raises(ValueError, match="not a readable safetensors"):
        checkpoint.load(path)


def test_missing_files(saved, tmp_path):
    _, path = saved
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        checkpoint.load(tmp_path / "absent.safetensors")
    checkpoint.sidecar_path(path).unlink()
    with pytest.raises(FileNotFoundError, match="sidecar"):
        checkpoint.load(path)


@pytest.mark.parametrize("sidecar", ["{not json", json.dumps([1, 2]), json.dumps({"format": "other"}),
                                     json.dumps({"format": "lineare-checkpoint", "version": 99})])
def test_malformed_sidecar(saved, sidecar):
    _, path = saved
    checkpoint.sidecar_path(path).write_text(sidecar)
    rehash(path)
    with pytest.raises(ValueError):
        checkpoint.load(path)


@pytest.mark.parametrize("config", [{"variant": "transformer"}, {"d_model": "wide"}, {"heads": 2}, [1]])
def test_sidecar_with_bad_config(saved, config):
    _, path = saved
    rewrite_sidecar(path, config=config)
    rehash(path)
    with pytest.raises(ValueError, match="config"):
        checkpoint.load(path)


def test_sidecar_config_that_does_not_match_weights(saved):
    _, path = saved
    rewrite_sidecar(path, config=ModelConfig(variant="gla", vocab_size=32, d_model=16, n_layers=1,
                                             n_heads=2).to_dict())
    rehash(path)
    with pytest.raises(ValueError, match="does not fit"):
        checkpoint.load(path)


def test_sidecar_naming_another_file(saved):
    _, path = saved
    rewrite_sidecar(path, weights="elsewhere.safetensors")
    rehash(path)
    with pytest.raises(ValueError, match="describes"):
        checkpoint.load(path)


def test_save_needs_safetensors_suffix(tmp_path):
    with pytest.raises(ValueError, match=".safetensors"):
        checkpoint.save(tmp_path / "model.pt", tiny())


def test_source_never_uses_pickle():
    source = open(checkpoint.__file__, encoding="utf-8").read()
    assert "torch.load" not in source and "import pickle" not in source


def test_same_weights_give_the_same_file(tmp_path):
    """Saving is byte-for-byte deterministic, so a re-run of the training command can match a sha256."""
    model = tiny()
    hashes = {checkpoint.save(tmp_path / f"m{i}.safetensors", model)["sha256"] for i in range(8)}
    assert len(hashes) == 1
