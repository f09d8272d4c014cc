"""Where memory fails, the model: the capacity experiment, the trained models' answers, the store.

The experiment (`recall`, `curve`): N pairs (and R rewrites, each to a different name: the curve starts at
N = R) written into one head through
`engine.capacity.write_and_read`, every key read back. The state is linear in the values,
S = Σ_i v_i w_iᵀ (w_i = k_i for the sum rule, k_i with the later transitions applied for the delta
rules), so the read-out of q is Σ_i (w_i·q) v_i: the weights w_i·q are exactly the read-out when the
values are one-hot, and `decomposition` takes a read-out apart with them.
"""
from dataclasses import dataclass

import numpy as np
import param
import torch

from lineare.app.checkpoints import load_model, one_thread, step_through
from lineare.app.shared import shared_cache
from lineare.app.dashboards.memory_fails.forensics import take_apart
from lineare.app.i18n import N_
from lineare.app.work import Latest, Shared, Worker, current_document, give_way, on_next_tick
from lineare.engine import tasks
from lineare.engine.capacity import bound, measure, rounding_tie, wins, write_and_read
from lineare.engine.ops import VARIANTS

RULES = ("sum", "delta", "gated-delta")
RULE_NAMES = {"sum": N_("Sum rule (linear attention)"), "delta": N_("Delta rule (DeltaNet)"),
              "gated-delta": N_("Gated delta rule (Gated DeltaNet)")}
# the same rules as the sidebar's choices under the name "Rule": short enough for its 16 px type (the Italian
# "Regola della somma (attenzione lineare)" was cut by the select's edge)
RULE_CHOICES = {"sum": N_("Sum (linear attention)"), "delta": N_("Delta (DeltaNet)"),
                "gated-delta": N_("Gated delta (Gated DeltaNet)")}
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


def max_pairs(d_k, keys):
    return d_k if keys == "orthogonal" else MAX_PAIRS * d_k


def curve_pairs(d_k, keys, rewrites=0):
    """The numbers of pairs N on the curve: about 24, from R (the names that change number, at least 1) to
    max_pairs, d_k always among them when R ≤ d_k. Each change goes to a different name, so a point has as
    many names as changes at least: with fewer names the changes would pile onto the same few, and the
    curve would describe a different experiment at every N."""
    top = max_pairs(d_k, keys)
    start = min(max(1, rewrites), top)
    return sorted({int(round(n)) for n in np.linspace(start, top, 24)} | ({d_k} if d_k >= start else set()))


def changes(pairs, rewrites):
    """The rewrites of a run of N pairs: at most one per name (R ≤ N)."""
    return min(rewrites, pairs)


# ------------------------------------------------------------------------------ the experiment

@dataclass(frozen=True)
class Recall:
    """N pairs (and R rewrites) written into one head, then every key read back.

    weights     [N, W]    read-out of each query with one-hot values: how much of write i comes out
    values      [W, d_v]  the dense value of each write (random unit vectors)
    readouts    [N, d_v]  read-out of each query with the dense values (engine, float64)
    targets     [N]       the write each query should recall (its key's latest write)
    answers     [N]       the write whose value is closest (cosine) to the read-out
    right       [N]       the target's cosine beats every other one (an exact tie is a miss, as in
                          engine.capacity.measure)
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
    right: np.ndarray


def dense_values(count, dim, seed):
    generator = torch.Generator().manual_seed(VALUE_SEED + seed)
    values = torch.randn(count, dim, generator=generator, dtype=torch.float64)
    return values / values.norm(dim=1, keepdim=True)                       # [W, d_v], unit rows


@shared_cache(maxsize=64)
def recall(rule, d_k, keys, pairs, rewrites, seed):
    """One run of the experiment (deterministic, so kept for the process); each change to a different name."""
    data = tasks.capacity_data(num_pairs=pairs, d_k=d_k, keys=keys, repeat=changes(pairs, rewrites), seed=seed)
    weights, _state = write_and_read(rule, data.keys, data.values, data.queries)     # [N, W]
    values = dense_values(len(data.keys), d_k, seed)
    readouts, _state = write_and_read(rule, data.keys, values, data.queries)        # [N, d_v]
    cosines = torch.nn.functional.normalize(readouts, dim=1) @ values.T             # [N, W]
    key_of = (data.keys @ data.queries.T).argmax(1)                                 # [W]
    return Recall(weights=weights.numpy(), values=values.numpy(), readouts=readouts.numpy(),
                  targets=data.targets.numpy(), answers=cosines.argmax(1).numpy(), key_of=key_of.numpy(),
                  queries=data.queries.numpy(), right=wins(cosines, data.targets).numpy())


@shared_cache(maxsize=64)
def curve(rule, d_k, keys, rewrites, seed):
    """The capacity curve as arrays: pairs, error (plain read-out), best (least-squares read-out),
    bound (closed form), accuracy (dense values, nearest stored value), each averaged over TRIALS."""
    rows = []
    for N in curve_pairs(d_k, keys, rewrites):
        sums = np.zeros(3)
        for trial in range(TRIALS):
            give_way()                                  # a less busy visitor's job first (app/work.py)
            run = recall(rule, d_k, keys, N, rewrites, seed + trial)
            error, best, _plain_accuracy = measure(*(torch.tensor(x) for x in (run.weights, run.targets,
                                                                                    run.queries)))
            sums += (error, best, run.right.mean())
        rows.append((N, *(sums / TRIALS), bound(N, d_k)))
    table = np.array(rows)
    return {"pairs": table[:, 0], "error": table[:, 1], "best": table[:, 2], "accuracy": table[:, 3],
            "bound": table[:, 4]}


ALPHA, BETA = 0.99, 1.0        # engine.capacity's gated delta rule: keeps 0.99 per write, β = 1


def map_gates(rule, alpha, beta):
    """The gates a rule takes from the map's sliders (None: the rule has no such gate)."""
    return (alpha if rule == "gated-delta" else None), (None if rule == "sum" else beta)


def map_pairs(d_k, keys, rewrites=0):
    """The map's columns for one d_k: every other N of the curve, with d_k (when on it) and the last one."""
    pairs = curve_pairs(d_k, keys, rewrites)
    return sorted(set(pairs[::2]) | ({d_k} & set(pairs)) | {pairs[-1]})


def dense_accuracy(rule, d_k, keys, pairs, rewrites, seed, alpha, beta):
    """Share of queries whose read-out is closest (cosine) to their right dense value: the accuracy of
    `recall`, for any α and β (None: the rule's own), averaged over TRIALS draws like the curve."""
    right = 0.0
    for trial in range(TRIALS):
        data = tasks.capacity_data(num_pairs=pairs, d_k=d_k, keys=keys, repeat=changes(pairs, rewrites),
                                   seed=seed + trial)
        values = dense_values(len(data.keys), d_k, seed + trial)                    # [W, d_v]
        readouts, _state = write_and_read(rule, data.keys, values, data.queries, alpha=alpha, beta=beta)
        cosines = torch.nn.functional.normalize(readouts, dim=1) @ values.T         # [N, W]
        right += float(wins(cosines, data.targets).double().mean())
    return right / TRIALS


def map_row(rule, d_k, keys, rewrites, seed, alpha, beta):
    """One row of the map: (pairs, accuracy) at d_k, with the rule's gates from the sliders."""
    alpha, beta = map_gates(rule, alpha, beta)
    pairs = np.array(map_pairs(d_k, keys, rewrites))
    accuracy = []
    for N in pairs:
        give_way()                                      # a less busy visitor's job first (app/work.py)
        accuracy.append(dense_accuracy(rule, d_k, keys, int(N), rewrites, seed, alpha, beta))
    return pairs, np.array(accuracy)


@shared_cache(maxsize=16)
def accuracy_map(rule, keys, rewrites, seed, alpha, beta):
    """Accuracy over d_k × N: {"d_k": [..], "pairs": [array per d_k], "accuracy": [array per d_k]}.

    About fifty runs of up to 4·64 writes, seconds on one core: the store asks a worker for it."""
    alpha, beta = map_gates(rule, alpha, beta)          # a gate the rule lacks does not split the cache
    return _accuracy_map(rule, keys, rewrites, seed, alpha, beta)


@shared_cache(maxsize=16)
def _accuracy_map(rule, keys, rewrites, seed, alpha, beta):
    with one_thread():                                  # the other core keeps serving pages
        rows = [map_row(rule, d_k, keys, rewrites, seed, alpha, beta) for d_k in D_KS]
    return {"d_k": list(D_KS), "pairs": [pairs for pairs, _accuracy in rows],
            "accuracy": [accuracy for _pairs, accuracy in rows]}


def decomposition(run, query):
    """The read-out of query `query` as Σ_i weight_i · value_i; returns (weights [W], contributions [W, d_v])."""
    weights = run.weights[query]
    return weights, weights[:, None] * run.values


def tied_with(run, query):
    """The other write whose value the query's read-out is as close to as to its target, up to rounding
    (engine.capacity.rounding_tie: the tie `right` counts as a miss), or None."""
    cosines = run.values @ run.readouts[query] / max(float(np.linalg.norm(run.readouts[query])), 1e-300)   # [W]
    target = int(run.targets[query])
    others = np.delete(np.arange(len(cosines)), target)
    if not len(others):
        return None
    rival = int(others[np.argmax(cosines[others])])
    return rival if bool(rounding_tie(max(cosines[target], cosines[rival]), min(cosines[target], cosines[rival]),
                                      run.readouts.dtype)) else None


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


def example_inputs(task, count, seed):
    """`count` MQAR examples of `task`: (inputs, targets), each [count, L]."""
    length, pairs = TASKS[task]
    return tasks.mqar(vocab_size=256, seq_len=length, num_pairs=pairs, num_examples=count, seed=seed)


def _model(variant):
    return load_model(variant)[0]                    # cached per process, checksums verified


@shared_cache(maxsize=32)
def trained_example(task, example):
    inputs, targets = example_inputs(task, 1, EXAMPLE_SEED + example)               # [1, L]
    scored = targets[0] != tasks.IGNORE
    positions = torch.nonzero(scored).flatten()
    predicted, missing = {}, {}
    with torch.no_grad():         # no lock: the held-out count may hold the models for seconds
        for variant in VARIANTS:
            try:
                model = _model(variant)
            except (FileNotFoundError, ValueError) as error:
                missing[variant] = str(error)
                continue
            logits = model(inputs)                                                  # [1, L, V]
            predicted[variant] = logits[0, positions].argmax(-1).numpy()
    return TrainedExample(tokens=inputs[0].numpy(), positions=positions.numpy(),
                          expected=targets[0, positions].numpy(), predicted=predicted, missing=missing)


def trained_accuracy(task):
    """variant → share of queries answered right over ACCURACY_EXAMPLES held-out examples."""
    inputs, targets = example_inputs(task, ACCURACY_EXAMPLES, ACCURACY_SEED + list(TASKS).index(task))
    scored = targets != tasks.IGNORE
    accuracy = {}
    with one_thread(), torch.no_grad():      # one core for this; the other keeps serving pages
        for variant in VARIANTS:
            try:
                model = _model(variant)
            except (FileNotFoundError, ValueError):
                continue
            predicted = model(inputs).argmax(-1)                                    # [E, L]
            accuracy[variant] = float((predicted[scored] == targets[scored]).double().mean())
    return accuracy


@shared_cache(maxsize=2)          # a run of 256 tokens holds ~17 MB of records
def stepped(variant, task, example):
    """The example of `trained_example` stepped token by token through `variant`'s checkpoint:
    (tokens [L], targets [L], logits [L, V], records[layer][t])."""
    inputs, targets = example_inputs(task, 1, EXAMPLE_SEED + example)               # [1, L]
    logits, layers = step_through(_model(variant), inputs[0])
    return inputs[0].numpy(), targets[0].numpy(), logits, layers


@shared_cache(maxsize=16)
def query_forensics(variant, task, example, query):
    """The `query`-th answer (1-based) of `variant` on that example, taken apart layer by layer."""
    return take_apart(variant, *stepped(variant, task, example), query)


# The held-out accuracy takes seconds the first time: counted on one thread, kept for every session.
# No bound on the queue: a session waits for one count at a time, and a task counted once is read
# from HELD_OUT at once.
COUNTER = Worker("held-out-accuracy")
HELD_OUT = Shared()                 # task → {variant: accuracy}
# A click on the trained grid steps one model through one example (about a second); the map runs the
# capacity experiment ~50 times. Each session has at most one job of each in the queue (`Latest`).
PROBER = Worker("forensics")
MAPPER = Worker("accuracy-map")
# A new seed or size runs the capacity experiment again (seconds for d_k = 64): off the event loop, so
# that a visitor turning the seed does not stop every other session's knobs meanwhile.
CURVES = Worker("capacity-curve")
# A new task or example steps every trained model through it (tens of ms, more on a busy server): off the loop too.
EXAMPLES = Worker("trained-example")


def curve_and_run(rule, d_k, keys, pairs, rewrites, seed):
    """{curve, run} of a store's settings."""
    # one thread: these are many small runs, which two threads on two busy cores made 7–45× slower
    # (gated delta rule, d_k = 32: 4–27 s against 0.4–0.6 s)
    with one_thread():
        return {"curve": curve(rule, d_k, keys, rewrites, seed), "run": recall(rule, d_k, keys, pairs, rewrites, seed)}


# ---------------------------------------------------------------------------------- the store

class MemoryStore(param.Parameterized):
    """One session's settings for this dashboard, and what the engine made of them."""

    rule = param.Selector(default="sum", objects=list(RULES))
    d_k = param.Selector(default=16, objects=list(D_KS), doc="key dimension")
    keys = param.Selector(default="random", objects=list(tasks.KEY_KINDS), doc="key geometry")
    rewrites = param.Integer(default=0, bounds=(0, MAX_REWRITES),
                             doc="names written again with a new value, each a different one (at most d_k)")
    pairs = param.Integer(default=24, bounds=(1, MAX_PAIRS * max(D_KS)), doc="N of the query-by-query view")
    query = param.Integer(default=1, bounds=(1, MAX_PAIRS * max(D_KS)), doc="the query decomposed (1-based)")
    seed = param.Integer(default=0, bounds=(0, 9999), doc="seed of the keys and values")
    task = param.Selector(default="128-32", objects=list(TASKS), doc="trained models: L-K of the MQAR task")
    example = param.Integer(default=0, bounds=(0, 9999), doc="trained models: which example")
    probe = param.Selector(default=VARIANTS[0], objects=list(VARIANTS), doc="trained model taken apart")
    probe_query = param.Integer(default=0, bounds=(0, max(K for _L, K in TASKS.values())),
                                doc="its query taken apart, 1-based (0: the first wrong answer on the grid)")
    alpha = param.Number(default=ALPHA, bounds=(0.5, 1.0), step=0.01, doc="the map's gated rule: share kept per write")
    beta = param.Number(default=BETA, bounds=(0.1, 1.0), step=0.05, doc="the map's delta rules: step size")

    curve = param.Dict(default=None, doc="the capacity curve (derived)")
    run = param.Parameter(default=None, doc="the Recall at `pairs` (derived)")
    trained = param.Parameter(default=None, doc="TrainedExample (derived)")
    accuracy = param.Dict(default={}, doc="held-out accuracy of `task`, variant → share ({} until counted)")
    counting = param.Boolean(default=False, doc="a held-out count is running for this session")
    forensics = param.Parameter(default=None, doc="QueryForensics of (probe, probe_query) (derived)")
    probing = param.Boolean(default=False, doc="the forensics are being computed")
    probe_failure = param.String(default="", doc="why the model could not be taken apart ('' if it could)")
    capacity_map = param.Dict(default=None, doc="accuracy_map of the current settings (derived)")
    mapping = param.Boolean(default=False, doc="the map is being computed")

    URL = {"rule": "rule", "d_k": "dk", "keys": "keys", "rewrites": "rewrites", "pairs": "pairs",
           "query": "query", "seed": "seed", "task": "task", "example": "example", "probe": "probe",
           "probe_query": "probe_query", "alpha": "alpha", "beta": "beta"}
    SIZED = ("rewrites", "pairs", "query", "probe_query")   # URL values whose upper limit depends on the others
    MAP_SETTINGS = ("rule", "keys", "rewrites", "seed", "alpha", "beta")

    def __init__(self, **params):
        super().__init__(**params)
        self.param.update(**self.fits())
        self._curves = Latest(CURVES, lambda: (self.rule, self.d_k, self.keys, self.pairs, self.rewrites, self.seed),
                              curve_and_run, lambda result: self.param.update(**result), lambda _error: None,
                              lambda _busy: None)
        self.param.watch(self._changed, ["rule", "d_k", "keys", "rewrites", "pairs", "query", "seed", "probe_query"])
        self.param.watch(self._trained_changed, ["task", "example"])
        self.param.watch(self._count_accuracy, ["task"])
        self._compute()
        self.trained = trained_example(self.task, self.example)
        self._examples = Latest(EXAMPLES, lambda: (self.task, self.example), trained_example, self._example_made)
        if self.probe_query == 0:
            self.param.update(**self.first_trained_failure())
        self._count_accuracy()
        # the forensics and the map are computed once a page shows them (`open_details`)
        self._prober = Latest(PROBER, lambda: (self.probe, self.task, self.example, self.probe_query),
                              query_forensics, self._probed, self._probe_failed,
                              lambda busy: setattr(self, "probing", busy))
        self._mapper = Latest(MAPPER, lambda: tuple(getattr(self, n) for n in self.MAP_SETTINGS), accuracy_map,
                              lambda result: setattr(self, "capacity_map", result), lambda _error: None,
                              lambda busy: setattr(self, "mapping", busy))
        self._details = False

    def open_details(self):
        """Compute the trained forensics and the accuracy map, now and whenever their settings change."""
        if self._details:
            return
        self._details = True
        self.param.watch(self._probe_changed, ["probe", "probe_query", "task", "example"])
        self.param.watch(lambda *_events: self._mapper.ask(), list(self.MAP_SETTINGS))
        self._prober.ask()
        self._mapper.ask()

    def _probe_changed(self, *_events):
        if self.probe_query == 0:                   # 0: the first wrong answer (comes back here)
            self.param.update(**self.first_trained_failure())
        elif not self.fits():                       # a query past K is lowered first (comes back here)
            self._prober.ask()

    def fits(self):
        """What N and the queries must become to fit the other settings ({} when they fit)."""
        pairs = min(self.pairs, max_pairs(self.d_k, self.keys))
        fixed = {"pairs": pairs} if pairs != self.pairs else {}
        if self.rewrites > self.d_k:                # the curve starts at N = R: it still reaches N = d_k
            fixed["rewrites"] = self.d_k
        if self.query > pairs:
            fixed["query"] = pairs
        if self.probe_query > TASKS[self.task][1]:
            fixed["probe_query"] = TASKS[self.task][1]
        return fixed

    @property
    def example_number(self):
        """The example as the page counts it for a student, from 1 (`example`, as in the URL, counts from 0)."""
        return self.example + 1

    def first_trained_failure(self):
        """{probe, probe_query}: the first wrong answer on the trained grid (models in order), else query 1."""
        example = self.trained
        for variant in VARIANTS:
            if variant in example.predicted and not example.right(variant).all():
                return {"probe": variant, "probe_query": int(np.flatnonzero(~example.right(variant))[0]) + 1}
        return {"probe": next(iter(example.predicted), VARIANTS[0]), "probe_query": 1}

    def _changed(self, *events):
        if self.fits():
            # lowered through update(), with events, so widgets and the URL follow; after the watchers of
            # this change have run, or they would pass on the too-large value last. Comes back here.
            on_next_tick(current_document(), lambda: self.param.update(**self.fits()))
            return
        if {e.name for e in events} - {"query", "probe_query"}:
            self._curves.ask()                      # on CURVES in a server, at once without one

    def _compute(self):
        self.param.update(**curve_and_run(self.rule, self.d_k, self.keys, self.pairs, self.rewrites, self.seed))

    def _trained_changed(self, *_events):
        self._examples.ask()                        # on EXAMPLES in a server, at once without one

    def _example_made(self, example):
        self.trained = example
        self.param.update(**self.first_trained_failure())       # a new example: its first wrong answer

    def _probed(self, result):
        self.param.update(forensics=result, probe_failure="")

    def _probe_failed(self, error):
        self.param.update(forensics=None, probe_failure=str(error))

    def _count_accuracy(self, *_events):
        """Show the held-out accuracy of `task`, counting it first (on COUNTER) if nobody has yet."""
        task = self.task
        if task in HELD_OUT:
            self.accuracy = HELD_OUT.get(task)
            return
        self.accuracy = {}
        if self.counting:                  # one count at a time per session: _counted starts the next
            return
        self.counting = True
        COUNTER.submit(lambda: HELD_OUT.compute(task, lambda: trained_accuracy(task)), self._counted,
                       on_error=self._count_failed)

    def _counted(self, _result):
        self.counting = False
        self._count_accuracy()             # shows it, or counts the task chosen meanwhile

    def _count_failed(self, _error):       # logged by the worker; the bars stay empty
        self.counting = False

    def first_failure(self):
        """1-based number of the first query recalled wrong, or None."""
        wrong = np.flatnonzero(~self.run.right)
        return int(wrong[0]) + 1 if len(wrong) else None
