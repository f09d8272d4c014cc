"""Where memory fails, the pictures: the capacity curves, the query-by-query pictures and the trained
models' answers, all Bokeh figures whose data sources are patched in place."""
import html

import numpy as np
from bokeh.core.property.descriptors import UnsetValueError
from bokeh.models import (ColumnDataSource, FactorRange, FixedTicker, HoverTool, LinearColorMapper, Range1d, Span,
                          TapTool)

from lineare.app.components.curves import BLUE, GREY, ORANGE, VERMILLION, CurvesPicture
from lineare.app.components.plots import (CELL_SIZE, LABEL_SIZE, PALETTE, colour_bar, new_figure, readable_ink,
                                          style_figure)
from lineare.app.i18n import _, format_number
from lineare.app.variants import REGISTRY
from lineare.engine.ops import VARIANTS

RIGHT, WRONG, NEUTRAL = BLUE, VERMILLION, "#6f8198"      # Okabe–Ito blue / vermillion, and a quiet grey (3:1)
WRONG_INK = "#b83d00"              # vermillion darkened for a ✗ written on white, and under a white ✓/✗ (4.5:1)
INK = "#1f2933"                                            # the bound: dark grey, dashed
STRIPES = "/"                                              # the bars that pushed an answer wrong: striped


class CapacityCharts:
    """Error and accuracy against the number of pairs N, with d_k (dotted) and the chosen N marked.

    Bokeh data sources, though the charts change only when a knob moves: the pairs slider redraws them
    at every step of a drag, and a HoloViews DynamicMap took about 65 ms per chart per redraw on the
    server where patching these sources takes about 1 ms.
    """

    def __init__(self, language):
        self.errors = CurvesPicture(_("Recall error"), _("number of stored pairs N"), _("error per query"),
                                    language=language, legend_columns=1, width=470, height=370)
        self.errors.line("bound", color=INK, dash="dashed", width=3)
        self.errors.dots("best", color=BLUE, marker="square", size=9, alpha=0.9)
        self.errors.line("error", color=VERMILLION, width=3)
        self.errors.dots("error_dots", color=VERMILLION, size=7, alpha=0.9)
        self.errors.label("bound", _("the best of any linear read-out (one-hot values)"), ["bound"])
        self.errors.label("best", _("the best read-out of these keys"), ["best"])
        self.errors.label("error", _("this memory's read-out"), ["error", "error_dots"])
        self.accuracy = CurvesPicture(_("Answers right"), _("number of stored pairs N"),
                                      _("share of queries right"), language=language, legend_columns=1,
                                      width=470, height=370)
        self.accuracy.line("accuracy", color=ORANGE, width=3)
        self.accuracy.dots("accuracy_dots", color=ORANGE, marker="triangle", size=9, alpha=0.9)
        self.accuracy.label("accuracy", _("answers right (closest stored value)"), ["accuracy", "accuracy_dots"])
        self.markers = []                                   # (d_k, chosen N) on each chart
        for picture in (self.errors, self.accuracy):
            d_k = Span(location=0, dimension="height", line_color=GREY, line_dash="dotted", line_width=2)
            chosen = Span(location=0, dimension="height", line_color="#102a43", line_width=2, line_alpha=0.6)
            picture.figure.add_layout(d_k)
            picture.figure.add_layout(chosen)
            self.markers.append((d_k, chosen))

    def show(self, curve, d_k, pairs):
        N = curve["pairs"]
        for name in ("bound", "best", "error"):
            self.errors.show(name, N, curve[name])
        self.errors.show("error_dots", N, curve["error"])
        self.accuracy.show("accuracy", N, curve["accuracy"])
        self.accuracy.show("accuracy_dots", N, curve["accuracy"])
        top = float(N[-1])
        self.errors.set_ranges(x=(0, top * 1.03), y=(0, max(1.0, float(curve["error"].max()) * 1.08)))
        self.accuracy.set_ranges(x=(0, top * 1.03), y=(0, 1.05))
        for d_k_marker, chosen in self.markers:
            d_k_marker.location = d_k
            chosen.location = pairs


class QueriesPicture:
    """One bar per query: how close its read-out comes to the right value; a tap picks the query."""

    def __init__(self, on_pick):
        self.source = ColumnDataSource({"x": [], "top": [], "color": [], "line": []})
        self.figure = style_figure(new_figure(title=_("Every query at this N (click one)"), width=760, height=300,
                                          x_range=Range1d(0.4, 1.6), y_range=Range1d(-0.35, 1.1),
                                          tools="tap"),
                                   _("query (the pair asked back)"), _("match with the right value"))
        self.figure.vbar(x="x", top="top", width=0.8, source=self.source, fill_color="color",
                         line_color="line", line_width=3, nonselection_fill_alpha=1.0,
                         selection_fill_alpha=1.0, nonselection_line_alpha=1.0)
        # what a tap hits: the query's whole column, top to bottom and gap included, not its bar alone (a short bar
        # of 24 queries was a target of 8 × 30 px on a projector); drawn in no colour
        self.column = self.figure.vbar(x="x", top=1.1, bottom=-0.35, width=1.0, source=self.source, fill_alpha=0,
                                       line_alpha=0, selection_fill_alpha=0, nonselection_fill_alpha=0,
                                       selection_line_alpha=0, nonselection_line_alpha=0).glyph
        # ✓ / ✗ under the bars (readable without colour), one text glyph per mark with a fixed colour:
        # Bokeh 3.9's text glyph raised a RangeError in the browser with a colour column after updates
        self.marks = {}
        for mark, color in (("✓", RIGHT), ("✗", WRONG_INK)):
            self.marks[mark] = ColumnDataSource({"x": [], "y": []})
            self.figure.text(x="x", y="y", text={"value": mark}, source=self.marks[mark], text_align="center",
                             text_font_size=CELL_SIZE, text_color=color)
        self.figure.add_tools(HoverTool(tooltips=[(_("query"), "@x"), (_("match"), "@top{0.00}")]))
        self.figure.select_one(TapTool).behavior = "select"
        self._on_pick = on_pick
        self.source.selected.on_change("indices", self.picked)

    def picked(self, _attr, _old, new):
        if new:
            self._on_pick(int(new[0]) + 1)

    def show(self, run, chosen):
        N = len(run.targets)
        cosines = np.einsum("nd,nd->n", run.readouts, run.values[run.targets]) / np.maximum(
            np.linalg.norm(run.readouts, axis=1), 1e-12)
        right = run.right
        low = min(float(cosines.min()), 0.0) - 0.2               # room under the bars for ✓ / ✗
        self.figure.x_range.update(start=0.4, end=N + 0.6)
        self.figure.y_range.update(start=low, end=1.1)
        self.column.bottom = low
        colors = [RIGHT if r else WRONG for r in right]
        self.source.data = {
            "x": np.arange(1, N + 1), "top": cosines, "color": colors,
            "line": ["#102a43" if i + 1 == chosen else ("white" if N <= 64 else None) for i in range(N)],
        }
        for mark, where in (("✓", right & (N <= 40)), ("✗", ~right)):   # many queries: mark failures only
            x = np.flatnonzero(where) + 1
            self.marks[mark].data = {"x": x, "y": np.full(len(x), low + 0.05)}


class WeightsPicture:
    """The decomposition of one read-out: how much of each stored pair's value comes out."""

    def __init__(self):
        self.source = ColumnDataSource({"x": [], "top": [], "color": [], "hatch": []})
        self.figure = style_figure(new_figure(title="", width=760, height=300, x_range=Range1d(0.4, 1.6),
                                          y_range=Range1d(-0.5, 1.1)),
                                   _("stored pair (in the order written)"), _("how much of its value comes out"))
        # the pairs that pushed hardest are striped as well as amber: told apart from the vermillion answer by more
        # than a colour (the two come close for a deuteranope)
        self.figure.vbar(x="x", top="top", width=0.8, source=self.source, color="color", hatch_pattern="hatch",
                         hatch_color="white", hatch_alpha=0.8, hatch_scale=8, hatch_weight=2)
        self.figure.add_layout(Span(location=0, dimension="width", line_color="#52606d", line_width=1))
        # ✓ over the right pair's bar, ✗ over the one that answered instead: what the two colours mean, said
        # without them (one text glyph per mark, as in QueriesPicture)
        self.marks = {}
        for mark, color in (("✓", RIGHT), ("✗", WRONG_INK)):
            self.marks[mark] = ColumnDataSource({"x": [], "y": []})
            self.figure.text(x="x", y="y", text={"value": mark}, source=self.marks[mark], text_align="center",
                             text_baseline="bottom", text_font_size=CELL_SIZE, text_color=color)
        self.figure.add_tools(HoverTool(tooltips=[(_("pair"), "@x"), (_("weight"), "@top{0.000}")]))

    def show(self, weights, target, answer, intruders, title):
        W = len(weights)
        colors = [NEUTRAL] * W
        for i in intruders:
            colors[i] = ORANGE
        colors[answer] = WRONG
        colors[target] = RIGHT
        low, high = min(weights.min(), 0.0), max(weights.max(), 1.0)
        pad = 0.08 * (high - low)
        self.figure.x_range.update(start=0.4, end=W + 0.6)
        self.figure.y_range.update(start=low - pad, end=high + 3 * pad)          # room above the bars for ✓ / ✗
        marked = {"✓": [target], "✗": [answer] if answer != target else []}     # answered right: no ✗
        for mark, bars in marked.items():
            self.marks[mark].data = {"x": [i + 1 for i in bars],
                                     "y": [max(float(weights[i]), 0.0) + 0.3 * pad for i in bars]}
        self.figure.title.text = title
        striped = set(intruders) - {answer, target}
        hatch = [STRIPES if i in striped else " " for i in range(W)]
        self.source.data = {"x": np.arange(1, W + 1), "top": weights, "color": colors, "hatch": hatch}


def drawn(figure, size, before):
    """A figure's size as the browser last drew it (its `inner_width`, `outer_height` …), or `before` until then
    (or if what came is no size: the browser writes it, so a hostile one could write anything)."""
    try:
        value = getattr(figure, size)
    except UnsetValueError:
        return before
    return value if isinstance(value, (int, float)) and 0 < value < 100_000 else before


class TrainedPicture:
    """Variants × queries: a cell per query, right or wrong, with the held-out accuracy beside (Bokeh,
    as the two share the variants' axis)."""

    HEIGHT = 430                     # px: one row of squares per model
    SQUARE = 24 / 0.92               # px of the axis per query: its square (0.92 of it) a fingertip's target, 24 px
    MARGINS = (170, 90)              # px of the figure outside its frame (names, title, axis): before it is drawn
    MARKED = 40                      # queries up to which each square carries its ✓ or ✗ (past them: wrong striped)

    def __init__(self, examples, on_pick):
        self.cells = ColumnDataSource({"x": [], "y": [], "h": [], "query": [], "color": [], "mark": [], "said": [],
                                       "hatch": [], "key": [], "expected": [], "predicted": [], "variant": []})
        self.bars = ColumnDataSource({"y": [], "right": [], "label": []})
        self.names = [_(REGISTRY[v].short) for v in VARIANTS]
        y_range = FactorRange(*reversed(self.names))
        self.grid = style_figure(new_figure(title=_("One example, query by query (click one)"), width=820,
                                            height=self.HEIGHT, x_range=Range1d(0.5, 1.5), y_range=y_range,
                                            tools="tap"),
                                 _("query, in the order asked"), "")
        # a square's height is a column (the same for all), so that the selected and the other squares (glyphs
        # of their own) follow the rows
        # past MARKED queries a square is too small for a ✓ or ✗: a wrong one is striped as well as orange-red
        self.grid.rect(x="x", y="y", width=0.92, height="h", source=self.cells, fill_color="color", line_color=None,
                       nonselection_fill_alpha=1.0, selection_fill_alpha=1.0, hatch_pattern="hatch",
                       hatch_color="white", hatch_alpha=0.8, hatch_scale=8, hatch_weight=1)
        self.picked = ColumnDataSource({"x": [], "y": [], "h": []})        # the answer taken apart below
        self.grid.rect(x="x", y="y", width=0.98, height="h", source=self.picked, fill_alpha=0, line_color=INK,
                       line_width=3)
        self.example, self.chosen, self.rows, self.across, self.models = None, None, 1, None, 0
        self._fit_coming = False
        # the browser says how wide it draws the grid (app/server/websocket.py lets it): a square narrower than a
        # fingertip's target wraps the queries into rows
        for size in ("inner_width", "outer_width", "inner_height", "outer_height"):
            self.grid.on_change(size, lambda _attr, _old, _new: self.fit_soon())
        self.grid.select_one(TapTool).behavior = "select"
        self._on_pick = on_pick
        self.cells.selected.on_change("indices", self.clicked)
        self.grid.text(x="x", y="y", text="mark", source=self.cells, text_align="center",
                       text_baseline="middle", text_color="white", text_font_size=CELL_SIZE)
        self.grid.add_tools(HoverTool(tooltips=[(_("query"), "@query"), (_("key"), "@key"),
                                                (_("right value"), "@expected"), (_("model's answer"), "@predicted")]))
        self.grid.yaxis.major_label_text_font_size = LABEL_SIZE
        self.accuracy = style_figure(new_figure(title=_("Right, over {n} examples").format(n=examples),
                                            width=480, height=430, x_range=Range1d(0, 1.3), y_range=y_range),
                                     _("share of queries right"), "")
        self.accuracy.hbar(y="y", right="right", height=0.7, source=self.bars, color=BLUE)
        self.accuracy.text(x="right", y="y", text="label", source=self.bars, x_offset=4,
                           text_baseline="middle", text_font_size=CELL_SIZE)
        # its own names of the models: on a projector it sits under the grid, not beside it
        self.accuracy.yaxis.major_label_text_font_size = LABEL_SIZE
        self.accuracy.xaxis.ticker = FixedTicker(ticks=[0, 0.25, 0.5, 0.75, 1])   # the room past 1 is for labels

    def show(self, example):
        self.example = example
        K = len(example.positions)
        models = [(variant, name) for variant, name in zip(VARIANTS, self.names) if variant in example.predicted]
        rows, across = self._rows(K)
        columns = {name: [] for name in self.cells.data}
        for variant, name in models:
            for i, (position, want, got) in enumerate(zip(example.positions, example.expected,
                                                          example.predicted[variant])):
                columns["x"].append(i % across + 1)
                columns["y"].append(self._where(name, i // across, rows))
                columns["h"].append(0.86 * self._band(rows) / rows)
                columns["query"].append(i + 1)
                columns["color"].append(RIGHT if got == want else WRONG_INK)
                columns["said"].append("✓" if got == want else "✗")   # for the 123 table, drawn or not
                columns["mark"].append("" if K > self.MARKED else columns["said"][-1])
                columns["hatch"].append(STRIPES if K > self.MARKED and got != want else " ")
                columns["key"].append(int(example.tokens[position]))
                columns["expected"].append(int(want))
                columns["predicted"].append(int(got))
                columns["variant"].append(variant)
        self.rows, self.across, self.models = rows, across, len(models)
        self._grow()
        self.grid.xaxis.axis_label = (_("query, in the order asked") if rows == 1 else
                                      _("query, in the order asked, {n} to a row").format(n=across))
        self.grid.x_range.update(start=0.5, end=across + 0.5)
        self.cells.data = columns
        if self.chosen is not None:
            self.show_picked(*self.chosen)

    def _rows(self, K):
        """(rows, queries to a row) for K queries: as many to a row as squares of 24 px fit across the frame as
        the browser draws it, the rows of a model in its band; one row per model where all fit (a few queries,
        a wide screen). At its full width too: 32 queries in one row were 19 px wide at 1366×768."""
        fit = max(1, int(drawn(self.grid, "inner_width", self.grid.width - self.MARGINS[0]) // self.SQUARE))
        rows = -(-K // fit)
        return rows, -(-K // rows)                                       # the rows as even as they can be

    def _grow(self, shrink=True):
        """Each row of squares at least as high as wide: the figure grows with the rows. Its part outside the
        frame is as the browser last drew it (a title wrapped onto two lines on a phone takes a line more)."""
        margin = drawn(self.grid, "outer_height", self.HEIGHT) - drawn(self.grid, "inner_height",
                                                                        self.HEIGHT - self.MARGINS[1])
        height = round(margin + self.models * self.rows * self.SQUARE * 0.92 / 0.86 / self._band(self.rows) + 1)
        height = max(self.HEIGHT, height if shrink else max(height, self.grid.height))
        if height != self.grid.height:
            self.grid.update(height=height)

    def fit_soon(self):
        """fit() once the browser's message is applied whole: it sends the four sizes together, and one read
        between them (a new outer height beside the old inner one) would make the margin look larger."""
        doc = self.grid.document
        if doc is None or getattr(doc, "session_context", None) is None:
            self.fit()
        elif not self._fit_coming:
            self._fit_coming = True

            def later():
                self._fit_coming = False
                self.fit()
            doc.add_next_tick_callback(later)

    def fit(self):
        """The grid again if the width the browser draws it at wants another number of rows; else its height
        again if the part outside its frame changed (a title wrapped in the browser)."""
        if self.example is None:
            return
        if self._rows(len(self.example.positions)) != (self.rows, self.across):
            self.show(self.example)
        elif self.rows > 1:
            self._grow(shrink=False)

    @staticmethod
    def _band(rows):
        """The share of a model's place on the axis its rows take: the rest parts it from the next model."""
        return 1 if rows == 1 else 0.88

    @classmethod
    def _where(cls, name, row, rows):
        """A query's place on the models' axis: its model's place, or a row of it (the first one on top)."""
        band = cls._band(rows)
        return name if rows == 1 else (name, band * (0.5 - (row + 0.5) / rows))

    def clicked(self, _attr, _old, new):
        if new:
            data = self.cells.data
            self._on_pick(data["variant"][new[0]], int(data["query"][new[0]]))

    def show_picked(self, variant, query):
        self.chosen = (variant, query)
        name = self.names[list(VARIANTS).index(variant)]
        across = self.across or query
        self.picked.data = {"x": [(query - 1) % across + 1], "y": [self._where(name, (query - 1) // across, self.rows)],
                            "h": [0.96 * self._band(self.rows) / self.rows]}

    def show_accuracy(self, accuracy):
        names = [name for variant, name in zip(VARIANTS, self.names) if variant in accuracy]
        right = [accuracy[v] for v in VARIANTS if v in accuracy]
        self.bars.data = {"y": names, "right": right,
                          "label": [format_number(round(100 * r), 0) + "%" for r in right]}


class WritesPicture:
    """One layer of a trained model at one query: what each earlier write puts into the read-out (bars,
    the right pair in blue under a ✓, the largest others in striped amber), and below how much of the query the later
    transitions let through to it and how similar its key is to the query."""

    def __init__(self, layer, language):
        self.bars = ColumnDataSource({"x": [], "top": [], "color": [], "hatch": [], "token": [], "size": [],
                                      "kept": [], "similarity": []})
        self.parts = style_figure(new_figure(title=_("Layer {n}: the parts of the read-out").format(n=layer),
                                         width=470, height=250, x_range=Range1d(-0.5, 1), y_range=Range1d(-0.1, 1)),
                                  "", _("share of the read-out"))
        # the asked pair's bars carry a ✓ above them, the largest others are striped (thinly: the bars are a few px
        # wide): both told without their colours
        self.parts.vbar(x="x", top="top", width=0.85, source=self.bars, color="color", hatch_pattern="hatch",
                        hatch_color="white", hatch_alpha=0.8, hatch_scale=8, hatch_weight=1)
        self.asked = ColumnDataSource({"x": [], "y": []})
        self.parts.text(x="x", y="y", text={"value": "✓"}, source=self.asked, text_align="center",
                        text_baseline="bottom", text_font_size=CELL_SIZE, text_color=RIGHT)
        self.parts.add_layout(Span(location=0, dimension="width", line_color="#52606d", line_width=1))
        self.parts.add_tools(HoverTool(tooltips=[(_("position"), "@x"), (_("token"), "@token"),
                                                 (_("share"), "@top{0.000}"), (_("size"), "@size{0.000}"),
                                                 (_("let through"), "@kept{0.000}"),
                                                 (_("similarity"), "@similarity{0.00}")]))
        self.why = CurvesPicture(_("Layer {n}: what reaches each write").format(n=layer),
                                 _("position of the write"), "", width=470, height=230, language=language)
        self.why.line("kept", color=BLUE, width=3)
        self.why.dots("similarity", color=ORANGE, size=6, alpha=0.8)
        # the key in HTML beside the picture: a Bokeh legend painted before the first answer arrived (it
        # comes from a worker) kept its glyphs blank until the next full repaint
        kept, similar = _("let through by the later steps"), _("similar to the question")    # not inside an
        self.legend_html = (f'<span style="color:{BLUE}">━━</span> {html.escape(kept)}'        # f-string: Babel
                            f'<br><span style="color:{ORANGE}">●</span> {html.escape(similar)}')  # would miss them
        self.why.renderers["kept"].name, self.why.renderers["similarity"].name = kept, similar   # its numbers' table
        self.marks = []                                   # the right pair's positions (blue bars above)
        for _i in range(2):
            span = Span(location=0, dimension="height", line_color=RIGHT, line_dash="dotted", line_width=2)
            self.why.figure.add_layout(span)
            self.marks.append(span)

    def show(self, parts, verdict, right, tokens):
        share, positions = parts.share, np.arange(len(parts.share))
        colors = [NEUTRAL] * len(share)
        for i in verdict.others:
            colors[i] = ORANGE
        for i in right:
            colors[i] = RIGHT
        striped = set(verdict.others) - set(right)
        hatch = [STRIPES if i in striped else " " for i in range(len(share))]
        self.bars.data = {"x": positions, "top": share, "color": colors, "hatch": hatch,
                          "token": list(tokens[:len(share)]), "size": parts.size, "kept": parts.kept,
                          "similarity": parts.similarity}
        low, high = min(float(share.min()), 0.0), max(float(share.max()), 0.1)
        pad = 0.08 * (high - low)
        end = len(share) - 0.5
        self.parts.x_range.update(start=-0.5, end=end)
        self.parts.y_range.update(start=low - pad, end=high + 3 * pad)            # room above the bars for ✓
        # one ✓ over each run of neighbouring positions (a key and its value, right after it): two marks 16 px wide
        # over bars a few px apart would overlap; above the bars it spans too (±2 bars: 16 px on a phone)
        runs = []
        for i in sorted(int(i) for i in right):
            if runs and runs[-1][-1] == i - 1:
                runs[-1].append(i)
            else:
                runs.append([i])
        self.asked.data = {"x": [sum(run) / len(run) for run in runs],
                           "y": [max(float(share[max(run[0] - 2, 0):run[-1] + 3].max()), 0.0) + 0.3 * pad
                                 for run in runs]}
        self.why.set_ranges(x=(-0.5, end), y=(min(-1.0, float(parts.similarity.min())),
                                              max(1.05, float(parts.kept.max()) * 1.05)))
        self.why.show("kept", positions, parts.kept)
        self.why.show("similarity", positions, parts.similarity)
        for span, position in zip(self.marks, right):
            span.location = position


# a number in a square of the accuracy map: the largest of these type sizes (px) at which every number fits its
# square, as wide as the browser draws the map (a phone's is a third of a projector's); none fits: no numbers
# (the colours, the colour bar, the hover and the numbers view still tell them)
CELL_FONTS = (16,)        # px: a square's number at 16 px where it fits, else none (its colour and the table)
DIGIT_EM = 0.58                      # a digit's width in ems of Bokeh's sans-serif (Helvetica, Arial: 0.556)
CELL_PADDING = 2                     # px of the square left around its number


def cell_font(labels, cell_widths):
    """The type size (px) at which every label fits its cell (`cell_widths` in px), or None."""
    longest = [len(label) * DIGIT_EM for label in labels]
    for font in CELL_FONTS:
        if all(em * font + CELL_PADDING <= width for em, width in zip(longest, cell_widths)):
            return font
    return None


class AccuracyMap:
    """Answers right over d_k (rows) and N (columns at N/d_k, so that N = d_k is one vertical line)."""

    FRAME_MARGIN = 170               # px of the figure outside its frame (axis, colour bar): before it is drawn

    def __init__(self):
        self.numbers = []                                    # every square's number, shown or not
        self.cells = ColumnDataSource({"left": [], "right": [], "bottom": [], "top": [], "accuracy": [], "x": [],
                                       "y": [], "label": [], "ink": [], "d_k": [], "pairs": []})
        self.colours = list(reversed(PALETTE))            # red wrong, blue right; a number's ink by its square's
        self.mapper = LinearColorMapper(palette=self.colours, low=0, high=1)
        self.figure = style_figure(new_figure(title=_("Answers right, for every d_k"), width=940, height=330,
                                          x_range=Range1d(0, 4.1), y_range=Range1d(-0.5, 3.5)),
                                   _("pairs per number of a key, N / d_k"), _("numbers in a key, d_k"))
        self.figure.quad(left="left", right="right", bottom="bottom", top="top", source=self.cells,
                         fill_color={"field": "accuracy", "transform": self.mapper}, line_color="white")
        self.texts = self.figure.text(x="x", y="y", text="label", source=self.cells, text_align="center",
                                      text_baseline="middle", text_color="ink", text_font_size=CELL_SIZE)
        # the browser says how wide it draws the map (app/server/websocket.py lets it): the numbers are fitted to it
        self.figure.on_change("inner_width", lambda _attr, _old, _new: self.fit_numbers())
        self.figure.add_layout(Span(location=1, dimension="height", line_color=INK, line_dash="dashed", line_width=2))
        self.chosen = ColumnDataSource({"left": [], "right": [], "bottom": [], "top": []})
        self.figure.quad(left="left", right="right", bottom="bottom", top="top", source=self.chosen,
                         fill_alpha=0, line_color=INK, line_width=3)
        self.figure.yaxis.ticker = FixedTicker(ticks=[0, 1, 2, 3])
        self.figure.add_tools(HoverTool(tooltips=[("d_k", "@d_k"), ("N", "@pairs"),
                                                  (_("answers right"), "@accuracy{0.000}")]))
        self.figure.add_layout(colour_bar(self.mapper), "right")

    def show(self, capacity_map, d_k, pairs):
        columns, numbers = {name: [] for name in self.cells.data}, []
        top_ratio = 1.0
        for row, (size, row_pairs, accuracy) in enumerate(zip(capacity_map["d_k"], capacity_map["pairs"],
                                                              capacity_map["accuracy"])):
            ratio = row_pairs / size
            edges = np.concatenate([[0.0], (ratio[1:] + ratio[:-1]) / 2, [ratio[-1] + (ratio[-1] - ratio[-2]) / 2
                                                                           if len(ratio) > 1 else 1.0]])
            top_ratio = max(top_ratio, float(edges[-1]))
            for j, (N, right) in enumerate(zip(row_pairs, accuracy)):
                columns["left"].append(edges[j])
                columns["right"].append(edges[j + 1])
                columns["bottom"].append(row - 0.45)
                columns["top"].append(row + 0.45)
                columns["accuracy"].append(float(right))
                columns["x"].append((edges[j] + edges[j + 1]) / 2)
                columns["y"].append(row)
                numbers.append(format_number(round(100 * float(right)), 0))
                square = self.colours[min(int(right * len(self.colours)), len(self.colours) - 1)]
                columns["ink"].append(readable_ink([square])[0])
                columns["d_k"].append(int(size))
                columns["pairs"].append(int(N))
        self.figure.x_range.update(start=0, end=top_ratio)
        self.numbers = numbers
        columns["label"] = self._labels(columns)
        self.cells.data = columns
        self.figure.yaxis.major_label_overrides = {row: str(size) for row, size in enumerate(capacity_map["d_k"])}
        row = [i for i, size in enumerate(columns["d_k"]) if size == d_k]           # the page's d_k and N:
        chosen = min(row, key=lambda i: abs(columns["pairs"][i] - pairs))           # the nearest column
        self.chosen.data = {name: [columns[name][chosen]] for name in ("left", "right", "bottom", "top")}

    def fit_numbers(self):
        """Each square's number at the largest type size that fits every square as wide as the map is drawn,
        or none."""
        labels = self._labels(self.cells.data)
        if list(self.cells.data["label"]) != labels:
            self.cells.data = dict(self.cells.data, label=labels)

    def _labels(self, columns):
        """The squares' numbers as they fit (their type size set on the text glyph), or empty ones."""
        x = self.figure.x_range
        frame = drawn(self.figure, "inner_width", self.figure.width - self.FRAME_MARGIN)
        per_unit = frame / max(x.end - x.start, 1e-9)
        widths = [(right - left) * per_unit for left, right in zip(columns["left"], columns["right"])]
        font = cell_font(self.numbers, widths)
        if font is None:
            return [""] * len(self.numbers)
        self.texts.glyph.text_font_size = f"{font:.2f}px"
        return list(self.numbers)
