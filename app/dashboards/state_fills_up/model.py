"""The store of "The state fills up" and the numbers its pictures show; no Panel, no Bokeh.

`StateStore` (one per session) turns the controls into a run: in mechanism mode an `app.mechanism.Run`
over readable tokens, in trained mode a `TrainedRun` of a shipped checkpoint over one MQAR example.
`head_frame` reads one head at one token out of the engine's records (`engine.stepping.StepRecord`);
`limits_of` fixes each picture's colour range for a whole run.
"""
from dataclasses import dataclass

import numpy as np
import param

from lineare.app import mechanism
from lineare.app.checkpoints import load_model, path_of, step_through
from lineare.app.shared import shared_cache
from lineare.app.variants import REGISTRY
from lineare.app.work import Latest, Worker
from lineare.engine.stepping import transition
from lineare.engine.tasks import IGNORE, mqar

MODES = ("mechanism", "trained")
LAYERS = ("both", "1", "2")           # trained mode: which layer to show (the checkpoints have two)
DEFAULT_VARIANT = "linear"
MECHANISM_PAIRS = 8                   # mechanism mode's MQAR strip stays under mechanism.MAX_TOKENS
TRAINED_LENGTH = 64                   # MQAR length when a sidecar does not say what it trained on
TRAINED_QUANTILE = 99.9               # colour range: see limits_of
TRAINED_PAIRS = 8                     # trained mode's default: a busier example than mechanism mode's 4


# ----------------------------------------------------------------------------- what is drawn

def limits_of(records, quantile=100.0):
    """Colour ranges of one run: per picture, the `quantile` of |value| over every token (and head).

    100 is the largest value. A trained state has a heavy tail (one entry of 550 among thousands
    below 5), so trained mode takes the 99.9th percentile and lets those few entries saturate.
    """
    def peak(*names):
        values = [np.abs(getattr(r, n)).ravel() for r in records for n in names if getattr(r, n) is not None]
        return float(np.percentile(np.concatenate(values), quantile)) if values else 1.0

    states = [r.state for r in records if r.state is not None]
    update = peak("write")
    if states:                        # the whole change of each step and its transition part share one range
        change = np.diff(np.stack([np.zeros_like(states[0]), *states]), axis=0)                # [T, B,H,d_v,d_k]
        removed = change - np.stack([r.write for r in records])
        update = max(update, *(float(np.percentile(np.abs(x), quantile)) for x in (change, removed)))
    return {"state": peak("state"), "write": peak("write"), "update": update, "output": peak("output"),
            "target": peak("target"), "delta": peak("prediction", "target", "error")}


@dataclass
class HeadFrame:
    """What the pictures of one head show at one token (None: that picture is not on the page)."""
    output: np.ndarray                        # the read-out o_t [1, d_v]
    state: np.ndarray | None = None           # S_t [d_v, d_k]
    write: np.ndarray | None = None           # what the token writes [d_v, d_k]
    change: np.ndarray | None = None          # the whole update S_t − S_{t-1} [d_v, d_k]
    removed: np.ndarray | None = None         # what the transition took away: change − write [d_v, d_k]
    kept: np.ndarray | None = None            # what the transition keeps of each direction [d_k] (see below)
    diag: np.ndarray | None = None            # the transition A_t = diag(diag) + a bᵀ: its diagonal [d_k] …
    low: tuple | None = None                  # … and its rank-one part (a [d_k], b [d_k]), None if diagonal
    beta: float | None = None                 # the delta rule's step (None: the variant has none)
    correction: np.ndarray | None = None      # prediction, target, error [3, d_v] (the correcting variants)
    cache: np.ndarray | None = None           # softmax: the cached values v_i, NaN after t [T, d_v]
    attention: np.ndarray | None = None       # softmax: the query's weights over the cache, 0 after t [T]


def head_frame(variant, records, head, t):
    """The numbers of `head` at token `t` of a run (`records`: the engine's StepRecord per token)."""
    record = records[t]
    frame = HeadFrame(output=record.output[0, head][None, :])                                   # [1, d_v]
    if not REGISTRY[variant].fixed_state:                        # softmax: a cache that grows every token
        T, d_v = len(records), record.target.shape[-1]
        frame.cache = np.full((T, d_v), np.nan)                                                 # [T, d_v]
        frame.cache[:t + 1] = [r.target[0, head] for r in records[:t + 1]]
        frame.attention = np.zeros(T)                                                           # [T]
        frame.attention[:t + 1] = record.extras["attention"][0, head]
        return frame
    frame.state, frame.write = record.state[0, head], record.write[0, head]                    # [d_v, d_k]
    before = records[t - 1].state[0, head] if t > 0 else np.zeros_like(frame.state)
    frame.change = frame.state - before
    frame.removed = frame.change - frame.write
    d_k = frame.state.shape[-1]
    frame.diag, frame.low = transition_parts(variant, record, head)
    if REGISTRY[variant].corrects:
        # the delta rule's transition is not diagonal: what it keeps, direction by direction, is its
        # eigenvalues (1 − β along k, the decay elsewhere), smallest first
        A = transition(record)[0, head]                                                         # [d_k, d_k]
        frame.kept = np.sort(np.linalg.eigvals(A).real)
    elif record.decay is None:
        frame.kept = np.ones(d_k)
    else:                                                        # a scalar or one per channel → [d_k]
        frame.kept = np.broadcast_to(np.asarray(record.decay[0, head], dtype=float), (d_k,))
    if record.beta is not None:
        frame.beta = float(record.beta[0, head])
    elif record.a is not None:                 # RWKV-7: a = −κ̂, b = β κ̂ (Peng et al. 2025), so β = −a·b
        frame.beta = float(-record.a[0, head] @ record.b[0, head])
    if REGISTRY[variant].corrects:
        frame.correction = np.stack([record.prediction[0, head], record.target[0, head],
                                     record.error[0, head]])                                    # [3, d_v]
    return frame


def transition_parts(variant, record, head):
    """(diag [d_k], (a, b) or None): the transition of one head as diag(diag) + a bᵀ, the form the browser
    uses to rebuild a state's change from the state (app/components/plots.py, show_update). mLSTM's
    state is the stabilized C, so its decay is the stabilized forget gate."""
    d_k = record.state.shape[-1]
    if variant == "mlstm":
        decay = record.extras["forget_stabilized"][0, head]
    else:
        decay = 1.0 if record.decay is None else record.decay[0, head]
    diag = np.broadcast_to(np.asarray(decay, dtype=float), (d_k,)).copy()
    if variant in ("deltanet", "gated_deltanet"):               # D (I − β k kᵀ) = D − β (D k) kᵀ
        k = record.key[0, head].astype(float)
        return diag, (-float(record.beta[0, head]) * diag * k, k)
    if variant == "rwkv7":                                       # diag(w) + a bᵀ (Peng et al. 2025)
        return diag, (record.a[0, head].astype(float), record.b[0, head].astype(float))
    return diag, None


# ----------------------------------------------------------------------------- trained mode

def token_label(token, vocab_size):
    """k17 for a key id (below V/2), v203 for a value id, · for the filler 0."""
    if token == 0:
        return mechanism.WAIT
    return f"k{token}" if token < vocab_size // 2 else f"v{token}"


@dataclass
class TrainedRun:
    """A shipped checkpoint stepped token by token over one MQAR example."""
    key: tuple              # (variant, pairs, example): what it was computed from
    variant: str
    inputs: np.ndarray      # token ids [T]
    targets: np.ndarray     # at a query the paired value, IGNORE elsewhere [T]
    logits: np.ndarray      # [T, V]
    layers: list            # layers[l][t]: the StepRecord of layer l at token t
    limits: list            # limits[l]: the colour ranges of layer l (limits_of)
    sidecar: dict           # shared between sessions: read only
    weights: int            # number of learned parameters

    @property
    def vocab_size(self):
        return self.logits.shape[-1]

    @property
    def predictions(self):
        return self.logits.argmax(-1)                                                  # [T]

    def asked(self, t):
        return bool(self.targets[t] != IGNORE)

    def right(self, t):
        return bool(self.predictions[t] == self.targets[t])

    def score(self, t):
        """(questions answered right, questions asked) up to token t."""
        asked = [i for i in range(t + 1) if self.asked(i)]
        return sum(self.right(i) for i in asked), len(asked)

    def confidence(self, t):
        """The probability the model gives its own answer at token t (softmax of the logits)."""
        logits = self.logits[t].astype(float)
        probabilities = np.exp(logits - logits.max())                                  # [V]
        return float(probabilities[self.predictions[t]] / probabilities.sum())


RUNS = Worker("state-trained")


@shared_cache(maxsize=8)
def run_trained(variant, pairs, example):
    """One MQAR example (seed = example) through `variant`'s checkpoint, one model.step per token; once
    per process for the same example (0.1–0.2 s of CPU), shared by every visitor: read it only."""
    model, sidecar = load_model(variant)
    length = sidecar.get("task", {}).get("seq_len", TRAINED_LENGTH)
    inputs, targets = mqar(vocab_size=model.config.vocab_size, seq_len=length, num_pairs=pairs,
                           num_examples=1, seed=example)                               # [1, L] each
    logits, layers = step_through(model, inputs[0])
    return TrainedRun((variant, pairs, example), variant, inputs[0].numpy(), targets[0].numpy(), logits,
                      layers, [limits_of(layer, TRAINED_QUANTILE) for layer in layers], sidecar,
                      model.num_parameters())


# ----------------------------------------------------------------------------- the store

class MechanismBounds(param.Parameterized):
    """Mechanism mode reads `pairs` from the URL with its own, smaller bound."""
    pairs = param.Integer(default=4, bounds=(1, MECHANISM_PAIRS))


class StateStore(param.Parameterized):
    """One session's inputs for this dashboard, and the records for them (of the mode that is on)."""

    mode = param.Selector(default="mechanism", objects=list(MODES),
                          doc="mechanism: readable tokens, random vectors; trained: a checkpoint on MQAR")
    variant = param.Selector(default=DEFAULT_VARIANT, objects=list(REGISTRY))
    layer = param.Selector(default="both", objects=list(LAYERS), doc="trained mode: the layer shown")
    source = param.Selector(default="preset", objects=["preset", "mqar", "typed"])
    preset = param.Selector(default="phonebook", objects=list(mechanism.PRESETS))
    pairs = param.Integer(default=4, bounds=(1, 16),
                          doc=f"MQAR: number of key-value pairs (mechanism: ≤ {MECHANISM_PAIRS})")
    example = param.Integer(default=0, bounds=(0, 9999), doc="MQAR: which example (its seed)")
    text = param.String(default="Anna:21 Bruno:47 Anna:99 Anna? Bruno?", doc="typed tokens")
    heads = param.Integer(default=1, bounds=(1, mechanism.MAX_HEADS))
    alpha = param.Number(default=REGISTRY[DEFAULT_VARIANT].alpha, bounds=(0.05, 1.0),
                         doc="forget gate: fraction kept per step")
    beta = param.Number(default=REGISTRY[DEFAULT_VARIANT].beta, bounds=(0.0, 1.0), doc="delta rule step size")
    seed = param.Integer(default=0, bounds=(0, 9999), doc="seed of the random token vectors")
    keys = param.Selector(default="perpendicular", objects=list(mechanism.KEYS),
                          doc="mechanism mode: one key column per name, or random unit keys")

    result = param.Parameter(default=None, doc="mechanism mode: the latest mechanism.Run (read-only for views)")
    limits = param.Dict(default={}, doc="mechanism mode: the colour ranges of `result` (limits_of)")
    problems = param.List(default=[], doc="(code, detail) problems of the typed text")
    trained = param.Parameter(default=None, doc="trained mode: the latest TrainedRun (read-only for views)")
    failure = param.Parameter(default=None, doc="trained mode: ('missing' or 'invalid', file name)")

    URL = {"mode": "mode", "variant": "variant", "layer": "layer", "source": "source", "preset": "preset",
           "pairs": "pairs", "example": "example", "text": "text", "heads": "heads", "alpha": "alpha",
           "beta": "beta", "seed": "seed", "keys": "keys"}
    INPUTS = [name for name in URL if name != "layer"]          # the layer only changes what is drawn

    def __init__(self, **params):
        params.setdefault("alpha", REGISTRY[params.get("variant", DEFAULT_VARIANT)].alpha)
        if params.get("mode", "mechanism") == "mechanism":
            params["pairs"] = min(params.get("pairs", 4), MECHANISM_PAIRS)
        else:
            params.setdefault("pairs", TRAINED_PAIRS)
        super().__init__(**params)
        self._runs = Latest(RUNS, lambda: (self.variant, self.pairs, self.example), run_trained, self._ran)
        self.param.watch(self._changed, self.INPUTS)
        self._compute(now=True)

    def _changed(self, *events):
        names = {e.name for e in events}
        if "variant" in names and not names & {"alpha", "beta"}:
            # a newly chosen model starts from its own default gates
            record = REGISTRY[self.variant]
            if (self.alpha, self.beta) != (record.alpha, record.beta):
                self.param.update(alpha=record.alpha, beta=record.beta)   # comes back here through the watcher
                return
        if self.mode == "mechanism" and self.pairs > MECHANISM_PAIRS:
            self.pairs = MECHANISM_PAIRS               # back from trained mode: comes back here too
            return
        self._compute()

    def _ran(self, run):
        if self.mode == "trained":                     # not if the page went back to mechanism mode meanwhile
            self.param.update(trained=run, failure=None)

    def length(self):
        """Number of frames of the current run (1 when a checkpoint could not be loaded)."""
        if self.mode == "trained":
            return len(self.trained.inputs) if self.trained is not None else 1
        return len(self.result.records)

    def tokens(self):
        if self.source == "mqar":
            return mechanism.mqar_tokens(self.pairs, self.example), []
        if self.source == "typed":
            tokens, problems = mechanism.parse(self.text)
            if not tokens:
                tokens, _ = mechanism.parse(mechanism.PRESETS["phonebook"])
            return tokens, problems
        return mechanism.parse(mechanism.PRESETS[self.preset])[0], []

    def _compute(self, now=False):
        if self.mode == "trained":
            self._compute_trained(now)
            return
        tokens, problems = self.tokens()
        result = mechanism.shared_run(self.variant, tuple(tokens), heads=self.heads, alpha=self.alpha,
                                      beta=self.beta, seed=self.seed, keys=self.keys)
        self.param.update(problems=problems, result=result,
                          limits=result.derived("limits", lambda: limits_of(result.records)))

    def _compute_trained(self, now=False):
        """The run of the trained settings: `now` as the page is built; after that on RUNS, off the event loop
        (stepping 64 tokens takes 0.1–0.2 s of CPU: three visitors turning the example number every 0.3 s
        moved every other visitor's knob p50 from 23 to 645 ms while it ran on the loop)."""
        key = (self.variant, self.pairs, self.example)
        if self.trained is not None and self.trained.key == key:
            return                                     # a mechanism knob moved: nothing to run again
        try:
            load_model(self.variant)                   # once per process (~0.01 s); checks the checksums
        except FileNotFoundError:
            self.param.update(trained=None, failure=("missing", path_of(self.variant).name))
        except ValueError:
            self.param.update(trained=None, failure=("invalid", path_of(self.variant).name))
        else:
            if now:
                self.param.update(trained=run_trained(*key), failure=None)
            else:
                self._runs.ask()
