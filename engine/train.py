"""Train a tiny model on MQAR and write a checkpoint (`lineare train`; engine/README.md, "Tasks and checkpoints").

    python -m lineare.engine train --variant deltanet --seq-len 64 --kv-pairs 4,8,16 --vocab-size 256 \\
        --d-model 64 --n-layers 2 --steps 2000 --batch-size 64 --lr 3e-3 --seed 0 \\
        --out assets/checkpoints/deltanet.safetensors

Seeded end to end: the model from torch.manual_seed(seed), the training examples from data seed
`seed`, the validation examples from `seed + VALIDATION_SEED_OFFSET`, the batch order from a
generator seeded with `seed`. AdamW with linear warmup then cosine decay; stops early once the
validation accuracy (fraction of scored positions predicted right) reaches --target-accuracy.
"""
import argparse
import math
import os
import shlex
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm import tqdm

from lineare.engine import checkpoint, tasks
from lineare.engine.device import get_device
from lineare.engine.layers import FEATURE_MAPS, LAYERS
from lineare.engine.model import ModelConfig, TinyLM
from lineare import arguments

VALIDATION_SEED_OFFSET = 1_000_003


def parse_pairs(text):
    """'16' → 16, '4,8,16' → [4, 8, 16] (a mixture)."""
    try:
        pairs = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--kv-pairs takes a number or a comma-separated list, not {text!r}")
    if not pairs or min(pairs) < 1:
        raise argparse.ArgumentTypeError(f"--kv-pairs must hold positive numbers, not {text!r}")
    return pairs[0] if len(pairs) == 1 else pairs


def build_parser():
    p = argparse.ArgumentParser(
        prog="python -m lineare.engine train", formatter_class=arguments.Formatter,
        description="Train a tiny model on multi-query associative recall (MQAR) and write a checkpoint: "
                    "safetensors weights, a JSON sidecar beside them and the folder's MANIFEST.json.",
        epilog="example:\n  lineare train --variant deltanet --seq-len 64 --kv-pairs 4,8,16 --out deltanet.safetensors"
               "\n\nCtrl-C stops the training and writes the model of the last evaluation to --out.")
    task = p.add_argument_group("task")
    task.add_argument("--task", choices=["mqar"], default="mqar", help="the task to learn")
    task.add_argument("--seq-len", type=arguments.positive, default=64, help="tokens per example")
    task.add_argument("--kv-pairs", type=parse_pairs, default=[4, 8, 16],
                      help="key-value pairs per example, or a comma-separated list for a mixture")
    task.add_argument("--vocab-size", type=arguments.positive, default=256, help="token ids")
    task.add_argument("--power-a", type=arguments.above(0.0), default=0.01,
                      help="how early the queries come: p(i) ∝ i^(a−1) (small: mostly early)")
    task.add_argument("--random-filler", action="store_true", help="random tokens between the queries")
    task.add_argument("--train-examples", type=arguments.positive, default=100_000, help="training examples")
    task.add_argument("--val-examples", type=arguments.positive, default=500, help="validation examples")
    model = p.add_argument_group("model")
    model.add_argument("--variant", choices=list(LAYERS), required=True, help="the mixer of every layer")
    model.add_argument("--d-model", type=arguments.positive, default=64, help="width of the model")
    model.add_argument("--n-layers", type=arguments.positive, default=2, help="layers")
    model.add_argument("--n-heads", type=arguments.positive, default=1, help="heads per layer")
    model.add_argument("--d-k", type=arguments.positive, default=None,
                       help="key size per head (default: d_model / n_heads)")
    model.add_argument("--d-v", type=arguments.positive, default=None,
                       help="value size per head (default: d_model / n_heads)")
    model.add_argument("--mlp", action="store_true", help="add a GELU MLP after each mixer")
    model.add_argument("--feature-map", choices=list(FEATURE_MAPS), default="elu1", help="linear attention only")
    model.add_argument("--normalize", action="store_true", help="linear attention only: divide by z·φ(q)")
    model.add_argument("--allow-neg-eigval", action="store_true", help="DeltaNet family: β ∈ (0, 2)")
    model.add_argument("--chunk-size", type=arguments.positive, default=64, help="tokens per chunk of the chunked form")
    opt = p.add_argument_group("optimization")
    length = opt.add_mutually_exclusive_group()
    length.add_argument("--steps", type=arguments.positive, default=None, help="optimizer steps (default: 2000)")
    length.add_argument("--epochs", type=arguments.above(0.0), default=None,
                        help="passes over the training examples, instead of --steps")
    opt.add_argument("--batch-size", type=arguments.positive, default=64, help="examples per step")
    opt.add_argument("--lr", type=arguments.above(0.0), default=3e-3, help="peak learning rate (AdamW)")
    opt.add_argument("--weight-decay", type=arguments.at_least(0.0, kind=float), default=0.1,
                     help="AdamW's weight decay, on the matrices")
    opt.add_argument("--warmup", type=arguments.fraction, default=0.05, help="warmup, as a fraction of the steps")
    opt.add_argument("--grad-clip", type=arguments.at_least(0.0, kind=float), default=1.0,
                     help="largest gradient norm (0: no clipping)")
    opt.add_argument("--eval-every", type=arguments.positive, default=100, help="steps between validations")
    opt.add_argument("--target-accuracy", type=arguments.fraction, default=0.99,
                     help="stop once the validation accuracy reaches it")
    run = p.add_argument_group("run")
    run.add_argument("--seed", type=arguments.at_least(0), default=0, help="seeds the model, the data and their order")
    run.add_argument("--device", default="cpu", help="cpu (reproducible) or cuda")
    run.add_argument("--threads", type=arguments.positive, default=1, help="torch CPU threads")
    run.add_argument("--out", required=True, help="the checkpoint to write, ending in .safetensors")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def config_from_args(args):
    return ModelConfig(variant=args.variant, vocab_size=args.vocab_size, d_model=args.d_model,
                       n_layers=args.n_layers, n_heads=args.n_heads, d_k=args.d_k, d_v=args.d_v, mlp=args.mlp,
                       feature_map=args.feature_map, normalize=args.normalize,
                       allow_neg_eigval=args.allow_neg_eigval, chunk_size=args.chunk_size)


def make_data(args, num_examples, seed):
    return tasks.mqar(vocab_size=args.vocab_size, seq_len=args.seq_len, num_pairs=args.kv_pairs,
                      num_examples=num_examples, seed=seed, power_a=args.power_a,
                      random_filler=args.random_filler)


def masked_loss(model, inputs, targets):
    """Cross-entropy over the scored positions (targets ≠ −100) only; the head runs only there."""
    hidden, _ = model.hidden(inputs)                                             # [B,T,D]
    scored = targets != tasks.IGNORE
    return F.cross_entropy(model.head(hidden[scored]), targets[scored])


@torch.no_grad()
def predictions(model, inputs, targets, batch_size=256):
    """(predicted ids [N,L], scored mask [N,L]) with the chunked forward."""
    model.eval()
    predicted = torch.cat([model(inputs[i:i + batch_size]).argmax(-1)
                           for i in range(0, len(inputs), batch_size)])
    return predicted, targets != tasks.IGNORE


def accuracy(model, inputs, targets, batch_size=256):
    """Fraction of scored positions (targets ≠ −100) predicted right."""
    device = next(model.parameters()).device
    predicted, scored = predictions(model, inputs.to(device), targets.to(device), batch_size)
    return (predicted == targets.to(device))[scored].float().mean().item()


def optimizer_for(model, lr, weight_decay):
    """AdamW; weight decay on the matrices only (not on norms, biases or per-head gate parameters)."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                              {"params": rest, "weight_decay": 0.0}], lr=lr, betas=(0.9, 0.98))


def warmup_cosine(step, total, warmup, floor=0.1):
    """Learning-rate multiplier: linear warmup to 1, then cosine down to `floor`."""
    if step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress))


class Interrupted(Exception):
    """Ctrl-C before there was a model worth writing."""


def train(args, progress=True):
    """Train as `args` say; returns (model, info dict for the sidecar)."""
    torch.manual_seed(args.seed)
    device = get_device(args.device)
    config = config_from_args(args)
    model = TinyLM(config).to(device)
    train_inputs, train_targets = make_data(args, args.train_examples, args.seed)
    val_inputs, val_targets = make_data(args, args.val_examples, args.seed + VALIDATION_SEED_OFFSET)
    steps_per_epoch = math.ceil(args.train_examples / args.batch_size)
    total = round(args.epochs * steps_per_epoch) if args.epochs is not None else (args.steps or 2000)
    warmup = max(1, round(args.warmup * total))
    optimizer = optimizer_for(model, args.lr, args.weight_decay)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: warmup_cosine(s, total, warmup))
    order = torch.Generator().manual_seed(args.seed)

    history, losses, val_acc, step = [], [], 0.0, 0
    last_good, interrupted_at = None, None      # (step, accuracy, weights) of the last validation: what Ctrl-C keeps
    start = time.perf_counter()
    bar = tqdm(total=total, disable=not progress, desc=config.variant, dynamic_ncols=True, file=sys.stderr)
    batches = iter(())
    try:
        while step < total:
            batch = next(batches, None)
            if batch is None:                                     # a new epoch: a new shuffled order
                batches = iter(torch.randperm(len(train_inputs), generator=order).split(args.batch_size))
                continue
            model.train()
            inputs, targets = train_inputs[batch].to(device), train_targets[batch].to(device)
            try:
                loss = masked_loss(model, inputs, targets)
            except ValueError as error:                           # the engine refuses NaN weights or inputs
                raise RuntimeError(f"training diverged at step {step}: {error}; try a lower --lr") from None
            if not torch.isfinite(loss):
                raise RuntimeError(f"training diverged at step {step}: the loss is {loss.item()}; try a lower --lr")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if args.grad_clip > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
            optimizer.step()
            schedule.step()
            step += 1
            losses.append(loss.item())
            bar.update(1)
            if step % args.eval_every == 0 or step == total:
                val_acc = accuracy(model, val_inputs, val_targets)
                mean_loss = sum(losses) / len(losses)
                history.append({"step": step, "loss": round(mean_loss, 5), "val_accuracy": round(val_acc, 5),
                                "seconds": round(time.perf_counter() - start, 2)})
                losses = []
                last_good = step, val_acc, {name: t.detach().clone() for name, t in model.state_dict().items()}
                bar.set_postfix(loss=f"{mean_loss:.3f}", val_acc=f"{val_acc:.3f}")
                if val_acc >= args.target_accuracy:
                    break
    except KeyboardInterrupt:                                 # Ctrl-C: keep the last validated model
        interrupted_at = step
        if last_good is None:
            raise Interrupted(f"interrupted at step {step}, before the first validation (step {args.eval_every}): "
                              "nothing written") from None
        step, val_acc, weights = last_good
        model.load_state_dict(weights)
    finally:
        bar.close()
    seconds = time.perf_counter() - start
    info = {"task": {"name": args.task, "seq_len": args.seq_len, "kv_pairs": args.kv_pairs,
                     "vocab_size": args.vocab_size, "power_a": args.power_a, "random_filler": args.random_filler,
                     "train_examples": args.train_examples, "val_examples": args.val_examples},
            "data_seeds": {"train": args.seed, "validation": args.seed + VALIDATION_SEED_OFFSET},
            "seed": args.seed, "steps": step, "planned_steps": total,
            "val_accuracy": val_acc, "train_seconds": round(seconds, 2),
            "seconds_per_step": round(seconds / max(interrupted_at or step, 1), 4), "history": history,
            "torch": torch.__version__, "device": str(device)}
    if interrupted_at is not None:
        info["interrupted_at_step"] = interrupted_at
    return model, info


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    try:                                                      # fail on bad sizes before any training
        config_from_args(args)
        make_data(args, 1, args.seed)
        get_device(args.device)
        if not args.out.endswith(".safetensors"):
            raise ValueError(f"--out must end in .safetensors, not {args.out!r}")
        problem = unwritable(Path(args.out).parent)
        if problem:
            raise ValueError(f"--out {args.out}: {problem}")
    except ValueError as error:
        parser.error(str(error))
    torch.set_num_threads(args.threads)
    try:
        model, info = train(args, progress=not args.no_progress)
    except (Interrupted, KeyboardInterrupt) as stop:
        print(f"\n{stop or 'interrupted before the training started: nothing written'}", file=sys.stderr)
        return 130                                            # the shell's status for a Ctrl-C
    info["command"] = "python -m lineare.engine train " + shlex.join(argv)
    checkpoint.save(args.out, model.cpu(), **info)
    if "interrupted_at_step" in info:
        print(f"interrupted at step {info['interrupted_at_step']}: wrote the model of step {info['steps']}, the last "
              f"validated (accuracy {info['val_accuracy']:.4f}), to {args.out}", file=sys.stderr)
        return 130
    print(f"{args.variant}: validation accuracy {info['val_accuracy']:.4f} after {info['steps']} steps "
          f"({info['train_seconds']:.0f} s); wrote {args.out}")
    return 0


def unwritable(folder):
    """Why a checkpoint cannot be written in `folder` (made if missing), or None."""
    existing = next(p for p in (folder.absolute(), *folder.absolute().parents) if p.exists())
    if not existing.is_dir():
        return f"{existing} is a file, not a folder"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"cannot write in {existing}"
    return None
