"""Dashboard "The state fills up" (DESIGN §6.2): the state matrix, token by token, in two modes.

- mechanism: readable tokens (name:number, name?) with random unit vectors and gates from two knobs
  (`app.mechanism.run_sequence`);
- trained: a shipped checkpoint (`app.checkpoints`) stepped token by token over one MQAR example,
  with the model's prediction at every query.

`StateStore` (one per session) turns the controls into a sequence, runs it and holds the records.
`StateView` only draws: per layer and head the state S_t (softmax: its value cache), the write term,
the transition, the delta correction and the read-out, plus the token strip, all for the frame the
`Player` is on.
"""
import html
from dataclasses import dataclass

import numpy as np
import panel as pn
import param

from app import mechanism
from app.checkpoints import load_model, path_of, step_through
from app.components.player import Player
from app.components.plots import BarsPicture, MatrixPicture, RowsPicture
from app.components.controls import mechanism_knobs, sidebar_label
from app.components.text import TEXT_CSS, Explanation
from app.dashboards import Page
from app.i18n import N_, _, format_number
from app.urlstate import read_query, write_query
from engine.ops import VARIANTS
from engine.tasks import IGNORE, mqar

SLUG = "state"
MODES = ("mechanism", "trained")
LAYERS = ("both", "1", "2")           # trained mode: which layer to show (the checkpoints have two)
MECHANISM_PAIRS = 8                   # mechanism mode's MQAR strip stays under mechanism.MAX_TOKENS
TRAINED_LENGTH = 64                   # MQAR length when a sidecar does not say what it trained on
TRAINED_QUANTILE = 99.9               # colour range: see limits_of
TRAINED_PAIRS = 8                     # trained mode's default: a busier example than mechanism mode's 4

VARIANT_NAMES = {
    "linear": N_("Linear attention"), "retnet": "RetNet", "mamba2": "Mamba-2", "gla": "GLA",
    "deltanet": "DeltaNet", "gated_deltanet": "Gated DeltaNet", "rwkv6": "RWKV-6", "rwkv7": "RWKV-7",
    "mlstm": "mLSTM (xLSTM)", "softmax": N_("Softmax attention (baseline)"),
}
PRESET_NAMES = {"phonebook": N_("Phone book"), "overwrite": N_("A number changes"),
                "crowd": N_("A crowded memory")}

# what each variant does to its memory, in plain words and in formulas
RULE_PLAIN = {
    "linear": N_("Linear attention only adds: every pair is piled on top of the others and nothing is "
                 "ever erased."),
    "retnet": N_("RetNet fades the whole memory a little at every step, at a fixed rate, then adds the "
                 "new pair."),
    "mamba2": N_("Mamba-2 fades the whole memory at every step, by an amount its gate chooses, then adds "
                 "the new pair."),
    "gla": N_("GLA fades each column of the memory at its own speed, then adds the new pair."),
    "deltanet": N_("DeltaNet corrects: before writing a pair it removes what the memory already said "
                   "about that name, so a new number replaces the old one."),
    "gated_deltanet": N_("Gated DeltaNet corrects like DeltaNet and also fades the whole memory a little "
                         "at every step."),
    "rwkv6": N_("RWKV-6 fades each column at its own speed; it reads the memory before adding the "
                "current pair, with a bonus for that pair."),
    "rwkv7": N_("RWKV-7 fades each column at its own speed and corrects what is stored under the current "
                "name, like DeltaNet."),
    "mlstm": N_("mLSTM (xLSTM) has a forget gate and an input gate, and divides its answer by how much "
                "has been written under that name."),
    "softmax": N_("Softmax attention keeps no fixed memory: it stores every token and compares the "
                  "question with all of them."),
}
RULE_FORMULA = {
    "linear": r"$$S_t = S_{t-1} + v_t k_t^\top,\qquad o_t = S_t q_t$$",
    "retnet": r"$$S_t = \gamma\, S_{t-1} + v_t k_t^\top,\qquad o_t = S_t q_t$$",
    "mamba2": r"$$S_t = \alpha_t\, S_{t-1} + v_t k_t^\top,\qquad o_t = S_t q_t$$",
    "gla": r"$$S_t = S_{t-1}\,\mathrm{diag}(\alpha_t) + v_t k_t^\top,\qquad o_t = S_t q_t$$",
    "deltanet": r"$$S_t = S_{t-1}\,(I - \beta_t k_t k_t^\top) + \beta_t v_t k_t^\top,\qquad o_t = S_t q_t$$",
    "gated_deltanet": r"$$S_t = \alpha_t\, S_{t-1}\,(I - \beta_t k_t k_t^\top) + \beta_t v_t k_t^\top,"
                      r"\qquad o_t = S_t q_t$$",
    "rwkv6": r"$$S_t = S_{t-1}\,\mathrm{diag}(w_t) + v_t k_t^\top,\qquad "
             r"o_t = (S_{t-1} + v_t (u \odot k_t)^\top)\, q_t$$",
    "rwkv7": r"$$S_t = S_{t-1}\,(\mathrm{diag}(w_t) - \beta\,\hat\kappa_t \hat\kappa_t^\top) + v_t k_t^\top,"
             r"\qquad o_t = S_t q_t$$",
    "mlstm": r"$$C_t = f_t\, C_{t-1} + i_t\, v_t k_t^\top,\quad n_t = f_t\, n_{t-1} + i_t\, k_t,\quad "
             r"o_t = \frac{C_t q_t}{\max(|n_t^\top q_t|, 1)}$$",
    "softmax": r"$$o_t = \sum_{i \le t} \frac{\exp(q_t^\top k_i)}{\sum_{j \le t} \exp(q_t^\top k_j)}\, v_i$$",
}
PAPERS = {
    "linear": "Katharopoulos et al. 2020", "retnet": "Sun et al. 2023", "mamba2": "Dao & Gu 2024",
    "gla": "Yang et al. 2024", "deltanet": "Schlag et al. 2021; Yang et al. 2024",
    "gated_deltanet": "Yang, Kautz & Hatamizadeh 2025", "rwkv6": "Peng et al. 2024",
    "rwkv7": "Peng et al. 2025", "mlstm": "Beck et al. 2024", "softmax": "Vaswani et al. 2017",
}


@dataclass
class TrainedRun:
    """A shipped checkpoint stepped token by token over one MQAR example."""
    key: tuple              # (variant, pairs, example): what it was computed from
    variant: str
    inputs: np.ndarray      # token ids [T]
    targets: np.ndarray     # at a query the paired value, IGNORE elsewhere [T]
    logits: np.ndarray      # [T, V]
    layers: list            # layers[l][t]: the StepRecord of layer l at token t
    sidecar: dict           # shared between sessions: read only
    weights: int            # number of learned parameters

    @property
    def predictions(self):
        return self.logits.argmax(-1)                                                  # [T]

    def asked(self, t):
        return bool(self.targets[t] != IGNORE)


def run_trained(variant, pairs, example):
    """One MQAR example (seed = example) through `variant`'s checkpoint, one model.step per token."""
    model, sidecar = load_model(variant)
    length = sidecar.get("task", {}).get("seq_len", TRAINED_LENGTH)
    inputs, targets = mqar(vocab_size=model.config.vocab_size, seq_len=length, num_pairs=pairs,
                           num_examples=1, seed=example)                               # [1, L] each
    logits, layers = step_through(model, inputs[0])
    return TrainedRun((variant, pairs, example), variant, inputs[0].numpy(), targets[0].numpy(), logits,
                      layers, sidecar, model.num_parameters())


class MechanismBounds(param.Parameterized):
    """Mechanism mode reads `pairs` from the URL with its own, smaller bound."""
    pairs = param.Integer(default=4, bounds=(1, MECHANISM_PAIRS))


class StateStore(param.Parameterized):
    """One session's inputs for this dashboard, and the records for them (of the mode that is on)."""

    mode = param.Selector(default="mechanism", objects=list(MODES),
                          doc="mechanism: readable tokens, random vectors; trained: a checkpoint on MQAR")
    variant = param.Selector(default="linear", objects=list(VARIANTS))
    layer = param.Selector(default="both", objects=list(LAYERS), doc="trained mode: the layer shown")
    source = param.Selector(default="preset", objects=["preset", "mqar", "typed"])
    preset = param.Selector(default="phonebook", objects=list(mechanism.PRESETS))
    pairs = param.Integer(default=4, bounds=(1, 16), doc=f"MQAR: number of key-value pairs (mechanism: ≤ {MECHANISM_PAIRS})")
    example = param.Integer(default=0, bounds=(0, 9999), doc="MQAR: which example (its seed)")
    text = param.String(default="Anna:21 Bruno:47 Anna:99 Anna? Bruno?", doc="typed tokens")
    heads = param.Integer(default=1, bounds=(1, mechanism.MAX_HEADS))
    alpha = param.Number(default=0.9, bounds=(0.05, 1.0), doc="forget gate: fraction kept per step")
    beta = param.Number(default=mechanism.DEFAULT_BETA, bounds=(0.0, 1.0), doc="delta rule step size")
    seed = param.Integer(default=0, bounds=(0, 9999), doc="seed of the random token vectors")

    result = param.Parameter(default=None, doc="mechanism mode: the latest mechanism.Run (read-only for views)")
    problems = param.List(default=[], doc="(code, detail) problems of the typed text")
    trained = param.Parameter(default=None, doc="trained mode: the latest TrainedRun (read-only for views)")
    failure = param.Parameter(default=None, doc="trained mode: ('missing' or 'invalid', file name)")

    URL = {"mode": "mode", "variant": "variant", "layer": "layer", "source": "source", "preset": "preset",
           "pairs": "pairs", "example": "example", "text": "text", "heads": "heads", "alpha": "alpha",
           "beta": "beta", "seed": "seed"}
    INPUTS = [name for name in URL if name != "layer"]          # the layer only changes what is drawn

    def __init__(self, **params):
        params.setdefault("alpha", mechanism.DEFAULT_ALPHA.get(params.get("variant", "linear"), 0.9))
        if params.get("mode", "mechanism") == "mechanism":
            params["pairs"] = min(params.get("pairs", 4), MECHANISM_PAIRS)
        else:
            params.setdefault("pairs", TRAINED_PAIRS)
        super().__init__(**params)
        self.param.watch(self._changed, self.INPUTS)
        self._compute()

    def _changed(self, *events):
        names = {e.name for e in events}
        if "variant" in names and not names & {"alpha", "beta"}:
            # a newly chosen model starts from its own default gates
            defaults = {"alpha": mechanism.DEFAULT_ALPHA.get(self.variant, self.alpha),
                        "beta": mechanism.DEFAULT_BETA}
            if (self.alpha, self.beta) != (defaults["alpha"], defaults["beta"]):
                self.param.update(**defaults)          # comes back here through the watcher
                return
        if self.mode == "mechanism" and self.pairs > MECHANISM_PAIRS:
            self.pairs = MECHANISM_PAIRS               # back from trained mode: comes back here too
            return
        self._compute()

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

    def _compute(self):
        if self.mode == "trained":
            self._compute_trained()
            return
        tokens, problems = self.tokens()
        result = mechanism.run_sequence(self.variant, tokens, heads=self.heads, alpha=self.alpha,
                                        beta=self.beta, seed=self.seed)
        self.param.update(problems=problems, result=result)

    def _compute_trained(self):
        key = (self.variant, self.pairs, self.example)
        if self.trained is not None and self.trained.key == key:
            return                                     # a mechanism knob moved: nothing to run again
        try:
            load_model(self.variant)                   # once per process; checks the checksums
        except FileNotFoundError:
            self.param.update(trained=None, failure=("missing", path_of(self.variant).name))
        except ValueError:
            self.param.update(trained=None, failure=("invalid", path_of(self.variant).name))
        else:
            self.param.update(trained=run_trained(*key), failure=None)


def read_store_query(args):
    """The store's values from the URL, with notices; mechanism mode's MQAR keeps to 8 pairs."""
    values, notices = read_query(StateStore, {n: k for n, k in StateStore.URL.items() if n != "pairs"}, args)
    bounds = StateStore if values.get("mode") == "trained" else MechanismBounds
    pairs, more = read_query(bounds, {"pairs": "pairs"}, args)
    return {**values, **pairs}, notices + more


def problem_messages(problems):
    messages = []
    for code, detail in problems:
        if code == "empty":
            messages.append(_("The typed sequence has no tokens: the phone book is shown instead."))
        elif code == "unknown":
            shown = detail if len(detail) <= 80 else detail[:80] + "…"
            messages.append(_("These pieces are not tokens and were left out: {pieces}. Write name:number "
                              "to store, name? to ask, · to wait.").format(pieces=shown))
        elif code == "too_long":
            messages.append(_("The typed text is longer than {limit} characters: the rest was left out.")
                            .format(limit=detail))
        elif code == "too_many":
            messages.append(_("Only the first {limit} tokens are used.").format(limit=detail))
    return messages


def build(session):
    import panel as pn

    values, notices = read_store_query(pn.state.session_args)
    store = session.store(SLUG, lambda: StateStore(**values))
    view = StateView(store=store, session=session, url_notices=notices)
    return Page(main=view, controls=view.controls())


STRIP_CSS = """
:host { width: 100%; }
.strip { display: flex; flex-wrap: wrap; gap: 6px; font-size: 18px; }
.tok { border: 2px solid #bcccdc; border-radius: 8px; padding: 4px 8px 2px 8px; min-width: 34px;
       text-align: center; background: white; font-family: "DejaVu Sans Mono", monospace; }
.tok .answer { display: block; font-size: 13px; font-family: sans-serif; min-height: 17px; color: #52606d; }
.tok.ask { border-style: dashed; }
.tok.future { opacity: 0.35; }
.tok.current { border-color: #1d4f7a; background: #ffe8a3; box-shadow: 0 0 0 3px #f0b429; }
.ok { color: #1a7f37; font-weight: 700; }
.bad { color: #b42318; font-weight: 700; }
.strip.compact { gap: 4px; font-size: 16px; }
.strip.compact .tok { padding: 3px 4px 1px 4px; min-width: 30px; }
.strip.compact .tok.ask { border-color: #1d4f7a; }
.strip.compact .tok.value:not(.current) { background: #eef4fb; }
.strip.compact .tok.filler { color: #9aa5b1; }
"""
ANSWER_CSS = """
:host { font-size: 18px; }
.big { font-size: 26px; font-weight: 700; }
.ok { color: #1a7f37; } .bad { color: #b42318; } .muted { color: #7b8794; }
"""

# trained mode: the card texts that differ from mechanism mode's (the others say the same in both)
TRAINED_PLAIN = {
    "state": N_("The memory of this layer: a grid of {size} × {size} numbers. Every token adds its own "
                "pattern; the grid never grows, it only gets more crowded."),
    "write": N_("What this token adds to the memory: its value pattern spread along its key pattern. Here "
                "every token writes something, questions and fillers too: the model learned how much."),
    "delta": N_("Before writing, the layer reads what its memory already holds under this token's key "
                "(prediction), compares it with the value it wants to store (target) and writes only the "
                "difference (error)."),
    "readout": N_("The layer reads its memory with this token's question pattern. What comes out goes on "
                  "through the rest of the model, which turns it into a guess for the next token."),
}
TRAINED_FORMULA = {
    "state": N_("The state $S_t \\in \\mathbb{R}^{d_v \\times d_k}$ of this layer: its size is fixed by "
                "the model, not by the sequence. Blue negative, red positive, same scale at every step; the "
                "largest 0.1% of the values are drawn at full colour."),
    "readout": N_("The read-out $o_t$ ($S_t q_t$ for a fixed state; for softmax attention the weighted sum "
                  "of the cached values) is normalized, projected back to the model width and added to the "
                  "residual stream. After the last layer the output head gives the logits, and the "
                  "prediction is their $\\mathrm{argmax}$."),
}


class HeadPanel:
    """The pictures of one head, made when first needed, with an explanation under each card.

    Mechanism mode: `HeadPanel(head, session, explain)` (16 × 16). Trained mode: give `name` (e.g.
    "Layer 2") and the checkpoint's d_k, d_v.
    """

    def __init__(self, head, session, explain, *, name=None, d_k=mechanism.D_K, d_v=mechanism.D_V):
        self.head, self.session, self.explain = head, session, explain
        self.name, self.d_k, self.d_v = name, d_k, d_v
        self.cards, self.pictures, self.notes = {}, {}, []
        self.answer = pn.pane.HTML(stylesheets=[ANSWER_CSS], margin=(0, 10), width=360)
        self.layout = pn.FlexBox(sizing_mode="stretch_width")

    def _make(self, name):
        """(picture, plain text, formula text) of one card."""
        d_k, d_v, number = self.d_k, self.d_v, self.head + 1
        if name == "state":
            title = _("Head {n}: memory S").format(n=number) if self.name is None \
                else _("{name}: memory S").format(name=self.name)
            return (MatrixPicture(title, _("key dimension"), _("value dimension"), d_v, d_k, width=380, height=350),
                    _("The memory is a grid of 16 × 16 numbers. Every pair that is stored adds its own "
                      "pattern; the grid never grows, it only gets more crowded."),
                    _("The state $S_t \\in \\mathbb{R}^{d_v \\times d_k}$, here $16 \\times 16$: its size does "
                      "not depend on the length of the sequence. Colours: blue negative, red positive, same "
                      "scale at every step."))
        if name == "cache":
            title = _("Head {n}: value cache").format(n=number) if self.name is None \
                else _("{name}: value cache").format(name=self.name)
            return (MatrixPicture(title, _("value dimension"), _("position in the sequence"), 1, d_v,
                                  width=380, height=350),
                    _("Softmax attention keeps no grid: it keeps every token, one row each. The list grows "
                      "with every token and nothing is ever freed."),
                    _("The KV cache holds $k_i, v_i$ for every past token $i \\le t$; it grows as $O(t)$. "
                      "Shown: the values $v_i$, one row per token."))
        if name == "write":
            return (MatrixPicture(_("What this token writes"), _("key dimension"), _("value dimension"),
                                  d_v, d_k, width=330, height=310),
                    _("What this token adds to the memory: the number's pattern spread along the name's "
                      "pattern. Tokens that only ask or wait add nothing."),
                    _("The write term $v_t k_t^\\top$ (delta family: $\\beta_t v_t k_t^\\top$), an outer "
                      "product of rank one."))
        if name == "transition":
            return (BarsPicture(_("What each column keeps"), _("key dimension"), _("kept"), d_k,
                                width=340, height=310),
                    _("Before the new write, how much of each column the memory keeps: 1 keeps everything, "
                      "0 forgets it."),
                    _("The decay of the transition, per key channel: $\\alpha_t$ (a scalar gate gives the "
                      "same bar everywhere; linear attention and DeltaNet keep $1$)."))
        if name == "attention":
            return (BarsPicture(_("Where the question looks"), _("position in the sequence"),
                                _("attention weight"), 1, width=330, height=310, color="#b35806"),
                    _("How much the question looks at each stored token. A single tall bar means it found "
                      "its name."),
                    _("The attention weights $\\mathrm{softmax}_i(q_t^\\top k_i)$ over the cache; the answer "
                      "is $o_t = \\sum_i a_{t,i} v_i$."))
        if name == "delta":
            return (RowsPicture(_("Correction"), _("value dimension"),
                                [_("prediction"), _("target"), _("error")], d_v, width=360, height=230),
                    _("Before writing, the model asks its memory what it already knows about this name "
                      "(prediction), compares it with the number to store (target) and writes only the "
                      "difference (error)."),
                    _("The delta rule: $e_t = v_t - S_{t-1} k_t$ and $S_t = S_{t-1} + \\beta_t e_t k_t^\\top$, "
                      "one gradient step on $\\tfrac12 \\lVert S k_t - v_t \\rVert^2$."))
        return (RowsPicture(_("Read-out"), _("value dimension"), [_("answer")], d_v, width=360, height=150),
                _("To answer, the model looks into the memory with the name it is asked about. What comes "
                  "out is compared with every stored number: the closest one is the answer."),
                _("The read-out $o_t$ ($S_t q_t$ for a fixed state; for softmax attention the weighted sum of "
                  "the cached values); the answer is the stored value whose vector has the largest cosine "
                  "with $o_t$ (averaged over heads)."))

    def card(self, name):
        if name not in self.cards:
            picture, plain, formulas = self._make(name)
            if self.name is not None:                      # trained mode words some cards its own way
                plain = _(TRAINED_PLAIN[name]).format(size=self.d_k) if name in TRAINED_PLAIN else plain
                formulas = _(TRAINED_FORMULA[name]) if name in TRAINED_FORMULA else formulas
            parts = [pn.pane.Bokeh(picture.figure)]
            if name == "readout" and self.name is None:
                parts.append(self.answer)
            if self.explain:
                note = pn.Column(Explanation(self.session, elementare=plain, superiore=formulas, width=360),
                                 margin=0)
                self.notes.append(note)
                parts.append(note)
            self.pictures[name] = picture
            self.cards[name] = pn.Column(*parts, width=400 if name in ("state", "cache") else 370,
                                         margin=(0, 8, 12, 0))
        return self.cards[name]

    def show_notes(self, shown):
        for note in self.notes:
            note.visible = shown

    def configure(self, variant, records, limits):
        """Choose the cards for `variant` and fix their colour ranges for this run (`records`: one per token)."""
        if variant == "softmax":
            names = ["cache", "attention", "readout"]
        else:
            names = ["state", "write", "transition"] + (["delta"] if mechanism.is_delta(variant) else []) \
                + ["readout"]
        cards = [self.card(n) for n in names]
        if self.layout.objects != cards:
            self.layout.objects = cards
        p = self.pictures
        if variant == "softmax":
            T = len(records)
            p["cache"].set_rows(T)
            p["cache"].set_limit(limits["target"])
            p["attention"].set_size(T)
        else:
            p["state"].set_limit(limits["state"])
            p["write"].set_limit(limits["write"])
        if "delta" in names:
            p["delta"].set_limit(limits["delta"])
        p["readout"].set_limit(limits["output"])

    def draw(self, variant, records, t):
        head, record = self.head, records[t]
        if variant == "softmax":
            T = len(records)
            cache = np.full((T, self.d_v), np.nan)                                       # [T, d_v]
            cache[:t + 1] = [r.target[0, head] for r in records[:t + 1]]
            self.pictures["cache"].show(cache)
            weights = np.zeros(T)
            weights[:t + 1] = record.extras["attention"][0, head]
            self.pictures["attention"].show(weights)
        else:
            self.pictures["state"].show(record.state[0, head])                           # [d_v, d_k]
            self.pictures["write"].show(record.write[0, head])
            decay = record.decay
            if decay is None:
                kept = np.ones(self.d_k)
            else:                                                        # a scalar or one per channel → [d_k]
                kept = np.broadcast_to(np.asarray(decay[0, head], dtype=float), (self.d_k,))
            self.pictures["transition"].show(kept)
            beta = ""
            if record.beta is not None:
                beta = f"β = {format_number(float(record.beta[0, head]), 2)}"
            elif record.a is not None:                           # RWKV-7: a bᵀ = −β κ̂ κ̂ᵀ, so β = −a·b
                beta = f"β = {format_number(float(-record.a[0, head] @ record.b[0, head]), 2)}"
            self.pictures["transition"].subtitle.text = beta
        if mechanism.is_delta(variant):
            self.pictures["delta"].show(np.stack([record.prediction[0, head], record.target[0, head],
                                                  record.error[0, head]]))               # [3, d_v]
        self.pictures["readout"].show(record.output[0, head][None, :])                   # [1, d_v]


def limits_of(records, quantile=100.0):
    """Colour ranges of one run: per picture, the `quantile` of |value| over every token (and head).

    100 is the largest value. A trained state has a heavy tail (one entry of 550 among thousands
    below 5), so trained mode takes the 99.9th percentile and lets those few entries saturate.
    """
    def peak(*names):
        values = [np.abs(getattr(r, n)).ravel() for r in records for n in names if getattr(r, n) is not None]
        return float(np.percentile(np.concatenate(values), quantile)) if values else 1.0

    return {"state": peak("state"), "write": peak("write"), "output": peak("output"), "target": peak("target"),
            "delta": peak("prediction", "target", "error")}


class StateView(pn.viewable.Viewer):
    """Draws a StateStore; owns the player and the per-head pictures, and nothing of the data."""

    store = param.ClassSelector(class_=StateStore)
    session = param.Parameter()
    url_notices = param.List(default=[])

    def __init__(self, **params):
        super().__init__(**params)
        store, session = self.store, self.session
        self.player, player_notices = Player.from_query(pn.state.session_args)
        length = store.length()
        if self.player.value > length - 1 and not (store.mode == "trained" and store.failure):
            player_notices.append(_("The link asked for step {t}, but this sequence has {n} steps: the last "
                                    "one is shown.").format(t=self.player.value + 1, n=length))
        self.player.length = length
        session.add_notices("url", self.url_notices + player_notices)

        self.rule = Explanation(session, sizing_mode="stretch_width")
        self.about = Explanation(session, sizing_mode="stretch_width")          # trained mode: the checkpoint
        self.strip = pn.pane.HTML(stylesheets=[STRIP_CSS], sizing_mode="stretch_width", margin=(4, 10))
        self.memory = pn.pane.HTML(stylesheets=[TEXT_CSS], margin=(4, 10), sizing_mode="stretch_width")
        self.prediction = pn.pane.HTML(stylesheets=[ANSWER_CSS], margin=(4, 10), sizing_mode="stretch_width")
        self.strip_help = Explanation(session, sizing_mode="stretch_width")
        self.heads = [HeadPanel(h, session, explain=(h == 0)) for h in range(mechanism.MAX_HEADS)]
        self.head_titles = [pn.pane.HTML(margin=(10, 10, 0, 10), stylesheets=[":host { font-size: 20px; }"])
                            for _h in self.heads]
        self.mechanism_area = pn.Column(*[x for pair in zip(self.head_titles, [p.layout for p in self.heads])
                                          for x in pair], sizing_mode="stretch_width", margin=0)
        self.layer_panels = {}                                  # trained mode: (layer, head) → HeadPanel
        self.shown_panels = []                                  # trained mode: (layer, HeadPanel) on the page
        self.trained_area = pn.Column(sizing_mode="stretch_width", margin=0)
        store.param.watch(self._reconfigure, ["mode", "layer", "result", "problems", "trained", "failure"])
        self.player.param.watch(self._draw, "value")
        write_query(store, StateStore.URL)
        write_query(self.player, Player.URL)
        self._reconfigure()

    def controls(self):
        store = self.store
        mode = pn.widgets.RadioButtonGroup.from_param(
            store.param.mode, name=_("Mode"), sizing_mode="stretch_width", button_type="primary",
            button_style="outline", options={_("Mechanism"): "mechanism", _("Trained model"): "trained"})
        variant = pn.widgets.Select.from_param(
            store.param.variant, name=_("Model"), sizing_mode="stretch_width",
            options={_(VARIANT_NAMES[v]): v for v in VARIANTS})
        layer = pn.widgets.RadioButtonGroup.from_param(
            store.param.layer, name=_("Layer"), sizing_mode="stretch_width", button_type="primary",
            button_style="outline", options={_("Both"): "both", "1": "1", "2": "2"})
        source = pn.widgets.RadioButtonGroup.from_param(
            store.param.source, name=_("Sequence"), sizing_mode="stretch_width", button_type="primary",
            button_style="outline",
            options={_("Preset"): "preset", _("MQAR"): "mqar", _("Typed"): "typed"})
        preset = pn.widgets.Select.from_param(
            store.param.preset, name=_("Preset"), sizing_mode="stretch_width",
            options={_(PRESET_NAMES[p]): p for p in mechanism.PRESETS})
        pairs = pn.widgets.IntSlider.from_param(store.param.pairs, name=_("Pairs"), sizing_mode="stretch_width")
        example = pn.widgets.IntInput.from_param(store.param.example, name=_("Example number"),
                                                 sizing_mode="stretch_width")
        text = pn.widgets.TextAreaInput.from_param(
            store.param.text, name=_("Your tokens (name:number, name?, ·)"), max_length=mechanism.MAX_CHARS,
            sizing_mode="stretch_width", height=90)
        heads = pn.widgets.RadioButtonGroup.from_param(
            store.param.heads, name=_("Heads"), options={"1": 1, "2": 2}, button_type="primary",
            button_style="outline", sizing_mode="stretch_width")
        alpha, beta, seed = mechanism_knobs(store)
        label = sidebar_label
        mode_label, layer_label = label(_("Mode")), label(_("Layer"))
        source_label, heads_label = label(_("Sequence")), label(_("Heads"))

        def show(*_events):
            trained = store.mode == "trained"
            for widget in (source_label, source, heads_label, heads, seed):
                widget.visible = not trained
            layer_label.visible = layer.visible = trained
            preset.visible = not trained and store.source == "preset"
            pairs.visible = example.visible = trained or store.source == "mqar"
            pairs.end = store.param.pairs.bounds[1] if trained else MECHANISM_PAIRS
            text.visible = not trained and store.source == "typed"
            alpha.visible = not trained and store.variant in mechanism.FORGETTING
            beta.visible = not trained and store.variant in mechanism.CORRECTING

        store.param.watch(show, ["mode", "source", "variant"])
        show()
        return [mode_label, mode, variant, layer_label, layer, source_label, source, preset, pairs, example, text,
                heads_label, heads, alpha, beta, seed]

    def __panel__(self):
        title = html.escape(_("The state fills up"))
        return pn.Column(
            pn.pane.HTML(f"<h1 style='margin:0;font-size:30px;color:#102a43'>{title}</h1>", margin=(0, 10)),
            self.rule, self.strip, self.strip_help, self.player, self.prediction, self.memory,
            self.mechanism_area, self.trained_area, self.about, sizing_mode="stretch_width")

    def _reconfigure(self, *_events):
        trained = self.store.mode == "trained"
        with pn.io.hold():
            self.mechanism_area.visible = not trained
            self.trained_area.visible = self.about.visible = self.prediction.visible = trained
            self.session.notify("checkpoint", [failure_message(self.store.failure)]
                                if trained and self.store.failure else [])
            if trained:
                self._configure_trained()
            else:
                self._configure_mechanism()
            self.player.length = self.store.length()
            self._draw()

    def _describe(self, variant):
        name = _(VARIANT_NAMES[variant])
        self.rule.elementare = f"**{name}.** " + _(RULE_PLAIN[variant])
        self.rule.superiore = (f"**{name}** ({PAPERS[variant]}). " + _(RULE_PLAIN[variant])
                               + "\n\n" + RULE_FORMULA[variant])

    def _configure_mechanism(self):
        store, result = self.store, self.store.result
        self.session.notify("input", problem_messages(store.problems) if store.source == "typed" else [])
        limits = limits_of(result.records)
        self._describe(result.variant)
        self.strip_help.elementare = _(
            "Each box is one step. **name:number** stores a number under a name, **name?** asks "
            "for it, **·** waits. The highlighted box is the current step; under each question, "
            "the memory's answer (✓ right, ✗ wrong).")
        self.strip_help.superiore = _(
            "One box per token $t$. A write token sets $k_t, v_t$ to the vectors of its name and "
            "number (random unit vectors, $d_k = d_v = 16$) and $q_t = k_t$; a question sets "
            "only $q_t$; a wait token sets nothing, so only the transition acts.")
        for h, panel in enumerate(self.heads):
            shown = h < store.heads
            panel.layout.visible = self.head_titles[h].visible = shown
            self.head_titles[h].object = "<b>%s</b>" % html.escape(_("Head {n}").format(n=h + 1))
            if shown:
                panel.configure(result.variant, result.records, limits)
        self.head_titles[0].visible = store.heads > 1

    def _configure_trained(self):
        store, run = self.store, self.store.trained
        self.session.notify("input", [])
        self._describe(store.variant)
        self.strip_help.elementare = _(TRAINED_STRIP_PLAIN)
        self.strip_help.superiore = _(TRAINED_STRIP_FORMULA)
        if run is None:                                         # no checkpoint: the notice says why
            self.about.elementare = self.about.superiore = ""
            self.trained_area.objects, self.shown_panels = [], []
            return
        self.about.elementare, self.about.superiore = about_checkpoint(run)
        config = run.sidecar["config"]
        shown = [l for l in range(config["n_layers"]) if store.layer in ("both", str(l + 1))] or [0]
        objects, self.shown_panels = [], []
        for l in shown:
            title = _("Layer {n}").format(n=l + 1)
            objects.append(pn.pane.HTML("<b>%s</b>" % html.escape(title), margin=(10, 10, 0, 10),
                                        stylesheets=[":host { font-size: 20px; }"]))
            limits = limits_of(run.layers[l], quantile=TRAINED_QUANTILE)
            for h in range(config["n_heads"]):
                name = title if config["n_heads"] == 1 else _("Layer {n}, head {h}").format(n=l + 1, h=h + 1)
                panel = self.layer_panels.get((l, h))
                if panel is None or (panel.d_k, panel.d_v) != (config["d_k"], config["d_v"]):
                    panel = self.layer_panels[l, h] = HeadPanel(h, self.session, explain=True, name=name,
                                                                d_k=config["d_k"], d_v=config["d_v"])
                panel.configure(run.variant, run.layers[l], limits)
                panel.show_notes(not self.shown_panels)         # explanations under the first panel only
                objects.append(panel.layout)
                self.shown_panels.append((l, panel))
        self.trained_area.objects = objects

    def _draw(self, *_events):
        store = self.store
        t = min(self.player.value, store.length() - 1)
        with pn.io.hold():
            if store.mode == "trained":
                self._draw_trained(t)
                return
            result = store.result
            self.strip.object = token_strip(result, t)
            self.memory.object = memory_line(result, t)
            for h in range(store.heads):
                self.heads[h].draw(result.variant, result.records, t)
            self.heads[0].answer.object = answer_html(result, t)

    def _draw_trained(self, t):
        run = self.store.trained
        if run is None:
            self.strip.object = self.memory.object = self.prediction.object = ""
            return
        self.strip.object = trained_strip(run, t)
        self.memory.object = trained_memory_line(run, t)
        self.prediction.object = prediction_html(run, t)
        for l, panel in self.shown_panels:
            panel.draw(run.variant, run.layers[l], t)


def token_strip(result, t):
    boxes = []
    for i, (token, (answer, _similarity, expected)) in enumerate(zip(result.tokens, result.answers)):
        classes = ["tok", token.kind, "current" if i == t else ("future" if i > t else "past")]
        below = ""
        if token.kind == "ask" and i <= t:
            if expected is None:
                below = '<span class="bad">%s</span>' % html.escape(_("never stored"))
            elif answer == expected:
                below = f'<span class="ok">{html.escape(answer)} ✓</span>'
            else:
                below = f'<span class="bad">{html.escape(answer or "—")} ✗</span>'
        boxes.append(f'<div class="{" ".join(classes)}" data-step="{i}">{html.escape(token.text)}'
                     f'<span class="answer">{below}</span></div>')
    step = html.escape(_("Step {t} of {n}").format(t=t + 1, n=len(result.tokens)))
    return f'<div style="font-size:15px;color:#52606d;margin-bottom:4px">{step}</div><div class="strip">{"".join(boxes)}</div>'


def memory_line(result, t):
    record = result.records[t]
    if result.variant == "softmax":
        text = _("Memory used: KV cache {bytes} bytes after {t} tokens, and growing with every token.").format(
            bytes=format_number(record.kv_cache_bytes), t=t + 1)
    else:
        text = _("Memory used: state {bytes} bytes, the same at every step.").format(
            bytes=format_number(record.state_bytes))
    return f"<p>{html.escape(text)}</p>"


def answer_html(result, t):
    token = result.tokens[t]
    answer, similarity, expected = result.answers[t]
    if answer is None:
        return '<span class="muted">%s</span>' % html.escape(_("Nothing is asked at this step."))
    mark = "ok" if answer == expected else "bad"
    sign = "✓" if answer == expected else "✗"
    label = html.escape(_("Answer for {name}:").format(name=token.key))
    match = html.escape(_("match {percent}%").format(percent=round(100 * similarity)))
    return (f'{label} <span class="big {mark}">{html.escape(answer)} {sign}</span> '
            f'<span class="muted">({match})</span>')


# ----------------------------------------------------------------------------- trained mode

TRAINED_STRIP_PLAIN = N_(
    "A real example of the MQAR task. Each box is one token, written as its number in the model's "
    "vocabulary (0 to 255): **k** marks a key (1 to 127), **v** a value (128 to 255), **·** a filler. "
    "First come the pairs, each key followed by its value; then the keys are asked again (framed boxes), "
    "and the model must answer the value that went with each one. Under each question: the model's "
    "answer, ✓ right or ✗ wrong. The highlighted box is the current token. (Keys play the part of the "
    "names of the phone book, values the part of the numbers.)")
TRAINED_STRIP_FORMULA = N_(
    "MQAR (multi-query associative recall, Arora et al. 2023): $K$ pairs $k_i\\, v_i$, then every key "
    "once more at an even position of the rest, mostly early; at a query the target is its paired value, "
    "every other position is ignored. Under a query: the $\\mathrm{argmax}$ of the model's logits there, its "
    "next token. Labels: token id, with k for ids below $V/2$ and v for the others ($V = 256$).")


def failure_message(failure):
    code, name = failure
    if code == "missing":
        return _("The trained model cannot be shown: its checkpoint file {file} is missing from "
                 "assets/checkpoints. The mechanism mode and the other models still work.").format(file=name)
    return _("The trained model cannot be shown: its checkpoint file {file} did not pass the checks (it is "
             "damaged, replaced or unreadable), so it was not loaded. The mechanism mode and the other models "
             "still work.").format(file=name)


def about_checkpoint(run):
    """(plain, formulas) texts about the checkpoint behind `run`."""
    config, task = run.sidecar["config"], run.sidecar.get("task", {})
    pairs = task.get("kv_pairs", [])
    pairs = ", ".join(str(k) for k in (pairs if isinstance(pairs, list) else [pairs]))
    accuracy = format_number(100 * run.sidecar.get("val_accuracy", 0.0), 1)
    plain = _("**A trained model.** Here the memory belongs to a small model that learned this task by "
              "itself. A checkpoint is the file that keeps what it learned (its weights: {weights} numbers), "
              "so that the same model can be loaded again, exactly.").format(weights=format_number(run.weights))
    if run.variant == "softmax":
        plain += " " + _("It has {layers} layers, each keeping every token it has read (its KV cache).").format(
            layers=config["n_layers"])
    else:
        plain += " " + _("It has {layers} layers, each with a memory of {size} × {size} numbers.").format(
            layers=config["n_layers"], size=config["d_k"])
    plain += " " + _("Nobody chose its keys, values and questions: the model learned to make them from the "
                     "tokens, so the patterns in the pictures are its own.")
    plain += "\n\n" + _("It was trained on examples with {pairs} pairs; on examples it had never seen it "
                         "answered {accuracy}% of the questions right. Try other numbers of pairs and other "
                         "examples.").format(pairs=pairs, accuracy=accuracy)
    formulas = _("**Checkpoint** {file}: TinyLM with {layers} layers of {model}, width {width}, heads per "
                 "layer {heads}, vocabulary {vocab}; trained on MQAR with L = {length} and K ∈ {{{pairs}}}; "
                 "validation accuracy {accuracy}%. Weights, configuration and checksums are verified when it "
                 "is loaded.").format(
        file=path_of(run.variant).name, layers=config["n_layers"], model=_(VARIANT_NAMES[run.variant]),
        width=config["d_model"], heads=config["n_heads"], vocab=config["vocab_size"],
        length=task.get("seq_len", TRAINED_LENGTH), pairs=pairs, accuracy=accuracy)
    formulas += "\n\n" + _("Each layer makes $q_t$, $k_t$, $v_t$ and its gates as learned projections of "
                            "its input, after a short causal convolution that lets $k_t$ carry the token "
                            "before it: that is how a value gets bound to its key. Run here token by token "
                            "with the recurrent form, the records of every layer kept for the pictures.")
    return plain, formulas


def token_label(token, vocab_size):
    """k17 for a key id (below V/2), v203 for a value id, · for the filler 0."""
    if token == 0:
        return mechanism.WAIT
    return f"k{token}" if token < vocab_size // 2 else f"v{token}"


def trained_strip(run, t):
    vocab = run.logits.shape[-1]
    predictions = run.predictions
    boxes = []
    for i, token in enumerate(run.inputs.tolist()):
        kind = "filler" if token == 0 else ("key" if token < vocab // 2 else "value")
        classes = ["tok", kind, "current" if i == t else ("future" if i > t else "past")]
        below = ""
        if run.asked(i):
            classes.append("ask")
            if i <= t:
                right = predictions[i] == run.targets[i]
                below = '<span class="%s">%s %s</span>' % ("ok" if right else "bad",
                                                          html.escape(token_label(int(predictions[i]), vocab)),
                                                          "✓" if right else "✗")
        boxes.append(f'<div class="{" ".join(classes)}" data-step="{i}">{html.escape(token_label(token, vocab))}'
                     f'<span class="answer">{below}</span></div>')
    step = html.escape(_("Step {t} of {n}").format(t=t + 1, n=len(run.inputs)))
    return (f'<div style="font-size:15px;color:#52606d;margin-bottom:4px">{step}</div>'
            f'<div class="strip compact">{"".join(boxes)}</div>')


def trained_memory_line(run, t):
    record = run.layers[0][t]
    if run.variant == "softmax":
        text = _("Memory used: KV cache {bytes} bytes per layer after {t} tokens, and growing with every "
                 "token.").format(bytes=format_number(record.kv_cache_bytes), t=t + 1)
    else:
        text = _("Memory used: state {bytes} bytes per layer, the same at every step.").format(
            bytes=format_number(record.state_bytes))
    return f"<p>{html.escape(text)}</p>"


def prediction_html(run, t):
    """The model's answer at a query (✓/✗, how sure), and the score so far."""
    vocab = run.logits.shape[-1]
    asked = [i for i in range(t + 1) if run.asked(i)]
    right = sum(int(run.predictions[i] == run.targets[i]) for i in asked)
    score = html.escape(_("Right so far: {right} of {asked}.").format(right=right, asked=len(asked)))
    if not run.asked(t):
        now = '<span class="muted">%s</span>' % html.escape(_("Nothing is asked at this step."))
        return f"{now} {score}"
    logits = run.logits[t].astype(float)
    probabilities = np.exp(logits - logits.max())
    probabilities /= probabilities.sum()                                                # [V]
    predicted, expected = int(run.predictions[t]), int(run.targets[t])
    mark, sign = ("ok", "✓") if predicted == expected else ("bad", "✗")
    label = html.escape(_("Question {key}: the model answers").format(key=token_label(int(run.inputs[t]), vocab)))
    sure = html.escape(_("sure at {percent}%").format(percent=format_number(100 * probabilities[predicted], 0)))
    answer = f'<span class="big {mark}">{html.escape(token_label(predicted, vocab))} {sign}</span>'
    if predicted != expected:
        answer += " " + html.escape(_("(the right answer is {value})").format(value=token_label(expected, vocab)))
    return f'{label} {answer} <span class="muted">({sure})</span><br>{score}'
