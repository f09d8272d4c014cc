"""The transition knob's arithmetic and its store (no Panel, no Bokeh).

The knob's rule, S_t = S_{t-1} D_t (I − β k_t k_tᵀ) + v_t k_tᵀ, runs as the engine's RWKV-7 step
(diagonal plus low rank). Its decay D_t is the gate recipe's (engine.gates.make_gates): at gate
"fixed", "scalar" or "channel" it is exactly the decay of RetNet, Mamba-2 or GLA. The small multiples
run each named model with its own engine variant and the same recipe: α from the knob, decaying only
on the tokens that write, β = 1.
"""
from dataclasses import dataclass

import numpy as np
import param
import torch

from lineare.app import mechanism
from lineare.app.i18n import N_
from lineare.app.variants import KNOB_GATES, REGISTRY
from lineare.engine.gates import make_gates
from lineare.engine.ops import forward
from lineare.engine.stepping import init_state, step

D_K, D_V = mechanism.D_K, mechanism.D_V

# the phone book with a number that changes: α and β both show on recall
PRESETS = {"update": "Anna:21 Bruno:47 Anna:21 Carla:35 Anna:99 Dario:62 · · Bruno? Anna? Carla? Dario?",
           **mechanism.PRESETS}
SEQUENCE_NAMES = {"update": N_("Phone book with a change"), **mechanism.PRESET_NAMES}

ALPHA_FLOOR = 1e-6                    # α = 0 forgets everything; the recipe needs α > 0
SOFTMAX_SCALE = mechanism.SCALE["softmax"]
DECAY_OF_GATE = {"fixed": "retnet", "scalar": "mamba2", "channel": "gla"}    # whose decay each gate is
JUMPS = tuple(name for name, record in REGISTRY.items() if record.knob)      # the models the knob reaches
DEFAULT_DECAY = 0.9                   # α taken when a jump lands on a forgetting model with α = 1


# ---------------------------------------------------------------------- the arithmetic

@dataclass(frozen=True)
class Match:
    """Where the knob is: on named models (`exact`), or between two (`between`), and near models that are
    off the knob (`close`)."""
    exact: tuple = ()
    between: tuple = ()
    close: tuple = ()                 # models whose nearest setting this is (RWKV-6, RWKV-7, mLSTM), not on it


def effective_gate(gate, alpha):
    """A gate that keeps everything (α = 1) is no gate."""
    return "none" if gate == "none" or alpha >= 1.0 else gate


def on_knob(gate, beta):
    """The models the registry puts exactly at (gate, β): its `knob` positions, the one source of "on"."""
    return tuple(name for name, record in REGISTRY.items() if record.knob == (gate, beta))


def near_knob(gate, beta):
    """The models off the knob whose nearest setting (the registry's `nearest`) has this gate, and a correction
    where β > 0 (none where β = 0)."""
    return tuple(name for name, record in REGISTRY.items()
                 if record.nearest and record.nearest[0] == gate and (record.nearest[1] > 0) == (beta > 0))


def match(gate, alpha, beta):
    """The named model(s) of the unified table that the knob (gate, α, β) lands on, or lies between, and
    those it is only close to."""
    gate = effective_gate(gate, alpha)
    close = near_knob(gate, beta)
    exact = on_knob(gate, 0.0) if beta <= 0 else on_knob(gate, 1.0) if beta >= 1 else ()
    if exact or beta <= 0:
        return Match(exact=exact, close=close)
    # a correction between the plain model and its corrected twin; a fixed rate has no corrected twin, the
    # nearest is Gated DeltaNet's rate per token
    plain, corrected = on_knob(gate, 0.0), on_knob(gate, 1.0) or (on_knob("scalar", 1.0) if gate == "fixed" else ())
    between = (plain[0], corrected[0]) if plain and corrected else ()
    return Match(between=between, close=close)


def encode(tokens, seed):
    """q, k, v [1, T, 1, d] of a token sequence (one head): mechanism mode's fixed random unit vectors."""
    T = len(tokens)
    q, k, v = torch.zeros(1, T, 1, D_K), torch.zeros(1, T, 1, D_K), torch.zeros(1, T, 1, D_V)
    for t, token in enumerate(tokens):
        if token.key is not None:
            q[0, t, 0] = torch.from_numpy(mechanism.embedding(token.key, "key", 0, seed))
        if token.kind == "write":
            k[0, t, 0] = q[0, t, 0]
            v[0, t, 0] = torch.from_numpy(mechanism.embedding(token.value, "value", 0, seed))
    return q, k, v


def writes(tokens):
    """[T] bool: the tokens that write a pair. A data-dependent gate fades only on these (mechanism mode
    has no trained gate: the token's kind plays its part, as a trained Mamba-2 gate leaves filler alone)."""
    return torch.tensor([token.kind == "write" for token in tokens])


def log_decay(gate, alpha, tokens):
    """log D_t per token and key channel [1, T, 1, d_k] (0 keeps everything): the recipe's decay of the
    model each gate stands for (RetNet fades at every token, the others on writes)."""
    gate, T = effective_gate(gate, alpha), len(tokens)
    if gate == "none":
        return torch.zeros(1, T, 1, D_K)
    g = make_gates(DECAY_OF_GATE[gate], (1, T, 1, D_K), alpha=max(alpha, ALPHA_FLOOR), active=writes(tokens))["g"]
    if gate == "fixed":
        g = g.view(1, 1, 1, 1)                      # RetNet's [H]: one rate for every token
    elif gate == "scalar":
        g = g.unsqueeze(-1)                         # Mamba-2's [1, T, H]: one per token
    return g.expand(1, T, 1, D_K).clone()           # GLA's [1, T, H, d_k] already; → [1, T, 1, d_k]


def knob_gates(gate, alpha, beta, tokens, k):
    """The knob as the engine's DPLR step: S (diag(w) + a bᵀ) + v kᵀ with w = D_t, a = D_t k, b = −β k."""
    g = log_decay(gate, alpha, tokens)
    return {"g": g, "a": g.exp() * k, "b": -beta * k}


def named_gates(variant, alpha, tokens, k):
    """The engine gates of a named model on this sequence: α from the knob, decaying only on the tokens
    that write (RetNet: on every token), β = 1."""
    return make_gates(variant, tuple(k.shape), alpha=max(alpha, ALPHA_FLOOR), beta=1.0, keys=k,
                      active=writes(tokens))


@dataclass(eq=False)
class Question:
    """One question of the sequence and what the memory answered."""
    position: int
    token: object
    expected: str | None              # the latest value stored under that name (None: never stored)
    cosines: np.ndarray               # cosine of the read-out with each candidate value [C]
    answer: str | None                # the candidate with the largest cosine (None: nothing left, or a tie)
    tied: tuple = ()                  # the candidates as close as the largest, up to rounding (mechanism.decode)

    @property
    def right(self):
        return self.answer is not None and self.answer == self.expected


@dataclass(eq=False)
class Recall:
    candidates: list                  # the stored values, sorted: the columns of the decoding picture
    questions: list

    @property
    def correct(self):
        return sum(q.right for q in self.questions)


def decode(tokens, outputs, seed):
    """Each question's read-out o_t [T, d_v] against every stored value (cosine), decoded as in mechanism
    mode (`mechanism.decode`: a tie is no answer)."""
    candidates = sorted({t.value for t in tokens if t.kind == "write"})
    table = np.stack([mechanism.embedding(c, "value", 0, seed) for c in candidates])     # [C, d_v]
    latest, questions = {}, []
    for position, token in enumerate(tokens):
        if token.kind == "write":
            latest[token.key] = token.value
        if token.kind != "ask":
            continue
        output = np.asarray(outputs[position], dtype=float)
        norm = np.linalg.norm(output)
        if norm > 1e-6:
            cosines = table @ output / norm
            answer, _cosine, tied = mechanism.decode(cosines, candidates, outputs.dtype)
        else:
            cosines, answer, tied = np.zeros(len(candidates)), None, ()
        questions.append(Question(position, token, latest.get(token.key), cosines, answer, tied))
    return Recall(candidates, questions)


@dataclass(eq=False)
class Sequence:
    tokens: list
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    limit: float                      # colour range of every state picture for this sequence
    shown_at: int                     # the token whose transition is drawn


@dataclass(eq=False)
class KnobRun:
    match: Match
    state: np.ndarray                 # S_T [d_v, d_k]
    transition: np.ndarray            # D_t (I − β k kᵀ) at `shown_at` [d_k, d_k], from its StepRecord
    recall: Recall


@dataclass(eq=False)
class Comparison:
    variant: str
    memory: np.ndarray                # S_T [d_v, d_k], or softmax's value cache [T, d_v]
    recall: Recall


def make_sequence(preset, seed):
    tokens = mechanism.parse(PRESETS[preset])[0]
    q, k, v = encode(tokens, seed)
    # the colour range: the largest entry of the two unforgetting states (sum and delta rule)
    _o, summed = forward("linear", q, k, v, form="recurrent", scale=1.0)
    _o, corrected = forward("deltanet", q, k, v, form="recurrent", scale=1.0,
                            beta=torch.ones(1, len(tokens), 1))
    limit = float(max(summed.abs().max(), corrected.abs().max()))
    return Sequence(tokens, q, k, v, limit, transition_token(tokens))


def transition_token(tokens):
    """The last write that changes a stored number (the interesting one for β), else the last write."""
    stored, changed, last = {}, None, 0
    for position, token in enumerate(tokens):
        if token.kind == "write":
            if token.key in stored and stored[token.key] != token.value:
                changed = position
            stored[token.key] = token.value
            last = position
    return last if changed is None else changed


def run_knob(sequence, gate, alpha, beta, seed):
    s, t = sequence, sequence.shown_at
    gates = knob_gates(gate, alpha, beta, s.tokens, s.k)
    outputs, state = forward("rwkv7", s.q, s.k, s.v, form="recurrent", scale=1.0, **gates)
    # the transition at token t depends on that token's gates only: one recorded step from an empty state
    empty = init_state("rwkv7", d_k=D_K, d_v=D_V)
    _o, _S, record = step("rwkv7", empty, s.q[:, t], s.k[:, t], s.v[:, t], scale=1.0,
                          **{name: x[:, t] for name, x in gates.items()})
    transition = np.diag(record.decay[0, 0]) + np.outer(record.a[0, 0], record.b[0, 0])    # diag(w) + a bᵀ
    return KnobRun(match(gate, alpha, beta), state[0, 0].numpy(), transition,
                   decode(s.tokens, outputs[0, :, 0].numpy(), seed))


def run_named(sequence, variant, alpha, seed):
    s = sequence
    scale = SOFTMAX_SCALE if variant == "softmax" else 1.0
    outputs, final = forward(variant, s.q, s.k, s.v, form="recurrent", scale=scale,
                             **named_gates(variant, alpha, s.tokens, s.k))
    if variant == "softmax":
        memory = final.v[0, :, 0].numpy()                                              # [T, d_v]
    else:
        memory = (final.C if variant == "mlstm" else final)[0, 0].numpy()
    return Comparison(variant, memory, decode(s.tokens, outputs[0, :, 0].numpy(), seed))


class TransitionStore(param.Parameterized):
    """One session's knobs, the sequence they act on, and what the engine made of it."""

    gate = param.Selector(default="none", objects=list(KNOB_GATES), doc="who sets the decay D_t")
    alpha = param.Number(default=0.9, bounds=(0.0, 1.0), doc="forget: fraction kept per decay step")
    beta = param.Number(default=0.0, bounds=(0.0, 1.0), doc="correct: fraction of S k erased before writing")
    preset = param.Selector(default="update", objects=list(PRESETS))
    seed = param.Integer(default=0, bounds=(0, 9999), doc="seed of the random token vectors")
    model1 = param.Selector(default="linear", objects=list(REGISTRY))
    model2 = param.Selector(default="mamba2", objects=list(REGISTRY))
    model3 = param.Selector(default="deltanet", objects=list(REGISTRY))

    sequence = param.Parameter(default=None, doc="the tokens and their vectors (derived)")
    knob = param.Parameter(default=None, doc="the knob's KnobRun (derived)")
    compared = param.List(default=[], doc="a Comparison per small multiple (derived)")

    URL = {"gate": "gate", "alpha": "alpha", "beta": "beta", "preset": "preset", "seed": "seed",
           "model1": "model1", "model2": "model2", "model3": "model3"}
    MODELS = ("model1", "model2", "model3")

    def __init__(self, **params):
        super().__init__(**params)
        self.param.watch(self._changed, list(self.URL))
        self._compute(set(self.URL))

    def jump(self, variant):
        """Set the knobs to a named model (a forgetting one gets α = 0.9 if α was 1)."""
        gate, beta = REGISTRY[variant].knob
        alpha = DEFAULT_DECAY if gate != "none" and self.alpha >= 1.0 else self.alpha
        self.param.update(gate=gate, beta=beta, alpha=alpha)

    def _changed(self, *events):
        self._compute({e.name for e in events})

    def _compute(self, names):
        """Recompute only what the changed knobs reach: the sequence, the knob, the small multiples."""
        sequence = self.sequence
        if sequence is None or names & {"preset", "seed"}:
            sequence = make_sequence(self.preset, self.seed)
        knob = self.knob
        if knob is None or names & {"preset", "seed", "gate", "alpha", "beta"}:
            knob = run_knob(sequence, self.gate, self.alpha, self.beta, self.seed)
        compared = list(self.compared) or [None] * 3
        for slot, name in enumerate(self.MODELS):
            if compared[slot] is None or names & {"preset", "seed", "alpha", name}:
                compared[slot] = run_named(sequence, getattr(self, name), self.alpha, self.seed)
        self.param.update(sequence=sequence, knob=knob, compared=compared)
