"""Dashboard "The state fills up" (DESIGN §6.2), mechanism mode: the state matrix, token by token.

`StateStore` (one per session) turns the controls into a token sequence, runs the engine over it
(`app.mechanism.run_sequence`) and holds the records. `StateView` only draws: per head the state
S_t (softmax: its value cache), the write term, the transition, the delta correction and the
read-out, plus the token strip, all for the frame the `Player` is on.
"""
import html

import numpy as np
import panel as pn
import param

from app import mechanism
from app.components.player import Player
from app.components.plots import BarsPicture, MatrixPicture, RowsPicture
from app.components.controls import mechanism_knobs, sidebar_label
from app.components.text import TEXT_CSS, Explanation
from app.dashboards import Page
from app.i18n import N_, _, format_number
from app.urlstate import read_query, write_query
from engine.ops import VARIANTS

SLUG = "state"

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


class StateStore(param.Parameterized):
    """One session's inputs for this dashboard, and the engine's records for them."""

    variant = param.Selector(default="linear", objects=list(VARIANTS))
    source = param.Selector(default="preset", objects=["preset", "mqar", "typed"])
    preset = param.Selector(default="phonebook", objects=list(mechanism.PRESETS))
    pairs = param.Integer(default=4, bounds=(1, 8), doc="MQAR: number of key-value pairs")
    example = param.Integer(default=0, bounds=(0, 9999), doc="MQAR: which example (its seed)")
    text = param.String(default="Anna:21 Bruno:47 Anna:99 Anna? Bruno?", doc="typed tokens")
    heads = param.Integer(default=1, bounds=(1, mechanism.MAX_HEADS))
    alpha = param.Number(default=0.9, bounds=(0.05, 1.0), doc="forget gate: fraction kept per step")
    beta = param.Number(default=mechanism.DEFAULT_BETA, bounds=(0.0, 1.0), doc="delta rule step size")
    seed = param.Integer(default=0, bounds=(0, 9999), doc="seed of the random token vectors")

    result = param.Parameter(default=None, doc="the latest mechanism.Run (derived, read-only for views)")
    problems = param.List(default=[], doc="(code, detail) problems of the typed text")

    URL = {"variant": "variant", "source": "source", "preset": "preset", "pairs": "pairs",
           "example": "example", "text": "text", "heads": "heads", "alpha": "alpha", "beta": "beta",
           "seed": "seed"}
    INPUTS = list(URL)

    def __init__(self, **params):
        params.setdefault("alpha", mechanism.DEFAULT_ALPHA.get(params.get("variant", "linear"), 0.9))
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
        self._compute()

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
        tokens, problems = self.tokens()
        result = mechanism.run_sequence(self.variant, tokens, heads=self.heads, alpha=self.alpha,
                                        beta=self.beta, seed=self.seed)
        self.param.update(problems=problems, result=result)


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

    values, notices = read_query(StateStore, StateStore.URL, pn.state.session_args)
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
"""
ANSWER_CSS = """
:host { font-size: 18px; }
.big { font-size: 26px; font-weight: 700; }
.ok { color: #1a7f37; } .bad { color: #b42318; } .muted { color: #7b8794; }
"""


class HeadPanel:
    """The pictures of one head, made when first needed. Explanations go under the first head's only."""

    def __init__(self, head, session, explain):
        self.head, self.session, self.explain = head, session, explain
        self.cards, self.pictures = {}, {}
        self.answer = pn.pane.HTML(stylesheets=[ANSWER_CSS], margin=(0, 10), width=360)
        self.layout = pn.FlexBox(sizing_mode="stretch_width")

    def _make(self, name):
        """(picture, plain text, formula text) of one card."""
        d_k, d_v, number = mechanism.D_K, mechanism.D_V, self.head + 1
        if name == "state":
            return (MatrixPicture(_("Head {n}: memory S").format(n=number), _("key dimension"),
                                  _("value dimension"), d_v, d_k, width=380, height=350),
                    _("The memory is a grid of 16 × 16 numbers. Every pair that is stored adds its own "
                      "pattern; the grid never grows, it only gets more crowded."),
                    _("The state $S_t \\in \\mathbb{R}^{d_v \\times d_k}$, here $16 \\times 16$: its size does "
                      "not depend on the length of the sequence. Colours: blue negative, red positive, same "
                      "scale at every step."))
        if name == "cache":
            return (MatrixPicture(_("Head {n}: value cache").format(n=number), _("value dimension"),
                                  _("position in the sequence"), 1, d_v, width=380, height=350),
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
                _("The read-out $o_t = S_t q_t$; the answer is the stored value whose vector has the largest "
                  "cosine with $o_t$ (averaged over heads)."))

    def card(self, name):
        if name not in self.cards:
            picture, plain, formulas = self._make(name)
            parts = [pn.pane.Bokeh(picture.figure)]
            if name == "readout":
                parts.append(self.answer)
            if self.explain:
                parts.append(Explanation(self.session, elementare=plain, superiore=formulas, width=360))
            self.pictures[name] = picture
            self.cards[name] = pn.Column(*parts, width=400 if name in ("state", "cache") else 370,
                                         margin=(0, 8, 12, 0))
        return self.cards[name]

    def configure(self, result, limits):
        if result.variant == "softmax":
            names = ["cache", "attention", "readout"]
        else:
            names = ["state", "write", "transition"] + (["delta"] if mechanism.is_delta(result.variant) else []) \
                + ["readout"]
        cards = [self.card(n) for n in names]
        if self.layout.objects != cards:
            self.layout.objects = cards
        p = self.pictures
        if result.variant == "softmax":
            T = len(result.tokens)
            p["cache"].set_rows(T)
            p["cache"].set_limit(limits["target"])
            p["attention"].set_size(T)
        else:
            p["state"].set_limit(limits["state"])
            p["write"].set_limit(limits["write"])
        if "delta" in names:
            p["delta"].set_limit(limits["delta"])
        p["readout"].set_limit(limits["output"])

    def draw(self, result, t, head):
        record = result.records[t]
        if result.variant == "softmax":
            T = len(result.tokens)
            cache = np.full((T, mechanism.D_V), np.nan)
            cache[:t + 1] = [r.target[0, head] for r in result.records[:t + 1]]
            self.pictures["cache"].show(cache)
            weights = np.zeros(T)
            weights[:t + 1] = record.extras["attention"][0, head]
            self.pictures["attention"].show(weights)
        else:
            self.pictures["state"].show(record.state[0, head])
            self.pictures["write"].show(record.write[0, head])
            decay = record.decay
            if decay is None:
                kept = np.ones(mechanism.D_K)
            else:
                kept = np.broadcast_to(np.asarray(decay[0, head], dtype=float), (mechanism.D_K,))
            self.pictures["transition"].show(kept)
            beta = ""
            if record.beta is not None:
                beta = f"β = {format_number(float(record.beta[0, head]), 2)}"
            elif record.a is not None:                           # RWKV-7: a bᵀ = −β κ̂ κ̂ᵀ, so β = −a·b
                beta = f"β = {format_number(float(-record.a[0, head] @ record.b[0, head]), 2)}"
            self.pictures["transition"].subtitle.text = beta
        if mechanism.is_delta(result.variant):
            self.pictures["delta"].show(np.stack([record.prediction[0, head], record.target[0, head], record.error[0, head]]))
        self.pictures["readout"].show(record.output[0, head][None, :])


class StateView(pn.viewable.Viewer):
    """Draws a StateStore; owns the player and the per-head pictures, and nothing of the data."""

    store = param.ClassSelector(class_=StateStore)
    session = param.Parameter()
    url_notices = param.List(default=[])

    def __init__(self, **params):
        super().__init__(**params)
        store, session = self.store, self.session
        player_values, player_notices = read_query(Player, {"value": "t", "speed": "speed"},
                                                   pn.state.session_args)
        self.player = Player(**player_values)
        length = len(store.result.records)
        if self.player.value > length - 1:
            player_notices.append(_("The link asked for step {t}, but this sequence has {n} steps: the last "
                                    "one is shown.").format(t=self.player.value + 1, n=length))
        self.player.length = length
        session.add_notices("url", self.url_notices + player_notices)

        self.rule = Explanation(session, sizing_mode="stretch_width")
        self.strip = pn.pane.HTML(stylesheets=[STRIP_CSS], sizing_mode="stretch_width", margin=(4, 10))
        self.memory = pn.pane.HTML(stylesheets=[TEXT_CSS], margin=(4, 10), sizing_mode="stretch_width")
        self.strip_help = Explanation(
            session, sizing_mode="stretch_width",
            elementare=_("Each box is one step. **name:number** stores a number under a name, **name?** asks "
                         "for it, **·** waits. The highlighted box is the current step; under each question, "
                         "the memory's answer (✓ right, ✗ wrong)."),
            superiore=_("One box per token $t$. A write token sets $k_t, v_t$ to the vectors of its name and "
                        "number (random unit vectors, $d_k = d_v = 16$) and $q_t = k_t$; a question sets "
                        "only $q_t$; a wait token sets nothing, so only the transition acts."))
        self.heads = [HeadPanel(h, session, explain=(h == 0)) for h in range(mechanism.MAX_HEADS)]
        self.head_titles = [pn.pane.HTML(margin=(10, 10, 0, 10), stylesheets=[":host { font-size: 20px; }"])
                            for _h in self.heads]
        store.param.watch(self._reconfigure, ["result", "problems"])
        self.player.param.watch(self._draw, "value")
        write_query(store, StateStore.URL)
        write_query(self.player, {"value": "t", "speed": "speed"})
        self._reconfigure()

    def controls(self):
        store = self.store
        variant = pn.widgets.Select.from_param(
            store.param.variant, name=_("Model"), sizing_mode="stretch_width",
            options={_(VARIANT_NAMES[v]): v for v in VARIANTS})
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
        source_label, heads_label = label(_("Sequence")), label(_("Heads"))

        def show(*_events):
            preset.visible = store.source == "preset"
            pairs.visible = example.visible = store.source == "mqar"
            text.visible = store.source == "typed"
            alpha.visible = store.variant in mechanism.FORGETTING
            beta.visible = store.variant in mechanism.CORRECTING

        store.param.watch(show, ["source", "variant"])
        show()
        return [variant, source_label, source, preset, pairs, example, text, heads_label, heads, alpha,
                beta, seed]

    def __panel__(self):
        title = html.escape(_("The state fills up"))
        return pn.Column(
            pn.pane.HTML(f"<h1 style='margin:0;font-size:30px;color:#102a43'>{title}</h1>", margin=(0, 10)),
            self.rule, self.strip, self.strip_help, self.player, self.memory,
            self.head_titles[0], self.heads[0].layout, self.head_titles[1], self.heads[1].layout,
            sizing_mode="stretch_width")

    def _reconfigure(self, *_events):
        store, result = self.store, self.store.result
        self.session.notify("input", problem_messages(store.problems) if store.source == "typed" else [])
        records = result.records
        peak = lambda name: max((np.abs(getattr(r, name)).max() for r in records
                                 if getattr(r, name) is not None), default=1.0)
        limits = {"state": peak("state"), "write": peak("write"), "output": peak("output"),
                  "target": peak("target"),
                  "delta": max(peak("prediction"), peak("target"), peak("error"))}
        name = _(VARIANT_NAMES[result.variant])
        self.rule.elementare = f"**{name}.** " + _(RULE_PLAIN[result.variant])
        self.rule.superiore = (f"**{name}** ({PAPERS[result.variant]}). " + _(RULE_PLAIN[result.variant])
                               + "\n\n" + RULE_FORMULA[result.variant])
        with pn.io.hold():
            for h, panel in enumerate(self.heads):
                shown = h < store.heads
                panel.layout.visible = self.head_titles[h].visible = shown
                self.head_titles[h].object = "<b>%s</b>" % html.escape(_("Head {n}").format(n=h + 1))
                if shown:
                    panel.configure(result, limits)
            self.head_titles[0].visible = store.heads > 1
            self.player.length = len(records)
            self._draw()

    def _draw(self, *_events):
        result, t = self.store.result, self.player.value
        t = min(t, len(result.records) - 1)
        with pn.io.hold():
            self.strip.object = token_strip(result, t)
            self.memory.object = memory_line(result, t)
            for h in range(self.store.heads):
                self.heads[h].draw(result, t, h)
            self.heads[0].answer.object = answer_html(result, t)


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
