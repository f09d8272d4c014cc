"""The pictures of "Parallel = recurrent": the decay mask, the counted and the measured cost (Bokeh,
patched in place) and the table of differences between the forms."""
import html
import math

import numpy as np
from bokeh.core.properties import value
from bokeh.models import (ColumnDataSource, CustomJSTickFormatter, HoverTool, Legend, LegendItem, LinearColorMapper,
                          Range1d)
from bokeh.palettes import Viridis256

from lineare.app.components.browser import callback
from lineare.app.components.plots import EMPTY, LABEL_SIZE, colour_bar, new_figure, style_figure
from lineare.app.components.text import SCROLL_BOX_CSS, scroll_box
from lineare.app.dashboards.parallel_recurrent.model import COST_LENGTHS, DTYPES, FORMS, PAIRS, counted_work
from lineare.app.i18n import N_, _, format_number

FORM_COLORS = {"recurrent": "#D55E00", "parallel": "#0072B2", "chunked": "#009E73"}   # Okabe–Ito
FORM_MARKERS = {"recurrent": "circle", "parallel": "square", "chunked": "triangle"}
FORM_DASHES = {"recurrent": "solid", "parallel": "dashed", "chunked": "dotted"}    # told apart without colour too
FORM_NAMES = {"recurrent": N_("recurrent"), "parallel": N_("parallel"), "chunked": N_("chunked")}

TABLE_CSS = """
:host { font-size: calc(16px * var(--lineare-scale, 1)); color: #1f2933; max-width: 100%; }
table { border-collapse: collapse; margin: 4px 0 8px 0; }
th, td { padding: 4px 8px; border-bottom: 1px solid #d9e2ec; text-align: right; white-space: nowrap; }
th { background: #f0f4f8; font-weight: 600; }
th[colspan] { text-align: center; }
td.pair, th.pair { text-align: left; }
caption { caption-side: top; text-align: left; font-weight: 700; padding-bottom: 4px; font-size: 17px; }
p.verdict { font-size: 18px; margin: 6px 0; }
p.legend { color: #52606d; margin: 0 0 6px 0; }
""" + SCROLL_BOX_CSS                                        # the table scrolls sideways in its own box on a phone


class MaskPicture:
    """The T × T decay mask (sequential Viridis, fixed range 0…1, future cells grey) with the chunks
    outlined: diagonal blocks computed inside a chunk, hatched blocks below them carried by the state."""

    def __init__(self, title, width=560, height=520):
        self.mapper = LinearColorMapper(palette=Viridis256, low=0, high=1, nan_color=EMPTY)
        self.source = ColumnDataSource({"image": [np.full((1, 1), np.nan)], "dw": [1], "dh": [1]})
        self.blocks = ColumnDataSource({"left": [], "right": [], "top": [], "bottom": []})
        self.carried = ColumnDataSource({"left": [], "right": [], "top": [], "bottom": []})
        self.figure = style_figure(new_figure(title=title, width=width, height=height, x_range=Range1d(0, 1),
                                          y_range=Range1d(1, 0)), _("earlier token j"), _("current token t"))
        self.figure.image(image="image", x=0, y=0, dw="dw", dh="dh", source=self.source,
                          color_mapper=self.mapper)
        self.figure.quad(left="left", right="right", top="top", bottom="bottom", source=self.carried,
                         fill_alpha=0, line_color=None, hatch_pattern="/", hatch_color="white",
                         hatch_alpha=0.35, hatch_scale=12, hatch_weight=1)
        for color, width_px in (("white", 4), ("#102a43", 1.5)):      # a double line shows on dark and bright
            self.figure.quad(left="left", right="right", top="top", bottom="bottom", source=self.blocks,
                             fill_alpha=0, line_color=color, line_width=width_px)
        self.figure.add_layout(colour_bar(self.mapper), "right")
        self.figure.add_tools(HoverTool(tooltips=[("t", "$y{0}"), ("j", "$x{0}"), ("L", "@image{0.000}")]))

    def show(self, mask, chunk_size):
        T = mask.shape[0]
        starts = np.arange(0, T, chunk_size)
        stops = np.minimum(starts + chunk_size, T)
        later = starts > 0
        self.figure.x_range.update(start=0, end=T)
        self.figure.y_range.update(start=T, end=0)
        self.source.data.update(image=[mask], dw=[T], dh=[T])
        self.blocks.data.update(left=starts, right=stops, top=starts, bottom=stops)
        self.carried.data.update(left=np.zeros(later.sum()), right=starts[later], top=starts[later],
                                 bottom=stops[later])


class CostPicture:
    """CPU time against T on log–log axes, one line per form, slopes in the legend. The axes are
    fixed, so that curves of different models and chunk sizes can be compared. Plain Bokeh patched
    in place, like the pictures that change every frame: redrawn through HoloViews it took about
    1000 times longer per knob change (a new figure each time)."""

    def __init__(self, title, width=470, height=420):
        self.figure = style_figure(new_figure(title=title, width=width, height=height, x_axis_type="log",
                                          y_axis_type="log", x_range=Range1d(10, 30_000),
                                          y_range=Range1d(0.01, 10_000)),
                                   _("sequence length T"), _("CPU time per run (ms)"))
        self.sources, self.items = {}, {}
        for form in FORMS:
            source = ColumnDataSource({"T": [], "ms": [], "wall": []})
            line = self.figure.line("T", "ms", source=source, color=FORM_COLORS[form], line_width=3,
                                    line_dash=FORM_DASHES[form])
            dots = self.figure.scatter("T", "ms", source=source, color=FORM_COLORS[form], size=10,
                                       marker=FORM_MARKERS[form])
            self.sources[form] = source
            self.items[form] = LegendItem(label=value(_(FORM_NAMES[form])), renderers=[line, dots])
        self.figure.add_layout(Legend(items=list(self.items.values()), location="top_left",
                                      label_text_font_size=LABEL_SIZE))
        self.figure.grid.visible = True
        self.figure.grid.grid_line_alpha = 0.35
        self.figure.add_tools(HoverTool(tooltips=[("T", "@T"), (_("CPU time (ms)"), "@ms{0.000}"),
                                                  (_("wall-clock time (ms)"), "@wall{0.000}")]))

    def show(self, curve):
        for form in FORMS:
            points = curve.times.get(form, []) if curve is not None else []
            wall = dict(curve.wall.get(form, [])) if curve is not None else {}
            self.sources[form].data = {"T": [T for T, _s in points], "ms": [1000 * s for _T, s in points],
                                       "wall": [1000 * wall.get(T, math.nan) for T, _s in points]}
            slope = curve.slopes.get(form) if curve is not None else None
            label = _(FORM_NAMES[form])
            if slope is not None:
                label = _("{form}: slope {slope}").format(form=label, slope=format_number(slope, 2))
            self.items[form].label = value(label)


class CountPicture:
    """Multiply-adds against T on log–log axes, one line per form (model.counted_work): there from the
    first paint, where the measured cost waits for a press. Axes fixed like the measured cost's."""

    def __init__(self, title, width=470, height=420):
        self.figure = style_figure(new_figure(title=title, width=width, height=height, x_axis_type="log",
                                          y_axis_type="log", x_range=Range1d(10, 30_000), y_range=Range1d(1e3, 1e12)),
                                   _("sequence length T"), _("multiply-adds per run (counted)"))
        self.figure.yaxis.formatter = CustomJSTickFormatter(code=callback("powers_of_ten"))
        self.sources = {form: ColumnDataSource({"T": [], "count": []}) for form in FORMS}
        items = []
        for form in FORMS:
            line = self.figure.line("T", "count", source=self.sources[form], color=FORM_COLORS[form], line_width=3,
                                    line_dash=FORM_DASHES[form])
            dots = self.figure.scatter("T", "count", source=self.sources[form], color=FORM_COLORS[form], size=8,
                                       marker=FORM_MARKERS[form])
            items.append(LegendItem(label=value(_(FORM_NAMES[form])), renderers=[line, dots]))
        self.figure.add_layout(Legend(items=items, location="top_left", label_text_font_size=LABEL_SIZE))
        self.figure.grid.visible = True
        self.figure.grid.grid_line_alpha = 0.35
        self.figure.add_tools(HoverTool(tooltips=[("T", "@T"), (_("multiply-adds"), "@count{0.0a}")]))

    def show(self, variant, chunk_size):
        lengths = np.array(COST_LENGTHS, dtype=float)
        for form in FORMS:
            self.sources[form].data = {"T": lengths, "count": counted_work(variant, form, lengths, chunk_size)}


def comparison_table(comparison):
    """The differences between the forms, per pair and dtype, with a one-line verdict (HTML)."""
    largest, relative = html.escape(_("largest")), html.escape(_("relative"))
    compared = html.escape(_("forms compared"))
    head = (f'<tr><th class="pair" rowspan="2">{compared}</th>'
            + "".join(f'<th colspan="2">{dtype}</th>' for dtype in DTYPES) + "</tr>"
            + "<tr>" + f"<th>{largest}</th><th>{relative}</th>" * len(DTYPES) + "</tr>")
    rows = []
    for a, b in PAIRS:
        cells = []
        for dtype in DTYPES:
            biggest, typical = comparison.errors[dtype, (a, b)]
            cells += [scientific(biggest), scientific(typical)]
        pair = f"{_(FORM_NAMES[a])} ↔ {_(FORM_NAMES[b])}"
        rows.append(f'<tr><td class="pair">{html.escape(pair)}</td>'
                    + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    title = _("How far apart the three answers are")
    worst = {dtype: max(comparison.errors[dtype, pair][1] for pair in PAIRS) for dtype in DTYPES}
    digits = {dtype: max(0, math.floor(-math.log10(max(worst[dtype], 1e-300)))) for dtype in DTYPES}
    verdict = _("They agree to about {digits32} significant digits in float32 and {digits64} in float64: "
                "what is left is rounding, not a different result.").format(
        digits32=digits["float32"], digits64=digits["float64"])
    legend = _("Largest: the biggest difference between the two answers, over every token and number. "
               "Relative: the typical difference divided by the typical size of the answer.")
    size = _("For scale: the outputs themselves reach {peak}.").format(peak=format_number(comparison.peak, 2))
    table = f"<table><caption>{html.escape(title)}</caption>{head}{''.join(rows)}</table>"
    return (scroll_box(table, title, fits=34) +
            f'<p class="legend">{html.escape(legend)} {html.escape(size)}</p>'
            f'<p class="verdict">{html.escape(verdict)}</p>')


def scientific(x):
    """1.2 · 10⁻⁷ (the mantissa written the way the current language writes numbers)."""
    if x == 0 or not math.isfinite(x):
        return format_number(x) if math.isfinite(x) else "∞"
    exponent = math.floor(math.log10(abs(x)))
    mantissa = x / 10 ** exponent
    if round(abs(mantissa), 1) >= 10:
        mantissa, exponent = mantissa / 10, exponent + 1
    power = str(exponent).translate(str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"))
    if exponent == 0:
        return format_number(mantissa, 1)
    return f"{format_number(mantissa, 1)} · 10{power}"
