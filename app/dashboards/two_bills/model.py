"""Two bills, the generation race: a softmax layer and a fixed-state layer generate the same random
tokens; per token, the bytes the engine reports and the time each step takes. Also the number
formats both parts of the page write bytes and times with."""
import functools
import math
import os
import threading
import time
from dataclasses import dataclass

import numpy as np
import param
import torch
import torch.nn.functional as F

from lineare.app.checkpoints import one_thread
from lineare.app.i18n import format_number
from lineare.app.shared import read_only
from lineare.app.work import Worker
from lineare.engine.gates import make_gates, retnet_log_decay
from lineare.engine.ops import forward
from lineare.engine.ops.recurrent import gates_at
from lineare.engine.stepping import init_state, step

STATE_VARIANTS = ("linear", "retnet", "mamba2")
# each notch doubles the context. The bound: this engine's softmax step copies its whole cache to append
# a token, and the state layer reads the pre-fill with the chunked form; at 32,768 tokens (4 heads of 64)
# a step takes 0.1–0.5 s and the pre-fill 1–3 s on a busy two-core machine.
CONTEXTS = (0, 512, 1024, 2048, 4096, 8192, 16384, 32768)
TOKEN_CHOICES = (16, 32, 64, 128)
HEAD_CHOICES = (1, 2, 4)
DIM_CHOICES = (16, 32, 64)
MIN_TOKENS = 4
WORK_BUDGET = 5 * 2 ** 24              # cache numbers read by the softmax steps of one run: bounds a request
PIECE = 8192                           # the pre-fill goes through the state layer this many tokens at a time
WINDOW = 9                             # tokens in the rolling median of the step times
REPEATS = 3                            # runs of each step, the shortest kept (generate)
MAMBA2_DECAY = 0.95                    # random tokens: one fixed decay per step stands in for exp(Δ_t A)
HISTORY = 40                           # runs remembered for the "time against context" picture


def layer_gates(variant, heads, dim, length):
    """The gates of the fixed-state layer for `length` tokens, as engine.ops.forward takes them."""
    if variant == "retnet":                # the paper's fixed decay per head, γ_h = 1 − 2^(−5−h)
        return {"g": retnet_log_decay(heads)}
    return make_gates(variant, (1, length, heads, dim), alpha=MAMBA2_DECAY)     # linear attention: none


def random_tokens(generator, length, heads, dim):
    """q, k, v [1, length, H, d] for `length` random tokens: unit queries and keys, unit values."""
    q, k, v = (F.normalize(torch.randn(1, length, heads, dim, generator=generator), dim=-1) for _ in range(3))
    return q, k, v


def prefill(variant, context, heads, dim, generator, piece=PIECE):
    """Both layers after reading the same `context` random tokens: (KV cache, state).

    The softmax layer's cache simply *is* those keys and values; the state layer reads them with the
    engine's chunked form, `piece` tokens at a time (the same result as one call, in bounded memory).
    """
    cache = init_state("softmax", heads=heads, d_k=dim, d_v=dim)
    state = init_state(variant, heads=heads, d_k=dim, d_v=dim)
    if context == 0:
        return cache, state
    q, k, v = random_tokens(generator, context, heads, dim)
    cache = type(cache)(k, v)
    for start in range(0, context, piece):
        stop = min(start + piece, context)
        _o, state = forward(variant, q[:, start:stop], k[:, start:stop], v[:, start:stop], form="chunked",
                            initial_state=state, **layer_gates(variant, heads, dim, stop - start))
    return cache, state


def affordable_tokens(requested, context, heads, dim, budget=None):
    """How many of the `requested` tokens to generate so that the softmax steps read at most `budget`
    (default WORK_BUDGET) cache numbers in all (token t reads context + t keys and values), and never
    fewer than MIN_TOKENS."""
    budget = WORK_BUDGET if budget is None else budget
    per_position = heads * 2 * dim
    tokens = requested
    while tokens > MIN_TOKENS and per_position * (tokens * context + tokens * (tokens + 1) // 2) > budget:
        tokens -= 1
    return tokens


def multiply_adds(held, heads, d_k, d_v):
    """Multiply-adds of one layer to read one token, with `held` tokens in memory (the token included):
    (softmax [len(held)], fixed state). Softmax scores the `held` keys (d_k each) and sums their values
    (d_v each), held · (d_k + d_v) per head; the state does one write v kᵀ and one read S q, 2 d_k d_v
    per head whatever `held` is (a decay adds only multiplications). The same count as the calculator's."""
    held = np.asarray(held, dtype=np.int64)
    return heads * held * (d_k + d_v), heads * 2 * d_k * d_v


def work_crossing(d_k, d_v):
    """Tokens in memory from which a softmax token costs more multiply-adds than a state token."""
    return 2 * d_k * d_v // (d_k + d_v) + 1


def rolling_median(values, window=WINDOW):
    """Median of the last `window` values up to each position (fewer at the start)."""
    values = np.asarray(values, dtype=float)
    head = [np.median(values[:i + 1]) for i in range(min(window - 1, len(values)))]     # fewer than `window`
    if len(values) < window:
        return np.array(head, dtype=float)
    full = np.median(np.lib.stride_tricks.sliding_window_view(values, window), axis=1)   # [n - window + 1]
    return np.concatenate([head, full])


@dataclass
class Generation:
    """One run: per generated token, the bytes the engine reported and the time each step took."""
    variant: str
    heads: int
    dim: int
    context: int
    requested: int
    held: np.ndarray              # tokens in memory after each generated token: context + 1 … context + T
    kv_cache_bytes: np.ndarray    # StepRecord.kv_cache_bytes of the softmax layer
    state_bytes: np.ndarray       # StepRecord.state_bytes of the fixed-state layer
    softmax_ms: np.ndarray        # wall-clock time of each softmax step
    state_ms: np.ndarray

    @property
    def tokens(self):
        return len(self.held)

    @functools.cached_property
    def softmax_median(self):
        """The softmax step times' rolling median (`rolling_median`), once per run: the page, its status line,
        its lesson and its export all read it."""
        return rolling_median(self.softmax_ms)

    @functools.cached_property
    def state_median(self):
        return rolling_median(self.state_ms)

    @property
    def bytes_per_token(self):
        """What each token held adds to the cache: one key and one value per head."""
        return int(self.kv_cache_bytes[0]) // int(self.held[0])

    @property
    def crossing(self):
        """Tokens in memory from which the cache is bigger than the state (pre-filled ones included)."""
        return int(self.state_bytes[0]) // self.bytes_per_token + 1


def generate(variant, context, requested, heads, dim, seed, repeats=None):
    """Pre-fill both layers with `context` random tokens, then generate as many of the `requested`
    tokens as the work budget allows, timing each step of each layer.

    Each step is run `repeats` times on the same inputs and its shortest time kept (a step is a pure
    function of the state before it): on a shared server the other runs only add time, so the
    shortest is the step's own cost. Default: REPEATS while the run stays within the work budget,
    else once."""
    tokens = affordable_tokens(requested, context, heads, dim)
    if repeats is None:
        reads = heads * 2 * dim * (tokens * context + tokens * (tokens + 1) // 2)      # cache numbers read
        repeats = REPEATS if REPEATS * reads <= WORK_BUDGET else 1
    generator = torch.Generator().manual_seed(seed)
    gates = gates_at(variant, layer_gates(variant, heads, dim, 1), 0)                # one token's gates
    kv_bytes, state_bytes, softmax_ms, state_ms = [], [], [], []

    def timed(layer, memory, qt, kt, vt, **gates):
        best = math.inf
        for _ in range(repeats):
            start = time.perf_counter()
            out = step(layer, memory, qt, kt, vt, **gates)
            best = min(best, 1e3 * (time.perf_counter() - start))
        return out, best

    with one_thread():
        cache, state = prefill(variant, context, heads, dim, generator)
        # one untimed step on throwaway states first: the first call of an operation pays for its set-up
        blank = torch.zeros(1, heads, dim)
        step("softmax", init_state("softmax", heads=heads, d_k=dim, d_v=dim), blank, blank, blank)
        step(variant, init_state(variant, heads=heads, d_k=dim, d_v=dim), blank, blank, blank, **gates)
        q, k, v = random_tokens(generator, tokens, heads, dim)
        for t in range(tokens):
            qt, kt, vt = q[:, t], k[:, t], v[:, t]
            # the layers take turns going first, so that both see the same background load on average
            for layer in (("softmax", variant) if t % 2 == 0 else (variant, "softmax")):
                if layer == "softmax":
                    (_o, cache, record), ms = timed("softmax", cache, qt, kt, vt)
                    softmax_ms.append(ms)
                    kv_bytes.append(record.kv_cache_bytes)
                else:
                    (_o, state, record), ms = timed(variant, state, qt, kt, vt, **gates)
                    state_ms.append(ms)
                    state_bytes.append(record.state_bytes)
    return Generation(variant, heads, dim, context, requested, np.arange(context + 1, context + tokens + 1),
                      np.array(kv_bytes), np.array(state_bytes), np.array(softmax_ms), np.array(state_ms))


# A run takes up to seconds (the pre-fill of 32,768 tokens): measured on one thread for all sessions, one
# at a time, so that runs do not slow each other down. Each session waits for at most one run.
MEASURER = Worker("two-bills-generate", threads=1)           # timings: never two at once

# a page opens on a run of its settings measured this recently (0: each page measures its own)
OPENING_AGE_S = float(os.environ.get("LINEARE_OPENING_AGE_S", 60.0))
_openings = {}                         # settings → (time.monotonic() when measured, Generation)
_openings_lock = threading.Lock()


def opening_run(settings):
    """The run a page opens on: the one measured in this server process for the same settings within
    OPENING_AGE_S, else a new one. A class opening the page at once would otherwise measure 30 runs
    (a quarter of the page's CPU each), all slowed by each other's page builds; the same machine
    measures the same step times, and *Measure again* always measures anew. Read only: shared."""
    key = (tuple(sorted(settings.items())), WORK_BUDGET, REPEATS)
    with _openings_lock:
        measured, run = _openings.get(key, (-math.inf, None))
    if time.monotonic() - measured < OPENING_AGE_S:
        return run
    run = read_only(generate(**settings))          # handed to every page opened within OPENING_AGE_S
    with _openings_lock:
        _openings[key] = (time.monotonic(), run)
        for old in sorted(_openings, key=lambda k: _openings[k][0])[:-16]:      # the 16 latest settings
            del _openings[old]
    return run


class GenerationStore(param.Parameterized):
    """One session's settings for the generation race, and what the engine reported for them."""

    variant = param.Selector(default="linear", objects=list(STATE_VARIANTS), doc="the fixed-state layer")
    # the page opens with a prompt already read, so the cache already leads (it passes the state at
    # token d/2 + 1) and the softmax steps take visibly longer than the state's on a busy server
    context = param.Selector(default=512, objects=list(CONTEXTS), doc="random tokens in memory before generating")
    tokens = param.Selector(default=64, objects=list(TOKEN_CHOICES), doc="tokens to generate")
    heads = param.Selector(default=4, objects=list(HEAD_CHOICES))
    dim = param.Selector(default=64, objects=list(DIM_CHOICES), doc="d_k = d_v of every head")
    seed = param.Integer(default=0, bounds=(0, 9999), doc="seed of the random tokens")
    measure = param.Event(doc="run again with the same settings (a new measurement)")

    result = param.Parameter(default=None, doc="the latest Generation (derived, read-only for views)")
    history = param.List(default=[], doc="(heads, dim, tokens in memory, softmax ms, state ms) per run")
    measuring = param.Boolean(default=False, doc="a run with newer settings is being measured")

    URL = {"variant": "variant", "context": "context", "tokens": "tokens", "heads": "heads", "dim": "dim",
           "seed": "seed"}

    def __init__(self, **params):
        super().__init__(**params)
        self._again = False                # settings changed while a run was measured
        self.param.watch(self._measure, list(self.URL) + ["measure"])
        self._measured(opening_run(self._settings()))        # the page opens on a run, so the first is now

    def _settings(self):
        return {"variant": self.variant, "context": self.context, "requested": self.tokens,
                "heads": self.heads, "dim": self.dim, "seed": self.seed}

    def _measure(self, *_events):
        if self.measuring:                 # one run at a time per session: the latest settings go next
            self._again = True
            return
        self.measuring = True
        settings = self._settings()
        MEASURER.submit(lambda: generate(**settings), self._measured, on_error=self._failed)

    def _measured(self, result):
        point = (result.heads, result.dim, int(result.held[len(result.held) // 2]),
                 float(np.median(result.softmax_ms)), float(np.median(result.state_ms)))
        history = (list(self.history) + [point])[-HISTORY:]
        again, self._again = self._again, False
        if again:                          # already out of date: keep the point, measure the latest settings
            self.param.update(history=history, measuring=False)
            self._measure()
        else:
            self.param.update(result=result, history=history, measuring=False)

    def _failed(self, _error):             # logged by the worker; the last run stays on the page
        self._again = False
        self.measuring = False


# ---------------------------------------------------------------------------- number formats

_UNITS = ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"), (1, "B"))
_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def byte_unit(count):
    """(size, symbol) of the decimal unit that writes `count` bytes with 1 to 3 digits before the point."""
    return next(((size, symbol) for size, symbol in _UNITS if count >= size), (1, "B"))


def significant(value):
    """Three significant digits: 2,05 / 65,5 / 134."""
    decimals = 0 if value >= 99.95 else 1 if value >= 9.995 else 2
    return format_number(round(value, decimals), decimals or None)


def format_bytes(count):
    """Bytes in decimal units, written the way the current language writes numbers: '17,2 GB'."""
    size, symbol = byte_unit(count)
    if size == 1:
        return f"{format_number(int(count))} B"
    return f"{significant(count / size)} {symbol}"


def format_power(count):
    """A big count as 'm × 10ᵉ' (m with one decimal), small ones in full: '1,7 × 10¹⁰'."""
    if count < 1e6:
        return format_number(int(count))
    exponent = int(math.floor(math.log10(count)))
    mantissa = count / 10 ** exponent
    if round(mantissa, 1) >= 10:
        mantissa, exponent = mantissa / 10, exponent + 1
    head = "" if round(mantissa, 1) == 1 else format_number(round(mantissa, 1), 1) + " × "
    return f"{head}10{str(exponent).translate(_SUPERSCRIPT)}"


def format_ms(ms):
    return format_number(round(ms, 2 if ms < 10 else 1 if ms < 100 else 0),
                         2 if ms < 10 else 1 if ms < 100 else 0)
