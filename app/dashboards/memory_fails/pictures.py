"""Where memory fails, the pictures: the capacity curves, the query-by-query pictures and the trained
models' answers, all Bokeh figures whose data sources are patched in place."""
import numpy as np
from bokeh.models import ColumnDataSource, FactorRange, FixedTicker, HoverTool, Range1d, Span, TapTool
from bokeh.plotting import figure

from app.components.curves import BLUE, GREY, ORANGE, VERMILLION, CurvesPicture
from app.components.plots import LABEL_SIZE, style_figure
from app.i18n import _, format_number
from app.variants import REGISTRY
from engine.ops import VARIANTS

RIGHT, WRONG, NEUTRAL = BLUE, VERMILLION, "#9fb3c8"      # Okabe–Ito blue / vermillion, and a quiet grey
INK = "#1f2933"                                            # the bound: dark grey, dashed


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
        self.errors.dots("error_dots", color=VERMILLION, size=7, alpha=0.8)
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
        self.figure = style_figure(figure(title=_("Every query at this N (click one)"), width=760, height=300,
                                          x_range=Range1d(0.4, 1.6), y_range=Range1d(-0.35, 1.1),
                                          tools="tap"),
                                   _("query (the pair asked back)"), _("match with the right value"))
        self.figure.vbar(x="x", top="top", width=0.8, source=self.source, fill_color="color",
                         line_color="line", line_width=3, nonselection_fill_alpha=1.0,
                         selection_fill_alpha=1.0, nonselection_line_alpha=1.0)
        # ✓ / ✗ under the bars (readable without colour), one text glyph per mark with a fixed colour:
        # Bokeh 3.9's text glyph raised a RangeError in the browser with a colour column after updates
        self.marks = {}
        for mark, color in (("✓", RIGHT), ("✗", WRONG)):
            self.marks[mark] = ColumnDataSource({"x": [], "y": []})
            self.figure.text(x="x", y="y", text={"value": mark}, source=self.marks[mark], text_align="center",
                             text_font_size="11pt", text_color=color)
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
        self.source = ColumnDataSource({"x": [], "top": [], "color": []})
        self.figure = style_figure(figure(title="", width=760, height=300, x_range=Range1d(0.4, 1.6),
                                          y_range=Range1d(-0.5, 1.1)),
                                   _("stored pair (in the order written)"), _("how much of its value comes out"))
        self.figure.vbar(x="x", top="top", width=0.8, source=self.source, color="color")
        self.figure.add_layout(Span(location=0, dimension="width", line_color="#52606d", line_width=1))
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
        self.figure.y_range.update(start=low - pad, end=high + pad)
        self.figure.title.text = title
        self.source.data = {"x": np.arange(1, W + 1), "top": weights, "color": colors}


class TrainedPicture:
    """Variants × queries: a cell per query, right or wrong, with the held-out accuracy beside (Bokeh,
    as the two share the variants' axis)."""

    def __init__(self, examples):
        self.cells = ColumnDataSource({"x": [], "y": [], "color": [], "mark": [], "key": [], "expected": [],
                                       "predicted": []})
        self.bars = ColumnDataSource({"y": [], "right": [], "label": []})
        self.names = [_(REGISTRY[v].short) for v in VARIANTS]
        y_range = FactorRange(*reversed(self.names))
        self.grid = style_figure(figure(title=_("One example, query by query"), width=820, height=430,
                                        x_range=Range1d(0.5, 1.5), y_range=y_range),
                                 _("query, in the order asked"), "")
        self.grid.rect(x="x", y="y", width=0.92, height=0.86, source=self.cells, fill_color="color",
                       line_color=None)
        self.grid.text(x="x", y="y", text="mark", source=self.cells, text_align="center",
                       text_baseline="middle", text_color="white", text_font_size="10pt")
        self.grid.add_tools(HoverTool(tooltips=[(_("key"), "@key"), (_("right value"), "@expected"),
                                                (_("model's answer"), "@predicted")]))
        self.grid.yaxis.major_label_text_font_size = LABEL_SIZE
        self.accuracy = style_figure(figure(title=_("Right, over {n} examples").format(n=examples),
                                            width=330, height=430, x_range=Range1d(0, 1.3), y_range=y_range),
                                     _("share of queries right"), "")
        self.accuracy.hbar(y="y", right="right", height=0.7, source=self.bars, color=BLUE)
        self.accuracy.text(x="right", y="y", text="label", source=self.bars, x_offset=4,
                           text_baseline="middle", text_font_size="11pt")
        self.accuracy.yaxis.visible = False
        self.accuracy.xaxis.ticker = FixedTicker(ticks=[0, 0.25, 0.5, 0.75, 1])   # the room past 1 is for labels

    def show(self, example):
        xs, ys, colors, marks, keys, expected, predicted = [], [], [], [], [], [], []
        K = len(example.positions)
        for variant, name in zip(VARIANTS, self.names):
            if variant not in example.predicted:
                continue
            for i, (position, want, got) in enumerate(zip(example.positions, example.expected,
                                                          example.predicted[variant])):
                xs.append(i + 1)
                ys.append(name)
                colors.append(RIGHT if got == want else WRONG)
                marks.append("" if K > 40 else ("✓" if got == want else "✗"))
                keys.append(int(example.tokens[position]))
                expected.append(int(want))
                predicted.append(int(got))
        self.grid.x_range.update(start=0.5, end=K + 0.5)
        self.cells.data = {"x": xs, "y": ys, "color": colors, "mark": marks, "key": keys, "expected": expected,
                           "predicted": predicted}

    def show_accuracy(self, accuracy):
        names = [name for variant, name in zip(VARIANTS, self.names) if variant in accuracy]
        right = [accuracy[v] for v in VARIANTS if v in accuracy]
        self.bars.data = {"y": names, "right": right,
                          "label": [format_number(round(100 * r), 0) + " %" for r in right]}
