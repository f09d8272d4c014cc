"""The numbers of "Parallel = recurrent": one input through three forms, the order each computes it
in, the decay mask, the cost counted and measured.

Pure computation (`compare`, `answered`, `mask_of`, `counted_work`, `measure_costs`) and `FormsStore`,
one per session. No Panel, no Bokeh: the store works the same in a test, a notebook or a server session.
"""
import time
from dataclasses import dataclass, field

import numpy as np
import param
import torch
import torch.nn.functional as F

from lineare.app.mechanism import D_K
from lineare.app.variants import REGISTRY
from lineare.app.work import Latest, Worker
from lineare.engine.gates import make_gates
from lineare.engine.ops import FORMS, forward
from lineare.engine.ops.parallel import decay_mask

# softmax has no fixed-size state to pass from chunk to chunk: it belongs to the "Two bills" page
FIXED_STATE = tuple(name for name, record in REGISTRY.items() if record.fixed_state)
PAIRS = (("recurrent", "parallel"), ("recurrent", "chunked"), ("parallel", "chunked"))
DTYPES = {"float32": torch.float32, "float64": torch.float64}
D = D_K                             # d_k = d_v = 16, one head: the per-channel decays are spread over 16
CHUNKS = (8, 16, 32, 64)
MAX_LENGTH = 256                    # the side-by-side comparison (and the T × T mask) stays small

# the cost curve: lengths tried in turn, each form up to its own longest, within a time budget
COST_LENGTHS = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
COST_MAX_LENGTH = {"recurrent": 1024, "parallel": 2048, "chunked": 16384}
COST_BUDGET_S = 2.5                 # all three forms together; one request stays under ~3 s
FIRST_SWEEP = 0.7                   # of the budget, for the first pass over the lengths; the rest re-times
BUDGET_SHARE = {"recurrent": 0.35, "parallel": 0.4, "chunked": 0.25}   # the parallel form's last length is dear
FIT_POINTS = 3                      # slopes are fitted on the longest lengths, past the fixed overheads …
FIT_FROM = 256                      # … and only once a length of at least this was measured

# One thread for the whole process: measurements run one after the other (fair timings, one core
# busy at most), and past three queued a visitor is told to come back instead of joining the queue.
MEASURER = Worker("measure", max_waiting=3, threads=1)        # timings: never two at once
# A knob runs the three forms again (10–30 ms at T = 256, more on a busy server): off the event loop too.
COMPARER = Worker("compare")


# ------------------------------------------------------------------------------- the comparison

def make_inputs(variant, length, seed, alpha, dtype=torch.float64):
    """Seeded random q, k, v [1, T, 1, 16] and the gates of the knobs (α, β = 1), in `dtype`.

    The same seed gives the same numbers in every dtype (drawn in float64, then cast), so float32
    and float64 compare the same input. DeltaNet-style keys and queries are L2-normalized, as in
    the layer (Yang et al. 2024).
    """
    generator = torch.Generator().manual_seed(int(seed))
    draw = lambda d: torch.randn(1, length, 1, d, generator=generator, dtype=torch.float64)
    q, k, v = draw(D), draw(D), draw(D)
    if variant in ("deltanet", "gated_deltanet"):
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
    gates = make_gates(variant, (1, length, 1, D), alpha=alpha, beta=1.0, keys=k, dtype=dtype)
    return q.to(dtype), k.to(dtype), v.to(dtype), gates


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


def settings_mask(variant, length, seed, alpha, channel):
    """The decay mask of the store's settings [T, T] (mask_of, with the comparison's gates)."""
    _q, _k, _v, gates = make_inputs(variant, length, seed, alpha)
    return mask_of(variant, gates, length, channel)


def compared(variant, length, chunk_size, seed, alpha, channel):
    """(the Comparison, the decay mask) of a store's settings: what a knob computes."""
    return compare(variant, length, chunk_size, seed, alpha), settings_mask(variant, length, seed, alpha, channel)


def compare(variant, length, chunk_size, seed, alpha):
    """Run the three forms on the same input, in float32 and float64, and measure their differences."""
    outputs, errors = {}, {}
    with torch.inference_mode():
        for name, dtype in DTYPES.items():
            q, k, v, gates = make_inputs(variant, length, seed, alpha, dtype)
            o = {form: forward(variant, q, k, v, form=form, chunk_size=chunk_size, **gates)[0][0, :, 0].numpy()
                 for form in FORMS}                                              # form → [T, d_v]
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
        log_decay = F.logsigmoid(gates["f"][0, :, 0].double())               # ĩ = 0 (i = 1): the forget gate alone
    elif g is None:
        log_decay = torch.zeros(length, dtype=torch.float64)                # no decay: the causal mask
    elif g.dim() == 4:
        log_decay = g[0, :, 0, channel].double()                             # per channel
    else:
        log_decay = g[0, :, 0].double()                                      # one per token
    L = decay_mask(log_decay).numpy()                                        # [T, T]
    if variant == "rwkv6":
        # reads S_{t-1}: token j < t counts exp(G_{t-1} − G_j); the current token enters through the bonus u
        shifted = np.zeros_like(L)
        shifted[1:, :-1] = L[:-1, :-1]
        np.fill_diagonal(shifted, float(gates["u"][0, channel]))
        L = shifted
    return np.where(np.tri(length, dtype=bool), L, np.nan)


# ------------------------------------------------------------------------------- the order

def answered(form, length, chunk_size):
    """[length]: how many tokens `form` has answered after step 1, 2, … length, a step being work that
    must wait for the one before: the recurrent form answers one token per step, the chunked form one
    block of C tokens per step (all of a block at once), the parallel form every token in its one step."""
    steps = np.arange(1, length + 1)
    if form == "recurrent":
        return steps
    if form == "chunked":
        return np.minimum(steps * chunk_size, length)
    if form == "parallel":
        return np.full(length, length)
    raise ValueError(f"unknown form {form!r}; choose one of {', '.join(FORMS)}")


def steps_needed(form, length, chunk_size):
    """Steps `form` takes to answer `length` tokens: T, ⌈T/C⌉ or 1."""
    return int(np.argmax(answered(form, length, chunk_size) == length)) + 1


def opening_step(length, chunk_size):
    """The step (0-based frame) the page opens on: the chunked form one block from done, so the three
    strips are filled to three different lengths (the parallel one whole)."""
    return max(0, steps_needed("chunked", length, chunk_size) - 2)


# ------------------------------------------------------------------------------- the cost

def counted_work(variant, form, length, chunk_size, d=D):
    """Multiply-adds of one head to run `form` over `length` tokens (numbers or an array): the leading
    terms of each algorithm with d_k = d_v = d. Recurrent: a write and a read of the d × d state per
    token, 2 T d² (the delta rule also reads S k, and writes its correction instead of the pair: 3 T d²;
    RWKV-7 reads S a and adds (S a) bᵀ besides its write: 4 T d²). Parallel: the T × T scores Q Kᵀ
    and their product with V, 2 T² d, and the final state, 2 T d² (the delta rule's triangular system
    adds about 6 T² d: 8 T² d, and 4 T d²). Chunked: the same inside each block of C tokens, 2 T C d,
    and the state read and written once per token, 2 T d² (delta rule: 8 T C d + 4 T d²). A decay adds
    only multiplications."""
    T = np.asarray(length, dtype=np.float64)
    corrects = REGISTRY[variant].corrects
    per_square, per_state = (8, 4) if corrects else (2, 2)
    if form == "recurrent":
        per_token = 4 if variant == "rwkv7" else 3 if corrects else 2
        return per_token * T * d * d
    if form == "parallel":
        return per_square * T * T * d + per_state * T * d * d
    if form == "chunked":
        return per_square * T * chunk_size * d + per_state * T * d * d
    raise ValueError(f"unknown form {form!r}; choose one of {', '.join(FORMS)}")


@dataclass
class CostCurve:
    """CPU (and wall-clock) times of the three forms at growing lengths, measured on this server."""
    variant: str
    chunk_size: int
    times: dict = field(default_factory=dict)        # form → [(T, CPU seconds)], T increasing
    wall: dict = field(default_factory=dict)         # form → [(T, wall-clock seconds)]
    slopes: dict = field(default_factory=dict)       # form → fitted slope of log time vs log T, or None
    busy: bool = False                               # too many measurements queued: not measured
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
                  max_length=COST_MAX_LENGTH):
    """Time the three forms at growing lengths, within about `budget_s` seconds. Blocking: the store
    runs it on MEASURER's thread, one measurement at a time in the process.

    The times kept are CPU times of the measuring thread, with torch held to one thread in it: the
    work itself. Wall-clock times are kept too, but on a shared server they also count the waits for
    everybody else's work (two to three times the CPU time on a busy machine).
    First sweep: each form gets its share of 70 % of the budget, and stops before a length whose wall
    time, predicted from the last one (∝ T² for the parallel form, ∝ T otherwise), would not fit.
    Then, while the budget lasts, the lengths are timed again (those the slopes are fitted on first)
    and each keeps its shortest time.
    """
    alpha = REGISTRY[variant].alpha if alpha is None else alpha
    curve = CostCurve(variant, chunk_size)
    # One intra-op thread, so that all the work runs in this thread and its CPU clock sees all of it;
    # one core per measurement also leaves the others to the visitors. (Set in this thread and
    # restored after: the server's own threads keep their setting.)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    started = time.perf_counter()
    cpu, wall = {form: {} for form in FORMS}, {form: {} for form in FORMS}      # form → {T: seconds}
    try:
        with torch.inference_mode():
            inputs = {lengths[0]: make_inputs(variant, lengths[0], 0, alpha, torch.float32)}
            for form in FORMS:                                     # first calls pay one-time set-up costs
                time_form(variant, form, chunk_size, inputs[lengths[0]])
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
                    cpu[form][T], wall[form][T] = time_form(variant, form, chunk_size, inputs[T])
                    left[form] -= wall[form][T]
            # again, while the budget lasts: first the lengths the slopes are fitted on, then the others
            fitted = [(form, T) for form in FORMS for T in sorted(cpu[form])[-FIT_POINTS:]]
            others = [(form, T) for form in FORMS for T in sorted(cpu[form])[:-FIT_POINTS]]
            for form, T in (fitted + others) * 3:
                if time.perf_counter() - started + wall[form][T] < budget_s:
                    seconds, elapsed = time_form(variant, form, chunk_size, inputs[T])
                    cpu[form][T], wall[form][T] = min(cpu[form][T], seconds), min(wall[form][T], elapsed)
    finally:
        torch.set_num_threads(threads)
    curve.times = {form: sorted(measured.items()) for form, measured in cpu.items()}
    curve.wall = {form: sorted(measured.items()) for form, measured in wall.items()}
    curve.slopes = {form: fit_slope(points) for form, points in curve.times.items()}
    longest = {form: max((T for T in lengths if T <= max_length[form]), default=0) for form in FORMS}
    curve.complete = all(points and points[-1][0] == longest[form] for form, points in curve.times.items())
    return curve


def time_form(variant, form, chunk_size, inputs):
    """(CPU seconds of this thread, wall-clock seconds) of one call of the form."""
    q, k, v, gates = inputs
    wall, cpu = time.perf_counter(), time.thread_time()
    forward(variant, q, k, v, form=form, chunk_size=chunk_size, **gates)
    return time.thread_time() - cpu, time.perf_counter() - wall


# ------------------------------------------------------------------------------- the store

class FormsStore(param.Parameterized):
    """One session's inputs for this dashboard, and what the engine computed and measured for them."""

    variant = param.Selector(default="retnet", objects=list(FIXED_STATE))
    length = param.Integer(default=64, bounds=(8, MAX_LENGTH), doc="sequence length T of the comparison")
    chunk_size = param.Selector(default=16, objects=list(CHUNKS))
    alpha = param.Number(default=REGISTRY["retnet"].alpha, bounds=(0.05, 1.0),
                         doc="forget gate: fraction kept per step")
    channel = param.Integer(default=0, bounds=(0, D - 1), doc="key channel of a per-channel decay mask")
    seed = param.Integer(default=0, bounds=(0, 9999), doc="seed of the random input")
    cost = param.Boolean(default=False, doc="measure the cost curve (on load and on every new setting)")

    comparison = param.Parameter(default=None, doc="the latest Comparison (derived)")
    mask = param.Parameter(default=None, doc="the decay mask L [T, T], NaN above the diagonal (derived)")
    curve = param.Parameter(default=None, doc="the CostCurve of (variant, chunk size), or None (derived)")
    measuring = param.Boolean(default=False, doc="a measurement of this session is queued or running")

    URL = {"variant": "variant", "length": "T", "chunk_size": "chunk", "alpha": "alpha",
           "channel": "channel", "seed": "seed", "cost": "cost"}

    def __init__(self, **params):
        params.setdefault("alpha", REGISTRY[params.get("variant", "retnet")].alpha)
        super().__init__(**params)
        self.curves = {}                      # (variant, chunk size) → CostCurve: this session's cache
        self.param.watch(self._changed, ["variant", "length", "chunk_size", "alpha", "seed"])
        self.param.watch(self._draw_mask, ["channel"])
        self._comparisons = Latest(COMPARER, lambda: (self.variant, self.length, self.chunk_size, self.seed,
                                                      self.alpha, self.channel), compared, self._compared)
        self._compute()

    def _changed(self, *events):
        names = {e.name for e in events}
        default = REGISTRY[self.variant].alpha                     # a new model starts from its own gate
        if "variant" in names and "alpha" not in names and self.alpha != default:
            self.alpha = default                                   # computes through the watcher
        else:
            self._comparisons.ask()                                 # on COMPARER in a server, at once without one
        if names & {"variant", "chunk_size"} and self.cost and self.curve is None:
            self.measure()

    def _compute(self):
        self._compared(compared(self.variant, self.length, self.chunk_size, self.seed, self.alpha, self.channel))

    def _compared(self, result):
        comparison, mask = result
        self.param.update(comparison=comparison, mask=mask, curve=self.curves.get(self.curve_key()))

    def _mask(self):
        return settings_mask(self.variant, self.length, self.seed, self.alpha, self.channel)

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
        """Measure the cost curve of the current settings on MEASURER's thread (at once without a
        server); a cached curve is shown instead unless `force`. `options` go to measure_costs."""
        if self.measuring:
            return
        key = self.curve_key()
        if not force and key in self.curves:
            self.curve = self.curves[key]
            return
        alpha = self.alpha
        compute = lambda: measure_costs(*key, alpha=alpha, **options)
        self.measuring = True
        if not MEASURER.submit(compute, self._measured, on_error=self._failed):
            self.measuring = False
            self.keep_curve(CostCurve(*key, busy=True))

    def _measured(self, curve):
        self.measuring = False
        self.keep_curve(curve)
        self.cost = True                            # measure again on load and on every new setting
        if self.curve is None and self.cost:        # the settings changed while measuring: measure those
            self.measure()

    def _failed(self, _error):
        self.measuring = False
