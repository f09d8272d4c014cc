"""Pictures that change every animation frame: Bokeh figures whose data sources are patched in place.

Measured on a 2-core machine: updating a `ColumnDataSource` costs about a millisecond per picture, a
HoloViews redraw 50–700 ms (app/README.md, "Decisions"), so every picture is built from Bokeh glyphs
whose data sources are patched in place. Colour ranges
are set once per run (`set_limit`) and then stay fixed while the frames change, so a colour means
the same number at every step. Colours diverge around zero (blue negative, white zero, red positive:
ColorBrewer RdBu, safe for the common colour-vision deficiencies).
"""
import numpy as np
from bokeh.models import (BasicTicker, ColorBar, ColumnDataSource, CustomJSTickFormatter, FactorRange,
                          FixedTicker, HoverTool, LinearColorMapper, Range1d, Title)
from bokeh.palettes import RdBu11, interp_palette
from bokeh.plotting import figure

TITLE_SIZE = "16pt"
LABEL_SIZE = "13pt"
TICK_SIZE = "11pt"
EMPTY = "#c9d1db"        # cells that hold nothing yet (a KV cache not filled up to there)


# RdBu interpolated to 255 colours (Bokeh lists it from blue to red: negative blue, positive red)
PALETTE = interp_palette(RdBu11, 255)


def _send_if_changed(source, **columns):
    """Update a data source only when the numbers differ: every update is sent to the browser and
    repaints its figure (several ms each in a software-rendered browser), and many frames leave some
    pictures as they were (a token that writes nothing, a fixed gate)."""
    same = all(
        name in source.data and _equal(source.data[name], new) for name, new in columns.items())
    if not same:
        source.data.update(**columns)


def _equal(old, new):
    if isinstance(new, list):                         # image columns: a list holding one 2-D array
        return isinstance(old, list) and len(old) == len(new) and all(_equal(a, b) for a, b in zip(old, new))
    old, new = np.asarray(old), np.asarray(new)
    floats = old.dtype.kind == "f" and new.dtype.kind == "f"
    return old.shape == new.shape and np.array_equal(old, new, equal_nan=floats)


def number_format(language=None, decimals=3):
    """Tick labels written the way the page's language writes numbers (0,5 and 20.000 in Italian), by
    the browser's own Intl (Bokeh's NumeralTickFormatter(language="it") still wrote 20,000)."""
    from app.i18n import current_language

    locale = {"it": "it-IT"}.get(language or current_language(), "en-US")
    return CustomJSTickFormatter(args={"locale": locale, "decimals": decimals},
                                 code="return tick.toLocaleString(locale, {maximumFractionDigits: decimals})")


def colour_bar(mapper):
    """A colour bar beside a heat map, its labels in the page's number format."""
    return ColorBar(color_mapper=mapper, ticker=BasicTicker(desired_num_ticks=5), formatter=number_format(),
                    major_label_text_font_size=TICK_SIZE, width=14)


def style_figure(fig, x_label, y_label):
    """Our look for a Bokeh figure: large labels for a projector, no toolbar, no grid, local number format."""
    fig.title.text_font_size = TITLE_SIZE
    fig.xaxis.axis_label = x_label
    fig.yaxis.axis_label = y_label
    for axis in (fig.xaxis, fig.yaxis):
        axis.axis_label_text_font_size = LABEL_SIZE
        axis.axis_label_text_font_style = "normal"
        axis.major_label_text_font_size = TICK_SIZE
    for axis, axis_range in ((fig.xaxis, fig.x_range), (fig.yaxis, fig.y_range)):
        if not isinstance(axis_range, FactorRange):
            axis.formatter = number_format()
    fig.toolbar_location = None
    fig.outline_line_color = "#9aa5b1"
    fig.grid.visible = False
    return fig


class MatrixPicture:
    """A matrix as a heat map (row 0 at the top, like the matrix on paper), with a colour bar."""

    def __init__(self, title, x_label, y_label, rows, cols, *, width=340, height=320, value_label="value"):
        self.rows, self.cols = rows, cols
        self.mapper = LinearColorMapper(palette=PALETTE, low=-1, high=1, nan_color=EMPTY)
        self.source = ColumnDataSource({"image": [np.full((rows, cols), np.nan)]})
        self.figure = style_figure(figure(title=title, width=width, height=height,
                                    x_range=Range1d(0, cols), y_range=Range1d(rows, 0)), x_label, y_label)
        self.figure.image(image="image", x=0, y=0, dw=cols, dh=rows, source=self.source,
                          color_mapper=self.mapper)
        self.figure.add_layout(colour_bar(self.mapper), "right")
        self.figure.add_tools(HoverTool(tooltips=[(value_label, "@image{0.000}")]))
        self.dh = rows

    def set_limit(self, limit):
        """Fix the colour range to [−limit, limit] (call once per run, not per frame)."""
        limit = float(limit) if np.isfinite(limit) and limit > 1e-9 else 1.0
        self.mapper.update(low=-limit, high=limit)

    def set_rows(self, rows):
        """Change the number of rows (a KV cache sized to the sequence)."""
        self.rows = rows
        self.figure.y_range.update(start=rows, end=0)
        self.figure.renderers[0].glyph.dh = rows

    def set_cols(self, cols):
        """Change the number of columns (a sequence of another length along x)."""
        self.cols = cols
        self.figure.x_range.update(start=0, end=cols)
        self.figure.renderers[0].glyph.dw = cols

    def show(self, matrix):
        _send_if_changed(self.source, image=[np.asarray(matrix, dtype=float)])


class BarsPicture:
    """One bar per entry of a vector, on a fixed vertical range (gates, attention weights)."""

    def __init__(self, title, x_label, y_label, size, *, y_range=(0, 1.05), width=300, height=260,
                 color="#3b6ea8"):
        self.source = ColumnDataSource({"x": np.arange(size), "top": np.zeros(size)})
        self.figure = style_figure(figure(title=title, width=width, height=height,
                                    x_range=Range1d(-0.6, size - 0.4), y_range=Range1d(*y_range)),
                             x_label, y_label)
        self.figure.vbar(x="x", top="top", width=0.8, source=self.source, color=color)
        self.subtitle = Title(text="", text_font_size=LABEL_SIZE, text_font_style="normal")
        self.figure.add_layout(self.subtitle, "above")       # a second line under the title (e.g. β)
        self.figure.add_tools(HoverTool(tooltips=[(x_label, "@x"), (y_label, "@top{0.000}")]))

    def set_size(self, size):
        self.figure.x_range.update(start=-0.6, end=max(size, 1) - 0.4)

    def show(self, values):
        values = np.asarray(values, dtype=float)
        _send_if_changed(self.source, x=np.arange(len(values)), top=values)


class RowsPicture:
    """A few named vectors of the same length, one per row, on a shared diverging colour scale."""

    def __init__(self, title, x_label, row_labels, size, *, width=340, height=220, value_label="value"):
        self.rows = len(row_labels)
        self.mapper = LinearColorMapper(palette=PALETTE, low=-1, high=1, nan_color=EMPTY)
        self.source = ColumnDataSource({"image": [np.full((self.rows, size), np.nan)]})
        self.figure = style_figure(figure(title=title, width=width, height=height,
                                    x_range=Range1d(0, size), y_range=Range1d(self.rows, 0)), x_label, "")
        self.figure.image(image="image", x=0, y=0, dw=size, dh=self.rows, source=self.source,
                          color_mapper=self.mapper)
        self.figure.yaxis.ticker = FixedTicker(ticks=[i + 0.5 for i in range(self.rows)])
        self.figure.yaxis.major_label_overrides = {i + 0.5: label for i, label in enumerate(row_labels)}
        self.figure.yaxis.major_label_text_font_size = LABEL_SIZE
        self.figure.add_layout(colour_bar(self.mapper), "right")
        self.figure.add_tools(HoverTool(tooltips=[(value_label, "@image{0.000}")]))

    def set_limit(self, limit):
        limit = float(limit) if np.isfinite(limit) and limit > 1e-9 else 1.0
        self.mapper.update(low=-limit, high=limit)

    def set_size(self, size):
        """Change the length of the vectors (e.g. another key dimension)."""
        self.figure.x_range.update(start=0, end=size)
        self.figure.renderers[0].glyph.dw = size

    def show(self, rows):
        _send_if_changed(self.source, image=[np.asarray(rows, dtype=float).reshape(self.rows, -1)])
