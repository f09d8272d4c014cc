"""The page "Parallel = recurrent": draws a FormsStore, computes nothing."""
import asyncio
import html

import numpy as np
import panel as pn
from bokeh.models import ColorBar, CustomJSTickFormatter, FixedTicker, Title

from lineare.app.components.browser import callback
from lineare.app.components.controls import sidebar_label
from lineare.app.components.later import Later, SectionPart, in_section
from lineare.app.components.player import Player
from lineare.app.components.plots import TEXT_TAG, TITLE_SIZE, MatrixPicture, main_picture, number_format
from lineare.app.components.text import TEXT_CSS, Explanation, point_box
from lineare.app.dashboards.base import DashboardView, heading, title
from lineare.app.dashboards.parallel_recurrent.model import (CHUNKS, COST_BUDGET_S, COST_MAX_LENGTH, D, FIXED_STATE,
                                                     MAX_LENGTH, PAIRS, FormsStore, answered, opening_step,
                                                     steps_needed)
from lineare.app.dashboards.parallel_recurrent.pictures import (TABLE_CSS, CostPicture, CountPicture, MaskPicture,
                                                        comparison_table, scientific)
from lineare.app.i18n import N_, _, browser_locale, format_number, ngettext
from lineare.app.variants import REGISTRY

# the page's introduction at level Elementare (a lesson card holds it back: its heading answers cards 1 and 3)
INTRO_PLAIN = N_(
    "**Three ways to compute, the same answers.** A linear-attention layer can be computed in three "
    "ways. **Recurrent**: word after word, keeping only a small summary, like reading a book with a "
    "notepad. **Parallel**: all words at once, as one big table of who looks at whom: fast on a "
    "graphics card, but the table grows with the square of the length. **Chunked**: cut the "
    "sequence into pieces; inside a piece work like the parallel way, from one piece to the next "
    "pass the summary along like the recurrent one.\n\n"
    "One table is enough when the fading is one number per word (RetNet, Mamba-2). When each column "
    "of the summary fades at its own speed (GLA, RWKV), the parallel way needs one such table per "
    "column and adds up what they give.\n\n"
    "Below, the same random input goes through the three ways: compare what comes out, see the "
    "table the parallel way builds, and measure what each one costs.")
STATUS_CSS = ":host { font-size: 16px; color: #3e4c59; } .busy { color: #b42318; }"
# the heights of the sections below the first screen by the column's width (a phone's 372 px, a tablet's 750, a
# projector's 996 with the sidebar open), held by their markers until they are made
DIFFERENCE_HEIGHT = {372: 673, 750: 522, 996: 500}
MASK_HEIGHT = {372: 767, 750: 857, 996: 857}
COST_HEIGHT = {372: 1360, 750: 1237, 996: 817}


class FormsView(DashboardView):
    """Draws a FormsStore: outputs, differences, the mask and the cost; owns none of the data."""

    Store = FormsStore
    slug = "parallel-recurrent"

    def __init__(self, **params):
        super().__init__(**params)
        store, session = self.store, self.session

        self.intro = Explanation(session, sizing_mode="stretch_width")
        self.intro.elementare = _(INTRO_PLAIN)
        self.intro.superiore = _(
            "One layer, three schedules of the same sum. **Recurrent**: $S_t = S_{t-1} A_t + v_t k_t^\\top$, "
            "$o_t = S_t q_t$, with $O(T d^2)$ work and a state of fixed size. **Parallel**: unrolling the "
            "recurrence gives $o = (Q K^\\top \\odot L)\\, V$ with the decay mask "
            "$L_{tj} = \\alpha_{j+1} \\cdots \\alpha_t$ for $j \\le t$ (0 above the diagonal): $O(T^2 d)$ work "
            "in matrix products (Katharopoulos et al. 2020 for linear attention; L is the semiseparable "
            "matrix of Mamba-2's SSD, Dao & Gu 2024). That holds for a **scalar** decay per token. With a "
            "decay per key channel, $\\alpha_t \\in (0,1)^{d_k}$ (GLA, RWKV-6, RWKV-7 before its correction), "
            "the mask moves inside the "
            "dot product, one per channel: with $G_t = \\sum_{s \\le t} \\log \\alpha_s \\in \\mathbb{R}^{d_k}$, "
            "$$o_t = \\sum_{j \\le t} \\Big( \\sum_{i=1}^{d_k} q_{t,i}\\, k_{j,i}\\, e^{G_{t,i} - G_{j,i}} \\Big) "
            "v_j$$ (RWKV-6 reads $S_{t-1}$ and adds its bonus on the diagonal). **Chunked**: blocks of $C$ "
            "tokens, the parallel form "
            "inside each block and the state across blocks:"
            "$$O_{[n]} = (Q_{[n]} K_{[n]}^\\top \\odot L_{[n]})\\, V_{[n]} + \\tilde Q_{[n]} S_{[n-1]}^\\top,"
            "\\qquad S_{[n]} = S_{[n-1]} \\tilde A_{[n]} + V_{[n]}^\\top \\tilde K_{[n]}$$"
            "with $\\tilde{\\ }$ marking the decays inside the block: $O(T C d + T d^2)$ work. For the delta "
            "rule the transition $A_t = \\alpha_t (I - \\beta_t k_t k_t^\\top)$ is not diagonal; its chunked "
            "form solves a small triangular system per block (the WY/UT representation, Yang et al. 2024).")

        # 1. the three outputs, filled in the order each form computes them (the Player steps through)
        self.player, notices = Player.from_query(pn.state.session_args, speed=4.0, labels=self._player_words())
        session.add_notices("url", notices)
        if Player.URL["value"] not in (pn.state.session_args or {}):
            self.player.value = opening_step(store.length, store.chunk_size)
        self.point = Explanation(session)
        self.output_pictures = {            # from one token per step to all at once
            form: MatrixPicture("", _("position in the sequence") if form == "parallel" else "", _("channel"), D, 8,
                                width=630, height=160 if form == "parallel" else 135, value_label="o")
            for form in ("recurrent", "chunked", "parallel")}
        for picture in self.output_pictures.values():        # titles that follow the step, in the browser
            picture.figure.title = Title(text="", text_font_size=TITLE_SIZE, syncable=False)
        for picture in self.output_pictures.values():
            picture.figure.yaxis.ticker = FixedTicker(ticks=[0, 8, 16])
        self.outputs_text = outputs_text = Explanation(
            session, width=330,
            elementare=_("Each strip is what one way answers: one column per word, one row (channel) per "
                         "number of the answer (blue negative, red positive, the same colours in the three "
                         "strips). Where all three have answered they look the same, because they are the same. "
                         "Further down, a strip shows the difference between two ways, magnified enormously (its "
                         "scale is in its title): "
                         "only specks of rounding are left, a little larger where the answers are larger."))
        strips = pn.Column(*[main_picture(picture.figure, margin=(0, 0, 2, 0))
                             for picture in self.output_pictures.values()])
        self.strips_section = pn.FlexBox(strips, outputs_text, sizing_mode="stretch_width")

        # 2.–4. below the first screen: the differences, the mask and the cost, made when the visitor scrolls
        # near them (their pictures are most of the page's models); their heights are the sections' own at
        # 1366×768, so the page does not jump when they come
        self.lower = [Later(lambda: DifferenceSection(store), height=DIFFERENCE_HEIGHT),
                      Later(lambda: MaskSection(store, session), height=MASK_HEIGHT),
                      Later(lambda: CostSection(store, session), height=COST_HEIGHT)]

        self.headings = [heading(_("Same input, three forms")), heading(_("The mask and the chunks")),
                         heading(_("What each form costs"))]
        store.param.watch(self._draw_comparison, ["comparison"])
        session.param.watch(lambda _event: self._draw_point(), "level")
        self._draw_comparison(opening=False)
        if store.cost:
            pn.state.onload(self._measure_after_load)

    def __panel__(self):
        # the point, the player and the three strips first (the first screen of a projector), words after
        return pn.Column(
            title(_("Parallel = recurrent")), point_box(self.point), self.player, self.strips_section, self.intro,
            self.headings[0], self.lower[0], self.headings[1], self.lower[1], self.headings[2], self.lower[2],
            sizing_mode="stretch_width")

    # what tests and lesson cards read of the sections below the first screen: reading one makes its section
    difference, table, outputs_section = (in_section(0, name) for name in ("difference", "table", "layout"))
    mask_picture, mask_note, mask_section = (in_section(1, name) for name in ("picture", "note", "layout"))
    count_picture, cost_picture, measure_button, status, cost_section = (
        in_section(2, name) for name in ("count_picture", "cost_picture", "measure_button", "status", "layout"))

    def parts(self):
        chunked = self.output_pictures["chunked"]
        difference = lambda d: [d.difference.renderer, d.difference.figure.title,
                                d.difference.figure.select_one(ColorBar)]
        return {"point": [self.point], "intro": [self.intro], "outputs_text": [self.outputs_text],
                "player": [self.player],
                "strips": [self.strips_section], "chunked": [chunked.renderer, chunked.figure.title],
                "differences": SectionPart(self.lower[0], difference),
                "differences.table": SectionPart(self.lower[0], lambda d: [d.table]),
                "outputs_section": SectionPart(self.lower[0], lambda d: [d.layout])}

    def controls(self):
        store = self.store
        variant = pn.widgets.Select.from_param(store.param.variant, name=_("Model"), sizing_mode="stretch_width",
                                               options={_(REGISTRY[v].label): v for v in FIXED_STATE})
        # sliders hand their value over on release: every value costs a run of the three forms
        length = pn.widgets.IntSlider(label=_("Sequence length T"), start=8, end=MAX_LENGTH, value=store.length,
                                      sizing_mode="stretch_width")
        alpha = pn.widgets.FloatSlider(label=_("Forget α (1 keeps everything)"), start=0.05, end=1.0, step=0.01,
                                       value=store.alpha, format=number_format(decimals=2, fixed=True),
                                       sizing_mode="stretch_width")
        for widget, name in ((length, "length"), (alpha, "alpha")):
            widget.param.watch(lambda event, name=name: setattr(store, name, event.new), "value_throttled")
            store.param.watch(lambda event, widget=widget: setattr(widget, "value", event.new), name)
        chunk = pn.widgets.RadioButtonGroup.from_param(
            store.param.chunk_size, name=_("Chunk size C"), options={str(c): c for c in CHUNKS},
            color="primary", variant="outline", sizing_mode="stretch_width")
        channel = pn.widgets.IntSlider.from_param(store.param.channel, name=_("Key channel shown in the mask"),
                                                  sizing_mode="stretch_width")
        seed = pn.widgets.IntInput.from_param(store.param.seed, name=_("Random input (seed)"),
                                              sizing_mode="stretch_width")
        chunk_label = sidebar_label(_("Chunk size C"))

        def show(*_events):
            alpha.visible = REGISTRY[store.variant].forgets
            channel.visible = REGISTRY[store.variant].per_channel

        store.param.watch(show, ["variant"])
        show()
        return [variant, length, chunk_label, chunk, alpha, channel, seed]

    # -- drawing (each under pn.io.hold: one message to the browser per change)

    @staticmethod
    def _player_words():
        return {"back": _("Back"), "forward": _("Forward"), "play": _("Play"), "pause": _("Pause"),
                "back_tip": _("Step back (←)"), "forward_tip": _("Step forward (→)"),
                "play_tip": _("Play or pause (Space)"), "speed": _("Speed: {speed} steps per second"),
                "step": _("Step {t} of {n}"), "locale": browser_locale()}

    def _draw_comparison(self, *events, opening=True):
        comparison = self.store.comparison
        T, C = comparison.length, comparison.chunk_size
        t = opening_step(T, C) if opening else self.player.frame()
        with pn.io.hold():
            for form, picture in self.output_pictures.items():
                # step s shows the tokens the form has answered by then; the others are not computed yet
                done = answered(form, T, C)                                                       # [T]
                output = comparison.outputs[form].T                                               # [d_v, T]
                frames = np.where(np.arange(T)[None, None, :] < done[:, None, None], output[None], np.nan)
                picture.set_cols(T)
                picture.show_frames(frames, comparison.peak, t=t)                                 # [T, d_v, T]
                texts = [self._strip_title(form, T, C, done[s]) for s in range(T)]
                picture.figure.title.update(text=texts[min(t, T - 1)], tags=[TEXT_TAG, texts])
            self.player.new_run(T, jump=t if opening else None)
            self._draw_point()
            worst = {dtype: scientific(max(comparison.errors[dtype, pair][1] for pair in PAIRS))
                     for dtype in ("float32", "float64")}
            self.outputs_text.superiore = _(
                "Outputs $o_t \\in \\mathbb{R}^{d_v}$ of one head ($d_k = d_v = 16$; $q, k, v$ random with the "
                "seed, gates from the model's default knobs), same colour scale. Further down: "
                "$o^{\\mathrm{chunk}} - o^{\\mathrm{rec}}$ in float32, on its own scale. Relative error: "
                "$\\lVert x - y \\rVert / \\lVert y \\rVert$ (RMS). The engine's tests hold every model to "
                "$\\le 10^{-5}$ in float32 ($\\le 10^{-4}$ with very strong decays, $\\alpha$ near 0.05) and "
                "$\\le 10^{-10}$ in float64.") + " " + _(
                "Measured now on this input, the largest relative error between any two forms: {float32} in "
                "float32, {float64} in float64.").format(**worst)

    @staticmethod
    def _strip_title(form, length, chunk_size, done):
        """A strip's title at one step: its form, and how many tokens it has answered by then."""
        if form == "recurrent":
            return ngettext("Recurrent: one token per step, {done} of {n} answered",
                            "Recurrent: one token per step, {done} of {n} answered", done).format(done=done, n=length)
        if form == "chunked":
            return ngettext("Chunked: a block of {size} per step, {done} of {n} answered",
                            "Chunked: a block of {size} per step, {done} of {n} answered", done).format(
                size=chunk_size, done=done, n=length)
        return _("Parallel: all {n} tokens in one step").format(n=length)

    def _draw_point(self):
        comparison = self.store.comparison
        T, C = comparison.length, comparison.chunk_size
        worst = max(comparison.errors["float32", pair][1] for pair in PAIRS)
        blocks = steps_needed("chunked", T, C)
        words = dict(n=T, size=C, blocks=blocks, error=scientific(worst),
                     steps=ngettext("{count} step", "{count} steps", blocks).format(count=blocks))
        self.point.param.update(
            elementare=_("**The same answers, in three different orders.** Press ▶: the recurrent way answers "
                         "one word per step ({n} steps), the chunked way a block of {size} ({steps}), the "
                         "parallel way all {n} at once (1 step). Where they have answered, the strips are the "
                         "same, up to rounding: about {error} of the size of the answers.").format(**words),
            superiore=_("**One sum, three schedules.** Sequential steps to answer $T = {n}$ tokens: "
                        "recurrent $T$, chunked $\\lceil T/C \\rceil = {blocks}$ with $C = {size}$, parallel 1, "
                        "each step larger (a $C \\times C$ block, the whole $T \\times T$ table). The outputs "
                        "agree up to rounding: largest relative difference {error} in float32."
                        ).replace("{n}", str(T)).replace("{blocks}", str(words["blocks"]))
                          .replace("{size}", str(C)).replace("{error}", words["error"]))

    async def _measure_after_load(self):
        await asyncio.sleep(1.0)          # let the page finish drawing: it shares the CPU (and Python's lock)
        self.store.measure()


class LowerSection(pn.viewable.Viewer):
    """A section below the first screen: its `layout`, drawn from the store now and whenever `names` change."""

    def follow(self, store, names):
        self.store = store
        store.param.watch(self._draw, names)
        self._draw()

    def __panel__(self):
        return self.layout

    def _draw(self, *_events):
        raise NotImplementedError


class DifferenceSection(LowerSection):
    """The chunked form's output less the recurrent one's, and the table of the three forms' differences."""

    def __init__(self, store):
        super().__init__()
        self.difference = MatrixPicture("", _("position in the sequence"), _("channel"), D, 8,
                                        width=630, height=175, value_label="Δ")
        self.difference.figure.yaxis.ticker = FixedTicker(ticks=[0, 8, 16])
        self.difference.figure.select_one(ColorBar).formatter = powers_of_ten()
        self.table = pn.pane.HTML(stylesheets=[TABLE_CSS], margin=(4, 10))      # as wide as its 16 px table
        self.layout = pn.FlexBox(pn.pane.Bokeh(self.difference.figure, margin=(8, 12, 0, 0)), self.table,
                                 sizing_mode="stretch_width")
        self.follow(store, ["comparison"])

    def _draw(self, *_events):
        comparison = self.store.comparison
        delta = comparison.outputs["chunked"] - comparison.outputs["recurrent"]
        largest = float(np.abs(delta).max())
        with pn.io.hold():
            self.difference.figure.title.text = _("Chunked − recurrent: up to ±{limit}").format(
                limit=scientific(largest))
            show_matrix(self.difference, delta.T, largest)
            self.table.object = comparison_table(comparison)


class MaskSection(LowerSection):
    """The decay mask of the parallel form, the chunks outlined on it, and what it looks like for this model."""

    def __init__(self, store, session):
        super().__init__()
        self.picture = MaskPicture(_("Decay mask L of the parallel form"))
        self.note = pn.pane.HTML(stylesheets=[TEXT_CSS], width=500, margin=(4, 10))
        mask_text = Explanation(
            session, width=500,
            elementare=_("Row t, column j: how much word j still counts when the model answers at word t. "
                         "Yellow: fully; dark: faded away; grey, above the diagonal: the future, never looked at.\n\n"
                         "The **outlined squares** are the chunks: what is inside a square is computed all at "
                         "once, like the parallel way. The **hatched part** below them is never built as "
                         "a table: it reaches later chunks through the small summary passed along, like the "
                         "recurrent way. The parallel way builds the whole triangle."),
            superiore=_("$L_{tj} = \\exp(G_t - G_j)$ for $j \\le t$, with $G_t = \\sum_{s \\le t} \\log \\alpha_s$ "
                        "(grey, above the diagonal: $j > t$; decay_mask in engine.ops.parallel). The parallel form "
                        "builds all "
                        "$T^2$ entries. The chunked form builds only the diagonal $C \\times C$ blocks "
                        "(outlined). A block below them factors as "
                        "$\\exp(G_t - G_b) \\cdot \\exp(G_b - G_j)$ through the boundary $b$ between the "
                        "chunks, a product of a factor of $t$ and a factor of $j$ (rank one: L is "
                        "semiseparable), so it is never built: the state $S_{[n-1]}$ carries it across "
                        "(hatched)."))
        self.layout = pn.FlexBox(pn.pane.Bokeh(self.picture.figure), pn.Column(self.note, mask_text),
                                 sizing_mode="stretch_width")
        self.follow(store, ["mask"])

    def _draw(self, *_events):
        store = self.store
        record = REGISTRY[store.variant]
        with pn.io.hold():
            self.picture.show(store.mask, store.chunk_size)
            title_text = _("Decay mask L of the parallel form")
            if record.per_channel:
                title_text = _("Decay mask L, key channel {channel}").format(channel=store.channel)
            self.picture.figure.title.text = title_text
            self.note.object = "<p><strong>%s.</strong> %s</p>" % (html.escape(_(record.label)),
                                                                  html.escape(_(record.mask_note)))


class CostSection(LowerSection):
    """The cost as the sequence grows: counted at once, measured on request."""

    def __init__(self, store, session):
        super().__init__()
        self.count_picture = CountPicture(_("Counted: multiply-adds"))
        self.cost_picture = CostPicture(_("Measured cost of the three forms"))
        self.measure_button = pn.widgets.Button(label=_("Measure"), color="primary",
                                                width=220, height=44,
                                                stylesheets=[":host { font-size: 16px; }"])
        self.measure_button.on_click(lambda _event: store.measure(force=store.curve is not None))
        self.status = pn.pane.HTML(stylesheets=[STATUS_CSS], width=500, margin=(4, 10))
        cost_text = Explanation(
            session, width=500,
            elementare=_("«Counted: multiply-adds» shows the multiplications each way needs, the same on any "
                         "computer. For «Measured cost of the three forms», press **Measure** and this server times "
                         "the three ways on longer and longer inputs, right now. It counts only the time spent "
                         "computing, not the time spent waiting while the server works for other visitors. Both axes "
                         "are logarithmic: a straight line means the time grows like a power of the length, and the "
                         "slope says which power. Slope 1: twice as long, twice the time (recurrent, chunked). Slope "
                         "2: twice as long, four times the time (parallel). On short inputs every way pays a fixed "
                         "start-up price, so the lines start flat."),
            superiore=_("«Counted: multiply-adds»: per head, the leading terms of each algorithm (recurrent "
                        "$2 T d^2$, parallel $2 T^2 d + 2 T d^2$, chunked $2 T C d + 2 T d^2$; the delta rule's "
                        "correction, in DeltaNet, Gated DeltaNet and RWKV-7, makes the recurrent $3 T d^2$ ($4 T "
                        "d^2$ for RWKV-7), and its triangular systems make the parallel and chunked forms "
                        "$8 T^2 d$ and $8 T C d$, with $4 T d^2$); checked against "
                        "PyTorch's FLOP counter on the engine. «Measured cost of the three forms»: "
                        "CPU time of engine.ops.forward per form, counted by the measuring thread with torch "
                        "held to one thread in it: the work itself, without the waits for other visitors "
                        "that a wall clock would add on a shared server (hover a point for both). Float32, "
                        "one head, $d_k = d_v = 16$; each length keeps its shortest of up to four runs. "
                        "Slopes of $\\log t$ against $\\log T$ on the three longest lengths measured: "
                        "parallel $\\approx 2$ ($O(T^2 d)$), chunked and recurrent $\\approx 1$ "
                        "($O(T C d + T d^2)$ and $O(T d^2)$). The recurrent form is a Python loop here: "
                        "fused GPU kernels change the constants, not the slopes. Lengths up to {parallel} "
                        "(parallel), {recurrent} (recurrent) and {chunked} (chunked), within about {budget} s."
                        ).format(budget=format_number(COST_BUDGET_S, 1), **COST_MAX_LENGTH))
        self.layout = pn.Column(
            pn.FlexBox(pn.pane.Bokeh(self.count_picture.figure, margin=(0, 12, 0, 0)),
                       pn.pane.Bokeh(self.cost_picture.figure), sizing_mode="stretch_width"),
            pn.FlexBox(pn.Column(self.measure_button, self.status, width=480), cost_text, sizing_mode="stretch_width"),
            sizing_mode="stretch_width")
        store.param.watch(self._draw_status, ["variant", "chunk_size", "measuring"])
        self.follow(store, ["curve"])

    def _draw(self, *_events):
        with pn.io.hold():
            self.count_picture.show(self.store.variant, self.store.chunk_size)
            self.cost_picture.show(self.store.curve)
            self._draw_status()

    def _draw_status(self, *_events):
        with pn.io.hold():
            self.status.object, self.measure_button.label = self._status()
            self.measure_button.disabled = self.store.measuring

    def _status(self):
        """(the status line as HTML, the button's label)."""
        store, curve = self.store, self.store.curve
        name = _(REGISTRY[store.variant].label)
        busy = False
        if store.measuring:
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
        again = curve is not None and not curve.busy
        return (f'<span class="{"busy" if busy else "note"}">{html.escape(text)}</span>',
                _("Measure again") if again else _("Measure"))


def show_matrix(picture, matrix, limit):
    picture.set_cols(matrix.shape[1])
    picture.set_limit(limit)
    picture.show(matrix)


def powers_of_ten():
    """Tick labels of tiny differences as 5,0 · 10⁻⁶ in the page's number format (Bokeh's own wrote 5.0e-6 and
    0.0e+0 on Italian pages too)."""
    return CustomJSTickFormatter(args={"locale": browser_locale()}, code=callback("small_numbers"))


build = FormsView.build
