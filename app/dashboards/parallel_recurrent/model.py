"""Dashboard "Parallel = recurrent" (DESIGN §6.5): one input, three forms, the same numbers.

`FormsStore` (one per session) draws a seeded random input for the chosen variant, with the gates
of the variant's default knobs (`app.mechanism.gates`), runs it through `engine.ops.forward` in the
recurrent, parallel and chunked forms, in float32 and in float64, and keeps the outputs, their
differences and the parallel form's decay mask L. The cost curve is measured on request
(`measure_costs`: a time budget, one measurement at a time per server process, in a worker thread)
and cached per (variant, chunk size) in the session. `FormsView` only draws.
"""
import asyncio
import html
import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import panel as pn
import param
import torch
import torch.nn.functional as F
from bokeh.core.properties import value
from bokeh.models import (BasicTickFormatter, ColorBar, ColumnDataSource, FixedTicker,
                          HoverTool, Legend, LegendItem, LinearColorMapper, Range1d)
from bokeh.palettes import Viridis256
from bokeh.plotting import figure

from app import mechanism
from app.components.plots import EMPTY, MatrixPicture, _style, colour_bar
from app.components.text import TEXT_CSS, Explanation
from app.dashboards import Page
from app.dashboards.state_fills_up import VARIANT_NAMES
from app.i18n import N_, _, format_number
from app.session import on_next_tick
from app.urlstate import read_query, write_query
from engine.ops import VARIANTS, forward
from engine.ops.parallel import decay_mask

SLUG = "parallel-recurrent"

# softmax has no fixed-size state to pass from chunk to chunk: it belongs to the "Two bills" page
FIXED_STATE = tuple(v for v in VARIANTS if v != "softmax")
FORMS = ("recurrent", "parallel", "chunked")
PAIRS = (("recurrent", "parallel"), ("recurrent", "chunked"), ("parallel", "chunked"))
DTYPES = {"float32": torch.float32, "float64": torch.float64}
D = mechanism.D_K                   # d_k = d_v = 16, one head: the knobs' per-channel gates are built for it
CHUNKS = (8, 16, 32, 64)
MAX_LENGTH = 256                    # the side-by-side comparison (and the T × T mask) stays small

# the cost curve: lengths tried in turn, each form up to its own longest, within a time budget
COST_LENGTHS = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
COST_MAX_LENGTH = {"recurrent": 1024, "parallel": 2048, "chunked": 16384}
COST_BUDGET_S = 2.5                 # all three forms together; one request stays under ~3 s
COST_WAIT_S = 15.0                  # longest wait for another visitor's measurement to finish
FIRST_SWEEP = 0.7                   # of the budget, for the first pass over the lengths; the rest re-times
BUDGET_SHARE = {"recurrent": 0.35, "parallel": 0.4, "chunked": 0.25}   # the parallel form's last length is dear
FIT_POINTS = 3                      # slopes are fitted on the longest lengths, past the fixed overheads …
FIT_FROM = 256                      # … and only once a length of at least this was measured
_measuring = threading.Lock()       # one measurement at a time in this process: fair timings, bounded CPU
# The app's measurements run on their own worker thread, one after the other, so waiting ones hold
# no thread that other pages need; past MAX_WAITING queued in this process, a visitor is told to
# come back instead of joining the queue.
_measurer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lineare-measure")
MAX_WAITING = 3
_waiting = 0                        # measurements queued or running (touched on the event loop only)

FORM_COLORS = {"recurrent": "#D55E00", "parallel": "#0072B2", "chunked": "#009E73"}   # Okabe–Ito
FORM_MARKERS = {"recurrent": "circle", "parallel": "square", "chunked": "triangle"}
FORM_NAMES = {"recurrent": N_("recurrent"), "parallel": N_("parallel"), "chunked": N_("chunked")}

# what the decay mask of each variant is, in plain words (shown at both levels)
MASK_NOTE = {
    "linear": N_("Linear attention forgets nothing: every earlier token counts fully, so the mask is just "
                 "“the past yes, the future no”."),
    "retnet": N_("RetNet fades every step by the same fixed factor γ: the mask darkens evenly away from "
                 "the diagonal, γ to the power of the distance."),
    "mamba2": N_("Mamba-2 fades by a factor α that its gate chooses anew at every token (here every token "
                 "gets the value of the knob)."),
    "gla": N_("GLA fades each key channel at its own speed: the slider picks which channel is shown."),
    "deltanet": N_("DeltaNet fades nothing, so its mask is “the past yes, the future no”. Its correction "
                   "needs one more step inside each chunk (a triangular system), not drawn here."),
    "gated_deltanet": N_("Gated DeltaNet fades by a factor α chosen at every token; its correction needs "
                         "one more step inside each chunk (a triangular system), not drawn here."),
    "rwkv6": N_("RWKV-6 fades each key channel at its own speed and reads the memory before writing: its "
                "mask is shifted one step down, and the diagonal holds the bonus u of the current token."),
    "rwkv7": N_("RWKV-7 fades each key channel at its own speed; its correction needs one more step "
                "inside each chunk (a triangular system), not drawn here."),
    "mlstm": N_("mLSTM fades by its forget gate (the input gate is 0 here, so it changes nothing; the "
                "engine also rescales to keep the numbers in range)."),
}


# ------------------------------------------------------------------------------- computing

def make_inputs(variant, length, seed, alpha, dtype=torch.float64):
    """Seeded random q, k, v [1, T, 1, 16] and the gates of the knobs (α, β = 1), in `dtype`.

    The same seed gives the same numbers in every dtype (drawn in float64, then cast), so float32
    and float64 compare the same input. DeltaNet-style keys and queries are L2-normalized, as in
    the layer (DESIGN §3).
    """
    generator = torch.Generator().manual_seed(int(seed))
    draw = lambda d: torch.randn(1, length, 1, d, generator=generator, dtype=torch.float64)
    q, k, v = draw(D), draw(D), draw(D)
    if variant in ("deltanet", "gated_deltanet"):
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
    gates = mechanism.gates(variant, range(length), k.float(), 1, alpha, mechanism.DEFAULT_BETA)
    cast = lambda x: x.to(dtype)
    return cast(q), cast(k), cast(v), {name: cast(x) for name, x in gates.items()}


def relative_rms(x, reference):
    """‖x − reference‖ / ‖reference‖ (root mean squares; the measure of fla's `assert_close`)."""
    x, reference = np.asarray(x, dtype=np.float64), np.asarray(reference, dtype=np.float64)
    return float(np.sqrt(np.mean((x - reference) ** 2)) / max(np.sqrt(np.mean(reference ** 2)), 1e-300))


@dataclass
class Comparison:
    """One input through the three forms."""
    variant: str
    length: int
    chunk_size: int
    outputs: dict                 # form → o of the head, float32, [T, d_v]
    errors: dict                  # (dtype name, (form a, form b)) → (largest |a − b|, relative RMS to a)
    peak: float                   # largest |o| (the colour range of the three pictures)


def compare(variant, length, chunk_size, seed, alpha):
    """Run the three forms on the same input, in float32 and float64, and measure their differences."""
    outputs, errors = {}, {}
    with torch.inference_mode():
        for name, dtype in DTYPES.items():
            q, k, v, gates = make_inputs(variant, length, seed, alpha, dtype)
            o = {form: forward(variant, q, k, v, form=form, chunk_size=chunk_size, **gates)[0][0, :, 0].numpy()
                 for form in FORMS}
            for a, b in PAIRS:
                errors[name, (a, b)] = (float(np.abs(o[a] - o[b]).max()), relative_rms(o[b], o[a]))
            if name == "float32":
                outputs = o
    peak = max(float(np.abs(x).max()) for x in outputs.values())
    return Comparison(variant, length, chunk_size, outputs, errors, peak)


def mask_of(variant, gates, length, channel=0):
    """The parallel form's decay mask L [T, T] (L[t, j]: how much token j counts at token t), with NaN
    where j is in the future of t. Per-channel decays: the mask of one key channel."""
    g = gates.get("g")
    if variant == "retnet":
        log_decay = torch.full((length,), float(g[0]), dtype=torch.float64)
    elif variant == "mlstm":
        log_decay = F.logsigmoid(gates["f"][0, :, 0].double())               # i_t = 0: the forget gate alone
    elif g is None:
        log_decay = torch.zeros(length, dtype=torch.float64)                # no decay: the causal mask
    elif g.dim() == 4:
        log_decay = g[0, :, 0, channel].double()                             # per channel
    else:
        log_decay = g[0, :, 0].double()                                      # one per token
    L = decay_mask(log_decay).numpy()
    if variant == "rwkv6":
        # reads S_{t-1}: token j < t counts exp(G_{t-1} − G_j); the current token enters through the bonus u
        shifted = np.zeros_like(L)
        shifted[1:, :-1] = L[:-1, :-1]
        np.fill_diagonal(shifted, float(gates["u"][0, channel]))
        L = shifted
    return np.where(np.tri(length, dtype=bool), L, np.nan)


@dataclass
class CostCurve:
    """CPU (and wall-clock) times of the three forms at growing lengths, measured on this server."""
    variant: str
    chunk_size: int
    times: dict = field(default_factory=dict)        # form → [(T, CPU seconds)], T increasing
    wall: dict = field(default_factory=dict)         # form → [(T, wall-clock seconds)]
    slopes: dict = field(default_factory=dict)       # form → fitted slope of log time vs log T, or None
    busy: bool = False                               # another measurement held the machine too long
    complete: bool = False                           # every form reached its longest length in the budget


def fit_slope(points, last=FIT_POINTS, shortest=FIT_FROM):
    """Least-squares slope of log(seconds) against log(T) over the `last` longest lengths; None when
    fewer than two were measured or none reaches `shortest` (below it, fixed overheads dominate)."""
    points = sorted(points)[-last:]
    if len(points) < 2 or points[-1][0] < shortest:
        return None
    x = np.log([T for T, _s in points])
    y = np.log([max(s, 1e-9) for _T, s in points])
    return float(np.polyfit(x, y, 1)[0])


def measure_costs(variant, chunk_size, *, alpha=None, budget_s=COST_BUDGET_S, lengths=COST_LENGTHS,
                  max_length=COST_MAX_LENGTH, wait_s=COST_WAIT_S):
    """Time the three forms at growing lengths, within about `budget_s` seconds. Blocking: run it in a
    worker thread.

    The times kept are CPU times of the measuring thread, with torch held to one thread in it: the
    work itself. Wall-clock times are kept too, but on a shared server they also count the waits for
    everybody else's work (two to three times the CPU time on a busy machine).
    First sweep: each form gets its share of 70 % of the budget, and stops before a length whose wall
    time, predicted from the last one (∝ T² for the parallel form, ∝ T otherwise), would not fit.
    Then, while the budget lasts, the lengths are timed again (those the slopes are fitted on first)
    and each keeps its shortest time.
    """
    alpha = mechanism.DEFAULT_ALPHA.get(variant, 1.0) if alpha is None else alpha
    curve = CostCurve(variant, chunk_size, times={form: [] for form in FORMS})
    if not _measuring.acquire(timeout=wait_s):
        curve.busy = True
        return curve
    # One intra-op thread, so that all the work runs in this thread and its CPU clock sees all of it;
    # one core per measurement also leaves the others to the visitors. (Set in this worker thread
    # and restored after: the server's own threads keep their setting.)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    started = time.perf_counter()
    cpu, wall = {form: {} for form in FORMS}, {form: {} for form in FORMS}      # form → {T: seconds}
    try:
        with torch.inference_mode():
            inputs = {lengths[0]: make_inputs(variant, lengths[0], 0, alpha, torch.float32)}
            for form in FORMS:                                     # first calls pay one-time set-up costs
                _time(variant, form, chunk_size, inputs[lengths[0]])
            left = {form: FIRST_SWEEP * share * budget_s for form, share in BUDGET_SHARE.items()}
            for T in lengths:
                for form in FORMS:
                    if T > max_length[form] or left[form] <= 0:
                        continue
                    if wall[form]:
                        T0 = max(wall[form])
                        if wall[form][T0] * (T / T0) ** (2 if form == "parallel" else 1) > left[form]:
                            left[form] = 0                         # the next length would not fit: stop here
                            continue
                    inputs.setdefault(T, make_inputs(variant, T, 0, alpha, torch.float32))
                    cpu[form][T], wall[form][T] = _time(variant, form, chunk_size, inputs[T])
                    left[form] -= wall[form][T]
            # again, while the budget lasts: first the lengths the slopes are fitted on, then the others
            fitted = [(form, T) for form in FORMS for T in sorted(cpu[form])[-FIT_POINTS:]]
            others = [(form, T) for form in FORMS for T in sorted(cpu[form])[:-FIT_POINTS]]
            for form, T in (fitted + others) * 3:
                if time.perf_counter() - started + wall[form][T] < budget_s:
                    seconds, elapsed = _time(variant, form, chunk_size, inputs[T])
                    cpu[form][T], wall[form][T] = min(cpu[form][T], seconds), min(wall[form][T], elapsed)
    finally:
        torch.set_num_threads(threads)
        _measuring.release()
    curve.times = {form: sorted(measured.items()) for form, measured in cpu.items()}
    curve.wall = {form: sorted(measured.items()) for form, measured in wall.items()}
    curve.slopes = {form: fit_slope(points) for form, points in curve.times.items()}
    longest = {form: max((T for T in lengths if T <= max_length[form]), default=0) for form in FORMS}
    curve.complete = all(points and points[-1][0] == longest[form] for form, points in curve.times.items())
    return curve


def _time(variant, form, chunk_size, inputs):
    """(CPU seconds of this thread, wall-clock seconds) of one call of the form."""
    q, k, v, gates = inputs
    wall, cpu = time.perf_counter(), time.thread_time()
    forward(variant, q, k, v, form=form, chunk_size=chunk_size, **gates)
    return time.thread_time() - cpu, time.perf_counter() - wall


# ------------------------------------------------------------------------------- the store

class FormsStore(param.Parameterized):
    """One session's inputs for this dashboard, and what the engine computed for them."""

    variant = param.Selector(default="retnet", objects=list(FIXED_STATE))
    length = param.Integer(default=64, bounds=(8, MAX_LENGTH), doc="sequence length T of the comparison")
    chunk_size = param.Selector(default=16, objects=list(CHUNKS))
    alpha = param.Number(default=mechanism.DEFAULT_ALPHA["retnet"], bounds=(0.05, 1.0),
                         doc="forget gate: fraction kept per step")
    channel = param.Integer(default=0, bounds=(0, D - 1), doc="key channel of a per-channel decay mask")
    seed = param.Integer(default=0, bounds=(0, 9999), doc="seed of the random input")
    cost = param.Boolean(default=False, doc="measure the cost curve (on load and on every new setting)")

    comparison = param.Parameter(default=None, doc="the latest Comparison (derived)")
    mask = param.Parameter(default=None, doc="the decay mask L [T, T], NaN above the diagonal (derived)")
    curve = param.Parameter(default=None, doc="the CostCurve of (variant, chunk size), or None (derived)")

    URL = {"variant": "variant", "length": "T", "chunk_size": "chunk", "alpha": "alpha",
           "channel": "channel", "seed": "seed", "cost": "cost"}

    def __init__(self, **params):
        params.setdefault("alpha", mechanism.DEFAULT_ALPHA.get(params.get("variant", "retnet"), 1.0))
        super().__init__(**params)
        self.curves = {}                      # (variant, chunk size) → CostCurve: this session's cache
        self.param.watch(self._changed, ["variant", "length", "chunk_size", "alpha", "seed"])
        self.param.watch(self._draw_mask, ["channel"])
        self._compute()

    def _changed(self, *events):
        names = {e.name for e in events}
        if "variant" in names and "alpha" not in names:
            default = mechanism.DEFAULT_ALPHA.get(self.variant, 1.0)   # a new model starts from its own gate
            if self.alpha != default:
                self.alpha = default                                   # comes back here through the watcher
                return
        self._compute()

    def _compute(self):
        comparison = compare(self.variant, self.length, self.chunk_size, self.seed, self.alpha)
        self.param.update(comparison=comparison, mask=self._mask(), curve=self.curves.get(self.curve_key()))

    def _mask(self):
        _q, _k, _v, gates = make_inputs(self.variant, self.length, self.seed, self.alpha)
        return mask_of(self.variant, gates, self.length, self.channel)

    def _draw_mask(self, *_events):
        self.mask = self._mask()

    def curve_key(self):
        return self.variant, self.chunk_size

    def keep_curve(self, curve):
        """Cache a measured curve (not a busy one) and show it if it is for the current settings."""
        if not curve.busy:
            self.curves[curve.variant, curve.chunk_size] = curve
        if (curve.variant, curve.chunk_size) == self.curve_key():
            self.curve = curve

    def measure(self, force=False, **options):
        """Measure (or take from the cache) the cost curve of the current settings; blocking."""
        if force or self.curve_key() not in self.curves:
            self.keep_curve(measure_costs(self.variant, self.chunk_size, alpha=self.alpha, **options))
        self.curve = self.curves.get(self.curve_key(), self.curve)
        return self.curve


def build(session):
    values, notices = read_query(FormsStore, FormsStore.URL, pn.state.session_args)
    store = session.store(SLUG, lambda: FormsStore(**values))
    session.add_notices("url", notices)
    view = FormsView(store=store, session=session)
    return Page(main=view, controls=view.controls())


# ------------------------------------------------------------------------------- pictures

TABLE_CSS = """
:host { font-size: 15px; color: #1f2933; }
table { border-collapse: collapse; margin: 4px 0 8px 0; }
th, td { padding: 4px 8px; border-bottom: 1px solid #d9e2ec; text-align: right; white-space: nowrap; }
th { background: #f0f4f8; font-weight: 600; }
th[colspan] { text-align: center; }
td.pair, th.pair { text-align: left; }
caption { caption-side: top; text-align: left; font-weight: 700; padding-bottom: 4px; font-size: 17px; }
p.verdict { font-size: 18px; margin: 6px 0; }
p.legend { font-size: 15px; color: #52606d; margin: 0 0 6px 0; }
"""
STATUS_CSS = ":host { font-size: 16px; color: #3e4c59; } .busy { color: #b42318; }"
HEADING_CSS = ":host { width: 100%; } h2 { font-size: 23px; color: #102a43; margin: 18px 0 2px 0; }"


class MaskPicture:
    """The T × T decay mask (sequential Viridis, fixed range 0…1, future cells grey) with the chunks
    outlined: diagonal blocks computed inside a chunk, hatched blocks below them carried by the state."""

    def __init__(self, title, width=560, height=520):
        self.mapper = LinearColorMapper(palette=Viridis256, low=0, high=1, nan_color=EMPTY)
        self.source = ColumnDataSource({"image": [np.full((1, 1), np.nan)], "dw": [1], "dh": [1]})
        self.blocks = ColumnDataSource({"left": [], "right": [], "top": [], "bottom": []})
        self.carried = ColumnDataSource({"left": [], "right": [], "top": [], "bottom": []})
        self.figure = _style(figure(title=title, width=width, height=height, x_range=Range1d(0, 1),
                                    y_range=Range1d(1, 0)), _("earlier token j"), _("current token t"))
        self.figure.image(image="image", x=0, y=0, dw="dw", dh="dh", source=self.source,
                          color_mapper=self.mapper)
        self.figure.quad(left="left", right="right", top="top", bottom="bottom", source=self.carried,
                         fill_alpha=0, line_color=None, hatch_pattern="/", hatch_color="white",
                         hatch_alpha=0.35, hatch_scale=12, hatch_weight=1)
        for color, width_px in (("white", 4), ("#102a43", 1.5)):      # a double line shows on dark and bright
            self.figure.quad(left="left", right="right", top="top", bottom="bottom", source=self.blocks,
                             fill_alpha=0, line_color=color, line_width=width_px)
        self.figure.add_layout(colour_bar(self.mapper), "right")
        self.figure.add_tools(HoverTool(tooltips=[("t", "$y{0}"), ("j", "$x{0}"), ("L", "@image{0.000}")]))

    def show(self, mask, chunk_size):
        T = mask.shape[0]
        starts = np.arange(0, T, chunk_size)
        stops = np.minimum(starts + chunk_size, T)
        later = starts > 0
        self.figure.x_range.update(start=0, end=T)
        self.figure.y_range.update(start=T, end=0)
        self.source.data.update(image=[mask], dw=[T], dh=[T])
        self.blocks.data.update(left=starts, right=stops, top=starts, bottom=stops)
        self.carried.data.update(left=np.zeros(later.sum()), right=starts[later], top=starts[later],
                                 bottom=stops[later])


class CostPicture:
    """CPU time against T on log–log axes, one line per form, slopes in the legend. The axes are
    fixed, so that curves of different models and chunk sizes can be compared."""

    def __init__(self, title, width=660, height=460):
        self.figure = _style(figure(title=title, width=width, height=height, x_axis_type="log",
                                    y_axis_type="log", x_range=Range1d(10, 30_000),
                                    y_range=Range1d(0.01, 10_000)),
                             _("sequence length T"), _("CPU time per run (ms)"))
        self.sources, self.items = {}, {}
        for form in FORMS:
            source = ColumnDataSource({"T": [], "ms": [], "wall": []})
            line = self.figure.line("T", "ms", source=source, color=FORM_COLORS[form], line_width=3)
            dots = self.figure.scatter("T", "ms", source=source, color=FORM_COLORS[form], size=10,
                                       marker=FORM_MARKERS[form])
            self.sources[form] = source
            self.items[form] = LegendItem(label=value(_(FORM_NAMES[form])), renderers=[line, dots])
        self.legend = Legend(items=list(self.items.values()), location="top_left",
                             label_text_font_size="13pt")
        self.figure.add_layout(self.legend)
        self.figure.grid.visible = True
        self.figure.grid.grid_line_alpha = 0.35
        self.figure.add_tools(HoverTool(tooltips=[("T", "@T"), (_("CPU time (ms)"), "@ms{0.000}"),
                                                  (_("wall-clock time (ms)"), "@wall{0.000}")]))

    def show(self, curve):
        for form in FORMS:
            points = curve.times.get(form, []) if curve is not None else []
            wall = dict(curve.wall.get(form, [])) if curve is not None else {}
            self.sources[form].data = {"T": [T for T, _s in points], "ms": [1000 * s for _T, s in points],
                                       "wall": [1000 * wall.get(T, math.nan) for T, _s in points]}
            slope = curve.slopes.get(form) if curve is not None else None
            label = _(FORM_NAMES[form])
            if slope is not None:
                label = _("{form}: slope {slope}").format(form=label, slope=format_number(slope, 2))
            self.items[form].label = value(label)


def scientific(x):
    """1.2 · 10⁻⁷ (the mantissa written the way the current language writes numbers)."""
    if x == 0 or not math.isfinite(x):
        return format_number(x) if math.isfinite(x) else "∞"
    exponent = math.floor(math.log10(abs(x)))
    mantissa = x / 10 ** exponent
    if round(abs(mantissa), 1) >= 10:
        mantissa, exponent = mantissa / 10, exponent + 1
    power = str(exponent).translate(str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"))
    if exponent == 0:
        return format_number(mantissa, 1)
    return f"{format_number(mantissa, 1)} · 10{power}"


# ------------------------------------------------------------------------------- the view

class FormsView(pn.viewable.Viewer):
    """Draws a FormsStore: outputs, differences, the mask and the cost; owns none of the data."""

    store = param.ClassSelector(class_=FormsStore)
    session = param.Parameter()

    def __init__(self, **params):
        super().__init__(**params)
        store, session = self.store, self.session
        self._doc = pn.state.curdoc
        self._running = False
        heading = lambda text: pn.pane.HTML(f"<h2>{html.escape(text)}</h2>", stylesheets=[HEADING_CSS],
                                            sizing_mode="stretch_width", margin=(0, 10))

        self.intro = Explanation(session, sizing_mode="stretch_width")
        self.intro.elementare = _(
            "**Three recipes, same cake.** A linear-attention layer can be computed in three ways. "
            "**Recurrent**: token after token, keeping only a small memory, like reading a book with a "
            "notepad. **Parallel**: all tokens at once, as one big table of who looks at whom: fast on a "
            "graphics card, but the table grows with the square of the length. **Chunked**: cut the "
            "sequence into pieces; inside a piece work like the parallel recipe, from one piece to the "
            "next pass the memory along like the recurrent one.\n\n"
            "Below, the same random input goes through the three recipes: compare what comes out, see "
            "the table the parallel recipe builds, and measure what each one costs.")
        self.intro.superiore = _(
            "One layer, three schedules of the same sum. **Recurrent**: $S_t = S_{t-1} A_t + v_t k_t^\\top$, "
            "$o_t = S_t q_t$, with $O(T d^2)$ work and a state of fixed size. **Parallel**: unrolling the "
            "recurrence gives $o = (Q K^\\top \\odot L)\\, V$ with the decay mask "
            "$L_{tj} = \\alpha_{j+1} \\cdots \\alpha_t$ for $j \\le t$ (0 above the diagonal): $O(T^2 d)$ work "
            "in matrix products (Katharopoulos et al. 2020 for linear attention; L is the semiseparable "
            "matrix of Mamba-2's SSD, Dao & Gu 2024). **Chunked**: blocks of $C$ tokens, the parallel form "
            "inside each block and the state across blocks:"
            "$$O_{[n]} = (Q_{[n]} K_{[n]}^\\top \\odot L_{[n]})\\, V_{[n]} + \\tilde Q_{[n]} S_{[n-1]}^\\top,"
            "\\qquad S_{[n]} = S_{[n-1]} \\tilde A_{[n]} + V_{[n]}^\\top \\tilde K_{[n]}$$"
            "with $\\tilde{\\ }$ marking the decays inside the block: $O(T C d + T d^2)$ work. For the delta "
            "rule the transition $A_t = \\alpha_t (I - \\beta_t k_t k_t^\\top)$ is not diagonal; its chunked "
            "form solves a small triangular system per block (the WY/UT representation, Yang et al. 2024).")

        # 1. the three outputs and their differences
        self.output_pictures = {
            form: MatrixPicture("", _("position in the sequence"), _("channel"), D, 8,
                                width=630, height=175, value_label="o")
            for form in FORMS}
        self.difference = MatrixPicture("", _("position in the sequence"), _("channel"), D, 8,
                                        width=630, height=175, value_label="Δ")
        for picture in (*self.output_pictures.values(), self.difference):
            picture.figure.yaxis.ticker = FixedTicker(ticks=[0, 8, 16])
        self.difference.figure.select_one(ColorBar).formatter = BasicTickFormatter(precision=1)
        self.table = pn.pane.HTML(stylesheets=[TABLE_CSS], width=560, margin=(4, 10))
        outputs_text = Explanation(
            session, width=560,
            elementare=_("Each strip is what one recipe answers: one column per token, one row (channel) per "
                         "number of the answer (blue negative, red positive, the same colours in the three "
                         "strips). They look the same because they are the same. The last strip shows the "
                         "difference between two recipes, magnified enormously (its scale is in its title): "
                         "only specks of rounding are left, a little larger where the answers are larger."),
            superiore=_("Outputs $o_t \\in \\mathbb{R}^{d_v}$ of one head ($d_k = d_v = 16$; $q, k, v$ "
                        "random with the seed, gates from the model's default knobs), same colour scale. "
                        "Last strip: $o^{\\mathrm{chunk}} - o^{\\mathrm{rec}}$ in float32, on its own scale. "
                        "Relative error: $\\lVert x - y \\rVert / \\lVert y \\rVert$ (RMS). The engine "
                        "promises $\\le 10^{-5}$ in float32 ($\\le 10^{-4}$ with very strong decays, "
                        "$\\alpha$ near 0.05) and $\\le 10^{-10}$ in float64; fla's tests and the SSD paper "
                        "report about $10^{-6}$ in float32."))
        strips = pn.Column(*[pn.pane.Bokeh(self.output_pictures[f].figure, margin=(0, 0, 2, 0)) for f in FORMS],
                           pn.pane.Bokeh(self.difference.figure, margin=(8, 0, 0, 0)))
        self.outputs_section = pn.FlexBox(strips, pn.Column(self.table, outputs_text), sizing_mode="stretch_width")

        # 2. the decay mask and the chunks
        self.mask_picture = MaskPicture(_("Decay mask L of the parallel form"))
        self.mask_note = pn.pane.HTML(stylesheets=[TEXT_CSS], width=500, margin=(4, 10))
        mask_text = Explanation(
            session, width=500,
            elementare=_("Row t, column j: how much token j still counts when the model answers at token "
                         "t. Yellow: fully; dark: faded away; grey: the future, never looked at.\n\n"
                         "The **outlined squares** are the chunks: what is inside a square is computed all at "
                         "once, like the parallel recipe. The **hatched part** below them is never built as "
                         "a table: it reaches later chunks through the small memory passed along, like the "
                         "recurrent recipe. The parallel recipe builds the whole triangle."),
            superiore=_("$L_{tj} = \\exp(G_t - G_j)$ for $j \\le t$, with $G_t = \\sum_{s \\le t} \\log \\alpha_s$ "
                        "(grey: $j > t$; decay_mask in engine.ops.parallel). The parallel form builds all "
                        "$T^2$ entries. The chunked form builds only the diagonal $C \\times C$ blocks "
                        "(outlined). A block below them factors as "
                        "$\\exp(G_t - G_b) \\cdot \\exp(G_b - G_j)$ through the boundary $b$ between the "
                        "chunks, a product of a factor of $t$ and a factor of $j$ (rank one: L is "
                        "semiseparable), so it is never built: the state $S_{[n-1]}$ carries it across "
                        "(hatched)."))
        self.mask_section = pn.FlexBox(pn.pane.Bokeh(self.mask_picture.figure),
                                       pn.Column(self.mask_note, mask_text), sizing_mode="stretch_width")

        # 3. the cost as the sequence grows
        self.cost_picture = CostPicture(_("Measured cost of the three forms"))
        self.measure_button = pn.widgets.Button(label=_("Measure"), color="primary",
                                                width=220, height=44,
                                                stylesheets=[":host { font-size: 16px; }"])
        self.measure_button.on_click(self._clicked)
        self.status = pn.pane.HTML(stylesheets=[STATUS_CSS], width=500, margin=(4, 10))
        cost_text = Explanation(
            session, width=500,
            elementare=_("Press **Measure** and this server times the three recipes on longer and longer "
                         "inputs, right now. It counts only the time spent computing, not the time spent "
                         "waiting while the server works for other visitors. Both axes are logarithmic: a "
                         "straight line means the time grows like a power of the length, and the slope says "
                         "which power. Slope 1: twice as long, twice the time (recurrent, chunked). Slope 2: "
                         "twice as long, four times the time (parallel). On short inputs every recipe pays a "
                         "fixed start-up price, so the lines start flat."),
            superiore=_("CPU time of engine.ops.forward per form, counted by the measuring thread with torch "
                        "held to one thread in it: the work itself, without the waits for other visitors "
                        "that a wall clock would add on a shared server (hover a point for both). Float32, "
                        "one head, $d_k = d_v = 16$; each length keeps its shortest of up to four runs. "
                        "Slopes of $\\log t$ against $\\log T$ on the three longest lengths measured: "
                        "parallel $\\approx 2$ ($O(T^2 d)$), chunked and recurrent $\\approx 1$ "
                        "($O(T C d + T d^2)$ and $O(T d^2)$). The recurrent form is a Python loop here: "
                        "fused GPU kernels change the constants, not the slopes. Lengths up to {parallel} "
                        "(parallel), {recurrent} (recurrent) and {chunked} (chunked), within about {budget} s."
                        ).format(budget=format_number(COST_BUDGET_S, 1), **COST_MAX_LENGTH))
        self.cost_section = pn.FlexBox(pn.pane.Bokeh(self.cost_picture.figure),
                                       pn.Column(self.measure_button, self.status, cost_text),
                                       sizing_mode="stretch_width")

        self.headings = [heading(_("Same input, three forms")), heading(_("The mask and the chunks")),
                         heading(_("What each form costs"))]
        store.param.watch(self._draw_comparison, ["comparison"])
        store.param.watch(self._draw_mask, ["mask"])
        store.param.watch(self._draw_curve, ["curve"])
        store.param.watch(self._settings_changed, ["variant", "chunk_size"])
        write_query(store, FormsStore.URL)
        self._draw_comparison()
        self._draw_mask()
        self._draw_curve()
        if store.cost:
            pn.state.onload(self._measure_after_load)

    def __panel__(self):
        title = html.escape(_("Parallel = recurrent"))
        return pn.Column(
            pn.pane.HTML(f"<h1 style='margin:0;font-size:30px;color:#102a43'>{title}</h1>", margin=(0, 10)),
            self.intro, self.headings[0], self.outputs_section, self.headings[1], self.mask_section,
            self.headings[2], self.cost_section, sizing_mode="stretch_width")

    def controls(self):
        store = self.store
        variant = pn.widgets.Select.from_param(store.param.variant, name=_("Model"), sizing_mode="stretch_width",
                                               options={_(VARIANT_NAMES[v]): v for v in FIXED_STATE})
        # sliders hand their value over on release: every value costs a run of the three forms
        length = pn.widgets.IntSlider(name=_("Sequence length T"), start=8, end=MAX_LENGTH, value=store.length,
                                      sizing_mode="stretch_width")
        alpha = pn.widgets.FloatSlider(name=_("Forget α (1 keeps everything)"), start=0.05, end=1.0, step=0.01,
                                       value=store.alpha, sizing_mode="stretch_width")
        for widget, name in ((length, "length"), (alpha, "alpha")):
            widget.param.watch(lambda event, name=name: setattr(store, name, event.new), "value_throttled")
            store.param.watch(lambda event, widget=widget: setattr(widget, "value", event.new), name)
        chunk = pn.widgets.RadioButtonGroup.from_param(
            store.param.chunk_size, name=_("Chunk size C"), options={str(c): c for c in CHUNKS},
            button_type="primary", button_style="outline", sizing_mode="stretch_width")
        channel = pn.widgets.IntSlider.from_param(store.param.channel, name=_("Key channel shown in the mask"),
                                                  sizing_mode="stretch_width")
        seed = pn.widgets.IntInput.from_param(store.param.seed, name=_("Random input (seed)"),
                                              sizing_mode="stretch_width")
        chunk_label = pn.pane.HTML("<b>%s</b>" % html.escape(_("Chunk size C")), margin=(8, 10, 0, 10),
                                   stylesheets=[":host { font-size: 15px; }"])

        def show(*_events):
            alpha.visible = store.variant in mechanism.FORGETTING
            channel.visible = store.variant in mechanism.PER_CHANNEL

        store.param.watch(show, ["variant"])
        show()
        return [variant, length, chunk_label, chunk, alpha, channel, seed]

    # -- drawing (each under pn.io.hold: one message to the browser per change)

    def _draw_comparison(self, *_events):
        comparison = self.store.comparison
        with pn.io.hold():
            titles = {"recurrent": _("Recurrent: token by token"), "parallel": _("Parallel: all at once"),
                      "chunked": _("Chunked: blocks of {size}").format(size=comparison.chunk_size)}
            for form, picture in self.output_pictures.items():
                picture.figure.title.text = titles[form]
                self._show_matrix(picture, comparison.outputs[form].T, comparison.peak)
            delta = comparison.outputs["chunked"] - comparison.outputs["recurrent"]
            largest = float(np.abs(delta).max())
            self.difference.figure.title.text = _("Chunked − recurrent: up to ±{limit}").format(
                limit=scientific(largest))
            self._show_matrix(self.difference, delta.T, largest)
            self.table.object = self._table(comparison)

    @staticmethod
    def _show_matrix(picture, matrix, limit):
        picture.set_cols(matrix.shape[1])
        picture.set_limit(limit)
        picture.show(matrix)

    def _table(self, comparison):
        largest, relative = html.escape(_("largest")), html.escape(_("relative"))
        compared = html.escape(_("forms compared"))
        head = (f'<tr><th class="pair" rowspan="2">{compared}</th>'
                + "".join(f'<th colspan="2">{dtype}</th>' for dtype in DTYPES) + "</tr>"
                + "<tr>" + f"<th>{largest}</th><th>{relative}</th>" * len(DTYPES) + "</tr>")
        rows = []
        for a, b in PAIRS:
            cells = []
            for dtype in DTYPES:
                biggest, typical = comparison.errors[dtype, (a, b)]
                cells += [scientific(biggest), scientific(typical)]
            pair = f"{_(FORM_NAMES[a])} ↔ {_(FORM_NAMES[b])}"
            rows.append(f'<tr><td class="pair">{html.escape(pair)}</td>'
                        + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
        caption = html.escape(_("How far apart the three answers are"))
        worst = {dtype: max(comparison.errors[dtype, pair][1] for pair in PAIRS) for dtype in DTYPES}
        digits = {dtype: max(0, math.floor(-math.log10(max(worst[dtype], 1e-300)))) for dtype in DTYPES}
        verdict = _("They agree to about {digits32} significant digits in float32 and {digits64} in float64: "
                    "what is left is rounding, not a different result.").format(
            digits32=digits["float32"], digits64=digits["float64"])
        legend = _("Largest: the biggest difference between the two answers, over every token and number. "
                   "Relative: the typical difference divided by the typical size of the answer.")
        size = _("For scale: the outputs themselves reach {peak}.").format(peak=format_number(comparison.peak, 2))
        return (f"<table><caption>{caption}</caption>{head}{''.join(rows)}</table>"
                f'<p class="legend">{html.escape(legend)} {html.escape(size)}</p>'
                f'<p class="verdict">{html.escape(verdict)}</p>')

    def _draw_mask(self, *_events):
        store = self.store
        with pn.io.hold():
            self.mask_picture.show(store.mask, store.chunk_size)
            title = _("Decay mask L of the parallel form")
            if store.variant in mechanism.PER_CHANNEL:
                title = _("Decay mask L, key channel {channel}").format(channel=store.channel)
            self.mask_picture.figure.title.text = title
            name = _(VARIANT_NAMES[store.variant])
            self.mask_note.object = "<p><strong>%s.</strong> %s</p>" % (html.escape(name),
                                                                       html.escape(_(MASK_NOTE[store.variant])))

    def _draw_curve(self, *_events):
        with pn.io.hold():
            self.cost_picture.show(self.store.curve)
            self._draw_status()

    def _draw_status(self):
        store, curve = self.store, self.store.curve
        name = _(VARIANT_NAMES[store.variant])
        busy = False
        if self._running:
            text = _("Measuring {model}, chunks of {size}…").format(model=name, size=store.chunk_size)
        elif curve is not None and curve.busy:
            text, busy = _("The server is busy measuring for other visitors: try again in a moment."), True
        elif curve is not None:
            text = _("Measured for {model}, chunks of {size}.").format(model=name, size=curve.chunk_size)
            if not curve.complete:
                text += " " + _("The longest lengths were left out to stay within the time budget: the "
                                "server is busy, so the slopes are rougher.")
        else:
            text = _("Not measured yet for {model}, chunks of {size}.").format(model=name, size=store.chunk_size)
        self.status.object = f'<span class="{"busy" if busy else "note"}">{html.escape(text)}</span>'
        again = curve is not None and not curve.busy
        self.measure_button.label = (_("Measure again") if again else _("Measure"))
        self.measure_button.disabled = self._running

    # -- measuring, in a worker thread: the server keeps serving everyone else meanwhile

    def _settings_changed(self, *_events):
        self._draw_status()
        if self.store.cost and self.store.curve is None:
            pn.state.execute(self._measure)

    async def _clicked(self, _event):
        await self._measure(force=self.store.curve is not None)

    async def _measure_after_load(self):
        await asyncio.sleep(1.0)          # let the page finish drawing: it shares the CPU (and Python's lock)
        await self._measure()

    async def _measure(self, force=False):
        store = self.store
        if self._running:
            return
        if not force and store.curve_key() in store.curves:
            return
        global _waiting
        key, alpha = store.curve_key(), store.alpha
        if _waiting >= MAX_WAITING:
            self._schedule(lambda: self._measured(CostCurve(*key, busy=True)))
            return
        self._running, _waiting = True, _waiting + 1
        self._schedule(self._draw_status)
        try:
            curve = await asyncio.get_running_loop().run_in_executor(
                _measurer, partial(measure_costs, *key, alpha=alpha))
        finally:
            self._running, _waiting = False, _waiting - 1
        # back on the event loop but without the document's lock (and its language): hand over the
        # result through a next-tick callback, which holds both
        self._schedule(lambda: self._measured(curve))

    def _measured(self, curve):
        store = self.store
        store.keep_curve(curve)
        if not curve.busy:
            store.cost = True
        self._draw_curve()
        if store.curve is None and store.cost:      # the settings changed while measuring: measure those
            pn.state.execute(self._measure)

    def _schedule(self, callback):
        on_next_tick(self._doc, callback)
