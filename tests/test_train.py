"""`python -m lineare.engine train` and `evaluate` end to end on a model too small to learn anything."""
import json

import pytest
import torch
from safetensors.torch import load_file

from lineare.engine import checkpoint
from lineare.engine.__main__ import main
from lineare.engine.train import parse_pairs, warmup_cosine

TINY = ["--variant", "deltanet", "--seq-len", "16", "--kv-pairs", "2,4", "--vocab-size", "32", "--d-model", "16",
        "--n-layers", "1", "--n-heads", "2", "--steps", "3", "--batch-size", "8", "--train-examples", "32",
        "--val-examples", "8", "--eval-every", "2", "--seed", "5", "--no-progress"]


def test_train_writes_a_reproducible_checkpoint(tmp_path):
    first, second = tmp_path / "a" / "m.safetensors", tmp_path / "b" / "m.safetensors"
    assert main(["train", *TINY, "--out", str(first)]) == 0
    assert main(["train", *TINY, "--out", str(second)]) == 0
    # the same seed gives the same weights (compared as numbers: float summation order on CPU may
    # differ by an ulp between two runs in one busy process, which a byte-level hash would flag)
    a, b = load_file(first), load_file(second)
    assert a.keys() == b.keys()
    for name in a:
        assert torch.allclose(a[name], b[name], rtol=1e-5, atol=1e-6), name
    model, sidecar = checkpoint.load(first)
    assert model.config.variant == "deltanet" and sidecar["steps"] == 3
    assert sidecar["command"].startswith("python -m lineare.engine train --variant deltanet")
    assert sidecar["data_seeds"]["train"] == 5 and sidecar["data_seeds"]["validation"] != 5
    assert 0.0 <= sidecar["val_accuracy"] <= 1.0 and sidecar["train_seconds"] > 0
    assert [h["step"] for h in sidecar["history"]] == [2, 3]


def test_evaluate_prints_json(tmp_path, capsys):
    path = tmp_path / "m.safetensors"
    main(["train", *TINY, "--out", str(path)])
    capsys.readouterr()
    assert main(["evaluate", "--checkpoint", str(path), "--seq-len", "16", "--kv-pairs", "3",
                 "--examples", "4", "--seed", "1", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["variant"] == "deltanet" and 0 <= result["accuracy"] <= 1
    assert result["state_bytes"] == [2 * 8 * 8 * 4]            # one layer: 2 heads of 8×8 float32
    assert len(result["queries"]) == 4
    for example in result["queries"]:
        assert len(example["positions"]) == len(example["correct"]) == 3
        assert all(isinstance(c, bool) for c in example["correct"])
    correct = sum(sum(e["correct"]) for e in result["queries"])
    assert result["accuracy"] == pytest.approx(correct / 12)


def test_evaluate_reports_missing_checkpoint(tmp_path, capsys):
    assert main(["evaluate", "--checkpoint", str(tmp_path / "none.safetensors")]) == 2
    assert "no checkpoint" in capsys.readouterr().err


def test_bad_arguments_fail_before_training(tmp_path):
    with pytest.raises(SystemExit):
        main(["train", *TINY[:-1], "--kv-pairs", "40", "--out", str(tmp_path / "m.safetensors")])
    with pytest.raises(SystemExit):
        main(["train", *TINY, "--out", str(tmp_path / "m.pt")])


def test_parse_pairs_and_schedule():
    assert parse_pairs("16") == 16 and parse_pairs("4,8,16") == [4, 8, 16]
    assert warmup_cosine(0, 100, 10) == pytest.approx(0.1)
    assert warmup_cosine(9, 100, 10) == pytest.approx(1.0)
    assert warmup_cosine(100, 100, 10) == pytest.approx(0.1)
