"""The knob page's view: the lamp, the knob's pictures, the unified table and three small multiples.
It draws a TransitionStore and never computes."""
import html

import numpy as np
import panel as pn

from lineare.app.components.controls import mechanism_knobs, sidebar_label
from lineare.app.components.later import Later, SectionPart
from lineare.app.components.plots import MatrixPicture, main_picture
from lineare.app.components.style import LAMP_CSS
from lineare.app.components.text import TEXT_CSS, Explanation, point_box
from lineare.app.dashboards.base import DashboardView, heading, title
from lineare.app.dashboards.transition.model import (ALPHA_FLOOR, D_K, D_V, JUMPS, PRESETS, SEQUENCE_NAMES,
                                             TransitionStore, effective_gate)
from lineare.app.dashboards.transition.pictures import ANSWERS_CSS, TABLE_CSS, RecallPicture, answers_html, table_html
from lineare.app.i18n import N_, _, format_number
from lineare.app.variants import GATE_NAMES, KNOB_GATES, REGISTRY, label
from lineare.engine.gates import SPREAD

# what the decay D_t does at each gate, in words and in formulas
DECAY_PLAIN = {
    "none": N_("The old summary is kept whole."),
    "fixed": N_("At every word, pauses and questions included, the old summary keeps α = {alpha} of itself."),
    "scalar": N_("Each time a new pair arrives, the old summary keeps α = {alpha} of itself; pauses and "
                 "questions leave it alone. The word decides when to forget."),
    "channel": N_("Each time a new pair arrives, every column of the summary keeps its own share of itself: "
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
# what the knob computes near RWKV-7's row, which it marks without being RWKV-7 (tests/test_transition.py)
KNOB_ON_RWKV7 = N_(r"Near RWKV-7's row the knob computes $\mathrm{diag}(\alpha_t) - \beta\, (\alpha_t \odot k_t)\, "
                   r"k_t^\top$: it fades first, then erases along $k_t$ a share $\beta$ of what is left. RWKV-7 "
                   r"itself computes $\mathrm{diag}(w_t) - \hat\kappa_t (a_t \odot \hat\kappa_t)^\top$, so "
                   r"$S\,\mathrm{diag}(w_t) - (S \hat\kappa_t)(a_t \odot \hat\kappa_t)^\top$: the erasure reads the "
                   r"memory as it was before the fading and is not faded itself; it runs along its own removal "
                   r"key $\hat\kappa_t$, with a rate "
                   r"$a_t$ per channel, and writes $v_t \tilde k_t^\top$. The two transitions agree where nothing "
                   r"fades.")
# why the knob is close to a model and not on it (the registry's `nearest`), one sentence under the lamp
CLOSE_NOTES = {
    "rwkv6": N_("The knobs are close to RWKV-6, not on it: RWKV-6 has GLA's transition but reads the summary "
                "before adding the current pair, with a bonus for that pair."),
    "rwkv7": N_("Fading per column plus a correction, as in RWKV-7, but not RWKV-7: the knob fades the "
                "summary and then erases from what is left; RWKV-7 erases what the summary held before the "
                "fading, and the erased part is not faded; it has its own strength for each column and writes "
                "with a label of its own."),
    "mlstm": N_("The knobs are close to mLSTM, not on it: mLSTM also fades by one number per word, but it has "
                "an input gate too and divides its answer by a running total."),
}
CARD = dict(margin=(0, 8, 12, 0))
# the three small multiples' height by the column's width (a phone, a tablet, a projector with the sidebar open),
# held by their marker until made
SMALL_HEIGHT = {372: 1695, 750: 1707, 996: 1138}


def number(x, decimals=2):
    return format_number(round(float(x), decimals), decimals)



class TransitionView(DashboardView):
    """Draws a TransitionStore: the lamp, the knob's pictures, the unified table, the small multiples."""

    Store = TransitionStore
    slug = "transition"

    def __init__(self, **params):
        super().__init__(**params)
        session = self.session
        # Superiore's full account of the knob goes under the pictures; above them, one sentence
        self.intro_more = Explanation(session)
        self.intro = Explanation(
            session,
            elementare=_("Every model here keeps a summary of the same size and updates it at every word in two "
                         "moves: first it transforms what it already holds (the **transition**), then it adds the new "
                         "pair, a label and its information. From one model to another it is mostly the transition "
                         "that changes (the table below says what else differs). Turn the **knobs** {where}: "
                         "**forget α** fades the old summary, **correct β** erases what the summary held under a "
                         "label before writing it again, and the **gate** says who decides the fading.").format(
                where=_("on the left") if session.notebook else _("in the menu (☰)")),
            superiore=_(r"One skeleton for the whole family: $S_t = S_{t-1} A_t + W_t$, with a transition "
                        r"$A_t$ and a write $W_t$, and $o_t = S_t q_t$. The knob makes the transition "
                        r"continuous: $$S_t = S_{t-1}\, D_t\, (I - \beta\, k_t k_t^\top) + v_t k_t^\top$$ "
                        r"with $D_t = I$ (no gate), $\alpha I$ (fixed), $\alpha_t I$ (scalar) or "
                        r"$\mathrm{diag}(\alpha_t)$ (per channel). The engine runs it as a diagonal-plus-low-rank "
                        r"transition (its RWKV-7 step). On a lit row it has exactly that row's transition and "
                        r"write; RWKV-6, RWKV-7 and mLSTM are off the knob, only close to it. Between rows the knob "
                        r"writes the whole "
                        r"$v_t k_t^\top$, where DeltaNet writes $\beta_t v_t k_t^\top$: the two meet at $\beta = 1$.")
                      + "\n\n" + _(KNOB_ON_RWKV7))
        self.intro_more.superiore, self.intro.superiore = self.intro.superiore, _(
            r"One skeleton for the whole family, $S_t = S_{t-1} A_t + W_t$: the knobs turn the transition "
            r"$A_t$ of one model into another's. What the knob computes is written under the pictures.") + (
            " " + _("Open the menu (☰, top left) and turn the knobs.") if session.present else "")
        self.lamp = pn.pane.HTML(stylesheets=[LAMP_CSS], sizing_mode="stretch_width", margin=(6, 10))
        self.setting = Explanation(session)
        self.jumps = {v: pn.widgets.Button(label=label(v), color="primary", variant="outline",
                                           height=40)
                      for v in JUMPS}
        for variant, button in self.jumps.items():
            button.on_click(lambda _event, variant=variant: self.store.jump(variant))
        jump_label = pn.pane.HTML("<b>%s</b>" % html.escape(_("Set the knobs to:")), margin=(14, 4, 0, 10),
                                  stylesheets=[":host { font-size: 16px; }"])
        self.jump_row = pn.FlexBox(jump_label, *self.jumps.values(), sizing_mode="stretch_width")

        self.transition = MatrixPicture(_("Transition"), _("to key dimension"), _("from key dimension"),
                                        D_K, D_K, width=280, height=260)
        self.transition.set_limit(1.0)
        self.state = MatrixPicture(_("Memory S at the end"), _("key dimension"), _("value dimension"),
                                   D_V, D_K, width=280, height=260)
        self.recall = RecallPicture(_("What each answer matches"), _("stored number"), _("question"), width=370,
                                    height=250)
        self.answers = pn.pane.HTML(stylesheets=[ANSWERS_CSS], margin=(0, 10))
        self.table = pn.pane.HTML(stylesheets=[TEXT_CSS, TABLE_CSS], sizing_mode="stretch_width",
                                  margin=(4, 10))

        # below the first screen: the three small multiples, made with their pictures when scrolled near
        self.smalls, self._small = Later(self._make_small, height=SMALL_HEIGHT), []

        # explanations next to the pictures: they only follow the level
        explain = lambda plain, formulas: Explanation(session, elementare=plain, superiore=formulas)
        self.transition_help = explain(
            _("Before the new pair is written, the old summary is multiplied by this grid. A plain red diagonal "
              "keeps everything; a paler one fades the past; the extra pattern across the grid, when β is "
              "above 0, wipes out what the summary held under this label."),
            _(r"The transition $D_t (I - \beta k_t k_t^\top)$ at this token, a $d_k \times d_k$ matrix "
              r"that right-multiplies $S_{t-1}$: $I$ for linear attention, $\alpha I$ for RetNet and "
              r"Mamba-2, $\mathrm{diag}(\alpha_t)$ for GLA, $I - k_t k_t^\top$ for DeltaNet (it removes the "
              r"direction $k_t$). Read from the engine's record of this step."))
        self.state_help = explain(
            _("The summary after the whole sequence. The colour scale stays the same for every setting of "
              "the knobs, so a summary that forgets looks paler."),
            _(r"$S_T \in \mathbb{R}^{d_v \times d_k}$, here $16 \times 16$, after the last token. The "
              r"colour range is fixed per sequence (the largest entry of the states of linear attention and "
              r"DeltaNet), so decay shows as paler colours."))
        self.recall_help = explain(
            _("For each question, how closely the summary's answer matches every stored number, the "
              "information (red: close). The framed cell is the right number, the dot the summary's choice. Two "
              "red cells in a row mean two numbers are mixed up."),
            _(r"Cosine of the read-out $o_t = S_t q_t$ with each stored value vector $v$; the answer is the "
              r"largest. Framed: the latest value stored under the name; dot: the $\operatorname{argmax}$."))
        # the three pictures, each with its words under it (the lesson's cards 1-3 bring them under the card)
        self.picture_cards = [
            pn.Column(main_picture(picture.figure), *below, width=width, **CARD)
            for picture, below, width in ((self.transition, [self.transition_help], 285),
                                          (self.state, [self.state_help], 285),
                                          (self.recall, [self.answers, self.recall_help], 375))]
        self.table_help = explain(
            _("The lit row is the model the knobs are on now. mLSTM adds an input gate and divides by a "
              "running total, and softmax attention keeps a notebook of every word instead of a fixed "
              "summary: these two knobs cannot reach them."),
            _(r"Paper convention: $S \in \mathbb{R}^{d_v \times d_k}$, read-out $o_t = S_t q_t$, and the "
              r"transition right-multiplies $S_{t-1}$. The same family as online regression: linear "
              r"attention maximizes $\langle S k_t, v_t \rangle$ with a proximity term, Mamba-2 adds decay, "
              r"DeltaNet takes one gradient step of size $\beta_t$ on $\tfrac12 \lVert S k_t - v_t \rVert^2$, "
              r"Gated DeltaNet adds the weight decay $\alpha_t$."))
        self.small_help = explain(
            _("Choose three models: each reads the same sequence. The picture is its summary at the end, "
              "below it how many questions it answered right. Models that forget use the same α as the "
              "knob; models that correct erase fully (β = 1). Softmax attention keeps every word in its "
              "notebook but has no sense of order here, so a number that changes confuses it too."),
            _(r"The same $q_t, k_t, v_t$ for all three, run by the engine's own variant of each model; "
              r"forget gates from the knob's $\alpha$ (as above: scalar and per-channel gates act on "
              r"writes), $\beta_t = 1$ for the delta rule, $u = 1$ for RWKV-6, $\tilde\imath_t = 0$ (so "
              r"$i_t = 1$) for mLSTM. Softmax "
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
                                                   options={_(GATE_NAMES[g]): g for g in KNOB_GATES})
        alpha, beta, seed = mechanism_knobs(store)

        def gray_out(*_events):                  # with no gate, α has nothing to act on
            alpha.disabled = store.gate == "none"

        store.param.watch(gray_out, "gate")
        gray_out()
        return [preset, sidebar_label(_("Gate")), gate, alpha, beta, seed]

    def parts(self):
        small = lambda key: SectionPart(self.smalls, lambda _section: [s[key] for s in self._small])
        return {"answers": [self.answers], "recall.colours": [self.recall.image, self.recall.dots],
                "recall": [self.picture_cards[2]], "jumps": [self.jump_row], "smalls": small("card"),
                "smalls.scores": small("score")}

    def _small_multiple(self, slot):
        name = TransitionStore.MODELS[slot]
        select = pn.widgets.Select.from_param(self.store.param[name], name=_("Model {n}").format(n=slot + 1),
                                              options={label(v): v for v in REGISTRY}, width=340)
        picture = MatrixPicture("", _("key dimension"), _("value dimension"), D_V, D_K, width=360, height=330)
        score = pn.pane.HTML(stylesheets=[ANSWERS_CSS], margin=(0, 10), width=360)
        card = pn.Column(select, pn.pane.Bokeh(picture.figure), score, width=380, **CARD)
        return {"picture": picture, "score": score, "card": card, "drawn": None}

    def __panel__(self):
        cards = pn.FlexBox(*self.picture_cards, sizing_mode="stretch_width")
        return pn.Column(
            title(_("The transition knob")),
            self.intro, point_box(pn.Column(self.lamp, self.setting, margin=0, sizing_mode="stretch_width")),
            self.jump_row,
            cards, self.intro_more,
            heading(_("The family in one table")), self.table, self.table_help,
            heading(_("Three models on the same sequence")), self.small_help, self.smalls,
            sizing_mode="stretch_width")

    @property
    def small(self):
        """The three small multiples (made now if not yet): their pictures, scores and cards."""
        self.smalls.section()
        return self._small

    def _make_small(self):
        self._small = [self._small_multiple(slot) for slot in range(3)]
        for small, comparison in zip(self._small, self.store.compared):
            self._draw_small(small, comparison, self.store.sequence)
        return pn.FlexBox(*(s["card"] for s in self._small), sizing_mode="stretch_width")

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
                button.variant = "solid" if variant in knob.match.exact else "outline"
            for small, comparison in zip(self._small, store.compared):         # none until scrolled to
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
        exact, between, close = knob.match.exact, knob.match.between, knob.match.close
        notes = [_(REGISTRY[v].knob_note) for v in exact if REGISTRY[v].knob_note]
        if exact:
            names = " · ".join(label(v) for v in exact)
            text = html.escape(_("The knobs are on: {model}")).format(model=f"<b>{html.escape(names)}</b>")
            if close:
                text += " " + html.escape(_("(close to: {model})")).format(           # short: no parentheses inside
                    model=html.escape(" · ".join(_(REGISTRY[v].short) for v in close)))
        elif between:
            words = html.escape(_("Between two models: {first} and {second}"))
            text = '<span class="between">%s</span>' % words.format(
                first=f"<b>{html.escape(label(between[0]))}</b>",
                second=f"<b>{html.escape(label(between[1]))}</b>")
            notes.append(_("No model of the table sits exactly here: the rows of the two nearest are marked."))
        else:
            names = " · ".join(label(v) for v in close)
            text = html.escape(_("The knobs are close to: {model}")).format(model=f"<b>{html.escape(names)}</b>")
        notes += [_(CLOSE_NOTES[v]) for v in close]
        note = " ".join(notes)
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
            plain.append(_("Before the new pair is added, what the summary held under that label is erased, so "
                           "new information replaces the old."))
        else:
            plain.append(_("Before the new pair is added, {percent}% of what the summary held under that label "
                           "is erased.").format(percent=round(100 * beta)))
        formulas = [_(DECAY_FORMULA[gate]), _(CORRECTION_FORMULA),
                    _("Now α = {alpha} and β = {beta}.").format(alpha=number(alpha), beta=number(beta))]
        if gate == "channel":
            formulas.append(_("The columns keep from {high} to {low} of themselves at each write.")
                            .format(**values))
        self.setting.elementare = " ".join(plain)
        self.setting.superiore = " ".join(formulas)
        self.table.object = table_html(knob.match, superiore)


build = TransitionView.build
