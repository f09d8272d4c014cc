"""Two bills, the page: first the point and the generation race's two bills as pictures (memory held
and the work bill, revealed by the player token by token), then the step times of the latest run and
the session's measurements, the calculator (calculator_view.py) and what the papers measured."""
import html

import numpy as np
import panel as pn
import param

from lineare.app.components.controls import sidebar_label
from lineare.app.components.curves import BLUE, VERMILLION, CurvesPicture
from lineare.app.components.later import Later, SectionPart
from lineare.app.components.player import FrameText, Player
from lineare.app.components.text import Explanation, Explanations, point_box
from lineare.app.dashboards.base import DashboardView, heading, title
from lineare.app.dashboards.two_bills.calculator import CalculatorStore
from lineare.app.dashboards.two_bills.calculator_view import CalculatorView
from lineare.app.dashboards.two_bills.model import (CONTEXTS, DIM_CHOICES, HEAD_CHOICES, STATE_VARIANTS, TOKEN_CHOICES,
                                            GenerationStore, byte_unit, format_bytes, format_ms)
from lineare.app.dashboards.two_bills.pictures import (STATUS_CSS, HistoryChart, WorkPicture, bill_html, crossing_mark,
                                               show_crossing, status_pane)
from lineare.app.i18n import N_, _, current_language, format_number
from lineare.app.urlstate import read_query
from lineare.app.variants import REGISTRY, running_name

# the point, and the words under the work bill, at level Elementare (a lesson card quotes them: two_bills/lesson.py)
POINT_PLAIN = N_("**The notebook grows, the summary does not.** Softmax attention keeps two notes for every "
                 "word it has read (solid line, first picture): from token {crossing} on they take more room "
                 "than the fixed-size summary (dashed line), and they keep growing. Its work grows faster "
                 "still (second picture): each new word is compared with all the words before it, so twice "
                 "the text is four times the work (the triangle), while the summary does the same fixed "
                 "update for every word (the strip).")
WORK_PLAIN = N_("One row per word read, from the top down, as wide as the multiplications it costs. "
                "Softmax compares each new word with all the words before it, so its rows get longer and "
                "longer and make a triangle: half of the square table of every word against every word. "
                "Twice the text, four times the area. The summary costs the same for every word: its "
                "rows make a strip. With few words the strip is wider; past the dashed line the "
                "triangle wins, and it keeps widening.")
# the heights of the sections below the first screen by the column's width (a phone's 372 px, a tablet's 750, a
# projector's 996 with the sidebar open), held by their markers until they are made
MEASURED_HEIGHT = {372: 1384, 750: 1261, 996: 704}
CALCULATOR_HEIGHT = {372: 2818, 750: 2341, 996: 2263}


class TwoBillsView(DashboardView):
    """The whole page: its URL holds both stores' settings and the player's token."""

    Store = GenerationStore
    slug = "two-bills"

    def __init__(self, **params):
        super().__init__(**params)
        session = self.session
        values, notices = read_query(CalculatorStore, CalculatorStore.URL, pn.state.session_args)
        calculator = session.store(self.slug + "/calculator", lambda: CalculatorStore(**values))
        session.add_notices("url", notices)
        self.generation = GenerationView(store=self.store, session=session)
        # below the first screen: made when the visitor scrolls near it (a fifth of the page's models)
        self._calculator = Later(lambda: CalculatorView(store=calculator, session=session),
                                 height=CALCULATOR_HEIGHT)
        self.papers = papers(session)
        self.intro = Explanation(
            session,
            elementare=_("Softmax attention pays two bills. **Work**: it compares every word (token) with every "
                         "word before it. **Memory**: each word leaves two notes in its **notebook of notes** (KV "
                         "cache): a **label** (key), what the word is about, and a piece of **information** "
                         "(value), what it says. A later word's **question** (query) is compared with every label, "
                         "and the information under the labels that fit best makes the answer. No note is ever "
                         "thrown away. A model with a fixed-size **summary** (state) pays a fixed amount instead."),
            superiore=_("Softmax attention pays two bills. **Work**: a prompt of $n$ tokens costs $O(n^2 d)$ per "
                        "layer, since every query meets every earlier key. **Memory**: to generate token $t$ it "
                        "reads a KV cache of $t$ keys and $t$ values, which grows as $O(t)$ and is never freed. A "
                        "fixed-size state $S_t \\in \\mathbb{R}^{d_v \\times d_k}$ costs $O(d_k d_v)$ per token, "
                        "in time and in memory, whatever $t$ is (Katharopoulos et al. 2020)."))

    @property
    def calculator(self):
        return self._calculator.section()

    def controls(self):
        return self.generation.controls()

    def parts(self):
        g, calculator = self.generation, self._calculator
        weights = lambda c: [c.weights, c.table, c.chart.picture.renderers["weights"], c.chart.picture.items["weights"]]
        return {"point": [g.point], "player": [g.player], "memory": [g.pictures["memory"]],
                "memory.crossing": list(g.crossing), "work": [g.pictures["work"]], "work.figure": [g.work.figure],
                "work.text": [g.work_text], "status": [g.status], "typical": [g.typical],
                "calculator.results": SectionPart(calculator, lambda c: [c.results]),
                "calculator.weights": SectionPart(calculator, weights)}

    def __panel__(self):
        # the point and its two pictures first (the first screen of a projector), the words after them
        return pn.Column(title(_("Two bills")), self.generation.opening(), self.intro, self.generation,
                         self._calculator, self.papers, sizing_mode="stretch_width")


def papers(session):
    """What the papers measured, with their sources."""
    retnet = Explanation(
        session,
        elementare=_("**RetNet** (Sun et al. 2023) ran a model with 6.7 billion parameters on one GPU, with "
                     "texts of 8,192 words. Its memory stayed flat at about 14 GB, while a Transformer of the "
                     "same size, with its notebook of notes, climbed to about 45 GB; and RetNet generated 8.4 "
                     "times as many words per second. Most of the 14 GB are the weights themselves (6.7 billion "
                     "numbers × 2 bytes ≈ 13.4 GB): the summary adds little."),
        superiore=_("**RetNet** (Sun et al. 2023, Figure 1 and §3.4: 6.7B parameters, 8k tokens): GPU memory "
                    "≈ 14 GB and flat with the recurrent form, against ≈ 45 GB for a Transformer with a KV "
                    "cache — total memory, weights included ($6.7 \\cdot 10^9 \\times 2$ B ≈ 13.4 GB); "
                    "decoding throughput 8.4 times higher."))
    honest = Explanation(
        session,
        elementare=_("**An honest comparison.** Katharopoulos et al. (2020), who showed that linear attention "
                     "is an RNN, generated images 4,462 times faster than softmax attention — but that softmax "
                     "recomputed everything for every new pixel. Against a softmax that keeps its notebook, "
                     "generating one image at a time on a GPU, linear attention was about 1.15 times faster "
                     "(61.3 s against 70.4 s per image). A speed-up is only as meaningful as what it is "
                     "compared with."),
        superiore=_("**An honest comparison.** Katharopoulos et al. 2020, Table 2 (CIFAR-10): 17.85 images/s "
                    "against 0.004 for softmax attention without a cache, 4,462×. Appendix C, Table 5: batch "
                    "size 1 on a GPU, 61.3 s per image against 70.4 s for stateful softmax (keys and values "
                    "cached), ≈ 1.15×. The cached baseline is the fair one; the large gains come with long "
                    "contexts and large batches, where the cache fills the memory."))
    return pn.Column(heading(_("What the papers measured")), Explanations(retnet, honest), sizing_mode="stretch_width")


def figure_card(picture, explanation, width=600):
    return pn.Column(pn.pane.Bokeh(picture.figure), explanation, width=width, margin=(0, 12, 12, 0))


class GenerationView(pn.viewable.Viewer):
    """Draws a GenerationStore: the player, the bytes, the step times and the session's measurements."""

    store = param.ClassSelector(class_=GenerationStore)
    session = param.Parameter()

    def __init__(self, **params):
        super().__init__(**params)
        store, session = self.store, self.session
        self.player, player_notices = Player.from_query(pn.state.session_args, speed=4.0)
        frames = store.result.tokens
        if self.player.value > frames - 1:
            player_notices.append(_("The link asked for token {t}, but this run generates {n}: the last one "
                                    "is shown.").format(t=self.player.value + 1, n=frames))
        self.player.length = frames
        if Player.URL["value"] not in (pn.state.session_args or {}):
            self.player.value = frames - 1       # open on the whole run: Play replays it from the start
        session.add_notices("url", player_notices)

        language = current_language()
        self.memory = CurvesPicture(_("Memory held while generating"), _("tokens in memory"), "",
                                    language=language, legend_columns=2, width=470, height=390)
        self.memory.line("prefilled", color=VERMILLION, dash="dotted", width=2)
        self.memory.line("state_prefilled", color=BLUE, dash="dotted", width=2)
        self.memory.line("cache", color=VERMILLION, width=4)
        self.memory.line("state", color=BLUE, dash="dashed", width=4)
        self.memory.dots("cache_now", color=VERMILLION, size=12, alpha=1.0)
        self.memory.dots("state_now", color=BLUE, marker="square", size=12, alpha=1.0)
        self.memory.label("cache", _("KV cache (softmax)"), ["cache", "cache_now"])
        self.memory.label("state", "", ["state", "state_now"])
        self.memory.label("prefilled", _("already in memory"), ["prefilled", "state_prefilled"])
        self.crossing = crossing_mark(self.memory.figure, "height")
        self.work = WorkPicture(language)
        main = lambda figure, margin: pn.Column(pn.pane.Bokeh(figure), margin=margin, css_classes=["main-picture"])
        self.pictures = {"memory": main(self.memory.figure, (0, 12, 6, 0)),
                         "work": main(self.work.figure, (0, 0, 6, 0))}
        self.point = Explanation(session)

        self.status = FrameText(stylesheets=[STATUS_CSS], sizing_mode="stretch_width", margin=(4, 10))
        # the typical times on a line of their own: a lesson card asks which layer is slower before they show
        self.typical = FrameText(stylesheets=[STATUS_CSS], sizing_mode="stretch_width", margin=(0, 10))
        self.setup = status_pane(margin=(0, 10))
        # 482 px of the row, as the 470 px column it once sat in with its 12 px margin (the text overflowed by 10)
        self.memory_text = memory_text = Explanation(
            session, width=470, margin=(4, 2, 4, 10),
            elementare=_("Softmax attention keeps a label and a piece of information for every word: its "
                         "notebook (solid line) climbs by the same step at every word and is never freed. The "
                         "other layer keeps one summary, a grid of numbers per head (dashed line): after ten "
                         "words or ten thousand, it has the same size. Where the lines cross, the notebook "
                         "becomes the bigger of the two, and it keeps growing."),
            superiore=_("Bytes from the engine's step records. After $t$ tokens the cache holds $t$ keys and "
                        "$t$ values: $2\\,t\\,H\\,d\\,b$ bytes, with $H$ heads of size $d$ and $b = 4$ bytes per "
                        "float32 number. The state holds $H\\,d_k\\,d_v\\,b$ bytes at every $t$. With "
                        "$d_k = d_v = d$ the two are equal at $t = d/2$."))
        self.work_text = work_text = Explanation(
            session, width=470,
            elementare=_(WORK_PLAIN),
            superiore=_("Multiply-adds of one layer per token read, counted: with $t$ tokens in memory softmax "
                        "computes $t$ scores $q_t^\\top k_i$ ($d_k$ each) and sums $t$ values ($d_v$ each), "
                        "$H\\,t\\,(d_k + d_v)$; the state one write $v_t k_t^\\top$ and one read $S_t q_t$, "
                        "$2 H d_k d_v$ (a decay adds only multiplications). The rows make a triangle, "
                        "$\\tfrac12 n(n+1)(d_k + d_v)$ per head for $n$ tokens, against a strip $2 n d_k d_v$: "
                        "they cross at $t = 2 d_k d_v / (d_k + d_v)$, $t = d$ when $d_k = d_v = d$."))
        self.texts = pn.FlexBox(memory_text, work_text,
                                sizing_mode="stretch_width")
        # below the first screen: the measured times, made with their pictures when the visitor scrolls near them
        self.measured = Later(self._make_measured, height=MEASURED_HEIGHT,
                              placed=lambda _section: self.player.new_run(self.player.length))
        self.cards = pn.Column(heading(_("Time per token, measured on this server")), self.measured,
                               sizing_mode="stretch_width")
        store.param.watch(self._reconfigure, ["result"])
        store.param.watch(self._draw_setup, ["measuring"])
        session.param.watch(lambda _e: self._send_run(self.player.frame()), "level")
        self._reconfigure()

    def controls(self):
        store = self.store
        label = sidebar_label
        # a group named as its label above it says (a screen reader reads the group's own name)
        radio = lambda parameter, choices, name: pn.widgets.RadioButtonGroup.from_param(
            parameter, name=name, options={format_number(c): c for c in choices}, color="primary",
            variant="outline", sizing_mode="stretch_width")
        variant = pn.widgets.Select.from_param(
            store.param.variant, name=_("Fixed-state layer"), sizing_mode="stretch_width",
            options={_(REGISTRY[v].label): v for v in STATE_VARIANTS})
        # the pre-fill costs up to seconds: run it when the slider is let go, not at every notch crossed
        context = pn.widgets.DiscreteSlider(label=_("Tokens already in memory"), value=store.context,
                                            options={format_number(c): c for c in CONTEXTS},
                                            sizing_mode="stretch_width")
        context.param.watch(lambda e: setattr(store, "context", e.new), "value_throttled")
        store.param.watch(lambda e: setattr(context, "value", e.new), "context")
        seed = pn.widgets.IntInput.from_param(store.param.seed, name=_("Random tokens (seed)"),
                                              sizing_mode="stretch_width")
        again = pn.widgets.Button(label=_("Measure again"), color="primary", sizing_mode="stretch_width")
        again.on_click(lambda _event: store.param.trigger("measure"))
        named = lambda name, parameter, choices: [label(name), radio(parameter, choices, name)]
        return [variant, context, *named(_("Tokens to generate"), store.param.tokens, TOKEN_CHOICES),
                *named(_("Heads"), store.param.heads, HEAD_CHOICES),
                *named(_("Size of each head (d_k = d_v)"), store.param.dim, DIM_CHOICES), seed, again]

    def opening(self):
        """The point, the player and the two bills as pictures: what a projector shows first."""
        pictures = pn.FlexBox(*self.pictures.values(), sizing_mode="stretch_width")
        return pn.Column(point_box(self.point), self.player, pictures, self.status, self.typical, self.texts,
                         self.setup,
                         sizing_mode="stretch_width")

    def __panel__(self):
        return self.cards

    @property
    def times(self):
        return self.measured.section().times

    @property
    def history(self):
        return self.measured.section().history

    def _make_measured(self):
        """The measured times, sent the run already on the page; the player then draws the frame the browser
        shows (the server does not know which: the browser steps alone)."""
        section = MeasuredSection(self.store, self.session)
        section.show(self.store.result, self.player.frame())
        return section

    def _reconfigure(self, *events):
        result = self.store.result
        cache_max = max(result.kv_cache_bytes.max(), result.state_bytes.max())
        self.unit = byte_unit(cache_max)
        size, symbol = self.unit
        name = running_name(result.variant)
        with pn.io.hold():
            self.memory.label("state", _("state ({model})").format(model=name), [])
            self.memory.set_y_label(_("memory ({unit})").format(unit=symbol))
            # the crossing is always in the picture, ahead of the run when the run is shorter
            end = max(int(result.held[-1]), result.crossing) * 1.02 + 1
            self.memory.set_ranges(x=(0, end), y=(0, 1.12 * cache_max / size))
            self.memory.items["prefilled"].visible = bool(result.context)
            near_top = result.state_bytes.max() < 0.8 * cache_max         # the words where no line runs
            show_crossing(self.crossing, result.crossing, _("from token {n} the cache is bigger").format(
                n=format_number(result.crossing)), x=result.crossing, y=(1.1 if near_top else 0.5) * cache_max / size,
                width=end, hang=near_top)
            self._draw_point(result)
            if result.context:
                first = result.kv_cache_bytes[0] - result.bytes_per_token
                self.memory.show("prefilled", [0, result.context], [0, first / size])
                self.memory.show("state_prefilled", [0, result.context], [result.state_bytes[0] / size] * 2)
            else:
                self.memory.show("prefilled", [], [])
                self.memory.show("state_prefilled", [], [])
            self._draw_setup()
            self._send_run(result.tokens - 1 if events else self.player.frame(), show_whole=bool(events))

    def _draw_point(self, result):
        crossing = format_number(result.crossing)
        self.point.param.update(
            elementare=_(POINT_PLAIN).format(crossing=crossing),
            superiore=_("**The KV cache grows as O(t), the state stays O(1).** First picture: the cache's "
                        "$2\\,t\\,H\\,d\\,b$ bytes pass the state's $H\\,d_k\\,d_v\\,b$ at token {crossing} ($t > "
                        "d/2$). Second picture: the work per token, $H\\,t\\,(d_k + d_v)$ multiply-adds with softmax "
                        "against $2 H d_k d_v$ with the state: reading $n$ tokens is a triangle, $O(n^2 d)$, against "
                        "a strip, $O(n d^2)$. Twice the text, four times the work."
                        ).replace("{crossing}", crossing))

    def _draw_setup(self, *_events):
        result = self.store.result
        name = running_name(result.variant)
        setup = _("Softmax attention against {model}: one layer each, {heads} heads with "
                  "d_k = d_v = {dim}, numbers in float32, random tokens.").format(
            model=name, heads=result.heads, dim=result.dim)
        if result.context:
            setup += " " + _("Before generating, both layers read the same {context} random tokens.").format(
                context=format_number(result.context))
        notes = ""
        if result.tokens < result.requested:
            notes = '<p class="limit">%s</p>' % html.escape(
                _("With {context} tokens already in memory only {n} of the {requested} tokens are generated, "
                  "so that the work of one page stays bounded.").format(
                    context=format_number(result.context), n=result.tokens, requested=result.requested))
        if self.store.measuring:                 # the run on the page is of the settings before
            notes += '<p class="note">%s</p>' % html.escape(_("Measuring with the new settings…"))
        self.setup.object = f'<p class="note">{html.escape(setup)}</p>{notes}'

    def _send_run(self, t, show_whole=False):
        """The whole run to the browser (the player reveals it token by token); the server shows token t.
        The rolling medians look back only, so the first points of the whole run are those of a shorter one."""
        result = self.store.result
        size, _symbol = self.unit
        self.player.length = result.tokens
        t = min(t, result.tokens - 1)
        with pn.io.hold():
            self.memory.show_frames("cache", result.held, result.kv_cache_bytes / size, t)
            self.memory.show_frames("state", result.held, result.state_bytes / size, t)
            self.memory.show_frames("cache_now", result.held, result.kv_cache_bytes / size, t, upto=False)
            self.memory.show_frames("state_now", result.held, result.state_bytes / size, t, upto=False)
            if self.measured.made:
                self.measured.section().show(result, t)
            self.work.show_run(result, running_name(result.variant), t)
            self.status.show([self._status(result, i) for i in range(result.tokens)], t=t)
            self.typical.show([typical_html(result, i) for i in range(result.tokens)], t=t)
            self.player.new_run(result.tokens, jump=result.tokens - 1 if show_whole else None)

    def _status(self, result, t):
        name = running_name(result.variant)
        step_line = _("Token {t} of {n} · tokens in memory: {held}").format(
            t=t + 1, n=result.tokens, held=format_number(int(result.held[t])))
        cache = _("grows by {bytes} at every token").format(bytes=format_bytes(result.bytes_per_token))
        state = _("the same at every token")
        bills = (bill_html("cache", _("KV cache (softmax)"), format_bytes(result.kv_cache_bytes[t]), cache)
                 + bill_html("state", _("state ({model})").format(model=name),
                             format_bytes(result.state_bytes[t]), state))
        return (f'<div class="status"><div class="step">{html.escape(step_line)}</div>'
                f'<div class="bills">{bills}</div></div>')

def typical_html(result, t):
    """The line under the bills at token `t`: since when the cache is bigger, and the typical step times."""
    soft_ms, state_ms = result.softmax_median[t], result.state_median[t]
    times = _("Typical time per token (median of the last 9): softmax {softmax} ms, {model} {state} ms.")\
        .format(softmax=format_ms(soft_ms), model=running_name(result.variant), state=format_ms(state_ms))
    crossing = result.crossing
    if result.held[t] >= crossing:
        times = _("The cache has been bigger than the state since token {n}.").format(
            n=format_number(crossing)) + " " + times
    return f'<div class="status"><p>{html.escape(times)}</p></div>'


class MeasuredSection(pn.viewable.Viewer):
    """The time per token of the run on the page, and the visit's runs against their context."""

    def __init__(self, store, session):
        super().__init__()
        language = current_language()
        self.times = CurvesPicture(_("Time per token, measured now"), _("generated token"),
                                   _("milliseconds per token"), language=language, width=470, height=380)
        self.times.dots("softmax_each", color=VERMILLION, alpha=0.85)           # 3:1 on white, as every mark
        self.times.dots("state_each", color=BLUE, marker="square", alpha=0.85)
        self.times.line("softmax_median", color=VERMILLION, width=4)
        self.times.line("state_median", color=BLUE, dash="dashed", width=4)
        self.times.label("softmax", _("softmax"), ["softmax_each", "softmax_median"])
        self.times.label("state", "", ["state_each", "state_median"])
        self.history = HistoryChart(store, language)
        times_text = Explanation(
            session, width=470,
            elementare=_("How long this server took for each new word (dots: each step timed three times, the "
                         "shortest kept) and the typical time of the last 9 words (lines). The page opens with "
                         "512 words already in the notebook, and the softmax layer is slower: every new question "
                         "is compared with all the stored labels; the summary layer does the same work as ever. "
                         "Move the slider «Tokens already in memory» to 0 and both take about the same time: "
                         "most of it then goes into the fixed cost of running the Python code, not into the "
                         "arithmetic. Move it up and the softmax layer slows down more and more."),
            superiore=_("Wall-clock time of one engine step per token (perf_counter), the shortest of three "
                        "runs of the same step (the load of a shared server only adds time), the two layers "
                        "taking turns so that both see the same load; lines: rolling median over 9 tokens. The softmax "
                        "step reads the whole cache, $O(t\\,d)$ per head (and this engine also copies it to "
                        "append the new key and value); the state step costs $O(d_k d_v)$ whatever $t$ is. At "
                        "small $t$ the fixed overhead of each Python and PyTorch call dominates both."))
        history_text = Explanation(
            session, width=470,
            elementare=_("One point per run in this visit, for the current number and size of heads: move the "
                         "slider «Tokens already in memory» and a new point appears. With many tokens in memory "
                         "the softmax points climb along a straight line (twice the tokens, about twice the "
                         "time); the summary points stay flat."),
            superiore=_("One point per run (median over its tokens). The softmax step grows as $O(t)$, so "
                        "generating $n$ tokens costs $O(n^2)$ in all; the state step is $O(1)$ in $t$, "
                        "$O(n)$ in all."))
        self.layout = pn.FlexBox(figure_card(self.times, times_text, width=482),
                                 figure_card(self.history.picture, history_text, width=482),
                                 sizing_mode="stretch_width")

    def __panel__(self):
        return self.layout

    def show(self, result, t):
        """Every token's time of `result`, revealed by the player up to token t."""
        numbers = np.arange(1, result.tokens + 1)
        with pn.io.hold():
            self.times.label("state", _("state ({model})").format(model=running_name(result.variant)), [])
            # the scale follows the typical times; a single token slowed down by the machine may fall off the top
            top = max(result.softmax_median.max(), result.state_median.max())
            self.times.set_ranges(x=(0, result.tokens + 1), y=(0, 1.6 * top))
            self.times.show_frames("softmax_each", numbers, result.softmax_ms, t)
            self.times.show_frames("state_each", numbers, result.state_ms, t)
            self.times.show_frames("softmax_median", numbers, result.softmax_median, t)
            self.times.show_frames("state_median", numbers, result.state_median, t)


build = TwoBillsView.build
