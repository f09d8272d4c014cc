"""The architectures page's two pictures (Bokeh, drawn once per session; the lit model is thickened):
the forgetting curves of every model on one plot, and the eigenvalues of each model's transition."""
import numpy as np
from bokeh.models import ColumnDataSource, FactorRange, HoverTool, Label, Legend, LegendItem, Range1d, Span

from lineare.app.components.curves import CurvesPicture
from lineare.app.components.plots import LABEL_SIZE, all_labels, new_figure, style_figure
from lineare.app.dashboards.architectures.model import (ARCHITECTURES, TOKENS, WIDE, WIDE_BETA, eigenvalues,
                                                forgetting_curve)
from lineare.app.i18n import _, format_number
from lineare.app.variants import REGISTRY, label

SMALL_SIZE = "12pt"       # 16 px: the legends' names and the words on the axis, read from the back of a room

# Okabe & Ito's colours, darkened where a line drawn at alpha 0.75 on white fell under 3:1 (their orange, sky blue,
# green, grey, vermillion and pink; the sky blue, too light to darken apart from the blue, is a purple); the family
# in the dash (solid: accumulates or fades, dashed: corrects), so the curves still read in grey. RWKV-6 has GLA's
# transition: GLA's colour, dotted, on top of it.
COLOURS = {"linear": "#000000", "retnet": "#946000", "mamba2": "#7b52ae", "gla": "#007a5a", "rwkv6": "#007a5a",
           "mlstm": "#5f6b78", "deltanet": "#0072b2", "gated_deltanet": "#c05200", "rwkv7": "#a8457f"}
DASHES = {"rwkv6": "dotted"}
# and a marker of its own on every line (four along it, each model's a little further on than the last, so that
# lines which meet keep theirs apart): two models of one dash are told apart without their colours
MARKERS = {"linear": "circle", "retnet": "square", "mamba2": "triangle", "gla": "diamond",
           "rwkv6": "inverted_triangle", "mlstm": "hex", "deltanet": "star", "gated_deltanet": "plus",
           "rwkv7": "square_pin"}
MARKS_EVERY = 16                  # tokens between two markers of one line
THIN, THICK = 2.5, 6
SMALL_MARK, LARGE_MARK = 11, 15


def dash(variant):
    return DASHES.get(variant, "dashed" if REGISTRY[variant].corrects else "solid")


def marked(variant):
    """The tokens at which `variant`'s line carries its marker."""
    number = list(ARCHITECTURES).index(variant)
    return np.arange(2 + round(MARKS_EVERY * number / len(ARCHITECTURES)), TOKENS, MARKS_EVERY)


class ForgettingPicture:
    """One curve per model: the share of a pair written at token 0 that is left n tokens later."""

    def __init__(self, language, width=490, height=480):
        self.picture = CurvesPicture(_("What is left of a pair"), _("tokens after it was written"),
                                     _("share of the pair left"), width=width, height=height,
                                     language=language, legend_columns=3)
        self.picture.legend.label_text_font_size = SMALL_SIZE
        self.picture.legend.spacing = 6
        tokens = np.arange(TOKENS + 1)
        self.lines, self.marks = {}, {}
        for variant in ARCHITECTURES:
            self.lines[variant] = self.picture.line(variant, color=COLOURS[variant], dash=dash(variant), width=THIN)
            self.marks[variant] = self.picture.dots(f"{variant} marks", color=COLOURS[variant],
                                                    marker=MARKERS[variant], size=SMALL_MARK, alpha=0.9)
            self.picture.label(variant, _(REGISTRY[variant].short), [variant, f"{variant} marks"])
            curve = forgetting_curve(variant)
            self.picture.show(variant, tokens, curve)
            at = marked(variant)
            self.picture.show(f"{variant} marks", tokens[at], np.asarray(curve)[at])
        self.picture.set_ranges(x=(0, TOKENS), y=(0, 1.04))
        self.picture.figure.add_tools(HoverTool(tooltips=[(_("tokens after it was written"), "@x"),
                                                          (_("share of the pair left"), "@y{0.000}")]))
        self.figure = self.picture.figure

    def light(self, lit):
        for variant, renderer in self.lines.items():
            renderer.glyph.line_width = THICK if variant == lit else THIN
            renderer.glyph.line_alpha = 1.0 if variant == lit else 0.75
            self.marks[variant].glyph.size = LARGE_MARK if variant == lit else SMALL_MARK


def points(variants, values):
    """The points `values(variant)` of each variant on its row, in its colour."""
    x, y, color = [], [], []
    for variant in variants:
        found = [float(v) for v in values(variant)]
        x += found
        y += [label(variant)] * len(found)
        color += [COLOURS[variant]] * len(found)
    return ColumnDataSource({"x": x, "y": y, "color": color})


class EigenPicture:
    """One row per model: the eigenvalues of its transition at one token on [−1, 1] (β = 1; the delta
    rule also at β = 2, hollow). Its words follow the level (`set_level`)."""

    # 480 px high: nine named rows apart at a presenter's 20-px type, an Italian legend on two rows (at 430 they ran
    # together; the picture beside it is as high)
    def __init__(self, width=460, height=480):
        rows = [label(v) for v in reversed(ARCHITECTURES)]          # the first model at the top
        # a row's worth of room at each end: the words under the reference lines sit in the lower one
        self.figure = style_figure(new_figure(title="", width=width, height=height, x_range=Range1d(-1.15, 1.15),
                                          y_range=FactorRange(*rows, range_padding=0.12), grid=True), "", "")
        self.figure.yaxis.major_label_text_font_size = LABEL_SIZE
        self.figure.yaxis.major_label_policy = all_labels()      # every model named, a phone's 9 rows too
        self.figure.xgrid.visible = True
        self.figure.xgrid.grid_line_color = "#e4e7eb"
        for at in (0.0, 1.0):
            self.figure.add_layout(Span(location=at, dimension="height", line_color="#9aa5b1", line_width=1.5))
        for at, text, align in ((1.0, _("keeps"), "right"), (0.0, _("erases"), "center"),
                                (-1.0, _("flips"), "left")):
            self.figure.add_layout(Label(x=at, y=0, y_units="screen", y_offset=3, text=text, text_align=align,
                                         text_font_size=SMALL_SIZE, text_color="#52606d"))
        # the points of every model that only fades in one renderer, of every model that corrects in another, its
        # colour a column (a renderer per model was six models each, built and sent; a lesson card holds back the
        # correcting models' points); the rows never overlap, so the drawing order within a row is all that counts
        self.drawn = {}
        for kind, variants in (("fading", [v for v in ARCHITECTURES if not REGISTRY[v].corrects]),
                               ("correcting", [v for v in ARCHITECTURES if REGISTRY[v].corrects])):
            self.drawn[kind] = [self.figure.scatter(x="x", y="y", source=points(variants, eigenvalues), size=13,
                                                    fill_color="color", line_color="white", alpha=0.85)]
        hollow = points(WIDE, lambda variant: eigenvalues(variant, WIDE_BETA))
        self.drawn["correcting"].append(self.figure.scatter(x="x", y="y", source=hollow, size=15, marker="diamond",
                                                            fill_color=None, line_color="color", line_width=2.5))
        # the legend's two markers in grey: what filled and hollow mean, for every colour
        # (a legend draws a glyph only for a renderer with data: one point each, off the x range)
        filled = self.figure.scatter(x=[-9], y=[rows[0]], size=13, color="#52606d")
        hollow = self.figure.scatter(x=[-9], y=[rows[0]], size=15, marker="diamond", fill_color=None,
                                     line_color="#52606d", line_width=2.5)
        legend = Legend(items=[LegendItem(label="β = 1", renderers=[filled]),
                               LegendItem(label=_("β = {beta} (the delta rule's widest step)").format(
                                   beta=format_number(WIDE_BETA)), renderers=[hollow])],
                        orientation="horizontal", label_text_font_size=SMALL_SIZE, border_line_alpha=0,
                        padding=4, spacing=10)
        self.figure.add_layout(legend, "below")
        self.figure.add_tools(HoverTool(tooltips=[("λ", "$x{0.000}")]))
        self.band = self.figure.hbar(y=[rows[-1]], height=0.9, left=-1.15, right=1.15, color="#fff3c4",
                                     level="underlay")
        self.words = {False: (_("What each direction keeps per token"), _("factor per token")),
                      True: (_("Eigenvalues of the transition"), _("eigenvalue λ"))}

    def light(self, lit):
        self.band.data_source.data = {"y": [label(lit)]}

    def set_level(self, superiore):
        title, x_label = self.words[superiore]
        self.figure.title.text = title
        self.figure.xaxis.axis_label = x_label
