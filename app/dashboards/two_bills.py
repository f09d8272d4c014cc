"""Dashboard "Two bills" (DESIGN §2.1, §6.1): what softmax attention pays while it generates.

Two stores per session, two parts of the page:

- `GenerationStore` (mechanism mode): one softmax layer and one fixed-state layer (linear attention,
  RetNet or Mamba-2) read the same random tokens and then generate new ones, one at a time, through
  `engine.stepping.step`. The bytes come from the engine's records (`kv_cache_bytes` grows by one key
  and one value per token, `state_bytes` stays flat); the time of every step is measured with
  `perf_counter`. Only these numbers are kept, never the cache itself.
- `CalculatorStore`: the same two bills for real model shapes (closed forms, no engine run).

`GenerationView` and `CalculatorView` only draw.
"""
import html
import math
import time
from dataclasses import dataclass

import numpy as np
import panel as pn
import param
import torch
import torch.nn.functional as F

from app.checkpoints import one_thread
from app.components.curves import BLUE, GREY, VERMILLION, CurvesPicture
from app.components.controls import sidebar_label
from app.components.player import Player
from app.components.text import Explanation
from app.dashboards import Page
from app.i18n import N_, _, current_language, format_number
from app.urlstate import read_query, write_query
from engine.ops import forward
from engine.stepping import init_state, step

SLUG = "two-bills"

# ------------------------------------------------------------------------------ mechanism mode

STATE_VARIANTS = ("linear", "retnet", "mamba2")
VARIANT_NAMES = {"linear": N_("Linear attention"), "retnet": "RetNet", "mamba2": "Mamba-2"}
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
MAMBA2_DECAY = 0.95                    # random tokens: one fixed decay per step stands in for exp(Δ_t A)
HISTORY = 40                           # runs remembered for the "time against context" picture


def retnet_log_decay(heads):
    """RetNet's fixed per-head decays γ_h = 1 − 2^(−5−h), in log space (DESIGN §3)."""
    return torch.log1p(-torch.pow(2.0, -5.0 - torch.arange(heads, dtype=torch.float32)))


def sequence_gates(variant, heads, length):
    """The gates of `variant` for `length` tokens, as engine.ops.forward takes them."""
    if variant == "retnet":
        return {"g": retnet_log_decay(heads)}
    if variant == "mamba2":
        return {"g": torch.full((1, length, heads), math.log(MAMBA2_DECAY))}
    return {}


def step_gates(variant, heads):
    """The gates of `variant` for one token, as engine.stepping.step takes them."""
    if variant == "retnet":
        return {"g": retnet_log_decay(heads)}
    if variant == "mamba2":
        return {"g": torch.full((1, heads), math.log(MAMBA2_DECAY))}
    return {}


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
                            initial_state=state, **sequence_gates(variant, heads, stop - start))
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


def rolling_median(values, window=WINDOW):
    """Median of the last `window` values up to each position (fewer at the start)."""
    values = np.asarray(values, dtype=float)
    return np.array([np.median(values[max(0, i - window + 1):i + 1]) for i in range(len(values))])


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

    @property
    def bytes_per_token(self):
        """What each token held adds to the cache: one key and one value per head."""
        return int(self.kv_cache_bytes[0]) // int(self.held[0])

    @property
    def crossing(self):
        """Tokens in memory from which the cache is bigger than the state (pre-filled ones included)."""
        return int(self.state_bytes[0]) // self.bytes_per_token + 1


def generate(variant, context, tokens, heads, dim, seed):
    """Pre-fill both layers with `context` random tokens, then generate `tokens` more, timing each step.

    Returns the tokens held after each step and, per step, the engine's bytes and the milliseconds taken.
    """
    generator = torch.Generator().manual_seed(seed)
    gates = step_gates(variant, heads)
    kv_bytes, state_bytes, softmax_ms, state_ms = [], [], [], []
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
                start = time.perf_counter()
                if layer == "softmax":
                    _o, cache, record = step("softmax", cache, qt, kt, vt)
                    softmax_ms.append(1e3 * (time.perf_counter() - start))
                    kv_bytes.append(record.kv_cache_bytes)
                else:
                    _o, state, record = step(variant, state, qt, kt, vt, **gates)
                    state_ms.append(1e3 * (time.perf_counter() - start))
                    state_bytes.append(record.state_bytes)
    return np.arange(context + 1, context + tokens + 1), kv_bytes, state_bytes, softmax_ms, state_ms


class GenerationStore(param.Parameterized):
    """One session's settings for the generation race, and what the engine reported for them."""

    variant = param.Selector(default="linear", objects=list(STATE_VARIANTS), doc="the fixed-state layer")
    context = param.Selector(default=0, objects=list(CONTEXTS), doc="random tokens in memory before generating")
    tokens = param.Selector(default=64, objects=list(TOKEN_CHOICES), doc="tokens to generate")
    heads = param.Selector(default=4, objects=list(HEAD_CHOICES))
    dim = param.Selector(default=64, objects=list(DIM_CHOICES), doc="d_k = d_v of every head")
    seed = param.Integer(default=0, bounds=(0, 9999), doc="seed of the random tokens")
    measure = param.Event(doc="run again with the same settings (a new measurement)")

    result = param.Parameter(default=None, doc="the latest Generation (derived, read-only for views)")
    history = param.List(default=[], doc="(heads, dim, tokens in memory, softmax ms, state ms) per run")

    URL = {"variant": "variant", "context": "context", "tokens": "tokens", "heads": "heads", "dim": "dim",
           "seed": "seed"}

    def __init__(self, **params):
        super().__init__(**params)
        self.param.watch(self._compute, list(self.URL) + ["measure"])
        self._compute()

    def _compute(self, *_events):
        tokens = affordable_tokens(self.tokens, self.context, self.heads, self.dim)
        held, kv, state, softmax_ms, state_ms = generate(self.variant, self.context, tokens, self.heads,
                                                         self.dim, self.seed)
        result = Generation(self.variant, self.heads, self.dim, self.context, self.tokens, held,
                            np.array(kv), np.array(state), np.array(softmax_ms), np.array(state_ms))
        point = (self.heads, self.dim, int(held[len(held) // 2]), float(np.median(softmax_ms)),
                 float(np.median(state_ms)))
        self.param.update(result=result, history=(list(self.history) + [point])[-HISTORY:])


# ---------------------------------------------------------------------------- the calculator

DTYPES = {"fp32": 4, "bf16": 2, "fp16": 2, "int8": 1}


@dataclass(frozen=True)
class ModelShape:
    """The published shape of a model: what its generation memory depends on."""
    name: str                  # a model's name: not translated
    kind: str                  # "softmax" (keeps a KV cache) or "state" (keeps a fixed state)
    layers: int
    heads: int
    kv_heads: int
    d_k: int
    d_v: int
    parameters: float          # published parameter count
    source: str                # where the numbers come from (names and numbers: not translated)
    note: str                  # msgid: what to know about this shape

    def shape(self):
        return {"layers": self.layers, "heads": self.heads, "kv_heads": self.kv_heads, "d_k": self.d_k,
                "d_v": self.d_v}


PRESETS = {
    "llama2_7b": ModelShape(
        "Llama-2-7B", "softmax", 32, 32, 32, 128, 128, 6.74e9,
        "Touvron et al. 2023; meta-llama/Llama-2-7b-hf, config.json",
        N_("Llama-2 was trained on texts of up to 4,096 tokens: past that, these are the formula's numbers, "
           "not something the model can use.")),
    "llama3_8b": ModelShape(
        "Llama-3-8B", "softmax", 32, 32, 8, 128, 128, 8.03e9,
        "Meta 2024; meta-llama/Meta-Llama-3-8B, config.json",
        N_("Grouped-query attention: the 32 query heads share 8 key-value heads, so the cache is 4 times "
           "smaller than with 32. Llama-3-8B reads up to 8,192 tokens; Llama-3.1-8B has the same shape "
           "and reads up to 131,072.")),
    "mistral_7b": ModelShape(
        "Mistral-7B", "softmax", 32, 32, 8, 128, 128, 7.24e9,
        "Jiang et al. 2023; mistralai/Mistral-7B-v0.1, config.json",
        N_("Mistral-7B v0.1 looks back only 4,096 tokens (a sliding window), so its rolling cache stops "
           "growing there: a bounded memory, paid for with a shorter view. Later versions (v0.2, v0.3) "
           "attend to up to 32,768 tokens, as computed here.")),
    "retnet_6_7b": ModelShape(
        "RetNet-6.7B", "state", 32, 16, 16, 256, 512, 6.7e9,
        "Sun et al. 2023, Tab. 2, §3.1",
        N_("RetNet-6.7B: 16 heads per layer, keys of size 256 and values of size 512 (twice as wide), so "
           "each head keeps a 512 × 256 state.")),
    "mamba2_2_7b": ModelShape(
        "Mamba-2-2.7B", "state", 64, 80, 80, 128, 64, 2.7e9,
        "Dao & Gu 2024; state-spaces/mamba2-2.7b (d_model 2560, expand 2, headdim 64, d_state 128)",
        N_("Mamba-2-2.7B: 64 layers of 80 heads (an inner width of 5,120 = 80 × 64), each head keeping a "
           "64 × 128 state (head size 64, state size 128). The short convolution's small buffer is left "
           "out.")),
}
CUSTOM = "custom"


class CalculatorStore(param.Parameterized):
    """A model shape, a number format and a context length; the two bills follow in closed form."""

    preset = param.Selector(default="llama3_8b", objects=list(PRESETS) + [CUSTOM])
    layers = param.Integer(default=32, bounds=(1, 512))
    heads = param.Integer(default=32, bounds=(1, 1024), doc="query heads")
    kv_heads = param.Integer(default=8, bounds=(1, 1024), doc="key-value heads (grouped-query attention)")
    d_k = param.Integer(default=128, bounds=(1, 4096), doc="key (and query) size per head")
    d_v = param.Integer(default=128, bounds=(1, 4096), doc="value size per head")
    dtype = param.Selector(default="bf16", objects=list(DTYPES))
    context = param.Integer(default=131072, bounds=(1, 1_048_576), doc="tokens in the context")

    URL = {"preset": "preset", "layers": "layers", "heads": "qheads", "kv_heads": "kvheads", "d_k": "dk",
           "d_v": "dv", "dtype": "dtype", "context": "n"}
    SHAPE = ("layers", "heads", "kv_heads", "d_k", "d_v")

    def __init__(self, **params):
        preset = params.get("preset", self.param.preset.default)
        if preset in PRESETS:                      # a preset fills in what the link does not say
            for name, value in PRESETS[preset].shape().items():
                params.setdefault(name, value)
        if params.get("kv_heads", 0) > params.get("heads", self.param.heads.default):
            params["kv_heads"] = params.get("heads", self.param.heads.default)
        super().__init__(**params)
        self._follow_shape()

    def shape(self):
        return {name: getattr(self, name) for name in self.SHAPE}

    @param.depends("preset", watch=True)
    def _apply_preset(self):
        if self.preset in PRESETS:
            self.param.update(**PRESETS[self.preset].shape())

    @param.depends("layers", "heads", "kv_heads", "d_k", "d_v", watch=True)
    def _follow_shape(self):
        if self.kv_heads > self.heads:             # more key-value heads than query heads means nothing
            self.kv_heads = self.heads
            return
        if self.preset in PRESETS and self.shape() != PRESETS[self.preset].shape():
            self.preset = CUSTOM

    @property
    def model(self):
        return PRESETS.get(self.preset)

    @property
    def bytes_per_number(self):
        return DTYPES[self.dtype]

    def kv_cache_bytes(self, context=None):
        """2·L·H_kv·d·n·b in general form: every layer keeps, per KV head, a key (d_k) and a value (d_v)."""
        context = self.context if context is None else context
        return self.layers * self.kv_heads * (self.d_k + self.d_v) * context * self.bytes_per_number

    def state_bytes(self):
        """L·H·d_k·d_v·b: every layer keeps one d_v × d_k matrix per head, whatever the context."""
        return self.layers * self.heads * self.d_k * self.d_v * self.bytes_per_number

    def weight_bytes(self):
        """The weights of the chosen preset in this number format (None for a custom shape)."""
        return None if self.model is None else self.model.parameters * self.bytes_per_number

    def crossing(self):
        """Tokens from which the cache of this shape is bigger than its state."""
        return self.heads * self.d_k * self.d_v // (self.kv_heads * (self.d_k + self.d_v)) + 1

    def weights_crossing(self):
        """Tokens from which the cache alone is bigger than the weights (None for a custom shape)."""
        weights = self.weight_bytes()
        return None if weights is None else math.ceil(weights / self.kv_cache_bytes(1))

    def comparisons(self):
        """Query-key comparisons to read a prompt of n tokens: (per head and layer, whole model)."""
        per_head = self.context ** 2
        return per_head, per_head * self.heads * self.layers


# ---------------------------------------------------------------------------- number formats

_UNITS = ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"), (1, "B"))
_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def byte_unit(count):
    """(size, symbol) of the decimal unit that writes `count` bytes with 1 to 3 digits before the point."""
    return next(((size, symbol) for size, symbol in _UNITS if count >= size), (1, "B"))


def _significant(value):
    """Three significant digits: 2,05 / 65,5 / 134."""
    decimals = 0 if value >= 99.95 else 1 if value >= 9.995 else 2
    return format_number(round(value, decimals), decimals or None)


def format_bytes(count):
    """Bytes in decimal units, written the way the current language writes numbers: '17,2 GB'."""
    size, symbol = byte_unit(count)
    if size == 1:
        return f"{format_number(int(count))} B"
    return f"{_significant(count / size)} {symbol}"


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


# ------------------------------------------------------------------------------------ build

def build(session):
    generation_values, generation_notices = read_query(GenerationStore, GenerationStore.URL,
                                                       pn.state.session_args)
    calculator_values, calculator_notices = read_query(CalculatorStore, CalculatorStore.URL,
                                                       pn.state.session_args)
    generation = session.store(SLUG, lambda: GenerationStore(**generation_values))
    calculator = session.store(SLUG + "/calculator", lambda: CalculatorStore(**calculator_values))
    generation_view = GenerationView(store=generation, session=session,
                                     url_notices=generation_notices + calculator_notices)
    calculator_view = CalculatorView(store=calculator, session=session)
    title = html.escape(_("Two bills"))
    intro = Explanation(
        session,
        elementare=_("Softmax attention pays two bills. **Work**: to read a text, it compares every token "
                     "with every other one. **Memory**: while it writes, it keeps a key and a value for every "
                     "token it has seen, and never throws any away. A model with a fixed-size state pays a "
                     "fixed amount instead. Below, one layer of each kind generates the same tokens, one at a "
                     "time; further down, the same bills for real models."),
        superiore=_("Softmax attention pays two bills. **Work**: a prompt of $n$ tokens costs $O(n^2 d)$ per "
                    "layer, since every query meets every key. **Memory**: to generate token $t$ it reads a "
                    "KV cache of $t$ keys and $t$ values, which grows as $O(t)$ and is never freed. A "
                    "fixed-size state $S_t \\in \\mathbb{R}^{d_v \\times d_k}$ costs $O(d_k d_v)$ per token, "
                    "in time and in memory, whatever $t$ is (Katharopoulos et al. 2020)."))
    main = pn.Column(
        pn.pane.HTML(f"<h1 style='margin:0;font-size:30px;color:#102a43'>{title}</h1>", margin=(0, 10)),
        intro, generation_view, calculator_view, papers(session), sizing_mode="stretch_width")
    return Page(main=main, controls=generation_view.controls())


HEADING_CSS = ":host { width: 100%; } h2 { font-size: 24px; color: #102a43; margin: 18px 0 4px 0; }"
STATUS_CSS = """
:host { width: 100%; }
.status { font-size: 17px; color: #243b53; }
.step { font-size: 15px; color: #52606d; margin-bottom: 6px; }
.bills { display: flex; flex-wrap: wrap; gap: 12px; margin: 6px 0; }
.bill { border-radius: 10px; padding: 8px 14px; min-width: 260px; background: #fbfcfe; border: 2px solid #d9e2ec; }
.bill .what { font-size: 15px; color: #52606d; }
.bill .amount { font-size: 28px; font-weight: 700; }
.bill .how { font-size: 14px; color: #52606d; }
.bill.cache { border-color: #d55e00; } .bill.cache .amount { color: #a04000; }
.bill.state { border-color: #0072b2; border-style: dashed; } .bill.state .amount { color: #005282; }
.bill .mine { display: inline-block; font-size: 13px; font-weight: 700; color: white; background: #1d4f7a;
              border-radius: 4px; padding: 1px 6px; margin-left: 6px; }
.note { font-size: 15px; color: #52606d; margin: 4px 0; }
.limit { font-size: 15px; color: #3e2c00; background: #fff8e1; padding: 4px 10px; border-radius: 4px; }
table { border-collapse: collapse; font-size: 15px; margin-top: 6px; }
th, td { text-align: left; padding: 4px 10px; border-bottom: 1px solid #e4e7eb; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.current { background: #fff3c4; }
.source { color: #7b8794; font-size: 13px; }
"""


def heading(text):
    return pn.pane.HTML(f"<h2>{html.escape(text)}</h2>", stylesheets=[HEADING_CSS], sizing_mode="stretch_width",
                        margin=(0, 10))


def bill_html(kind, what, amount, how, badge=""):
    """One bill: what is kept, how much, and how it is made up (every piece escaped)."""
    mark = f'<span class="mine">{html.escape(badge)}</span>' if badge else ""
    return (f'<div class="bill {kind}"><div class="what">{html.escape(what)}{mark}</div>'
            f'<div class="amount">{html.escape(amount)}</div><div class="how">{html.escape(how)}</div></div>')


def figure_card(picture, explanation, width=600):
    return pn.Column(pn.pane.Bokeh(picture.figure), explanation, width=width, margin=(0, 12, 12, 0))


class GenerationView(pn.viewable.Viewer):
    """Draws a GenerationStore: the player, the bytes, the step times and the session's measurements."""

    store = param.ClassSelector(class_=GenerationStore)
    session = param.Parameter()
    url_notices = param.List(default=[])

    def __init__(self, **params):
        super().__init__(**params)
        store, session = self.store, self.session
        self.player, player_notices = Player.from_query(pn.state.session_args, speed=4.0)
        frames = store.result.tokens
        if self.player.value > frames - 1:
            player_notices.append(_("The link asked for token {t}, but this run generates {n}: the last one "
                                    "is shown.").format(t=self.player.value + 1, n=frames))
        self.player.length = frames
        if Player.URL["value"] not in (pn.state.session_args or {}):
            self.player.value = frames - 1       # open on the whole run: Play replays it from the start
        session.add_notices("url", self.url_notices + player_notices)

        language = current_language()
        self.memory = CurvesPicture(_("Memory held while generating"), _("tokens in memory"), "",
                                    language=language, legend_columns=2)
        self.memory.line("prefilled", color=VERMILLION, dash="dotted", width=2)
        self.memory.line("cache", color=VERMILLION, width=4)
        self.memory.line("state", color=BLUE, dash="dashed", width=4)
        self.memory.dots("cache_now", color=VERMILLION, size=12, alpha=1.0)
        self.memory.dots("state_now", color=BLUE, marker="square", size=12, alpha=1.0)
        self.memory.label("cache", _("KV cache (softmax)"), ["cache", "cache_now"])
        self.memory.label("state", "", ["state", "state_now"])
        self.memory.label("prefilled", _("already in memory"), ["prefilled"])
        self.times = CurvesPicture(_("Time per token, measured now"), _("generated token"),
                                   _("milliseconds per token"), language=language)
        self.times.dots("softmax_each", color=VERMILLION, alpha=0.35)
        self.times.dots("state_each", color=BLUE, marker="square", alpha=0.35)
        self.times.line("softmax_median", color=VERMILLION, width=4)
        self.times.line("state_median", color=BLUE, dash="dashed", width=4)
        self.times.label("softmax", _("softmax"), ["softmax_each", "softmax_median"])
        self.times.label("state", "", ["state_each", "state_median"])
        self.history = CurvesPicture(_("Your measurements: time against context"), _("tokens in memory"),
                                     _("milliseconds per token (median)"), language=language)
        self.history.line("softmax_line", color=VERMILLION, width=2, alpha=0.6)
        self.history.dots("softmax", color=VERMILLION, size=11, alpha=0.9)
        self.history.line("state_line", color=BLUE, dash="dashed", width=2, alpha=0.6)
        self.history.dots("state", color=BLUE, marker="square", size=11, alpha=0.9)
        self.history.label("softmax", _("softmax"), ["softmax", "softmax_line"])
        self.history.label("state", "", ["state", "state_line"])

        self.status = pn.pane.HTML(stylesheets=[STATUS_CSS], sizing_mode="stretch_width", margin=(4, 10))
        self.setup = pn.pane.HTML(stylesheets=[STATUS_CSS], sizing_mode="stretch_width", margin=(0, 10))
        memory_text = Explanation(
            session, width=580,
            elementare=_("Softmax attention keeps a key and a value for every token: its memory (solid line) "
                         "climbs by the same step at every token and is never freed. The other layer keeps "
                         "one grid of numbers per head (dashed line): after ten tokens or ten thousand, it has "
                         "the same size. Where the lines cross, the cache becomes the bigger of the two, and it "
                         "keeps growing."),
            superiore=_("Bytes from the engine's step records. After $t$ tokens the cache holds $t$ keys and "
                        "$t$ values: $2\\,t\\,H\\,d\\,b$ bytes, with $H$ heads of size $d$ and $b = 4$ bytes per "
                        "float32 number. The state holds $H\\,d_k\\,d_v\\,b$ bytes at every $t$. With "
                        "$d_k = d_v = d$ the two are equal at $t = d/2$."))
        times_text = Explanation(
            session, width=580,
            elementare=_("How long this server took for each new token (dots) and the typical time of the last "
                         "9 tokens (lines). With few tokens in memory both layers take about the same time: "
                         "most of it goes into the fixed cost of running the Python code, not into the "
                         "arithmetic. Fill the memory with the slider «Tokens already in memory»: the softmax "
                         "layer slows down, because every new token is compared with all the stored ones; the "
                         "state layer does not."),
            superiore=_("Wall-clock time of one engine step per token (perf_counter), the two layers taking "
                        "turns so that both see the same load; lines: rolling median over 9 tokens. The softmax "
                        "step reads the whole cache, $O(t\\,d)$ per head (and this engine also copies it to "
                        "append the new key and value); the state step costs $O(d_k d_v)$ whatever $t$ is. At "
                        "small $t$ the fixed overhead of each Python and PyTorch call dominates both."))
        history_text = Explanation(
            session, width=580,
            elementare=_("One point per run in this visit, for the current number and size of heads: move the "
                         "slider «Tokens already in memory» and a new point appears. With many tokens in memory "
                         "the softmax points climb along a straight line (twice the tokens, about twice the "
                         "time); the state points stay flat."),
            superiore=_("One point per run (median over its tokens). The softmax step grows as $O(t)$, so "
                        "generating $n$ tokens costs $O(n^2)$ in all; the state step is $O(1)$ in $t$, "
                        "$O(n)$ in all."))
        self.cards = pn.Column(
            pn.FlexBox(figure_card(self.memory, memory_text), figure_card(self.times, times_text),
                       sizing_mode="stretch_width"),
            pn.FlexBox(pn.pane.Bokeh(self.history.figure, margin=(0, 12, 12, 0)),
                       pn.Column(pn.Spacer(height=40), history_text, width=580), sizing_mode="stretch_width"),
            sizing_mode="stretch_width")
        store.param.watch(self._reconfigure, ["result"])
        self.player.param.watch(self._draw, "value")
        session.param.watch(lambda _e: self._draw(), "level")
        write_query(store, GenerationStore.URL)
        write_query(self.player, Player.URL)
        self._reconfigure()

    def controls(self):
        store = self.store
        label = sidebar_label
        radio = lambda parameter, choices: pn.widgets.RadioButtonGroup.from_param(
            parameter, options={format_number(c): c for c in choices}, button_type="primary",
            button_style="outline", sizing_mode="stretch_width")
        variant = pn.widgets.Select.from_param(
            store.param.variant, name=_("Fixed-state layer"), sizing_mode="stretch_width",
            options={_(VARIANT_NAMES[v]): v for v in STATE_VARIANTS})
        # the pre-fill costs up to seconds: run it when the slider is let go, not at every notch crossed
        context = pn.widgets.DiscreteSlider(name=_("Tokens already in memory"), value=store.context,
                                            options={format_number(c): c for c in CONTEXTS},
                                            sizing_mode="stretch_width")
        context.param.watch(lambda e: setattr(store, "context", e.new), "value_throttled")
        store.param.watch(lambda e: setattr(context, "value", e.new), "context")
        seed = pn.widgets.IntInput.from_param(store.param.seed, name=_("Random tokens (seed)"),
                                              sizing_mode="stretch_width")
        again = pn.widgets.Button(name=_("Measure again"), button_type="primary", sizing_mode="stretch_width")
        again.on_click(lambda _event: store.param.trigger("measure"))
        return [variant, context, label(_("Tokens to generate")), radio(store.param.tokens, TOKEN_CHOICES),
                label(_("Heads")), radio(store.param.heads, HEAD_CHOICES),
                label(_("Size of each head (d_k = d_v)")), radio(store.param.dim, DIM_CHOICES), seed, again]

    def __panel__(self):
        return pn.Column(heading(_("Generating, one token at a time")), self.setup, self.player, self.status,
                         self.cards, sizing_mode="stretch_width")

    def _reconfigure(self, *events):
        result = self.store.result
        cache_max = max(result.kv_cache_bytes.max(), result.state_bytes.max())
        self.unit = byte_unit(cache_max)
        size, symbol = self.unit
        name = _(VARIANT_NAMES[result.variant])
        setup = _("Softmax attention against {model}: one layer each, {heads} heads with "
                  "d_k = d_v = {dim}, numbers in float32, random tokens.").format(
            model=name, heads=result.heads, dim=result.dim)
        if result.context:
            setup += " " + _("Before generating, both layers read the same {context} random tokens.").format(
                context=format_number(result.context))
        limit = ""
        if result.tokens < result.requested:
            limit = '<p class="limit">%s</p>' % html.escape(
                _("With {context} tokens already in memory only {n} of the {requested} tokens are generated, "
                  "so that the work of one page stays bounded.").format(
                    context=format_number(result.context), n=result.tokens, requested=result.requested))
        self.setup.object = f'<p class="note">{html.escape(setup)}</p>{limit}'
        with pn.io.hold():
            for picture in (self.memory, self.times, self.history):
                picture.label("state", _("state ({model})").format(model=name), [])
            self.memory.set_y_label(_("memory ({unit})").format(unit=symbol))
            self.memory.set_ranges(x=(0, result.held[-1] + max(1, result.held[-1] // 50)),
                                   y=(0, 1.12 * cache_max / size))
            self.memory.items["prefilled"].visible = bool(result.context)
            if result.context:
                first = result.kv_cache_bytes[0] - result.bytes_per_token
                self.memory.show("prefilled", [0, result.context], [0, first / size])
            else:
                self.memory.show("prefilled", [], [])
            # the scale follows the typical times; a single token slowed down by the machine may fall off the top
            top = max(rolling_median(result.softmax_ms).max(), rolling_median(result.state_ms).max())
            self.times.set_ranges(x=(0, result.tokens + 1), y=(0, 1.6 * top))
            self.player.length = result.tokens
            if events:                           # a new run: show all of it (Play replays it)
                self.player.value = result.tokens - 1
            self._draw_history()
            self._draw()

    def _draw_history(self):
        store = self.store
        points = sorted((held, soft, state) for heads, dim, held, soft, state in store.history
                        if (heads, dim) == (store.heads, store.dim))
        held = [p[0] for p in points]
        soft = [p[1] for p in points]
        state = [p[2] for p in points]
        positions = sorted(set(held))
        for name, values in (("softmax", soft), ("state", state)):
            self.history.show(name, held, values)
            typical = [np.median([v for h, v in zip(held, values) if h == x]) for x in positions]
            self.history.show(name + "_line", positions, typical)
        top = max(soft + state + [0.1])
        self.history.set_ranges(x=(0, max(held + [1024]) * 1.08), y=(0, 1.2 * top))

    def _draw(self, *_events):
        result, t = self.store.result, min(self.player.value, self.store.result.tokens - 1)
        size, _symbol = self.unit
        shown = slice(0, t + 1)
        numbers = np.arange(1, result.tokens + 1)
        with pn.io.hold():
            self.memory.show("cache", result.held[shown], result.kv_cache_bytes[shown] / size)
            self.memory.show("state", result.held[shown], result.state_bytes[shown] / size)
            self.memory.show("cache_now", result.held[t:t + 1], result.kv_cache_bytes[t:t + 1] / size)
            self.memory.show("state_now", result.held[t:t + 1], result.state_bytes[t:t + 1] / size)
            self.times.show("softmax_each", numbers[shown], result.softmax_ms[shown])
            self.times.show("state_each", numbers[shown], result.state_ms[shown])
            self.times.show("softmax_median", numbers[shown], rolling_median(result.softmax_ms[shown]))
            self.times.show("state_median", numbers[shown], rolling_median(result.state_ms[shown]))
            self.status.object = self._status(result, t)

    def _status(self, result, t):
        name = _(VARIANT_NAMES[result.variant])
        step_line = _("Token {t} of {n} · tokens in memory: {held}").format(
            t=t + 1, n=result.tokens, held=format_number(int(result.held[t])))
        cache = _("grows by {bytes} at every token").format(bytes=format_bytes(result.bytes_per_token))
        state = _("the same at every token")
        soft_ms = rolling_median(result.softmax_ms[:t + 1])[-1]
        state_ms = rolling_median(result.state_ms[:t + 1])[-1]
        times = _("Typical time per token (median of the last 9): softmax {softmax} ms, {model} {state} ms.")\
            .format(softmax=format_ms(soft_ms), model=name, state=format_ms(state_ms))
        crossing = result.crossing
        if result.held[t] >= crossing:
            times = _("The cache has been bigger than the state since token {n}.").format(
                n=format_number(crossing)) + " " + times
        bills = (bill_html("cache", _("KV cache (softmax)"), format_bytes(result.kv_cache_bytes[t]), cache)
                 + bill_html("state", _("state ({model})").format(model=name),
                             format_bytes(result.state_bytes[t]), state))
        return (f'<div class="status"><div class="step">{html.escape(step_line)}</div>'
                f'<div class="bills">{bills}</div><p>{html.escape(times)}</p></div>')


class CalculatorView(pn.viewable.Viewer):
    """Draws a CalculatorStore: its inputs, the two bills, memory against context, and every preset."""

    store = param.ClassSelector(class_=CalculatorStore)
    session = param.Parameter()

    def __init__(self, **params):
        super().__init__(**params)
        store, session = self.store, self.session
        language = current_language()
        options = {model.name: key for key, model in PRESETS.items()}
        options[_("Custom")] = CUSTOM
        number = lambda parameter, name: pn.widgets.IntInput.from_param(parameter, name=name, width=150)
        # the context: a slider over powers of two for quick jumps, and a box for any exact number
        notches = {format_number(2 ** e): 2 ** e for e in range(10, 21)}
        quick = pn.widgets.DiscreteSlider(name=_("Quick choice"), options=notches,
                                          value=_notch(store.context), width=320)
        quick.param.watch(lambda e: setattr(store, "context", e.new), "value_throttled")
        store.param.watch(lambda e: setattr(quick, "value", _notch(e.new)), "context")
        self.inputs = pn.Column(
            pn.widgets.Select.from_param(store.param.preset, name=_("Model"), options=options, width=320),
            pn.Row(number(store.param.layers, _("Layers")), number(store.param.heads, _("Heads"))),
            pn.Row(number(store.param.kv_heads, _("KV heads")), number(store.param.d_k, _("Key size d_k"))),
            pn.Row(number(store.param.d_v, _("Value size d_v"))),
            pn.widgets.IntInput.from_param(store.param.context, name=_("Context length (tokens)"), width=310,
                                           step=1024),
            quick,
            pn.pane.HTML("<b>%s</b>" % html.escape(_("Number format")), margin=(8, 10, 0, 10)),
            pn.widgets.RadioButtonGroup.from_param(
                store.param.dtype, options={k: k for k in DTYPES}, button_type="primary",
                button_style="outline", width=320),
            width=340)
        self.results = pn.pane.HTML(stylesheets=[STATUS_CSS], sizing_mode="stretch_width", margin=(4, 10))
        self.chart = CurvesPicture(_("Memory against context length"), _("context length (tokens)"), "",
                                   language=language, legend_columns=2)
        self.chart.line("cache", color=VERMILLION, width=4)
        self.chart.line("state", color=BLUE, dash="dashed", width=4)
        self.chart.line("weights", color=GREY, dash="dotdash", width=2)
        self.chart.label("cache", _("KV cache (softmax)"), ["cache"])
        self.chart.label("state", _("fixed state"), ["state"])
        self.chart.label("weights", _("weights of the model"), ["weights"])
        self.table = pn.pane.HTML(stylesheets=[STATUS_CSS], sizing_mode="stretch_width", margin=(4, 10))
        self.explanation = Explanation(
            session,
            elementare=_("A real model pays the same two bills in every layer and every head. Pick a model or "
                         "type its numbers: the cache grows with the length of the text, the state does not. "
                         "«Number format» sets the size of each stored number: 4 bytes in fp32, 2 in bf16 and "
                         "fp16, 1 in int8. To read a long prompt, softmax attention also compares every token "
                         "with every other: for 100,000 tokens that is 10 billion comparisons in each head of "
                         "each layer."),
            superiore=_("$$\\text{KV cache} = 2\\,L\\,H_{kv}\\,d\\,n\\,b \\qquad \\text{fixed state} = L\\,H\\,d_k\\,"
                        "d_v\\,b$$ with $L$ layers, $H$ heads, $H_{kv}$ key-value heads (grouped-query attention: "
                        "$H_{kv} < H$), head size $d$ ($d_k + d_v$ in place of $2d$ when they differ), $n$ tokens "
                        "and $b$ bytes per number. Reading a prompt takes about $n^2$ query-key comparisons per "
                        "head and layer ($n(n+1)/2$ with the causal mask), each a dot product of length $d_k$: "
                        "$O(n^2 d)$; for $n = 10^5$, $10^{10}$ per head and layer."))
        self.note = pn.pane.HTML(stylesheets=[STATUS_CSS], sizing_mode="stretch_width", margin=(0, 10))
        store.param.watch(self._draw, list(CalculatorStore.URL))
        write_query(store, CalculatorStore.URL)
        self._draw()

    def __panel__(self):
        return pn.Column(
            heading(_("The bill for real models")),
            pn.FlexBox(self.inputs, pn.Column(self.results, self.note, min_width=480, max_width=860,
                                              sizing_mode="stretch_width"), sizing_mode="stretch_width"),
            pn.FlexBox(pn.pane.Bokeh(self.chart.figure, margin=(0, 12, 12, 0)),
                       pn.Column(pn.Spacer(height=30), self.explanation, width=580), sizing_mode="stretch_width"),
            self.table, sizing_mode="stretch_width")

    def _draw(self, *_events):
        store = self.store
        with pn.io.hold():
            self.results.object = self._results()
            model = store.model
            if model is None:
                self.note.object = ""
            else:
                source = _("Source: {source}").format(source=model.source)
                self.note.object = (f'<p class="note">{html.escape(_(model.note))}</p>'
                                    f'<p class="source">{html.escape(source)}</p>')
            n = store.context
            weights = store.weight_bytes()
            top = max(store.kv_cache_bytes(), store.state_bytes(), weights or 0)
            size, symbol = byte_unit(top)
            self.chart.set_y_label(_("memory ({unit})").format(unit=symbol))
            self.chart.set_ranges(x=(0, n), y=(0, 1.1 * top / size))
            self.chart.show("cache", [0, n], [0, store.kv_cache_bytes() / size])
            self.chart.show("state", [0, n], [store.state_bytes() / size] * 2)
            self.chart.show("weights", [0, n] if weights else [], [weights / size] * 2 if weights else [])
            self.table.object = self._table()

    def _results(self):
        store = self.store
        model, n = store.model, store.context
        b = store.bytes_per_number
        badge = "" if model is None else _("what {model} keeps").format(model=model.name)
        mine = lambda kind: badge if model is not None and model.kind == kind else ""
        cache_how = _("{per} per token: {layers} layers × {kv} KV heads × ({dk} + {dv}) numbers × {b} B").format(
            per=format_bytes(store.kv_cache_bytes(1)), layers=store.layers, kv=store.kv_heads, dk=store.d_k,
            dv=store.d_v, b=b)
        state_how = _("at any length: {layers} layers × {heads} heads × {dk} × {dv} numbers × {b} B").format(
            layers=store.layers, heads=store.heads, dk=store.d_k, dv=store.d_v, b=b)
        bills = (bill_html("cache", _("KV cache at {n} tokens").format(n=format_number(n)),
                           format_bytes(store.kv_cache_bytes()), cache_how, mine("softmax"))
                 + bill_html("state", _("Fixed state"), format_bytes(store.state_bytes()), state_how,
                             mine("state")))
        lines = []
        ratio = store.kv_cache_bytes() / store.state_bytes()
        crossing = store.crossing()
        if ratio >= 1:
            lines.append(_("At {n} tokens the cache is {ratio} times the state; it is bigger from token "
                           "{crossing} on.").format(n=format_number(n), ratio=_significant(ratio),
                                                    crossing=format_number(crossing)))
        else:
            lines.append(_("At {n} tokens the cache is still smaller than the state; it becomes bigger from token "
                           "{crossing} on.").format(n=format_number(n), crossing=format_number(crossing)))
        if model is not None:
            lines.append(_("The weights of {model} take {bytes} ({params} billion parameters × {b} B); the cache "
                           "alone outgrows them from about {tokens} tokens.").format(
                model=model.name, bytes=format_bytes(store.weight_bytes()),
                params=format_number(model.parameters / 1e9, 2), b=b,
                tokens=format_number(store.weights_crossing())))
        per_head, total = store.comparisons()
        lines.append(_("Reading a prompt of {n} tokens: {per} comparisons in each head of each layer, {total} "
                       "in the whole model. A fixed-state model updates its state {n} times per head and "
                       "layer.").format(n=format_number(n), per=format_power(per_head), total=format_power(total)))
        text = "".join(f"<p>{html.escape(line)}</p>" for line in lines)
        return f'<div class="status"><div class="bills">{bills}</div>{text}</div>'

    def _table(self):
        store = self.store
        b, n = store.bytes_per_number, store.context
        rows = []
        for key, model in PRESETS.items():
            keeps = (model.layers * model.kv_heads * (model.d_k + model.d_v) * n * b if model.kind == "softmax"
                     else model.layers * model.heads * model.d_k * model.d_v * b)
            what = _("KV cache") if model.kind == "softmax" else _("fixed state")
            heads = (_("{heads} heads ({kv} KV)").format(heads=model.heads, kv=model.kv_heads)
                     if model.kv_heads != model.heads else _("{heads} heads").format(heads=model.heads))
            shape = _("{layers} layers × {heads}, d_k = {dk}, d_v = {dv}").format(
                layers=model.layers, heads=heads, dk=model.d_k, dv=model.d_v)
            current = ' class="current"' if key == store.preset else ""
            rows.append(f"<tr{current}><td><b>{html.escape(model.name)}</b></td><td>{html.escape(what)}</td>"
                        f'<td class="num">{html.escape(format_bytes(keeps))}</td>'
                        f'<td class="num">{html.escape(format_bytes(model.parameters * b))}</td>'
                        f"<td>{html.escape(shape)}</td>"
                        f'<td class="source">{html.escape(model.source)}</td></tr>')
        header = (_("Model"), _("Keeps while generating"),
                  _("at {n} tokens ({dtype})").format(n=format_number(n), dtype=store.dtype), _("Weights"),
                  _("Shape"), _("Source"))
        head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _notch(context):
    """The power of two on the quick slider at or below `context` (1,024 … 1,048,576)."""
    return 2 ** min(max(int(context).bit_length() - 1, 10), 20)


def papers(session):
    """What the papers measured, with their sources (DESIGN §7)."""
    retnet = Explanation(
        session,
        elementare=_("**RetNet** (Sun et al. 2023) ran a model with 6.7 billion parameters on one GPU, with "
                     "texts of 8,192 tokens. Its memory stayed flat at about 14 GB, while a Transformer of the "
                     "same size, with its KV cache, climbed to about 45 GB; and RetNet generated 8.4 times as "
                     "many tokens per second. Most of the 14 GB are the weights themselves (6.7 billion numbers "
                     "× 2 bytes ≈ 13.4 GB): the state adds little."),
        superiore=_("**RetNet** (Sun et al. 2023, Figure 1 and §3.4: 6.7B parameters, 8k tokens): GPU memory "
                    "≈ 14 GB and flat with the recurrent form, against ≈ 45 GB for a Transformer with a KV "
                    "cache — total memory, weights included ($6.7 \\cdot 10^9 \\times 2$ B ≈ 13.4 GB); "
                    "decoding throughput 8.4 times higher."))
    honest = Explanation(
        session,
        elementare=_("**An honest comparison.** Katharopoulos et al. (2020), who showed that linear attention "
                     "is an RNN, generated images 4,462 times faster than softmax attention — but that softmax "
                     "recomputed everything for every new pixel. Against a softmax that keeps a KV cache, "
                     "generating one image at a time on a GPU, linear attention was about 1.15 times faster "
                     "(61.3 s against 70.4 s per image). A speed-up is only as meaningful as what it is "
                     "compared with."),
        superiore=_("**An honest comparison.** Katharopoulos et al. 2020, Table 2 (CIFAR-10): 17.85 images/s "
                    "against 0.004 for softmax attention without a cache, 4,462×. Appendix C, Table 5: batch "
                    "size 1 on a GPU, 61.3 s per image against 70.4 s for stateful softmax (keys and values "
                    "cached), ≈ 1.15×. The cached baseline is the fair one; the large gains come with long "
                    "contexts and large batches, where the cache fills the memory."))
    return pn.Column(heading(_("What the papers measured")), retnet, honest, sizing_mode="stretch_width")
