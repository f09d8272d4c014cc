"""Dashboard "Where memory fails" (DESIGN §6.4): how many pairs a fixed-size state keeps apart.

Three parts, one store (`MemoryStore`, one per session):

1. the capacity curve: N pairs written into one head (sum, delta or gated delta rule, through
   `engine.capacity.write_and_read`), every key read back; recall error against the closed-form
   bound ½·max(0, 1 − d_k/N), and the share of recalls that come out right;
2. one N query by query: clicking a query decomposes its read-out into what each stored pair
   contributes. The state is linear in the values, S = Σ_i v_i w_iᵀ (w_i = k_i for the sum rule,
   k_i with the later transitions applied for the delta rules), so the read-out of q is
   Σ_i (w_i·q) v_i; the weights w_i·q are exactly the read-out when the values are one-hot;
3. the trained MQAR models (assets/checkpoints) on one example, query by query, and their
   accuracy over held-out examples (computed in a worker thread, then kept for the process).
"""
import asyncio
import functools
import html
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import panel as pn
import param
import torch
from bokeh.models import ColumnDataSource, FactorRange, FixedTicker, HoverTool, Range1d, Span, TapTool
from bokeh.plotting import figure

from app.checkpoints import load_model, one_thread
from app.components.curves import BLUE, GREY, ORANGE, VERMILLION, CurvesPicture
from app.components.plots import LABEL_SIZE, RowsPicture, _style
from app.components.text import Explanation
from app.dashboards import Page
from app.i18n import N_, _, current_language, format_number
from app.session import on_next_tick
from app.urlstate import read_query, write_query
from engine import tasks
from engine.capacity import bound, measure, write_and_read
from engine.ops import VARIANTS

SLUG = "memory-fails"

RULES = ("sum", "delta", "gated-delta")
RULE_NAMES = {"sum": N_("Sum rule (linear attention)"), "delta": N_("Delta rule (DeltaNet)"),
              "gated-delta": N_("Gated delta rule (Gated DeltaNet)")}
KEY_NAMES = {"random": N_("Random directions"), "orthogonal": N_("Perpendicular (at most d_k)"),
             "correlated": N_("Similar to each other")}
D_KS = (8, 16, 32, 64)
MAX_PAIRS = 4                 # the curve goes up to MAX_PAIRS·d_k pairs (orthogonal keys: d_k)
MAX_REWRITES = 32
TRIALS = 2                    # draws of the keys averaged per point of the curve
VALUE_SEED = 7919             # the dense values get their own stream, apart from the keys'

# trained models: MQAR settings offered (name → (sequence length, pairs)); trained on L = 64, K ≤ 16
TASKS = {"64-8": (64, 8), "64-16": (64, 16), "128-32": (128, 32), "256-64": (256, 64)}
EXAMPLE_SEED = 2_000_000      # far from the training (0) and validation (1000003) seeds
ACCURACY_SEED = 3_000_000
ACCURACY_EXAMPLES = 50
VARIANT_LABELS = {"linear": N_("Linear attention"), "retnet": "RetNet", "mamba2": "Mamba-2", "gla": "GLA",
                  "deltanet": "DeltaNet", "gated_deltanet": "Gated DeltaNet", "rwkv6": "RWKV-6",
                  "rwkv7": "RWKV-7", "mlstm": "mLSTM", "softmax": N_("Softmax attention")}


def max_pairs(d_k, keys):
    return d_k if keys == "orthogonal" else MAX_PAIRS * d_k


def curve_pairs(d_k, keys):
    """The numbers of pairs N on the curve: about 24, from 1 to max_pairs, d_k always among them."""
    top = max_pairs(d_k, keys)
    return sorted({int(round(n)) for n in np.linspace(1, top, 24)} | {d_k})


# ------------------------------------------------------------------------------ the arithmetic

@dataclass(frozen=True)
class Recall:
    """N pairs (and R rewrites) written into one head, then every key read back.

    weights     [N, W]    read-out of each query with one-hot values: how much of write i comes out
    values      [W, d_v]  the dense value of each write (random unit vectors)
    readouts    [N, d_v]  read-out of each query with the dense values (engine, float64)
    targets     [N]       the write each query should recall (its key's latest write)
    answers     [N]       the write whose value is closest (cosine) to the read-out
    key_of      [W]       which of the N keys each write used
    queries     [N, d_k]  the keys read back
    """
    weights: np.ndarray
    values: np.ndarray
    readouts: np.ndarray
    targets: np.ndarray
    answers: np.ndarray
    key_of: np.ndarray
    queries: np.ndarray

    @property
    def right(self):
        return self.answers == self.targets


def dense_values(count, dim, seed):
    generator = torch.Generator().manual_seed(VALUE_SEED + seed)
    values = torch.randn(count, dim, generator=generator, dtype=torch.float64)
    return values / values.norm(dim=1, keepdim=True)                       # [W, d_v], unit rows


@functools.lru_cache(maxsize=64)
def recall(rule, d_k, keys, pairs, rewrites, seed):
    """One run of the experiment (deterministic, so kept for the process)."""
    data = tasks.capacity_data(num_pairs=pairs, d_k=d_k, keys=keys, repeat=rewrites, seed=seed)
    weights, _state = write_and_read(rule, data.keys, data.values, data.queries)     # [N, W]
    values = dense_values(len(data.keys), d_k, seed)
    readouts, _state = write_and_read(rule, data.keys, values, data.queries)        # [N, d_v]
    cosines = torch.nn.functional.normalize(readouts, dim=1) @ values.T             # [N, W]
    key_of = (data.keys @ data.queries.T).argmax(1)                                 # [W]
    return Recall(weights=weights.numpy(), values=values.numpy(), readouts=readouts.numpy(),
                  targets=data.targets.numpy(), answers=cosines.argmax(1).numpy(), key_of=key_of.numpy(),
                  queries=data.queries.numpy())


@functools.lru_cache(maxsize=64)
def curve(rule, d_k, keys, rewrites, seed):
    """The capacity curve as arrays: pairs, error (plain read-out), best (least-squares read-out),
    bound (closed form), accuracy (dense values, nearest stored value), each averaged over TRIALS."""
    rows = []
    for N in curve_pairs(d_k, keys):
        sums = np.zeros(3)
        for trial in range(TRIALS):
            run = recall(rule, d_k, keys, N, rewrites, seed + trial)
            error, best, _plain_accuracy = measure(*(torch.from_numpy(x) for x in (run.weights, run.targets,
                                                                                    run.queries)))
            sums += (error, best, run.right.mean())
        rows.append((N, *(sums / TRIALS), bound(N, d_k)))
    table = np.array(rows)
    return {"pairs": table[:, 0], "error": table[:, 1], "best": table[:, 2], "accuracy": table[:, 3],
            "bound": table[:, 4]}


def decomposition(run, query):
    """The read-out of query `query` as Σ_i weight_i · value_i; returns (weights [W], contributions [W, d_v])."""
    weights = run.weights[query]
    return weights, weights[:, None] * run.values


def intruders(run, query, count=3):
    """The other writes that did the most harm to this query's answer, worst first.

    Harm of write i: how far its contribution c_i v_i moves the read-out towards the value that was
    answered instead (or, for a right answer, towards the closest wrong value) and away from the right
    one: c_i · v_i·(v_rival − v_right).
    """
    weights, contributions = decomposition(run, query)
    target = int(run.targets[query])
    rival = int(run.answers[query])
    if rival == target:
        similarity = run.values @ run.readouts[query]                          # [W]
        similarity[target] = -np.inf
        rival = int(np.argmax(similarity))
    harm = contributions @ (run.values[rival] - run.values[target])           # [W]
    harm[target] = -np.inf
    order = np.argsort(-harm)
    return [int(i) for i in order[:count] if harm[i] > 1e-9]        # not rounding leftovers


# ---------------------------------------------------------------------------- trained models

_worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lineare-mqar")
_accuracies = {}                 # task → held-out accuracy per variant, counted once per process


def _load(variant):
    return load_model(variant)[0]                    # cached per process, checksums verified


@dataclass(frozen=True)
class TrainedExample:
    """Every checkpoint on one MQAR example: per variant, the predicted value at each query."""
    tokens: np.ndarray              # [L] the example's input ids
    positions: np.ndarray           # [K] where the queries are, in the order they are asked
    expected: np.ndarray            # [K] the value each query should produce
    predicted: dict                 # variant → [K] the value the model produced
    missing: dict                   # variant → the error message of a checkpoint that did not load

    def right(self, variant):
        return self.predicted[variant] == self.expected


def _example_inputs(task, count, seed):
    length, pairs = TASKS[task]
    return tasks.mqar(vocab_size=256, seq_len=length, num_pairs=pairs, num_examples=count, seed=seed)


@functools.lru_cache(maxsize=32)
def trained_example(task, example):
    inputs, targets = _example_inputs(task, 1, EXAMPLE_SEED + example)             # [1, L]
    scored = targets[0] != tasks.IGNORE
    positions = torch.nonzero(scored).flatten()
    predicted, missing = {}, {}
    with torch.no_grad():         # no lock: the held-out count may hold the models for seconds
        for variant in VARIANTS:
            try:
                model = _load(variant)
            except (FileNotFoundError, ValueError) as error:
                missing[variant] = str(error)
                continue
            logits = model(inputs)                                                  # [1, L, V]
            predicted[variant] = logits[0, positions].argmax(-1).numpy()
    return TrainedExample(tokens=inputs[0].numpy(), positions=positions.numpy(),
                          expected=targets[0, positions].numpy(), predicted=predicted, missing=missing)


def trained_accuracy(task):
    """variant → share of queries answered right over ACCURACY_EXAMPLES held-out examples."""
    inputs, targets = _example_inputs(task, ACCURACY_EXAMPLES, ACCURACY_SEED + list(TASKS).index(task))
    scored = targets != tasks.IGNORE
    accuracy = {}
    with one_thread(), torch.no_grad():      # one core for this; the other keeps serving pages
        for variant in VARIANTS:
            try:
                model = _load(variant)
            except (FileNotFoundError, ValueError):
                continue
            predicted = model(inputs).argmax(-1)                                    # [E, L]
            accuracy[variant] = float((predicted[scored] == targets[scored]).double().mean())
    return accuracy


# ---------------------------------------------------------------------------------- the store

class MemoryStore(param.Parameterized):
    """One session's settings for this dashboard, and what the engine made of them."""

    rule = param.Selector(default="sum", objects=list(RULES))
    d_k = param.Selector(default=16, objects=list(D_KS), doc="key dimension")
    keys = param.Selector(default="random", objects=list(tasks.KEY_KINDS), doc="key geometry")
    rewrites = param.Integer(default=0, bounds=(0, MAX_REWRITES), doc="pairs written again with a new value")
    pairs = param.Integer(default=24, bounds=(1, MAX_PAIRS * max(D_KS)), doc="N of the query-by-query view")
    query = param.Integer(default=1, bounds=(1, MAX_PAIRS * max(D_KS)), doc="the query decomposed (1-based)")
    seed = param.Integer(default=0, bounds=(0, 9999), doc="seed of the keys and values")
    task = param.Selector(default="128-32", objects=list(TASKS), doc="trained models: L-K of the MQAR task")
    example = param.Integer(default=0, bounds=(0, 9999), doc="trained models: which example")

    curve = param.Dict(default=None, doc="the capacity curve (derived)")
    run = param.Parameter(default=None, doc="the Recall at `pairs` (derived)")
    trained = param.Parameter(default=None, doc="TrainedExample (derived)")

    URL = {"rule": "rule", "d_k": "dk", "keys": "keys", "rewrites": "rewrites", "pairs": "pairs",
           "query": "query", "seed": "seed", "task": "task", "example": "example"}

    def __init__(self, **params):
        super().__init__(**params)
        self.param.update(**self._fits())
        self.param.watch(self._changed, ["rule", "d_k", "keys", "rewrites", "pairs", "query", "seed"])
        self.param.watch(self._trained_changed, ["task", "example"])
        self._compute()
        self.trained = trained_example(self.task, self.example)

    def _fits(self):
        """What N and the query must become to fit the other settings ({} when they fit)."""
        pairs = min(self.pairs, max_pairs(self.d_k, self.keys))
        fixed = {"pairs": pairs} if pairs != self.pairs else {}
        if self.query > pairs:
            fixed["query"] = pairs
        return fixed

    def _changed(self, *events):
        if self._fits():
            # lowered through update(), with events, so widgets and the URL follow; after the watchers of
            # this change have run, or they would pass on the too-large value last. Comes back here.
            on_next_tick(pn.state.curdoc, lambda: self.param.update(**self._fits()))
            return
        if {e.name for e in events} - {"query"}:
            self._compute()

    def _compute(self):
        self.param.update(curve=curve(self.rule, self.d_k, self.keys, self.rewrites, self.seed),
                          run=recall(self.rule, self.d_k, self.keys, self.pairs, self.rewrites, self.seed))

    def _trained_changed(self, *_events):
        self.trained = trained_example(self.task, self.example)

    def first_failure(self):
        """1-based number of the first query recalled wrong, or None."""
        wrong = np.flatnonzero(~self.run.right)
        return int(wrong[0]) + 1 if len(wrong) else None


SIZED = ("pairs", "query")        # URL values whose upper limit depends on the other settings


def open_store(session, args):
    """The session's store from untrusted URL args, and the notices about what had to change.

    N and the query are checked twice: against their declared bounds, then against what the other
    settings allow (orthogonal keys: N ≤ d_k; query ≤ N); one notice per value says what is used.
    """
    fixed = {name: key for name, key in MemoryStore.URL.items() if name not in SIZED}
    values, notices = read_query(MemoryStore, fixed, args)
    sized, sized_notices = {}, {}
    for name in SIZED:
        value, sized_notices[name] = read_query(MemoryStore, {name: MemoryStore.URL[name]}, args)
        sized.update(value)
    store = session.store(SLUG, lambda: MemoryStore(**values, **sized))
    for name, asked in sized.items():
        if getattr(store, name) != asked:
            sized_notices[name] = [_("The link asks for a larger {key} than these settings allow: {used} is "
                                     "used.").format(key=MemoryStore.URL[name], used=getattr(store, name))]
    return store, notices + [n for name in SIZED for n in sized_notices[name]]


def build(session):
    store, notices = open_store(session, pn.state.session_args)
    session.add_notices("url", notices)
    view = MemoryView(store=store, session=session)
    return Page(main=view, controls=view.controls())


# ---------------------------------------------------------------------------------- pictures

HEADING_CSS = ":host { width: 100%; } h2 { font-size: 23px; color: #102a43; margin: 18px 0 2px 0; }"
DETAIL_CSS = """
:host { font-size: 18px; color: #1f2933; }
.ok { color: #0072b2; font-weight: 700; } .bad { color: #d55e00; font-weight: 700; }
.muted { color: #52606d; font-size: 16px; }
"""
RIGHT, WRONG, NEUTRAL = BLUE, VERMILLION, "#9fb3c8"      # Okabe–Ito blue / vermillion, and a quiet grey


def heading(text):
    return pn.pane.HTML(f"<h2>{html.escape(text)}</h2>", stylesheets=[HEADING_CSS], sizing_mode="stretch_width",
                        margin=(0, 10))


class QueriesPicture:
    """One bar per query: how close its read-out comes to the right value; a tap picks the query."""

    def __init__(self, on_pick):
        self.source = ColumnDataSource({"x": [], "top": [], "color": [], "line": []})
        self.figure = _style(figure(title=_("Every query at this N (click one)"), width=760, height=300,
                                    x_range=Range1d(0.4, 1.6), y_range=Range1d(-0.35, 1.1),
                                    tools="tap"),
                             _("query (the pair asked back)"), _("match with the right value"))
        self.figure.vbar(x="x", top="top", width=0.8, source=self.source, fill_color="color",
                         line_color="line", line_width=3, nonselection_fill_alpha=1.0,
                         selection_fill_alpha=1.0, nonselection_line_alpha=1.0)
        # ✓ / ✗ under the bars (readable without colour), one text glyph per mark with a fixed colour:
        # Bokeh 3.9's text glyph raised a RangeError in the browser with a colour column after updates
        self.marks = {}
        for mark, color in (("✓", RIGHT), ("✗", WRONG)):
            self.marks[mark] = ColumnDataSource({"x": [], "y": []})
            self.figure.text(x="x", y="y", text={"value": mark}, source=self.marks[mark], text_align="center",
                             text_font_size="11pt", text_color=color)
        self.figure.add_tools(HoverTool(tooltips=[(_("query"), "@x"), (_("match"), "@top{0.00}")]))
        self.figure.select_one(TapTool).behavior = "select"
        self._on_pick = on_pick
        self.source.selected.on_change("indices", self._picked)

    def _picked(self, _attr, _old, new):
        if new:
            self._on_pick(int(new[0]) + 1)

    def show(self, run, chosen):
        N = len(run.targets)
        cosines = np.einsum("nd,nd->n", run.readouts, run.values[run.targets]) / np.maximum(
            np.linalg.norm(run.readouts, axis=1), 1e-12)
        right = run.right
        low = min(float(cosines.min()), 0.0) - 0.2               # room under the bars for ✓ / ✗
        self.figure.x_range.update(start=0.4, end=N + 0.6)
        self.figure.y_range.update(start=low, end=1.1)
        colors = [RIGHT if r else WRONG for r in right]
        self.source.data = {
            "x": np.arange(1, N + 1), "top": cosines, "color": colors,
            "line": ["#102a43" if i + 1 == chosen else ("white" if N <= 64 else None) for i in range(N)],
        }
        for mark, where in (("✓", right & (N <= 40)), ("✗", ~right)):   # many queries: mark failures only
            x = np.flatnonzero(where) + 1
            self.marks[mark].data = {"x": x, "y": np.full(len(x), low + 0.05)}


class WeightsPicture:
    """The decomposition of one read-out: how much of each stored pair's value comes out."""

    def __init__(self):
        self.source = ColumnDataSource({"x": [], "top": [], "color": []})
        self.figure = _style(figure(title="", width=760, height=300, x_range=Range1d(0.4, 1.6),
                                    y_range=Range1d(-0.5, 1.1)),
                             _("stored pair (in the order written)"), _("how much of its value comes out"))
        self.figure.vbar(x="x", top="top", width=0.8, source=self.source, color="color")
        self.figure.add_layout(Span(location=0, dimension="width", line_color="#52606d", line_width=1))
        self.figure.add_tools(HoverTool(tooltips=[(_("pair"), "@x"), (_("weight"), "@top{0.000}")]))

    def show(self, weights, target, answer, intruders, title):
        W = len(weights)
        colors = [NEUTRAL] * W
        for i in intruders:
            colors[i] = ORANGE
        colors[answer] = WRONG
        colors[target] = RIGHT
        low, high = min(weights.min(), 0.0), max(weights.max(), 1.0)
        pad = 0.08 * (high - low)
        self.figure.x_range.update(start=0.4, end=W + 0.6)
        self.figure.y_range.update(start=low - pad, end=high + pad)
        self.figure.title.text = title
        self.source.data = {"x": np.arange(1, W + 1), "top": weights, "color": colors}


class TrainedPicture:
    """Variants × queries: a cell per query, right or wrong, with the held-out accuracy beside."""

    def __init__(self):
        self.cells = ColumnDataSource({"x": [], "y": [], "color": [], "mark": [], "key": [], "expected": [],
                                       "predicted": []})
        self.bars = ColumnDataSource({"y": [], "right": [], "label": []})
        names = [_(VARIANT_LABELS[v]) for v in VARIANTS]
        self.names = names
        y_range = FactorRange(*reversed(names))
        self.grid = _style(figure(title=_("One example, query by query"), width=820, height=430,
                                  x_range=Range1d(0.5, 1.5), y_range=y_range),
                           _("query, in the order asked"), "")
        self.grid.rect(x="x", y="y", width=0.92, height=0.86, source=self.cells, fill_color="color",
                       line_color=None)
        self.grid.text(x="x", y="y", text="mark", source=self.cells, text_align="center",
                       text_baseline="middle", text_color="white", text_font_size="10pt")
        self.grid.add_tools(HoverTool(tooltips=[(_("key"), "@key"), (_("right value"), "@expected"),
                                                (_("model's answer"), "@predicted")]))
        self.grid.yaxis.major_label_text_font_size = LABEL_SIZE
        self.accuracy = _style(figure(title=_("Right, over {n} examples").format(n=ACCURACY_EXAMPLES),
                                      width=330, height=430, x_range=Range1d(0, 1.3), y_range=y_range),
                               _("share of queries right"), "")
        self.accuracy.hbar(y="y", right="right", height=0.7, source=self.bars, color=BLUE)
        self.accuracy.text(x="right", y="y", text="label", source=self.bars, x_offset=4,
                           text_baseline="middle", text_font_size="11pt")
        self.accuracy.yaxis.visible = False
        self.accuracy.xaxis.ticker = FixedTicker(ticks=[0, 0.25, 0.5, 0.75, 1])   # the room past 1 is for labels

    def show(self, example):
        xs, ys, colors, marks, keys, expected, predicted = [], [], [], [], [], [], []
        K = len(example.positions)
        for variant, name in zip(VARIANTS, self.names):
            if variant not in example.predicted:
                continue
            for i, (position, want, got) in enumerate(zip(example.positions, example.expected,
                                                          example.predicted[variant])):
                xs.append(i + 1)
                ys.append(name)
                colors.append(RIGHT if got == want else WRONG)
                marks.append("" if K > 40 else ("✓" if got == want else "✗"))
                keys.append(int(example.tokens[position]))
                expected.append(int(want))
                predicted.append(int(got))
        self.grid.x_range.update(start=0.5, end=K + 0.5)
        self.cells.data = {"x": xs, "y": ys, "color": colors, "mark": marks, "key": keys, "expected": expected,
                           "predicted": predicted}

    def show_accuracy(self, accuracy):
        names = [name for variant, name in zip(VARIANTS, self.names) if variant in accuracy]
        right = [accuracy[v] for v in VARIANTS if v in accuracy]
        self.bars.data = {"y": names, "right": right,
                          "label": [format_number(round(100 * r), 0) + " %" for r in right]}


# ------------------------------------------------------------------------------------- the view

class MemoryView(pn.viewable.Viewer):
    """Draws a MemoryStore; owns the pictures, none of the data."""

    store = param.ClassSelector(class_=MemoryStore)
    session = param.Parameter()

    def __init__(self, **params):
        super().__init__(**params)
        store, session = self.store, self.session
        self._doc = pn.state.curdoc
        language = current_language()

        self.intro = Explanation(
            session,
            elementare=_("A memory of fixed size can keep only so many pairs apart. Here pairs (a name and "
                         "its number) are written one after another into the memory of one head, and then "
                         "every name is asked back. Up to a point the answers come back clean; past it, the "
                         "pairs start to blur into each other and answers go wrong. Find where, and see which "
                         "pairs spoiled an answer."),
            superiore=_("$N$ pairs $(k_i, v_i)$, unit keys in $\\mathbb{R}^{d_k}$, are written into one state "
                        "with the sum rule $S \\leftarrow S + v k^\\top$, the delta rule "
                        "$S \\leftarrow S (I - k k^\\top) + v k^\\top$ ($\\beta = 1$) or the gated delta rule "
                        "(also $\\alpha = 0.99$ per write), then every key is read back, $o_i = S k_i$ "
                        "(Schlag, Irie & Schmidhuber 2021)."))
        # 1. the curve
        self.errors = CurvesPicture(_("Recall error"), _("number of stored pairs N"), _("error per query"),
                                    language=language, legend_columns=1, width=600, height=430)
        self.errors.line("bound", color="#1f2933", dash="dashed", width=3)
        self.errors.dots("best", color=BLUE, marker="square", size=9, alpha=0.9)
        self.errors.line("error", color=VERMILLION, width=3)
        self.errors.dots("error_dots", color=VERMILLION, size=7, alpha=0.8)
        self.accuracy = CurvesPicture(_("Answers right"), _("number of stored pairs N"),
                                      _("share of queries right"), language=language, legend_columns=1,
                                      width=600, height=430)
        self.accuracy.line("accuracy", color=ORANGE, width=3)
        self.accuracy.dots("accuracy_dots", color=ORANGE, marker="triangle", size=9, alpha=0.9)
        self.markers = []
        for picture in (self.errors, self.accuracy):
            d_k = Span(location=0, dimension="height", line_color=GREY, line_dash="dotted", line_width=2)
            chosen = Span(location=0, dimension="height", line_color="#102a43", line_width=2, line_alpha=0.6)
            picture.figure.add_layout(d_k)
            picture.figure.add_layout(chosen)
            self.markers.append((d_k, chosen))
        self.curve_text = Explanation(session, width=1220)

        # 2. query by query
        self.queries = QueriesPicture(self._pick)
        self.weights = WeightsPicture()
        self.parts = RowsPicture(_("The read-out, taken apart"), _("value dimension"),
                                 [_("read-out"), _("right value"), _("from the right pair"),
                                  _("from all the others")], 16, width=450, height=260)
        self.detail = pn.pane.HTML(stylesheets=[DETAIL_CSS], sizing_mode="stretch_width", margin=(4, 10))
        self.detail_text = Explanation(
            session, width=440,
            elementare=_("Each bar is one stored pair. Its height says how much of that pair's number leaks "
                         "into the answer when this name is asked: the right pair (blue) should be near 1 and "
                         "all the others near 0. The red bar is the pair whose number came out instead of the "
                         "right one; the yellow bars are the pairs that pushed the answer hardest towards a "
                         "wrong number. Many small leaks add up, too: that is why a crowded memory fails. "
                         "The strips on the right show the answer taken apart: what the right pair gives, and "
                         "what all the others add on top."),
            superiore=_("The state is linear in the values: $S = \\sum_i v_i w_i^\\top$, with $w_i = k_i$ for "
                        "the sum rule and $w_i = (A_{i+1} \\cdots A_W)^\\top k_i$ with the later transitions "
                        "for the delta rules. So $o = S q = \\sum_i (w_i^\\top q)\\, v_i$; the bars are the "
                        "weights $w_i^\\top q$ (sum rule: $k_i^\\top q$), measured as the read-out of one-hot "
                        "values. The answer is the stored value of largest cosine with $o$; a wrong one $v_r$ wins "
                        "when the cross-talk $\\sum_{i \\ne j} (w_i^\\top q) v_i$ outweighs the right term. Yellow: "
                        "the writes with the largest push $(w_i^\\top q)\\, v_i^\\top (v_r - v_j)$ towards $v_r$."))

        # 3. the trained models
        self.trained = TrainedPicture()
        self.trained_status = pn.pane.HTML(stylesheets=[DETAIL_CSS], sizing_mode="stretch_width", margin=(4, 10))
        self.trained_text = Explanation(
            session, sizing_mode="stretch_width",
            elementare=_("The same test on the small trained models of the lab: each one read a sequence of "
                         "name–number pairs (MQAR, “multi-query associative recall”) and then, at every question, "
                         "had to produce the number stored with that name. Each row is a model, each square a "
                         "question: blue right, red wrong. The models learned on 64-token sequences with up "
                         "to 16 pairs; longer ones ask them more than they practised."),
            superiore=_("Ten tiny models (2 layers, $d_{\\mathrm{model}} = 64$, one head, so a $64 \\times 64$ "
                        "state per layer), trained on MQAR with $L = 64$, $K \\in \\{4, 8, 16\\}$ (Zoology, "
                        "Arora et al. 2023), evaluated on held-out examples. Beyond the training length the "
                        "fixed-size states must hold $K$ pairs in $d_k = 64$ dimensions, while softmax "
                        "attention keeps every pair in its KV cache."))

        self._accuracy_running = False
        store.param.watch(self._draw_curve, ["curve"])
        store.param.watch(self._draw_detail, ["run", "query"])
        store.param.watch(self._draw_trained, ["trained"])
        store.param.watch(self._task_changed, ["task"])
        session.param.watch(self._draw_detail, ["level"])
        write_query(store, MemoryStore.URL)
        self._draw_curve()
        self._draw_detail()
        self._draw_trained()
        self._task_changed()

    # -- controls

    def controls(self):
        store = self.store
        rule = pn.widgets.Select.from_param(store.param.rule, name=_("Rule"), sizing_mode="stretch_width",
                                            options={_(RULE_NAMES[r]): r for r in RULES})
        d_k = pn.widgets.Select.from_param(store.param.d_k, name=_("Numbers in a key (d_k)"), sizing_mode="stretch_width",
                                           options={str(d): d for d in D_KS})
        keys = pn.widgets.Select.from_param(store.param.keys, name=_("Keys"), sizing_mode="stretch_width",
                                            options={_(KEY_NAMES[k]): k for k in tasks.KEY_KINDS})
        rewrites = pn.widgets.IntSlider.from_param(store.param.rewrites, name=_("Names that change number"),
                                                   sizing_mode="stretch_width")
        pairs = pn.widgets.IntSlider.from_param(store.param.pairs, name=_("Pairs N, query by query"),
                                                sizing_mode="stretch_width")
        query = pn.widgets.IntInput.from_param(store.param.query, name=_("Query taken apart"),
                                               sizing_mode="stretch_width")
        seed = pn.widgets.IntInput.from_param(store.param.seed, name=_("Random keys (seed)"),
                                              sizing_mode="stretch_width")
        task = pn.widgets.Select.from_param(
            store.param.task, name=_("Trained models: task"), sizing_mode="stretch_width",
            options={_("{length} tokens, {pairs} pairs").format(length=L, pairs=K): name
                     for name, (L, K) in TASKS.items()})
        example = pn.widgets.IntInput.from_param(store.param.example, name=_("Trained models: example"),
                                                 sizing_mode="stretch_width")

        def limits(*_events):
            top = max_pairs(store.d_k, store.keys)
            pairs.end = top
            query.end = store.pairs

        store.param.watch(limits, ["d_k", "keys", "pairs"])
        limits()
        return [rule, d_k, keys, rewrites, pairs, query, seed, task, example]

    def __panel__(self):
        title = html.escape(_("Where memory fails"))
        return pn.Column(
            pn.pane.HTML(f"<h1 style='margin:0;font-size:30px;color:#102a43'>{title}</h1>", margin=(0, 10)),
            self.intro,
            heading(_("How many pairs fit")),
            pn.FlexBox(pn.pane.Bokeh(self.errors.figure), pn.pane.Bokeh(self.accuracy.figure)),
            self.curve_text,
            heading(_("One query taken apart")),
            self.detail,
            pn.FlexBox(pn.Column(pn.pane.Bokeh(self.queries.figure), pn.pane.Bokeh(self.weights.figure)),
                       pn.Column(pn.pane.Bokeh(self.parts.figure), self.detail_text)),
            heading(_("The trained models, query by query")),
            self.trained_text, self.trained_status,
            pn.FlexBox(pn.pane.Bokeh(self.trained.grid), pn.pane.Bokeh(self.trained.accuracy)),
            sizing_mode="stretch_width")

    # -- drawing

    def _pick(self, query):
        self.store.query = query

    def _draw_curve(self, *_events):
        store, data = self.store, self.store.curve
        N = data["pairs"]
        with pn.io.hold():
            self.errors.show("bound", N, data["bound"])
            self.errors.show("best", N, data["best"])
            self.errors.show("error", N, data["error"])
            self.errors.show("error_dots", N, data["error"])
            self.errors.label("bound", _("the limit for any memory of this size"), ["bound"])
            self.errors.label("best", _("the best read-out of these keys"), ["best"])
            self.errors.label("error", _("this memory's read-out"), ["error", "error_dots"])
            self.accuracy.show("accuracy", N, data["accuracy"])
            self.accuracy.show("accuracy_dots", N, data["accuracy"])
            self.accuracy.label("accuracy", _("answers right (closest stored value)"),
                                ["accuracy", "accuracy_dots"])
            top = float(N[-1])
            self.errors.set_ranges(x=(0, top * 1.03), y=(0, max(1.0, float(data["error"].max()) * 1.08)))
            self.accuracy.set_ranges(x=(0, top * 1.03), y=(0, 1.05))
            for d_k, chosen in self.markers:
                d_k.location = store.d_k
                chosen.location = store.pairs
        self._draw_curve_text()

    def _draw_curve_text(self):
        store, data = self.store, self.store.curve
        at = int(np.argmin(np.abs(data["pairs"] - store.d_k)))
        fill = {"dk": store.d_k, "error": format_number(round(float(data["error"][at]), 2), 2),
                "accuracy": format_number(round(100 * float(data["accuracy"][at])), 0)}
        self.curve_text.elementare = _(
            "**Left**: how far the answers are from the right numbers (0 is perfect), for more and more pairs. "
            "The dashed line is the best any memory of this size could do: zero until there are as many pairs "
            "as a key has numbers ({dk} here, dotted line), then rising. The red line is what this memory "
            "really does. **Right**: the share of names answered with the right number. With {dk} pairs the "
            "error is {error} and {accuracy}% of the answers are right. Names that change number (slider) "
            "show what the delta rule is for: it replaces the old number, where the sum piles them up.").format(**fill)
        self.curve_text.superiore = _(
            "Left: error $\\tfrac12 \\lVert o_i - e_i \\rVert^2$ with one-hot values, mean over queries (the "
            "loss of Schlag et al.), against the bound $\\tfrac12 \\max(0, 1 - d_k/N)$: with $N > d_k$ a "
            "$d_k$-dimensional key space cannot separate $N$ one-hot targets. Squares: the least-squares "
            "read-out $W k_i$ for these keys, which reaches the bound; red: the rule's own read-out $S k_i$, "
            "above it through cross-talk $\\sum_{j \\ne i} (k_j^\\top k_i)^2 \\approx (N-1)/d_k$ for random "
            "keys. Right: accuracy with dense unit values in $\\mathbb{R}^{d_k}$ decoded by largest cosine.") \
            + " " + _("At N = d_k = {dk}: error {error}, {accuracy}% right.").format(**fill)

    def _draw_detail(self, *_events):
        store, run = self.store, self.store.run
        q = min(store.query, len(run.targets)) - 1
        weights, contributions = decomposition(run, q)
        target, answer = int(run.targets[q]), int(run.answers[q])
        others = np.delete(np.arange(len(weights)), target)
        order = intruders(run, q)
        rows = np.stack([run.readouts[q], run.values[target], contributions[target],
                         contributions[others].sum(0) if len(others) else np.zeros_like(run.readouts[q])])
        with pn.io.hold():
            self.queries.show(run, q + 1)
            self.weights.show(weights, target, answer, order,
                              _("Query {q}: what each stored pair puts into the answer").format(q=q + 1))
            self.parts.set_size(rows.shape[1])
            self.parts.set_limit(float(np.abs(rows).max()))
            self.parts.source.data.update(image=[rows])
            self.detail.object = self._detail_html(run, q, target, answer, weights, order)

    def _detail_html(self, run, q, target, answer, weights, order):
        wrong = int(np.sum(~run.right))
        N = len(run.targets)
        summary = _("Answered wrong: {wrong} of {n}.").format(wrong=wrong, n=N)
        pair = lambda w: _("pair {i}").format(i=w + 1)
        if answer == target:
            verdict = '<span class="ok">%s ✓</span>' % html.escape(
                _("Query {q} is answered right.").format(q=q + 1))
        else:
            verdict = '<span class="bad">%s ✗</span>' % html.escape(
                _("Query {q} is answered with the number of {wrong_pair} instead of {right_pair}.").format(
                    q=q + 1, wrong_pair=pair(answer), right_pair=pair(target)))
        rewritten = ""
        if target >= N:                                     # a later write of this key
            rewritten = " " + html.escape(_("(This name changed number: the latest one is the right answer.)"))
        polluters = ", ".join(_("{pair} (weight {weight})").format(
            pair=pair(int(w)), weight=format_number(round(float(weights[w]), 2), 2)) for w in order)
        largest = html.escape(_("The pairs that pushed it most towards a wrong number: {pairs}.").format(
            pairs=polluters)) if order else ""
        first = self.store.first_failure()
        hint = ""
        if first is not None and answer == target:
            hint = html.escape(_("Query {q} fails: pick it to see why.").format(q=first))
        return (f"<p>{verdict}{rewritten} {largest}</p>"
                f"<p class='muted'>{html.escape(summary)} {hint}</p>")

    def _draw_trained(self, *_events):
        example = self.store.trained
        with pn.io.hold():
            self.trained.show(example)
            self._draw_trained_status()

    def _draw_trained_status(self):
        example, store = self.store.trained, self.store
        length, pairs = TASKS[store.task]
        parts = [_("Example {e}: {length} tokens, {pairs} pairs.").format(e=store.example, length=length,
                                                                       pairs=pairs)]
        failed = [_(VARIANT_LABELS[v]) for v in VARIANTS if v in example.predicted and not example.right(v).all()]
        if failed:
            parts.append(_("Models with at least one wrong answer: {names}.").format(names=", ".join(failed)))
        else:
            parts.append(_("Every model answers every query of this example right."))
        if self._accuracy_running:
            parts.append(_("Counting over {n} examples…").format(n=ACCURACY_EXAMPLES))
        text = " ".join(html.escape(p) for p in parts)
        if example.missing:
            missing = _("These models could not be loaded: {names}.").format(
                names=", ".join(_(VARIANT_LABELS[v]) for v in example.missing))
            text += f' <span class="bad">{html.escape(missing)}</span>'
        self.trained_status.object = f"<p>{text}</p>"

    # -- held-out accuracy, in a worker thread: a first computation takes seconds

    def _task_changed(self, *_events):
        task = self.store.task
        self.trained.show_accuracy(_accuracies.get(task, {}))
        if task not in _accuracies:
            pn.state.execute(functools.partial(self._count, task))

    async def _count(self, task):
        if self._accuracy_running:
            return
        self._accuracy_running = True
        self._schedule(self._draw_trained_status)
        try:
            _accuracies[task] = await asyncio.get_running_loop().run_in_executor(_worker, trained_accuracy, task)
        finally:
            self._accuracy_running = False
        self._schedule(lambda: self._counted(task))

    def _counted(self, task):
        if task == self.store.task:
            self.trained.show_accuracy(_accuracies[task])
        self._draw_trained_status()
        if self.store.task not in _accuracies:
            pn.state.execute(functools.partial(self._count, self.store.task))

    def _schedule(self, callback):
        on_next_tick(self._doc, callback)


