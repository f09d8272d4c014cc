"""Charts that change only when a knob moves, drawn with HoloViews in the look of `CurvesPicture`.

    chart = hv.DynamicMap(draw_memory, streams=[hv.streams.Params(store, ["memory"])])
    chart = chart.opts(*knob_chart(_("Memory against context length"), _("context length (tokens)"), None),
                       hv.opts.Curve("Cache", color=VERMILLION, line_width=4))
    chart_pane(chart)                                       # where a view would put pn.pane.Bokeh(figure)

`draw_memory(memory)` returns an overlay of plain elements (hv.Curve, hv.Scatter, hv.VLine), each with
a `label` (its legend entry: elements sharing a label share the entry) and a `group` that the styles
name. The axes follow each frame: give the elements' dimensions their ranges,
hv.Dimension("context", range=(0, n)); a dimension's label is its axis label when the chart gives
none. The DynamicMap redraws in place whenever one of the store's parameters changes.

A redraw costs tens of milliseconds on the server (about 50 ms for a chart of four curves) where
patching a Bokeh data source costs about one: HoloViews suits a chart redrawn once per run or per
typed number. Pictures redrawn at every animation frame or while a slider is dragged stay Bokeh
data sources (`plots.py`, `curves.py`).
"""
import holoviews as hv
import panel as pn
from bokeh.themes import Theme

from app.components.plots import LABEL_SIZE, TICK_SIZE, TITLE_SIZE, number_format

hv.extension("bokeh", logo=False)

# HoloViews' renderer would give the whole document its own theme (black titles on every figure of the
# page); an empty theme keeps Bokeh's defaults, as on the pages' other figures
BOKEH_DEFAULTS = Theme(json={})


def knob_chart(title, x_label, y_label, *, width=560, height=380, language=None, legend_columns=None):
    """Options for a DynamicMap of overlays: our fonts and number format, a light grid, no toolbar and
    no tools, the legend under the picture (in `legend_columns` columns, else one row) so that it never
    hides a curve."""
    element = {"default_tools": [], "framewise": True}        # framewise: the axes follow each frame
    ticks = number_format(language, decimals=2)
    return [
        hv.opts.Curve(**element), hv.opts.Scatter(**element), hv.opts.VLine(default_tools=[]),
        hv.opts.Overlay(
            title=title, xlabel=x_label, ylabel=y_label, width=width, height=height, border=5, toolbar=None,
            show_grid=True, gridstyle={"grid_line_color": "#e4e7eb"}, xformatter=ticks, yformatter=ticks,
            fontsize={"title": TITLE_SIZE, "labels": LABEL_SIZE, "ticks": TICK_SIZE, "legend": LABEL_SIZE},
            legend_position="bottom", legend_cols=legend_columns or 0,       # 0: all in one row
            legend_opts={"location": "top_right", "orientation": "horizontal", "spacing": 14, "padding": 4,
                         "border_line_alpha": 0, "click_policy": "none"},
            backend_opts={"plot.outline_line_color": "#9aa5b1",
                          "xaxis.axis_label_text_font_style": "normal",
                          "yaxis.axis_label_text_font_style": "normal"}),
    ]


def chart_pane(chart, margin=0):
    """The pane of a HoloViews chart, laid out as a Bokeh figure's pane (by default no margin of its own),
    its axes not linked to other charts that happen to share a dimension name, the page's theme left alone."""
    return pn.pane.HoloViews(chart, backend="bokeh", linked_axes=False, margin=margin, theme=BOKEH_DEFAULTS)
