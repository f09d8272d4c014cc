"""Dashboard "The transition knob" (DESIGN §3, §6.3): the unified table made continuous.

Every model of the family rewrites its state as S_t = S_{t-1} · transition_t + write_t. The knob
spans the family with one rule,

    S_t = S_{t-1} D_t (I − β k_t k_tᵀ) + v_t k_tᵀ,     o_t = S_t q_t,

where D_t is I (no gate), α I (fixed), α_t I (scalar, one per token) or diag(α_t) (per channel),
and β ∈ [0, 1] is how much of what the memory says about k_t is erased before writing. The engine
runs it as a diagonal-plus-low-rank transition (its RWKV-7 step, with a = D_t k_t and b = −β k_t);
at the named settings it is exactly linear attention, RetNet, Mamba-2, GLA, DeltaNet, Gated
DeltaNet (tests/test_transition.py checks each against the engine's own variant). Between them the
knob writes the whole v kᵀ, as RWKV-7 does, where DeltaNet writes β v kᵀ: the two meet at β = 1.

Mechanism mode (app/mechanism.py): nothing is trained, so the gates come from the knobs and the
token's kind. A data-dependent gate fades the memory only on tokens that write a pair (waits and
questions leave it alone), the choice a trained Mamba-2 gate makes on filler; per channel, each
key dimension fades at its own speed around α (the same spread as mechanism.gates).

`TransitionStore` (one per session) holds the knobs, the sequence and the results: the knob's run
(engine.ops.forward: final state and recall; engine.stepping.step records the transition at one
token), and three named models on the same sequence for the small multiples. `TransitionView` only
draws. A knob turn costs a few milliseconds: the sequences are short (at most 40 tokens, d = 16).
"""
import functools
import html
from dataclasses import dataclass

import numpy as np
import panel as pn
import param
import torch
from bokeh.models import (ColorBar, ColumnDataSource, FixedTicker, HoverTool, LinearColorMapper,
                          Range1d)
from bokeh.plotting import figure

from app import mechanism
from app.components.plots import PALETTE, MatrixPicture, TICK_SIZE, _style, number_format
from app.components.controls import mechanism_knobs, sidebar_label
from app.components.text import TEXT_CSS, Explanation, to_html
from app.dashboards import Page
from app.dashboards.state_fills_up import PAPERS, PRESET_NAMES, VARIANT_NAMES
from app.i18n import N_, _, current_language, format_number
from app.urlstate import read_query, write_query
from engine.ops import VARIANTS, forward
from engine.stepping import init_state, step

SLUG = "transition"
D_K, D_V = mechanism.D_K, mechanism.D_V

GATES = ("none", "fixed", "scalar", "channel")
GATE_NAMES = {"none": N_("None: keeps everything"), "fixed": N_("Fixed: the same at every token"),
              "scalar": N_("Scalar: one per token"), "channel": N_("Per channel: one per column")}

# the phone book with a number that changes: α and β both show on recall
PRESETS = {"update": "Anna:21 Bruno:47 Anna:21 Carla:35 Anna:99 Dario:62 · · Bruno? Anna? Carla? Dario?",
           **mechanism.PRESETS}
SEQUENCE_NAMES = {"update": N_("Phone book with a change"), **PRESET_NAMES}

ALPHA_FLOOR = 1e-6                    # α = 0 forgets everything; its log is kept finite for the engine
SPREAD = torch.linspace(0.25, 1.75, D_K)     # per channel: log α_i = s_i log α (as mechanism.gates)
SOFTMAX_SCALE = mechanism.SCALE["softmax"]

# where each named model sits on the knob: (gate, β). α is the knob's own value.
KNOB_OF = {"linear": ("none", 0.0), "retnet": ("fixed", 0.0), "mamba2": ("scalar", 0.0),
           "gla": ("channel", 0.0), "deltanet": ("none", 1.0), "gated_deltanet": ("scalar", 1.0),
           "rwkv7": ("channel", 1.0)}
JUMPS = ("linear", "retnet", "mamba2", "gla", "deltanet", "gated_deltanet", "rwkv7")
DEFAULT_DECAY = 0.9                   # α taken when a jump lands on a forgetting model with α = 1


# ---------------------------------------------------------------------- the arithmetic

@dataclass(frozen=True)
class Match:
    """Where the knob is: on named models (`exact`), or between two (`between`), or neither."""
    exact: tuple = ()
    between: tuple = ()


def effective_gate(gate, alpha):
    """A gate that keeps everything (α = 1) is no gate."""
    return "none" if gate == "none" or alpha >= 1.0 else gate


def match(gate, alpha, beta):
    """The named model(s) of the unified table that the knob (gate, α, β) lands on."""
    gate = effective_gate(gate, alpha)
    if gate == "channel":                  # per channel: GLA (RWKV-6's transition too); with β, RWKV-7-like
        return Match(exact=("gla", "rwkv6")) if beta <= 0 else Match(exact=("rwkv7",))
    if gate == "fixed":                    # a fixed rate with a correction is no model of the table
        return Match(exact=("retnet",)) if beta <= 0 else Match(between=("retnet", "gated_deltanet"))
    plain, corrected = {"none": ("linear", "deltanet"), "scalar": ("mamba2", "gated_deltanet")}[gate]
    if beta <= 0:
        return Match(exact=(plain,))
    if beta >= 1:
        return Match(exact=(corrected,))
    return Match(between=(plain, corrected))


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


def log_decay(gate, alpha, tokens):
    """log D_t per token and key channel [1, T, 1, d_k] (0 keeps everything)."""
    gate, T = effective_gate(gate, alpha), len(tokens)
    log_alpha = float(np.log(max(alpha, ALPHA_FLOOR)))
    writes = torch.tensor([1.0 if t.kind == "write" else 0.0 for t in tokens])
    per_token = {"none": torch.zeros(T), "fixed": torch.full((T,), log_alpha),
                 "scalar": writes * log_alpha, "channel": writes * log_alpha}[gate]       # [T]
    spread = SPREAD if gate == "channel" else torch.ones(D_K)                             # [d_k]
    return (per_token[:, None] * spread).view(1, T, 1, D_K).clone()


def knob_gates(gate, alpha, beta, tokens, k):
    """The knob as the engine's DPLR step: S (diag(w) + a bᵀ) + v kᵀ with w = D_t, a = D_t k, b = −β k."""
    g = log_decay(gate, alpha, tokens)
    return {"g": g, "a": g.exp() * k, "b": -beta * k}


def named_gates(variant, alpha, tokens, k):
    """The engine gates of a named model at its place on the knob (α from the knob, β = 1)."""
    if variant in ("linear", "softmax"):
        return {}
    if variant == "retnet":
        return {"g": log_decay("fixed", alpha, tokens)[0, 0, :, 0]}                  # [H]
    scalar = log_decay("scalar", alpha, tokens)[..., 0]                               # [1, T, 1]
    channel = log_decay("channel", alpha, tokens)                                     # [1, T, 1, d_k]
    ones = torch.ones(1, len(tokens), 1)
    if variant == "mamba2":
        return {"g": scalar}
    if variant == "gla":
        return {"g": channel}
    if variant == "rwkv6":
        return {"g": channel, "u": torch.ones(1, D_K)}
    if variant == "deltanet":
        return {"beta": ones}
    if variant == "gated_deltanet":
        return {"g": scalar, "beta": ones}
    if variant == "rwkv7":
        return knob_gates("channel", alpha, 1.0, tokens, k)
    if variant == "mlstm":                 # forget gate σ(f) = α on writes, ≈ 1 elsewhere; input gate e⁰
        kept = torch.exp(scalar).clamp(ALPHA_FLOOR, 1 - ALPHA_FLOOR)
        return {"i": torch.zeros(1, len(tokens), 1), "f": torch.log(kept / (1 - kept))}
    raise ValueError(f"unknown variant {variant!r}")


@dataclass(eq=False)
class Question:
    """One question of the sequence and what the memory answered."""
    position: int
    token: object
    expected: str | None              # the latest value stored under that name (None: never stored)
    cosines: np.ndarray               # cosine of the read-out with each candidate value [C]
    answer: str | None                # the candidate with the largest cosine

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
    """Each question's read-out o_t [T, d_v] against every stored value (cosine), as in mechanism mode."""
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
        cosines = table @ output / norm if norm > 1e-6 else np.zeros(len(candidates))
        answer = candidates[int(cosines.argmax())] if norm > 1e-6 else None
        questions.append(Question(position, token, latest.get(token.key), cosines, answer))
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

    gate = param.Selector(default="none", objects=list(GATES), doc="who sets the decay D_t")
    alpha = param.Number(default=0.9, bounds=(0.0, 1.0), doc="forget: fraction kept per decay step")
    beta = param.Number(default=0.0, bounds=(0.0, 1.0), doc="correct: fraction of S k erased before writing")
    preset = param.Selector(default="update", objects=list(PRESETS))
    seed = param.Integer(default=0, bounds=(0, 9999), doc="seed of the random token vectors")
    model1 = param.Selector(default="linear", objects=list(VARIANTS))
    model2 = param.Selector(default="mamba2", objects=list(VARIANTS))
    model3 = param.Selector(default="deltanet", objects=list(VARIANTS))

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
        gate, beta = KNOB_OF[variant]
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


def build(session):
    values, notices = read_query(TransitionStore, TransitionStore.URL, pn.state.session_args)
    store = session.store(SLUG, lambda: TransitionStore(**values))
    session.add_notices("url", notices)
    view = TransitionView(store=store, session=session)
    write_query(store, TransitionStore.URL)
    return Page(main=view, controls=view.controls())


# -------------------------------------------------------------------------- the words

# the unified table of DESIGN §3, one row per model: (transition, write, read-out, gate) in plain words …
TABLE_PLAIN = {
    "linear": (N_("keeps everything"), N_("adds the new pair"), N_("looks up the name"),
               N_("none")),
    "retnet": (N_("fades everything at a fixed rate"), N_("adds the new pair"), N_("looks up the name"),
               N_("a fixed rate per head, the same for every input")),
    "mamba2": (N_("fades everything, by an amount the token chooses"),
               N_("adds the new pair, scaled by the same choice"),
               N_("looks up the name, plus a shortcut from the input"), N_("computed from each token")),
    "gla": (N_("fades each column at its own speed, chosen by the token"), N_("adds the new pair"),
            N_("looks up the name"), N_("computed from each token, one per column")),
    "deltanet": (N_("erases what the memory says about the name"), N_("adds the new pair, times β"),
                 N_("looks up the name"), N_("β computed from each token")),
    "gated_deltanet": (N_("fades everything, then erases what the memory says about the name"),
                       N_("adds the new pair, times β"), N_("looks up the name"),
                       N_("fading and β computed from each token")),
    "rwkv6": (N_("fades each column at its own speed, chosen by the token"), N_("adds the new pair"),
              N_("reads before adding, with a bonus for the current pair"),
              N_("computed from each token, one per column")),
    "rwkv7": (N_("fades each column and erases part of what the memory says about the name"),
              N_("adds the new pair"), N_("looks up the name"),
              N_("fading and erasing strength computed from each token")),
    "mlstm": (N_("fades everything, by a forget gate"), N_("adds the new pair, times an input gate"),
              N_("looks up the name and divides by how much was written under it"),
              N_("forget and input gates computed from each token")),
    "softmax": (N_("no fixed memory"), N_("keeps every token in a list that keeps growing"),
                N_("compares the question with every stored token"), N_("none")),
}
# … and in formulas (cells with words go through _(), the others are formulas only)
TABLE_FORMULA = {
    "linear": (r"$I$", N_(r"$v_t k_t^\top$ with $k = \phi(k)$"),
               N_(r"$S_t q_t$, optionally divided by $z_t^\top q_t$, $z_t = z_{t-1} + k_t$"),
               N_(r"feature map $\phi$: elu+1 (original), identity, relu…")),
    "retnet": (N_(r"$\gamma_h I$, fixed per head"), r"$v_t k_t^\top$", r"$S_t q_t$",
               r"$\gamma_h = 1 - 2^{-5-h}$"),
    "mamba2": (r"$\alpha_t I,\ \alpha_t = \exp(\Delta_t A_h)$",
               N_(r"$v_t k_t^\top$ with $k \leftrightarrow B_t$, $q \leftrightarrow C_t$, "
                  r"$v \leftrightarrow \Delta_t x_t$"),
               r"$S_t q_t + D x_t$",
               r"$A = -\exp(A_{\log}),\ \Delta = \mathrm{softplus}(\cdot + b_\Delta)$"),
    "gla": (r"$\mathrm{diag}(\alpha_t),\ \alpha_t \in (0,1)^{d_k}$", r"$v_t k_t^\top$", r"$S_t q_t$",
            N_(r"$\log \alpha_t = \mathrm{logsigmoid}(\cdot)/16$, low-rank projection")),
    "deltanet": (r"$I - \beta_t k_t k_t^\top$", r"$\beta_t v_t k_t^\top$", r"$S_t q_t$",
                 N_(r"$\beta_t = \sigma(\cdot)$ (×2 allows negative eigenvalues); $q, k$ L2-normalized")),
    "gated_deltanet": (r"$\alpha_t (I - \beta_t k_t k_t^\top)$", r"$\beta_t v_t k_t^\top$", r"$S_t q_t$",
                       r"$\log \alpha_t = -\exp(A_{\log})\,\mathrm{softplus}(\cdot + b_\Delta)$"),
    "rwkv6": (r"$\mathrm{diag}(w_t)$", r"$v_t k_t^\top$",
              N_(r"$(S_{t-1} + v_t (u \odot k_t)^\top)\, q_t$: reads before the update, bonus $u$"),
              r"$\log w_t = -\exp(\cdot)$"),
    "rwkv7": (N_(r"$\mathrm{diag}(w_t) + a_t b_t^\top$ (generalized delta rule)"), r"$v_t k_t^\top$",
              r"$S_t q_t$", N_(r"$a = -\hat\kappa$, $b = \hat\kappa \odot$ in-context learning rate")),
    "mlstm": (r"$f_t I$", N_(r"$i_t v_t k_t^\top$, normalizer $n_t = f_t n_{t-1} + i_t k_t$"),
              N_(r"$S_t q_t / \max(|n_t^\top q_t|, 1)$, stabilized with $m_t$"),
              N_(r"$i = \exp(\tilde\imath)$, $f$ = sigmoid or exp")),
    "softmax": (r"—", N_(r"append $k_t, v_t$ to the KV cache"),
                r"$\sum_i \mathrm{softmax}_i(q_t^\top k_i)\, v_i$", r"—"),
}
COLUMNS_PLAIN = (N_("model"), N_("what happens to the old memory"), N_("what is written"),
                 N_("how it answers"), N_("who sets the gates"))
COLUMNS_FORMULA = (N_("model"), N_(r"transition (right-multiplies $S_{t-1}$)"), N_("write"),
                   N_("read-out"), N_("gate parametrization in a layer"))

DECAY_PLAIN = {
    "none": N_("The old memory is kept whole."),
    "fixed": N_("At every token, pauses and questions included, the old memory keeps α = {alpha} of itself."),
    "scalar": N_("Each time a new pair arrives, the old memory keeps α = {alpha} of itself; pauses and "
                 "questions leave it alone. The token decides when to forget."),
    "channel": N_("Each time a new pair arrives, every column of the memory keeps its own share of itself: "
                  "from {high} for the slowest column to {low} for the fastest."),
}
DECAY_FORMULA = {
    "none": N_(r"$D_t = I$: no decay."),
    "fixed": N_(r"$D_t = \alpha I$ at every token."),
    "scalar": N_(r"$D_t = \alpha_t I$, with $\alpha_t = \alpha$ on tokens that write and $\alpha_t = 1$ on "
                 r"the others: here the token's kind plays the part of a trained $\Delta_t$."),
    "channel": N_(r"$D_t = \mathrm{diag}(\alpha_t)$ on tokens that write, with $\alpha_{t,i} = "
                  r"\alpha^{s_i}$ and $s_i$ from 0.25 to 1.75."),
}
CORRECTION_FORMULA = N_(r"Before writing, $\beta\,(S_{t-1} D_t k_t)\, k_t^\top$ is removed: that share of "
                        r"what the memory predicts for $k_t$.")


def number(x, decimals=2):
    return format_number(round(float(x), decimals), decimals)


def model_name(variant):
    return _(VARIANT_NAMES[variant])


# ------------------------------------------------------------------------- the pictures

class RecallPicture:
    """Questions × stored values: the cosine of each question's read-out with each stored value.

    The right answer's cell is framed, the memory's answer (the largest cosine) carries a dot.
    """

    def __init__(self, title, x_label, y_label, *, width=490, height=260):
        self.mapper = LinearColorMapper(palette=PALETTE, low=-1, high=1)          # cosines: fixed range
        self.source = ColumnDataSource({"image": [np.zeros((1, 1))]})
        self.right = ColumnDataSource({"x": [], "y": []})
        self.chosen = ColumnDataSource({"x": [], "y": []})
        self.figure = _style(figure(title=title, width=width, height=height, x_range=Range1d(0, 1),
                                    y_range=Range1d(1, 0)), x_label, y_label)
        self.image = self.figure.image(image="image", x=0, y=0, dw=1, dh=1, source=self.source,
                                       color_mapper=self.mapper)
        self.figure.rect(x="x", y="y", width=0.92, height=0.92, source=self.right, fill_alpha=0,
                         line_color="#102a43", line_width=3)
        self.figure.scatter(x="x", y="y", source=self.chosen, size=11, marker="circle",
                            fill_color="white", line_color="#102a43", line_width=2)
        self.figure.add_layout(ColorBar(color_mapper=self.mapper, major_label_text_font_size=TICK_SIZE, width=14,
                                        ticker=FixedTicker(ticks=[-1, -0.5, 0, 0.5, 1]), formatter=number_format()),
                               "right")
        self.figure.add_tools(HoverTool(tooltips=[("cos", "@image{0.00}")], renderers=[self.image]))
        self.figure.xaxis.ticker = self.x_ticks = FixedTicker(ticks=[])    # one tick per cell, relabelled
        self.figure.yaxis.ticker = self.y_ticks = FixedTicker(ticks=[])

    def show(self, recall):
        questions, candidates = recall.questions, recall.candidates
        rows, cols = max(len(questions), 1), max(len(candidates), 1)
        grid = np.array([q.cosines for q in questions]) if questions else np.zeros((1, cols))
        fig = self.figure
        fig.x_range.update(start=0, end=cols)
        fig.y_range.update(start=rows, end=0)
        self.image.glyph.update(dw=cols, dh=rows)
        self.x_ticks.ticks = [c + 0.5 for c in range(cols)]
        fig.xaxis.major_label_overrides = {c + 0.5: str(v) for c, v in enumerate(candidates)}
        self.y_ticks.ticks = [r + 0.5 for r in range(rows)]
        fig.yaxis.major_label_overrides = {r + 0.5: q.token.text for r, q in enumerate(questions)}
        crowded = cols > 12                                  # many stored numbers: upright, smaller labels
        fig.xaxis.major_label_orientation = 1.5708 if crowded else 0
        fig.xaxis.major_label_text_font_size = "9pt" if crowded else TICK_SIZE
        self.source.data.update(image=[grid])
        where = lambda pairs: {"x": [c + 0.5 for c, _r in pairs], "y": [r + 0.5 for _c, r in pairs]}
        self.right.data.update(where([(candidates.index(q.expected), r) for r, q in enumerate(questions)
                                      if q.expected in candidates]))
        self.chosen.data.update(where([(candidates.index(q.answer), r) for r, q in enumerate(questions)
                                       if q.answer is not None]))


PAGE_CSS = """
:host { width: 100%; }
h1 { margin: 0; font-size: 30px; color: #102a43; }
h2 { margin: 18px 0 4px 0; font-size: 23px; color: #102a43; }
"""
LAMP_CSS = """
:host { width: 100%; }
.lamp { border-left: 8px solid #f0b429; background: #fff8e1; border-radius: 6px; padding: 8px 14px;
        font-size: 24px; color: #102a43; }
.lamp .between { color: #52606d; }
.lamp small { display: block; font-size: 15px; color: #52606d; margin-top: 2px; }
"""
TABLE_CSS = """
:host { width: 100%; }
table { border-collapse: separate; border-spacing: 0; width: 100%; font-size: 15px; line-height: 1.35;
        color: #1f2933; }
th { text-align: left; background: #1d4f7a; color: white; padding: 6px 8px; font-weight: 600; }
th:first-child { border-top-left-radius: 6px; } th:last-child { border-top-right-radius: 6px; }
td { padding: 5px 8px; border-bottom: 1px solid #d9e2ec; vertical-align: top; }
td p { margin: 0; }
td.name { font-weight: 700; white-space: nowrap; }
td.name .paper { display: block; font-weight: normal; font-size: 12px; color: #52606d; }
tr.lit td { background: #ffe8a3; }
tr.lit td.name { box-shadow: inset 6px 0 0 #f0b429; }
tr.near td { background: #f2f6fa; }
tr.near td.name { box-shadow: inset 6px 0 0 #9fb3c8; }
.mark { font-size: 13px; font-weight: 600; color: #8d5a00; }
tr.near .mark { color: #52606d; }
math { font-size: 1.05em; }
"""
ANSWERS_CSS = """
:host { font-size: 17px; }
table { border-collapse: collapse; }
td { padding: 2px 8px 2px 0; }
.ok { color: #1a7f37; font-weight: 700; } .bad { color: #b42318; font-weight: 700; }
.muted { color: #616e7c; font-size: 15px; }
.score { font-size: 20px; font-weight: 700; color: #102a43; margin-bottom: 4px; }
"""
CARD = dict(margin=(0, 12, 12, 0))


def answers_html(recall, compact=False):
    """The score, then one line per question: asked name, the memory's answer, ✓ or ✗, near ties."""
    total = len(recall.questions)
    score = _("{right} of {total} answers right").format(right=recall.correct, total=total)
    rows = []
    for q in recall.questions:
        if q.expected is None:
            verdict = '<span class="bad">%s</span>' % html.escape(_("never stored"))
        elif q.right:
            verdict = f'<span class="ok">{html.escape(q.answer)} ✓</span>'
        elif q.answer is None:
            verdict = '<span class="bad">%s ✗</span>' % html.escape(_("nothing left in memory"))
        else:
            verdict = '<span class="bad">%s ✗</span> <span class="muted">%s</span>' % (
                html.escape(q.answer), html.escape(_("right: {value}").format(value=q.expected)))
        note = ""
        if not compact and len(q.cosines) > 1:
            order = np.argsort(q.cosines)[::-1]
            best, second = q.cosines[order[0]], q.cosines[order[1]]
            if best - second < 0.15:
                note = html.escape(_("nearly a tie with {value}").format(value=recall.candidates[order[1]]))
            else:
                note = html.escape(_("match {percent}%").format(percent=round(100 * best)))
        rows.append(f"<tr><td>{html.escape(q.token.text)}</td><td>{verdict}</td>"
                    f'<td class="muted">{note}</td></tr>')
    return f'<div class="score">{html.escape(score)}</div><table>{"".join(rows)}</table>'


class TransitionView(pn.viewable.Viewer):
    """Draws a TransitionStore: the lamp, the knob's pictures, the unified table, the small multiples."""

    store = param.ClassSelector(class_=TransitionStore)
    session = param.Parameter()

    def __init__(self, **params):
        super().__init__(**params)
        session = self.session
        self.intro = Explanation(
            session,
            elementare=_("Every model here keeps a memory of the same size and updates it at every token in "
                         "two moves: first it transforms what it already holds (the **transition**), then it "
                         "adds the new pair. Only the transition changes from one model to another. Turn the "
                         "knobs on the left: **forget α** fades the old memory, **correct β** erases what the "
                         "memory said about a name before writing it again, and the **gate** says who decides "
                         "the fading."),
            superiore=_(r"One skeleton for the whole family: $S_t = S_{t-1} A_t + W_t$, with a transition "
                        r"$A_t$ and a write $W_t$, and $o_t = S_t q_t$. The knob makes the transition "
                        r"continuous: $$S_t = S_{t-1}\, D_t\, (I - \beta\, k_t k_t^\top) + v_t k_t^\top$$ "
                        r"with $D_t = I$ (no gate), $\alpha I$ (fixed), $\alpha_t I$ (scalar) or "
                        r"$\mathrm{diag}(\alpha_t)$ (per channel). The engine runs it as a diagonal-plus-low-rank "
                        r"transition (its RWKV-7 step); on a lit row it has exactly that row's transition and "
                        r"write. Between rows the knob writes the whole $v_t k_t^\top$, as RWKV-7 does, where "
                        r"DeltaNet writes $\beta_t v_t k_t^\top$: the two meet at $\beta = 1$."))
        self.lamp = pn.pane.HTML(stylesheets=[LAMP_CSS], sizing_mode="stretch_width", margin=(6, 10))
        self.setting = Explanation(session)
        self.jumps = {v: pn.widgets.Button(name=model_name(v), button_type="primary", button_style="outline",
                                           height=40, stylesheets=[":host { font-size: 15px; }"])
                      for v in JUMPS}
        for variant, button in self.jumps.items():
            button.on_click(lambda _event, variant=variant: self.store.jump(variant))

        self.transition = MatrixPicture(_("Transition"), _("to key dimension"), _("from key dimension"),
                                        D_K, D_K, width=330, height=310, value_label=_("value"))
        self.transition.set_limit(1.0)
        self.state = MatrixPicture(_("Memory S at the end"), _("key dimension"), _("value dimension"),
                                   D_V, D_K, width=330, height=310, value_label=_("value"))
        self.recall = RecallPicture(_("What each answer matches"), _("stored number"), _("question"))
        self.answers = pn.pane.HTML(stylesheets=[ANSWERS_CSS], margin=(0, 10))
        self.table = pn.pane.HTML(stylesheets=[TEXT_CSS, TABLE_CSS], sizing_mode="stretch_width",
                                  margin=(4, 10))

        self.small = [self._small_multiple(slot) for slot in range(3)]

        # explanations next to the pictures: they only follow the level
        explain = lambda plain, formulas: Explanation(session, elementare=plain, superiore=formulas)
        self.transition_help = explain(
            _("Before the new pair is written, the old memory is multiplied by this grid. A plain red diagonal "
              "keeps everything; a paler one fades the past; the extra pattern across the grid, when β is "
              "above 0, wipes out what the memory held about this name."),
            _(r"The transition $D_t (I - \beta k_t k_t^\top)$ at this token, a $d_k \times d_k$ matrix "
              r"that right-multiplies $S_{t-1}$: $I$ for linear attention, $\alpha I$ for RetNet and "
              r"Mamba-2, $\mathrm{diag}(\alpha_t)$ for GLA, $I - k_t k_t^\top$ for DeltaNet (it removes the "
              r"direction $k_t$). Read from the engine's record of this step."))
        self.state_help = explain(
            _("The memory after the whole sequence. The colour scale stays the same for every setting of "
              "the knobs, so a memory that forgets looks paler."),
            _(r"$S_T \in \mathbb{R}^{d_v \times d_k}$, here $16 \times 16$, after the last token. The "
              r"colour range is fixed per sequence (the largest entry of the states of linear attention and "
              r"DeltaNet), so decay shows as paler colours."))
        self.recall_help = explain(
            _("For each question, how closely the memory's answer matches every stored number (red: close). "
              "The framed cell is the right number, the dot the memory's choice. Two red cells in a row mean "
              "two numbers are mixed up."),
            _(r"Cosine of the read-out $o_t = S_t q_t$ with each stored value vector $v$; the answer is the "
              r"largest. Framed: the latest value stored under the name; dot: the $\operatorname{argmax}$."))
        self.table_help = explain(
            _("The lit row is the model the knobs are on now. mLSTM adds an input gate and divides by a "
              "running total, and softmax attention keeps every token instead of a fixed memory: these two "
              "knobs cannot reach them."),
            _(r"Paper convention: $S \in \mathbb{R}^{d_v \times d_k}$, read-out $o_t = S_t q_t$, and the "
              r"transition right-multiplies $S_{t-1}$. The same family as online regression: linear "
              r"attention maximizes $\langle S k_t, v_t \rangle$ with a proximity term, Mamba-2 adds decay, "
              r"DeltaNet takes one gradient step of size $\beta_t$ on $\tfrac12 \lVert S k_t - v_t \rVert^2$, "
              r"Gated DeltaNet adds the weight decay $\alpha_t$."))
        self.small_help = explain(
            _("Choose three models: each reads the same sequence. The picture is its memory at the end, "
              "below it how many questions it answered right. Models that forget use the same α as the "
              "knob; models that correct erase fully (β = 1). Softmax attention keeps every token but has no "
              "sense of order here, so a number that changes confuses it too."),
            _(r"The same $q_t, k_t, v_t$ for all three, run by the engine's own variant of each model; "
              r"forget gates from the knob's $\alpha$ (as above: scalar and per-channel gates act on "
              r"writes), $\beta_t = 1$ for the delta rule, $u = 1$ for RWKV-6, $i_t = 0$ for mLSTM. Softmax "
              r"attention shows its value cache instead of a state; with no positions here, a name written "
              r"twice has the same key both times, so it averages the two numbers."))

        self.store.param.watch(self._draw, ["knob", "compared", "sequence"])
        session.param.watch(self._draw_words, "level")
        self._draw()

    # -- layout

    def controls(self):
        store = self.store
        preset = pn.widgets.Select.from_param(store.param.preset, name=_("Sequence"),
                                              options={_(SEQUENCE_NAMES[p]): p for p in PRESETS},
                                              sizing_mode="stretch_width")
        gate = pn.widgets.RadioBoxGroup.from_param(store.param.gate, name=_("Gate"), inline=False,
                                                   options={_(GATE_NAMES[g]): g for g in GATES},
                                                   stylesheets=[":host { font-size: 15px; }"])
        alpha, beta, seed = mechanism_knobs(store)
        label = sidebar_label

        def gray_out(*_events):                  # with no gate, α has nothing to act on
            alpha.disabled = store.gate == "none"

        store.param.watch(gray_out, "gate")
        gray_out()
        return [preset, label(_("Gate")), gate, alpha, beta, seed]

    def _small_multiple(self, slot):
        name = TransitionStore.MODELS[slot]
        select = pn.widgets.Select.from_param(self.store.param[name], name=_("Model {n}").format(n=slot + 1),
                                              options={model_name(v): v for v in VARIANTS}, width=340)
        picture = MatrixPicture("", _("key dimension"), _("value dimension"), D_V, D_K, width=360,
                                height=330, value_label=_("value"))
        score = pn.pane.HTML(stylesheets=[ANSWERS_CSS], margin=(0, 10), width=360)
        card = pn.Column(select, pn.pane.Bokeh(picture.figure), score, width=380, **CARD)
        return {"picture": picture, "score": score, "card": card, "drawn": None}

    def __panel__(self):
        title = html.escape(_("The transition knob"))
        heading = lambda text: pn.pane.HTML(f"<h2>{html.escape(text)}</h2>", stylesheets=[PAGE_CSS],
                                            margin=(0, 10), sizing_mode="stretch_width")
        jump_label = pn.pane.HTML("<b>%s</b>" % html.escape(_("Set the knobs to:")), margin=(14, 4, 0, 10),
                                  stylesheets=[":host { font-size: 16px; }"])
        cards = pn.FlexBox(
            pn.Column(pn.pane.Bokeh(self.transition.figure), self.transition_help, width=340, **CARD),
            pn.Column(pn.pane.Bokeh(self.state.figure), self.state_help, width=340, **CARD),
            pn.Column(pn.pane.Bokeh(self.recall.figure), self.answers, self.recall_help, width=500, **CARD),
            sizing_mode="stretch_width")
        return pn.Column(
            pn.pane.HTML(f"<h1>{title}</h1>", stylesheets=[PAGE_CSS], margin=(0, 10)),
            self.intro, self.lamp, self.setting,
            pn.FlexBox(jump_label, *self.jumps.values(), sizing_mode="stretch_width"),
            cards,
            heading(_("The family in one table")), self.table, self.table_help,
            heading(_("Three models on the same sequence")), self.small_help,
            pn.FlexBox(*(s["card"] for s in self.small), sizing_mode="stretch_width"),
            sizing_mode="stretch_width")

    # -- drawing

    def _draw(self, *_events):
        store, knob, sequence = self.store, self.store.knob, self.store.sequence
        with pn.io.hold():
            self._draw_words()
            self.state.set_limit(sequence.limit)
            self.state.show(knob.state)
            self.transition.show(knob.transition)
            shown = sequence.tokens[sequence.shown_at].text
            self.transition.figure.title.text = _("Transition at {token}").format(token=shown)
            self.recall.show(knob.recall)
            self.answers.object = answers_html(knob.recall)
            for variant, button in self.jumps.items():
                button.button_style = "solid" if variant in knob.match.exact else "outline"
            for small, comparison in zip(self.small, store.compared):
                self._draw_small(small, comparison, sequence)

    def _draw_small(self, small, comparison, sequence):
        if small["drawn"] is comparison:                  # this model did not change
            return
        small["drawn"] = comparison
        picture, memory = small["picture"], comparison.memory
        fig = picture.figure
        if comparison.variant == "softmax":
            fig.title.text = _("Value cache (it grows)")
            fig.yaxis.axis_label = _("position in the sequence")
            fig.xaxis.axis_label = _("value dimension")
            picture.set_limit(max(float(np.abs(memory).max()), 1e-6))
        else:
            fig.title.text = _("Memory S at the end")
            fig.yaxis.axis_label = _("value dimension")
            fig.xaxis.axis_label = _("key dimension")
            picture.set_limit(sequence.limit)
        picture.set_rows(memory.shape[0])
        picture.show(memory)
        small["score"].object = answers_html(comparison.recall, compact=True)

    def _draw_words(self, *_events):
        """Everything whose words depend on the knobs or the level: the lamp, the setting, the table."""
        store, knob = self.store, self.store.knob
        superiore = self.session.level == "superiore"
        exact, between = knob.match.exact, knob.match.between
        if exact:
            names = " · ".join(model_name(v) for v in exact)
            text = html.escape(_("The knobs are on: {model}")).format(model=f"<b>{html.escape(names)}</b>")
            note = ""
            if "rwkv6" in exact:
                note = _("RWKV-6 has the same transition as GLA; it also reads the memory before adding the "
                         "current pair, with a bonus for that pair.")
            elif exact == ("rwkv7",):
                note = _("RWKV-7-like: a generalized delta rule, with fading per column.")
        else:
            words = html.escape(_("Between two models: {first} and {second}"))
            text = '<span class="between">%s</span>' % words.format(
                first=f"<b>{html.escape(model_name(between[0]))}</b>",
                second=f"<b>{html.escape(model_name(between[1]))}</b>")
            note = _("No model of the table sits exactly here: the rows of the two nearest are marked.")
        self.lamp.object = f'<div class="lamp" role="status">{text}<small>{html.escape(note)}</small></div>'

        gate, alpha, beta = effective_gate(store.gate, store.alpha), store.alpha, store.beta
        low, high = (number(max(alpha, ALPHA_FLOOR) ** float(s)) for s in (SPREAD[-1], SPREAD[0]))
        values = dict(alpha=number(alpha), low=low, high=high)
        plain = [_(DECAY_PLAIN[gate]).format(**values)]
        if gate == "none" and store.gate != "none":
            plain.append(_("With α = 1 the gate keeps everything, as if there were none."))
        if beta <= 0:
            plain.append(_("Nothing is corrected: the new pair is added on top of what is already there."))
        elif beta >= 1:
            plain.append(_("Before the new pair is added, what the memory said about that name is erased, so "
                           "a new number replaces the old one."))
        else:
            plain.append(_("Before the new pair is added, {percent}% of what the memory said about that name "
                           "is erased.").format(percent=round(100 * beta)))
        formulas = [_(DECAY_FORMULA[gate]), _(CORRECTION_FORMULA),
                    _("Now α = {alpha} and β = {beta}.").format(alpha=number(alpha), beta=number(beta))]
        if gate == "channel":
            formulas.append(_("The columns keep from {high} to {low} of themselves at each write.")
                            .format(**values))
        self.setting.elementare = " ".join(plain)
        self.setting.superiore = " ".join(formulas)
        self.table.object = table_html(knob.match, superiore)



def table_html(found, superiore):
    """The unified table of DESIGN §3 with the knob's row lit (and the two nearest marked when between)."""
    return _table_html(found, superiore, current_language())


@functools.lru_cache(maxsize=64)          # the formulas take ~30 ms to convert; a knob turn should not
def _table_html(found, superiore, _language):
    columns = COLUMNS_FORMULA if superiore else COLUMNS_PLAIN
    head = "".join(f"<th>{cell(_(c))}</th>" for c in columns)
    rows = []
    for variant in VARIANTS:
        cells = TABLE_FORMULA[variant] if superiore else TABLE_PLAIN[variant]
        name = html.escape(model_name(variant))
        if superiore:
            name += f'<span class="paper">{html.escape(PAPERS[variant])}</span>'
        kind, mark = "", ""
        if variant in found.exact:
            kind, mark = "lit", _("← the knobs are here")
        elif variant in found.between:
            kind, mark = "near", _("← near")
        if mark:
            name += f' <span class="mark">{html.escape(mark)}</span>'
        body = "".join(f"<td>{cell(_(c))}</td>" for c in cells)      # formulas alone are not in the catalog
        rows.append(f'<tr class="{kind}" data-variant="{variant}"><td class="name">{name}</td>{body}</tr>')
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def cell(text):
    """One table cell: our own text with $…$ formulas (never user input), as inline HTML."""
    converted = to_html(text)
    return converted[3:-4] if converted.startswith("<p>") and converted.count("<p>") == 1 else converted
