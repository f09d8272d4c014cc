"""`python -m engine bench`: how fast each form is on this machine (float32, CPU).

1. wall time of the parallel, chunked and recurrent forms of every variant at lengths T;
2. the recurrent per-token step at several context lengths: flat for a fixed-size state,
   growing with a softmax KV cache;
3. torch.matmul GFLOP/s, and what the chunked form of linear attention achieves;
4. PASS/MISS against the engine's speed targets.

    python -m engine bench [--quick] [--json] [--variants linear,gla] [--lengths 256,1024]

A table goes to stdout (with --json, one JSON document instead); progress goes to stderr.
Cases estimated to take over a minute, or (parallel form) over ~8 GB, are skipped and say so.
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time
from dataclasses import asdict, dataclass, replace

import torch
import torch.nn.functional as F

from engine.gates import make_gates
from engine.ops import VARIANTS, forward, initial_state
from engine.ops.recurrent import STEPS, gates_at
from engine.ops.states import KVCache

FORMS = ("parallel", "chunked", "recurrent")
DIAGONAL = ("linear", "retnet", "mamba2", "gla", "rwkv6", "mlstm")  # transitions without a low-rank part

# Peak memory of the parallel form, in float32 T×T matrices per (batch, head): measured with
# ru_maxrss at T=2048, H=4 on the engine as it is, and rounded up.
PARALLEL_MATRICES = {"linear": 3, "retnet": 5, "mamba2": 5, "gla": 8, "deltanet": 5,
                     "gated_deltanet": 7, "rwkv6": 9, "rwkv7": 10, "mlstm": 5, "softmax": 4}


@dataclass(frozen=True)
class Config:
    lengths: tuple = (256, 1024, 4096, 16384)
    contexts: tuple = (1024, 8192, 65536)
    variants: tuple = VARIANTS
    chunk_size: int = 64
    batch: int = 1
    heads: int = 4
    d_k: int = 64
    d_v: int = 64
    repeats: int = 5             # timed runs after the warm-up, for cases under slow_s
    slow_s: float = 1.0          # a call slower than this is timed once
    step_repeats: int = 300      # per-token steps timed per context (median)
    step_budget_s: float = 5.0   # ... or fewer, once this much time is spent on a variant
    matmul_sizes: tuple = (1024, 4096)
    limit_s: float = 60.0        # skip a case estimated to take longer
    limit_gb: float = 8.0        # skip a parallel form estimated to need more memory


QUICK = dict(lengths=(64, 256), contexts=(128, 1024), repeats=2, slow_s=0.2, step_repeats=20,
             step_budget_s=0.2, matmul_sizes=(256, 512))


# ---------------------------------------------------------------- inputs

def make_inputs(variant, T, cfg, seed=0):
    """Random q, k, v [B,T,H,·] and the variant's gates (engine.gates, around α = 0.95 per step, as a
    trained layer's)."""
    B, H, K, V = cfg.batch, cfg.heads, cfg.d_k, cfg.d_v
    gen = torch.Generator().manual_seed(seed)
    randn = lambda *shape: torch.randn(*shape, generator=gen)
    q, k, v = randn(B, T, H, K), randn(B, T, H, K), randn(B, T, H, V)
    if variant in ("deltanet", "gated_deltanet"):
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
    gates = make_gates(variant, (B, T, H, K), alpha=0.95, beta=1.0, seed=seed + 1)
    return q, k, v, gates


def random_state(variant, context, cfg, seed=0):
    """A state to step from: a KV cache of `context` random tokens for softmax; for the others a
    random state of the fixed shape, which is the same whatever the context."""
    gen = torch.Generator().manual_seed(seed)
    randn = lambda *shape: torch.randn(*shape, generator=gen)
    B, H, K, V = cfg.batch, cfg.heads, cfg.d_k, cfg.d_v
    if variant == "softmax":
        return KVCache(randn(B, context, H, K), randn(B, context, H, V))
    empty = initial_state(variant, B, H, K, V)
    return randn(*empty.shape) if torch.is_tensor(empty) else type(empty)(*(randn(*x.shape) for x in empty))


# ---------------------------------------------------------------- timing

def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def best_time(fn, repeats, slow_s):
    """(seconds, runs): a warm-up call, then the best of up to `repeats` runs. A call slower than
    slow_s is its own measurement (a warm-up would only double the wait)."""
    first = timed(fn)
    if first > slow_s:
        return first, 1
    runs = max(1, min(repeats, int(slow_s / first)))
    return min(timed(fn) for _ in range(runs)), runs


def median_times(fns, repeats, budget_s):
    """([seconds per fn], runs): medians of up to `repeats` timed calls of each (at least 5), after
    two warm-ups. The fns take turns, so a change in the machine's load hits them all alike."""
    for fn in fns:
        fn(), fn()
    times, spent = [[] for _ in fns], 0.0
    while len(times[0]) < repeats and (len(times[0]) < 5 or spent < budget_s):
        for fn, measured in zip(fns, times):
            measured.append(timed(fn))
            spent += measured[-1]
    return [statistics.median(measured) for measured in times], len(times[0])


def estimate(variant, form, T, last, cfg):
    """(seconds, GB) a case should take, from the last measured length of the same form: the work
    is quadratic in T for the parallel form and for softmax, linear otherwise."""
    power = 2 if form == "parallel" or variant == "softmax" else 1
    seconds = last[1] * (T / last[0]) ** power if last else 0.0
    gigabytes = PARALLEL_MATRICES[variant] * cfg.batch * cfg.heads * T * T * 4 / 1e9 if form == "parallel" else 0.0
    return seconds, gigabytes


# ---------------------------------------------------------------- the measurements

def time_forms(cfg, log):
    """{variant: {form: {T: {"time_s", "runs"} or {"time_s": None, "skipped", "estimate_s"}}}}"""
    results = {}
    for variant in cfg.variants:
        results[variant] = {form: {} for form in FORMS}
        last = {}                                            # form -> (T, seconds) last measured
        for T in cfg.lengths:
            q, k, v, gates = make_inputs(variant, T, cfg)
            for form in FORMS:
                seconds, gigabytes = estimate(variant, form, T, last.get(form), cfg)
                if seconds > cfg.limit_s or gigabytes > cfg.limit_gb:
                    why = f"est. {gigabytes:.0f} GB" if gigabytes > cfg.limit_gb else f"est. {seconds:.0f} s"
                    entry = {"time_s": None, "skipped": why, "estimate_s": seconds, "estimate_gb": gigabytes}
                    log(f"{variant} {form} T={T}: skipped ({why})")
                else:
                    run = lambda: forward(variant, q, k, v, form=form, chunk_size=cfg.chunk_size, **gates)
                    seconds, runs = best_time(run, cfg.repeats, cfg.slow_s)
                    last[form] = (T, seconds)
                    entry = {"time_s": seconds, "runs": runs}
                    log(f"{variant} {form} T={T}: {fmt_time(seconds)}")
                results[variant][form][str(T)] = entry
    return results


def time_steps(cfg, log):
    """{variant: {context: {"time_s", "runs"}}}: one recurrent step from a state at each context
    (the same token each time, from the same state: the state is not carried on)."""
    results = {}
    for variant in cfg.variants:
        q, k, v, gates = make_inputs(variant, 1, cfg)
        token = (q[:, 0] * cfg.d_k ** -0.5, k[:, 0], v[:, 0])             # STEPS take q already scaled
        gates = gates_at(variant, gates, 0)
        states = [random_state(variant, context, cfg) for context in cfg.contexts]
        if variant == "softmax":  # a decoder's cache is preallocated: write in place, read it all
            steps = [lambda cache=_preallocated(state): _cached_softmax_step(cache, *token) for state in states]
        else:
            steps = [lambda state=state: STEPS[variant](state, *token, **gates) for state in states]
        medians, runs = median_times(steps, cfg.step_repeats, cfg.step_budget_s)
        results[variant] = {str(c): {"time_s": t, "runs": runs} for c, t in zip(cfg.contexts, medians)}
        log(f"{variant} step at contexts {', '.join(map(str, cfg.contexts))}: {', '.join(map(fmt_time, medians))}")
    return results


def _preallocated(cache):
    """A cache with room for one more token: buffers [B, ctx + 1, H, ·] and the ctx tokens filled."""
    pad = lambda x: torch.cat([x, torch.zeros_like(x[:, :1])], 1)
    return pad(cache.k), pad(cache.v)


def _cached_softmax_step(cache, q, k, v):
    """One decoding step of softmax attention with a KV cache, as a real decoder does it: store the
    new key and value in the last free slot, then attend over every cached token. (The engine's
    stepping API returns a new cache each step, which copies it; that is not what is timed here.)"""
    keys, values = cache
    keys[:, -1], values[:, -1] = k, v
    weights = torch.einsum("bhd,bthd->bht", q, keys).softmax(-1)
    return torch.einsum("bht,bthd->bhd", weights, values)


def chunked_linear_flops(T, cfg):
    """Floating-point operations of the chunked form for linear attention (no decay), as
    dplr_chunked computes it. Per head, with C the chunk size:
        intra-chunk scores Q Kᵀ, T/C chunks of C×C×d_k multiply-adds   2·T·C·d_k
        scores · V                                                    2·T·C·d_v
        reading each chunk's start state, Q S_0ᵀ                      2·T·d_k·d_v
        each chunk's write Vᵀ K into the state                        2·T·d_k·d_v
    The causal mask zeroes half of each C×C block after it is computed, so it still counts;
    elementwise work (masking, the additions of the scan across chunks) is left out."""
    C = min(cfg.chunk_size, T)
    per_head = 2 * T * C * (cfg.d_k + cfg.d_v) + 4 * T * cfg.d_k * cfg.d_v
    return per_head * cfg.batch * cfg.heads


def time_matmul(cfg, forms, log):
    """torch.matmul GFLOP/s on square matrices, and the chunked linear attention's GFLOP/s at the
    largest length (reusing the forms' measurement when there is one)."""
    gflops = {}
    for n in cfg.matmul_sizes:
        a, b = torch.randn(n, n), torch.randn(n, n)
        seconds, _ = best_time(lambda: a @ b, max(3, cfg.repeats), 10 * cfg.slow_s)
        gflops[str(n)] = 2 * n ** 3 / seconds / 1e9
        log(f"matmul {n}×{n}: {gflops[str(n)]:.1f} GFLOP/s")
    T = max(cfg.lengths)
    seconds = forms.get("linear", {}).get("chunked", {}).get(str(T), {}).get("time_s")
    if seconds is None:
        q, k, v, _ = make_inputs("linear", T, cfg)
        seconds, _ = best_time(lambda: forward("linear", q, k, v, form="chunked", chunk_size=cfg.chunk_size),
                               cfg.repeats, cfg.slow_s)
    flops = chunked_linear_flops(T, cfg)
    best = max(gflops.values())
    chunked = {"T": T, "flops": flops, "time_s": seconds, "gflops": flops / seconds / 1e9}
    chunked["fraction_of_matmul"] = chunked["gflops"] / best
    log(f"chunked linear T={T}: {chunked['gflops']:.1f} GFLOP/s")
    return {"gflops": gflops, "best_gflops": best}, chunked


# ---------------------------------------------------------------- targets

def check_targets(cfg, forms, steps, chunked):
    """The engine's speed targets: [{name, target, pass, values, unit, estimated}].

    pass is None where nothing was measured. A skipped case counts with its estimated time;
    `estimated` lists the variants where that happened."""
    T_rec = 4096 if 4096 in cfg.lengths else max(cfg.lengths)
    T_par = 16384 if 16384 in cfg.lengths else max(cfg.lengths)
    ctx_lo, ctx_hi = min(cfg.contexts), max(cfg.contexts)

    def check(name, target, values, ok, unit="×", estimated=()):
        return {"name": name, "target": target, "pass": all(map(ok, values.values())) if values else None,
                "values": values, "unit": unit, "estimated": list(estimated)}

    def speedup(name, target, variants, slow_form, T, factor):
        values, estimated = {}, []
        for variant in variants:
            slow, fast = forms[variant][slow_form].get(str(T)), forms[variant]["chunked"].get(str(T))
            times = [e["time_s"] if e["time_s"] is not None else e["estimate_s"] for e in (slow, fast) if e]
            if len(times) == 2 and all(times):
                values[variant] = times[0] / times[1]
                if None in (slow["time_s"], fast["time_s"]):
                    estimated.append(variant)
        return check(name, target, values, lambda r: r >= factor, estimated=estimated)

    growth = {v: steps[v][str(ctx_hi)]["time_s"] / steps[v][str(ctx_lo)]["time_s"] for v in cfg.variants}
    flat = check("step_flat", f"recurrent step at context {ctx_hi} within 1.2× of {ctx_lo} for fixed "
                 "states, while softmax's grows", growth, lambda r: r <= 1.2)
    if "softmax" in growth:  # the one variant whose step should grow with the context
        flat["pass"] = all(r <= 1.2 for v, r in growth.items() if v != "softmax") and growth["softmax"] > 1.2
    return [
        speedup("chunked_vs_recurrent", f"chunked ≥ 10× faster than recurrent at T={T_rec}, every variant",
                cfg.variants, "recurrent", T_rec, 10),
        speedup("chunked_vs_parallel", f"chunked ≥ 5× faster than parallel at T={T_par}, diagonal transitions",
                [v for v in cfg.variants if v in DIAGONAL], "parallel", T_par, 5),
        flat,
        check("chunked_gflops", f"chunked linear attention at T={chunked['T']} ≥ 25% of matmul GFLOP/s",
              {"linear": chunked["fraction_of_matmul"]}, lambda f: f >= 0.25, unit="%"),
    ]


# ---------------------------------------------------------------- output

def fmt_time(seconds):
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale or unit == "µs":
            return f"{seconds / scale:.3g} {unit}"


def print_report(report):
    cfg = report["config"]
    print(f"Lineare engine benchmark: {report['machine']['cpus']} CPUs, {report['machine']['threads']} torch threads, "
          f"torch {report['machine']['torch']}, float32, B={cfg['batch']} H={cfg['heads']} "
          f"d_k={cfg['d_k']} d_v={cfg['d_v']}, chunk {cfg['chunk_size']}")
    print(f"\n1. Wall time per form (best of up to {cfg['repeats']} after a warm-up; one run over {cfg['slow_s']} s)")
    print(f"{'variant':<16}{'form':<11}" + "".join(f"{'T=' + str(T):>22}" for T in cfg["lengths"]))
    for variant, by_form in report["forms"].items():
        for form, by_T in by_form.items():
            cells = [fmt_time(e["time_s"]) if e["time_s"] is not None else f"skipped: {e['skipped']}"
                     for e in by_T.values()]
            print(f"{variant:<16}{form:<11}" + "".join(f"{c:>22}" for c in cells))

    print("\n2. Recurrent step, one token (median); softmax reads a KV cache of that many tokens")
    print(f"{'variant':<16}" + "".join(f"{'ctx=' + str(c):>14}" for c in cfg["contexts"]) + f"{'growth':>10}")
    for variant, by_ctx in report["steps"].items():
        times = [e["time_s"] for e in by_ctx.values()]
        print(f"{variant:<16}" + "".join(f"{fmt_time(t):>14}" for t in times) + f"{times[-1] / times[0]:>9.2f}×")

    matmul, chunked = report["matmul"], report["chunked_linear"]
    print("\n3. Throughput")
    print("torch.matmul float32: " + ", ".join(f"{n}×{n} {g:.1f} GFLOP/s" for n, g in matmul["gflops"].items()))
    print(f"chunked linear attention T={chunked['T']}: {chunked['flops'] / 1e9:.2f} GFLOP in "
          f"{fmt_time(chunked['time_s'])} = {chunked['gflops']:.1f} GFLOP/s "
          f"({100 * chunked['fraction_of_matmul']:.0f}% of the best matmul)")

    print("\n4. Targets")
    for check in report["targets"]:
        mark = {True: "PASS", False: "MISS", None: "n/a "}[check["pass"]]
        print(f"  {mark}  {check['target']}")
        print("        " + (", ".join(f"{v} {fmt_value(x, check['unit'])}{' (est.)' * (v in check['estimated'])}"
                                      for v, x in check["values"].items()) or "nothing measured"))


def fmt_value(x, unit):
    return f"{100 * x:.0f}%" if unit == "%" else f"{x:.{2 if x < 2 else 1 if x < 10 else 0}f}×"


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m engine bench", description="Time the forms of every "
                                     "variant, the per-token step and matmul throughput (float32, CPU).")
    numbers = lambda text: tuple(sorted({int(x) for x in text.split(",") if x}))
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    parser.add_argument("--quick", action="store_true", help="small sizes and few repeats (a smoke test)")
    parser.add_argument("--variants", type=lambda text: tuple(text.split(",")), help="comma-separated")
    parser.add_argument("--lengths", type=numbers, help="sequence lengths T, comma-separated")
    parser.add_argument("--contexts", type=numbers, help="contexts for the per-token step, comma-separated")
    parser.add_argument("--chunk-size", type=int, default=64)
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's own; 1 with --quick, "
                        "which keeps a smoke test steady on a busy machine)")
    args = parser.parse_args(argv)
    cfg = Config(**QUICK) if args.quick else Config()
    unknown = [v for v in args.variants or () if v not in VARIANTS]
    if unknown:
        parser.error(f"unknown variant {', '.join(unknown)}; choose from {', '.join(VARIANTS)}")
    if min((args.chunk_size, args.threads or 1) + (args.lengths or ()) + (args.contexts or ())) < 1:
        parser.error("chunk size, threads, lengths and contexts must be positive")
    args.threads = args.threads or (1 if args.quick else None)
    given = {"variants": args.variants, "lengths": args.lengths, "contexts": args.contexts,
             "chunk_size": args.chunk_size}
    return args, replace(cfg, **{name: x for name, x in given.items() if x})


def main(argv=None) -> int:
    args, cfg = parse_args(argv)
    log = lambda line: print(f"[bench] {line}", file=sys.stderr, flush=True)
    threads = torch.get_num_threads()
    torch.set_num_threads(args.threads or threads)
    try:
        with torch.inference_mode():
            forms = time_forms(cfg, log)
            steps = time_steps(cfg, log)
            matmul, chunked = time_matmul(cfg, forms, log)
        machine = {"cpus": os.cpu_count(), "threads": torch.get_num_threads(), "torch": torch.__version__,
                   "platform": platform.platform(), "processor": platform.processor()}
    finally:
        torch.set_num_threads(threads)
    report = {
        "machine": machine,
        "config": asdict(cfg),
        "forms": forms,
        "steps": steps,
        "matmul": matmul,
        "chunked_linear": chunked,
        "targets": check_targets(cfg, forms, steps, chunked),
    }
    if args.json:
        print(json.dumps(report, indent=1, ensure_ascii=False))
    else:
        print_report(report)
    return 0
