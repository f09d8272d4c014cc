"""Measure a checkpoint on fresh MQAR examples, query by query.

    python -m engine evaluate --checkpoint assets/checkpoints/deltanet.safetensors \\
        --seq-len 64 --kv-pairs 16 --examples 200 --seed 7 --json

With --json, prints one JSON object: variant, accuracy (fraction of queries answered right),
state_bytes (per layer, measured on the engine's final state for one sequence: the fixed state,
or the KV cache for softmax), and per example the query positions with their correctness.
"""
import argparse
import json
import sys

import torch

from engine import checkpoint, tasks
from engine.device import get_device
from engine.ops import state_bytes
from engine.train import parse_pairs, predictions


def build_parser():
    p = argparse.ArgumentParser(prog="python -m engine evaluate", description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--seq-len", type=int, default=64)
    p.add_argument("--kv-pairs", type=parse_pairs, default=16, help="a number, or a comma-separated mixture")
    p.add_argument("--examples", type=int, default=200)
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--power-a", type=float, default=0.01)
    p.add_argument("--random-filler", action="store_true")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    return p


def evaluate(model, inputs, targets, batch_size=256):
    """Accuracy, per-example query positions and correctness, and each layer's state bytes."""
    device = next(model.parameters()).device
    inputs, targets = inputs.to(device), targets.to(device)
    predicted, scored = predictions(model, inputs, targets, batch_size)
    correct = predicted == targets
    queries = [{"positions": torch.nonzero(s).flatten().tolist(), "correct": c[s].tolist()}
               for s, c in zip(scored, correct)]
    with torch.no_grad():
        _, states = model(inputs[:1], return_states=True)
    return {"accuracy": correct[scored].float().mean().item(),
            "num_queries": int(scored.sum()),
            "state_bytes": [state_bytes(s) for s in states],
            "queries": queries}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    try:
        model, sidecar = checkpoint.load(args.checkpoint, device=get_device(args.device))
        config = model.config
        inputs, targets = tasks.mqar(vocab_size=config.vocab_size, seq_len=args.seq_len, num_pairs=args.kv_pairs,
                                     num_examples=args.examples, seed=args.seed, power_a=args.power_a,
                                     random_filler=args.random_filler)
    except (FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    result = {"variant": config.variant, "checkpoint": str(args.checkpoint), "seq_len": args.seq_len,
              "kv_pairs": args.kv_pairs, "examples": args.examples, "seed": args.seed,
              "state_kind": "kv_cache" if config.variant == "softmax" else "fixed",
              **evaluate(model, inputs, targets, args.batch_size)}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{config.variant}: accuracy {result['accuracy']:.4f} on {result['num_queries']} queries "
              f"({args.examples} examples, L={args.seq_len}, K={args.kv_pairs}); "
              f"state bytes per layer {result['state_bytes']}")
    return 0
