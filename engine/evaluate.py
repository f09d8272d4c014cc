"""Measure a checkpoint on fresh MQAR examples, query by query.

    lineare evaluate --checkpoint deltanet --seq-len 64 --kv-pairs 16 --examples 200 --seed 7 --json

With --json, prints one JSON object: variant, accuracy (fraction of queries answered right),
state_bytes (per layer, measured on the engine's final state for one sequence: the fixed state,
or the KV cache for softmax), and per example the query positions with their correctness.
"""
import argparse
import json
import sys

import torch

from lineare.engine import checkpoint, tasks
from lineare.engine.device import get_device
from lineare.engine.ops import state_bytes
from lineare.engine.train import parse_pairs, predictions
from lineare import arguments


def build_parser():
    p = argparse.ArgumentParser(
        prog="python -m lineare.engine evaluate", formatter_class=arguments.Formatter,
        description="Measure a checkpoint's accuracy on fresh MQAR examples, query by query.",
        epilog="examples:\n  lineare evaluate --checkpoint deltanet --seq-len 128 --kv-pairs 32\n"
               "  lineare evaluate --checkpoint runs/mine.safetensors --json")
    p.add_argument("--checkpoint", required=True, metavar="NAME_OR_FILE",
                   help="a .safetensors file, or the name of a checkpoint Lineare ships: "
                        + ", ".join(checkpoint.shipped_names()))
    p.add_argument("--seq-len", type=arguments.positive, default=64, help="tokens per example")
    p.add_argument("--kv-pairs", type=parse_pairs, default=16,
                   help="key-value pairs per example, or a comma-separated mixture")
    p.add_argument("--examples", type=arguments.positive, default=200, help="examples to measure on")
    p.add_argument("--seed", type=arguments.at_least(0), default=12345, help="draws the examples")
    p.add_argument("--power-a", type=arguments.above(0.0), default=0.01,
                   help="how early the queries come: p(i) ∝ i^(a−1)")
    p.add_argument("--random-filler", action="store_true", help="random tokens between the queries")
    p.add_argument("--batch-size", type=arguments.positive, default=256, help="examples per forward pass")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--threads", type=arguments.positive, default=1, help="torch CPU threads")
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
        model, sidecar = checkpoint.load(checkpoint.find(args.checkpoint), device=get_device(args.device))
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
