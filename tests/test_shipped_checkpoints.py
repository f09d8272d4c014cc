"""The ten checkpoints shipped in assets/checkpoints load, verify, and still score what they recorded."""
from pathlib import Path

import pytest
import torch

from lineare.engine import checkpoint, tasks
from lineare.engine.evaluate import evaluate
from lineare.engine.ops import VARIANTS

FOLDER = Path(__file__).resolve().parents[1] / "assets" / "checkpoints"


def test_all_ten_are_shipped_and_small():
    missing = [v for v in VARIANTS if not (FOLDER / f"{v}.safetensors").is_file()]
    assert not missing, f"no checkpoint for {missing}"
    total = sum(p.stat().st_size for p in FOLDER.iterdir() if p.is_file())
    assert total <= 20 * 2 ** 20, f"checkpoints take {total / 2 ** 20:.1f} MB, more than 20 MB"
    checkpoint.check_manifest(FOLDER)                      # every listed file hashes as recorded


@pytest.mark.parametrize("variant", VARIANTS)
def test_reproduces_its_recorded_accuracy(variant):
    torch.set_num_threads(1)
    model, sidecar = checkpoint.load(FOLDER / f"{variant}.safetensors")
    assert model.config.variant == variant
    assert (model.config.d_model, model.config.n_layers) == (64, 2)
    task = sidecar["task"]
    inputs, targets = tasks.mqar(vocab_size=task["vocab_size"], seq_len=task["seq_len"],
                                 num_pairs=task["kv_pairs"], num_examples=task["val_examples"],
                                 seed=sidecar["data_seeds"]["validation"], power_a=task["power_a"],
                                 random_filler=task["random_filler"])
    accuracy = evaluate(model, inputs, targets)["accuracy"]
    assert abs(accuracy - sidecar["val_accuracy"]) <= 0.02, (accuracy, sidecar["val_accuracy"])
