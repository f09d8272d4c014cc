"""`python -m lineare.engine capacity`: how many key→value associations one layer's state can hold.

The training-free version of the capacity experiment of Schlag, Irie & Schmidhuber 2021 (engine/README.md,
"Tasks and checkpoints"; §7). One layer, one head, no projections: N unit keys k_i ∈ R^{d_k} are written with
one-hot values through `engine.ops.forward`, then every key is read back from the final state S (o_i = S k_i, the
query being the key itself, scale 1).

    python -m lineare.engine capacity --rule sum --d-k 64 --pairs 16,32,64,80,120,256 --keys random

Rules (each a variant of the engine, engine/README.md):
- sum         variant "linear":          S_t = S_{t-1} + v_t k_tᵀ
- delta       variant "deltanet", β = 1: S_t = S_{t-1}(I − k_t k_tᵀ) + v_t k_tᵀ
              (each write replaces what the state held along k_t)
- gated-delta variant "gated_deltanet", β = 1 and a fixed mild decay α = 0.99 (g = log 0.99 per
              write): S_t = 0.99·S_{t-1}(I − k_t k_tᵀ) + v_t k_tᵀ; older associations fade by 0.99
              per later write.

Measures, per N (averaged over --trials independent draws of the keys):
- error: ½·Σ_j (o_ij − t_ij)², summed over the value dimensions j and averaged over the N keys i,
  with t_i the one-hot value key i should recall (its latest write). This is the loss of Schlag et
  al.'s synthetic experiment (½ · squared error summed over the one-hot value, mean over queries),
  so it is on the scale of their curves and of the closed form below. (The plain mean over pairs
  *and* dimensions is error·2/W, with W the value dimension.)
- bound: ½·max(0, 1 − d_k/N), the closed form of Schlag et al. 2021. It is the smallest error any *linear*
  read-out can reach with N distinct one-hot values: a d_k×N key matrix has rank ≤ d_k, so at best
  d_k of the N target dimensions are reproduced and the remaining N − d_k cost ½ each (out of N
  queries). Schlag et al. train the keys, so their sum-rule runs approach it; here the keys are
  fixed and the read-out is the plain S k, which reaches the bound only for orthonormal keys
  (N ≤ d_k). With random keys the sum rule's cross-talk ½·Σ_{j≠i}(k_i·k_j)² ≈ ½(N−1)/d_k stays
  above it even for N < d_k; both numbers are reported.
- best: the error of the best linear read-out W·k_i for these very keys (least squares, W fitted on
  the answers), the bound measured instead of assumed: equal to `bound` for keys in general position.
- accuracy: fraction of keys whose read-out is largest, strictly, at the value of the latest write
  (argmax = the stored value; a tie, within 1000 machine epsilons, counts as a miss, so the sum
  rule's e_old + e_new after a rewrite is not counted as a recall whatever the rounding).
  With one-hot values the sum rule's accuracy stays 1 for any N of distinct unit keys: the read-out
  of key i is 1 at its own value and k_i·k_j < 1 at every other; only the error shows its capacity.

With --repeat R, R more writes follow the N first ones, each reusing an earlier key with a fresh
value (see `engine.tasks.capacity_data`); the value dimension is then N + R, the bound still the one
for N distinct pairs.
"""
import argparse
import json
import math
import sys

import numpy as np
import torch

from lineare.engine.ops import FORMS, forward
from lineare.engine.tasks import KEY_KINDS, capacity_data
from lineare import arguments

RULES = {  # rule → (engine variant, log decay per write or None)
    "sum": ("linear", None),
    "delta": ("deltanet", None),
    "gated-delta": ("gated_deltanet", math.log(0.99)),
}
DTYPES = {"float64": torch.float64, "float32": torch.float32}
MAX_WRITES = 4096      # N + repeat, per run: the state is (N + R) × d_k, the values (N + R)²
MAX_D_K = 4096
MAX_TRIALS = 100

__all__ = ["RULES", "bound", "write_and_read", "measure", "wins", "rounding_tie", "capacity", "main"]


def bound(num_pairs, d_k):
    """½·max(0, 1 − d_k/N): the least error of any linear read-out of N one-hot values from d_k dims."""
    return 0.5 * max(0.0, 1.0 - d_k / num_pairs)


def write_and_read(rule, keys, values, queries, *, form="chunked", chunk_size=64, alpha=None, beta=None):
    """Write (keys[t], values[t]) in order into an empty state, then read S q for every query.

    keys [W, d_k], values [W, d_v], queries [N, d_k] (one float dtype) → (read-outs [N, d_v], S [d_v, d_k]).
    beta (delta rules, default 1) is the step size of every write; alpha (gated delta, default 0.99)
    the share of the state kept at every write.
    """
    variant, log_decay = RULES[rule]
    if beta is not None and variant not in ("deltanet", "gated_deltanet"):
        raise ValueError(f"the {rule} rule has no step size beta")
    if alpha is not None and log_decay is None:
        raise ValueError(f"the {rule} rule has no decay alpha")
    if alpha is not None:
        if not 0 < alpha <= 1:
            raise ValueError(f"alpha must be in (0, 1], not {alpha!r}")
        log_decay = math.log(alpha)
    W = keys.shape[0]
    k = keys[None, :, None, :]                                              # [B=1, T=W, H=1, d_k]
    v = values[None, :, None, :]
    gates = {}
    if variant in ("deltanet", "gated_deltanet"):
        gates["beta"] = torch.full((1, W, 1), 1.0 if beta is None else float(beta), dtype=keys.dtype)
    if log_decay is not None:
        gates["g"] = torch.full((1, W, 1), log_decay, dtype=keys.dtype)
    _, S = forward(variant, k, k, v, form=form, chunk_size=chunk_size, scale=1.0, **gates)
    S = S[0, 0]                                                             # [d_v, d_k]
    return queries @ S.T, S


def measure(readouts, targets, queries):
    """error, best (least-squares read-out) and accuracy of read-outs [N, W] against value ids [N]."""
    one_hot = torch.zeros_like(readouts)
    one_hot[torch.arange(len(targets)), targets] = 1.0
    error = 0.5 * (readouts - one_hot).pow(2).sum(-1).mean()
    fit = torch.linalg.pinv(queries) @ one_hot                              # best linear map, [d_k, W]
    best = 0.5 * (queries @ fit - one_hot).pow(2).sum(-1).mean()
    accuracy = wins(readouts, targets).double().mean()
    return float(error), float(best), float(accuracy)


def rounding_tie(best, other, dtype):
    """True where `other` is as high as `best` up to rounding: within 1000 machine epsilons of `dtype` (the
    precision the scores were computed in), relative to |best| (at least 1). The one tie rule of Lineare:
    this experiment's accuracy, the app's decoding of every read-out (app/mechanism.py `decode`) and the
    pages that mark a tie use it. The sum rule's read-out of a rewritten key, v_old + v_new, is exactly as
    close to both values; whichever wins by a rounding is not an answer.

    best, other: numbers, arrays or tensors of one shape; dtype: a torch or NumPy float dtype. Returns a
    bool tensor of that shape.
    """
    best, other = torch.as_tensor(best), torch.as_tensor(other)
    eps = torch.finfo(dtype).eps if isinstance(dtype, torch.dtype) else float(np.finfo(dtype).eps)
    return (best - other).abs() <= 1e3 * eps * best.abs().clamp(min=1.0)


def wins(scores, targets):
    """[N] bool: the target's score beats every other by more than rounding noise; a tie (`rounding_tie`:
    two stored values read back equally, as a rewritten key under the sum rule) is a miss."""
    hit = scores.gather(1, targets[:, None])[:, 0]
    rest = scores.scatter(1, targets[:, None], -math.inf).amax(1) if scores.shape[1] > 1 \
        else torch.full_like(hit, -math.inf)
    return (hit > rest) & ~rounding_tie(hit, rest, scores.dtype)


def capacity(rule, *, d_k, pairs, keys="random", repeat=0, seed=0, trials=1, form="chunked",
             dtype=torch.float64):
    """The experiment as data: one dict per N in `pairs` (trial t draws its keys with seed + t)."""
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}; choose one of {', '.join(RULES)}")
    if form not in FORMS:
        raise ValueError(f"unknown form {form!r}; choose one of {', '.join(FORMS)}")
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise ValueError(f"trials must be a positive integer, not {trials!r}")
    pairs = list(pairs)
    if not pairs:
        raise ValueError("pairs is empty; give at least one number of pairs")
    rows = []
    for N in pairs:
        sums = [0.0, 0.0, 0.0]
        for t in range(trials):
            data = capacity_data(num_pairs=N, d_k=d_k, keys=keys, repeat=repeat, seed=seed + t, dtype=dtype)
            readouts, _ = write_and_read(rule, data.keys, data.values, data.queries, form=form)
            for i, x in enumerate(measure(readouts, data.targets, data.queries)):
                sums[i] += x
        error, best, accuracy = (s / trials for s in sums)
        rows.append({"pairs": N, "error": error, "bound": bound(N, d_k), "best": best, "accuracy": accuracy})
    return rows


# ------------------------------------------------------------------------------ command line

def _count_list(text):
    try:
        counts = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected positive whole numbers separated by commas, got {text!r}")
    if not counts or any(n < 1 for n in counts):
        raise argparse.ArgumentTypeError(f"every number of pairs must be ≥ 1, got {text!r}")
    return counts


def _int_at_least(low, high=None):
    def parse(text):
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}")
        if n < low or (high is not None and n > high):
            raise argparse.ArgumentTypeError(f"must be between {low} and {high}, got {n}" if high is not None
                                             else f"must be ≥ {low}, got {n}")
        return n
    return parse


def _parser():
    p = argparse.ArgumentParser(
        prog="python -m lineare.engine capacity", formatter_class=arguments.Formatter,
        description="Write N key→value pairs into one layer's state, read every key back, and compare "
                    "the error with the closed-form bound ½·max(0, 1 − d_k/N).")
    p.add_argument("--rule", required=True, choices=list(RULES),
                   help="sum: linear attention; delta: DeltaNet with β = 1; "
                        "gated-delta: Gated DeltaNet with β = 1 and decay 0.99 per write")
    p.add_argument("--d-k", type=_int_at_least(1, MAX_D_K), required=True, metavar="D", help="key dimension")
    p.add_argument("--pairs", type=_count_list, required=True, metavar="N1,N2,...",
                   help="numbers of key→value pairs to store, one run each")
    p.add_argument("--keys", choices=KEY_KINDS, default="random",
                   help="orthogonal (needs N ≤ d_k), random unit vectors, or correlated (cosine ≈ 0.5)")
    p.add_argument("--repeat", type=_int_at_least(0), default=0, metavar="R",
                   help="R more writes that reuse earlier keys with new values (the latest must be recalled)")
    p.add_argument("--seed", type=_int_at_least(0), default=0, help="trial t draws its keys with seed + t")
    p.add_argument("--trials", type=_int_at_least(1, MAX_TRIALS), default=1, help="draws averaged per N")
    p.add_argument("--form", choices=FORMS, default="chunked", help="the engine form that does the writes")
    p.add_argument("--dtype", choices=list(DTYPES), default="float64", help="the numbers' precision")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    return p


def main(argv=None):
    parser = _parser()
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
        for N in args.pairs:
            if N + args.repeat > MAX_WRITES:
                parser.error(f"--pairs {N} with --repeat {args.repeat} makes {N + args.repeat} writes; "
                             f"at most {MAX_WRITES} per run")
            if args.keys == "orthogonal" and N > args.d_k:
                parser.error(f"--pairs {N}: at most d_k = {args.d_k} keys can be orthogonal; "
                             f"use --keys random beyond d_k")
        if args.keys == "correlated" and args.d_k < 2:
            parser.error("--keys correlated needs --d-k ≥ 2")
    except SystemExit as exit_:     # argparse exits on bad arguments and on --help: return its code
        return exit_.code if isinstance(exit_.code, int) else 2

    rows = capacity(args.rule, d_k=args.d_k, pairs=args.pairs, keys=args.keys, repeat=args.repeat,
                    seed=args.seed, trials=args.trials, form=args.form, dtype=DTYPES[args.dtype])
    variant, log_decay = RULES[args.rule]
    if args.json:
        print(json.dumps({
            "rule": args.rule, "variant": variant, "beta": None if args.rule == "sum" else 1.0,
            "log_decay": log_decay, "d_k": args.d_k, "keys": args.keys, "repeat": args.repeat,
            "seed": args.seed, "trials": args.trials, "form": args.form, "dtype": args.dtype,
            "error_definition": "0.5 * sum over value dims of squared error, mean over keys",
            "results": rows,
        }))
        return 0
    gate = "" if args.rule == "sum" else ", β = 1" + ("" if log_decay is None else ", decay 0.99")
    print(f"rule {args.rule} (variant {variant}{gate}), d_k = {args.d_k}, {args.keys} keys, "
          f"repeat {args.repeat}, {args.trials} trial(s) from seed {args.seed}, {args.form} form")
    print(f"{'pairs':>6} {'error':>9} {'bound':>9} {'best':>9} {'accuracy':>9}")
    for r in rows:
        print(f"{r['pairs']:>6} {r['error']:>9.4f} {r['bound']:>9.4f} {r['best']:>9.4f} {r['accuracy']:>9.3f}")
    print("error: ½·Σ(read-out − one-hot)² per key, mean over keys; bound: ½·max(0, 1 − d_k/N), the least\n"
          "error of any linear read-out; best: that least error for these keys (least squares); accuracy:\n"
          "share of keys whose read-out peaks, strictly, at the latest value written for them.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
