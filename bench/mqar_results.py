"""The README's results table: every shipped checkpoint on held-out MQAR examples.

    python -m lineare.bench.mqar_results [--examples 500] [--seed 2026] [--json]

Accuracy per variant at K ∈ {4, 8, 16} (L = 64) and K = 32 (L = 128), and the bytes each model
holds per sequence while reading (all layers: the fixed state, or the KV cache at L = 128 for softmax).
The seed is not one of the training or validation seeds, so the examples are new to every model.
"""
import argparse
import json
import sys
from pathlib import Path

import torch

from lineare.engine import checkpoint, tasks
from lineare.engine.evaluate import evaluate
from lineare.engine.ops import VARIANTS

FOLDER = Path(__file__).resolve().parents[1] / "assets" / "checkpoints"
SETTINGS = [(64, 4), (64, 8), (64, 16), (128, 32)]          # (L, K)


def measure(examples, seed):
    rows = []
    for variant in VARIANTS:
        path = FOLDER / f"{variant}.safetensors"
        if not path.exists():
            continue
        model, _ = checkpoint.load(path)
        row = {"variant": variant, "accuracy": {}}
        for L, K in SETTINGS:
            inputs, targets = tasks.mqar(vocab_size=model.config.vocab_size, seq_len=L, num_pairs=K,
                                         num_examples=examples, seed=seed)
            result = evaluate(model, inputs, targets)
            row["accuracy"][f"L{L}_K{K}"] = result["accuracy"]
            row["state_bytes"] = sum(result["state_bytes"])       # the last setting: L = 128
        rows.append(row)
    return rows


def markdown(rows):
    head = "| variant | " + " | ".join(f"K={K} (L={L})" for L, K in SETTINGS) + " | bytes held per sequence |"
    lines = [head, "|" + "---|" * (len(SETTINGS) + 2)]
    for row in rows:
        cells = " | ".join(f"{row['accuracy'][f'L{L}_K{K}']:.3f}" for L, K in SETTINGS)
        held = f"{row['state_bytes']:,}" + (" (KV cache at L=128)" if row["variant"] == "softmax" else "")
        lines.append(f"| {row['variant']} | {cells} | {held} |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--examples", type=int, default=500)
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    rows = measure(args.examples, args.seed)
    print(json.dumps(rows, indent=1) if args.json else markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
