"""The pictures of "Take away the softmax": small grids of numbered cells (the attention table, the
state, the notebook) that hold a whole run for the browser's player, and the cost on log–log axes.

A grid is drawn with Bokeh rectangles and texts, not an image: every cell carries its number, and a
frame can veil some rows and frame one (the row the current word reads). A run is every frame's
cells at once, `rows × cols` per frame; a frame filter (`plots.set_frame`) shows one frame, and the
page's `Player` moves it in the browser.
"""
import numpy as np
from bokeh.core.properties import value
from bokeh.models import (CDSView, ColumnDataSource, CustomJSTickFormatter, FixedTicker, HoverTool, Legend,
                          LegendItem, Range1d, Span)

from lineare.app.components.browser import callback
from lineare.app.components.curves import BLUE, VERMILLION
from lineare.app.components.plots import (CELL_SIZE, EMPTY, LABEL_SIZE, PALETTE, all_labels, frame_filter, quantize,
                                  readable_ink, set_frame, new_figure, style_figure)
from lineare.app.dashboards.take_away_softmax.model import DIMS, LENGTHS

INK, LIGHT_INK = "#102a43", "#ffffff"
FRAME_LINE = "#946000"                  # the current row: a dark amber, seen at 3:1 on white and on the cells


class CellsPicture:
    """A grid of numbered cells; `show_frames` sends a whole run, the player shows one frame of it."""

    def __init__(self, title, x_label, y_label, *, width, height, split=False):
        self.figure = style_figure(new_figure(title=title, width=width, height=height, x_range=Range1d(0, 1),
                                          y_range=Range1d(1, 0)), x_label, y_label)
        self.cells = ColumnDataSource({name: [] for name in ("x", "y", "value", "fill", "alpha", "label", "ink",
                                                             "style")}, syncable=False)
        self.cell_filter = frame_filter()
        view = CDSView(filter=self.cell_filter)
        boxes = self.figure.rect("x", "y", width=1, height=1, source=self.cells, view=view, fill_color="fill",
                                 fill_alpha="alpha", line_color="white", line_width=1, level="overlay")
        numbers = self.figure.text("x", "y", text="label", source=self.cells, view=CDSView(filter=self.cell_filter),
                                   text_align="center", text_baseline="middle", text_font_size=CELL_SIZE,
                                   text_color="ink", text_font_style="style", level="overlay")
        self.text = numbers.glyph
        self.drawn = [boxes, numbers]                 # the cells and their numbers (a lesson card may hold them back)
        self.outline = ColumnDataSource({"left": [], "right": [], "top": [], "bottom": []}, syncable=False)
        self.outline_filter = frame_filter()
        self.figure.quad(left="left", right="right", top="top", bottom="bottom", source=self.outline,
                         view=CDSView(filter=self.outline_filter), fill_alpha=0, line_color=FRAME_LINE,
                         line_width=4, level="overlay")
        # `split`: a line between two parts of the grid, keys | values of the notebook or the state over z, never
        # both at once: one line that turns, and none on a grid that is never split
        self.split = Span(location=0, dimension="height", line_color=INK, line_width=3, visible=False,
                          level="overlay") if split else None
        if split:
            self.figure.add_layout(self.split)
        self.figure.xaxis.ticker, self.figure.yaxis.ticker = FixedTicker(ticks=[]), FixedTicker(ticks=[])
        for axis in (self.figure.xaxis, self.figure.yaxis):     # the words and numbers of the rows: every one drawn
            axis.major_label_policy = all_labels()
        self.figure.add_tools(HoverTool(renderers=[boxes], tooltips=[("", "@value{0.0000}")]))

    def set_grid(self, rows, cols, x_labels, y_labels, *, font=CELL_SIZE, split_col=None, split_row=None):
        """The grid's shape, its tick labels and the cells' type size; a line after `split_col` columns or
        after `split_row` rows (a picture made with `split`)."""
        fig = self.figure
        self.text.text_font_size = font
        fig.x_range.update(start=0, end=cols)
        fig.y_range.update(start=rows, end=0)
        fig.xaxis.ticker.ticks = [c + 0.5 for c in range(cols)]
        fig.xaxis.major_label_overrides = {c + 0.5: str(label) for c, label in enumerate(x_labels)}
        fig.yaxis.ticker.ticks = [r + 0.5 for r in range(rows)]
        fig.yaxis.major_label_overrides = {r + 0.5: str(label) for r, label in enumerate(y_labels)}
        if self.split is not None:
            dimension, at = ("height", split_col) if split_row is None else ("width", split_row)
            self.split.update(dimension=dimension, location=at or 0, visible=at is not None)

    def show_frames(self, values, limit, t, *, labels, shown=None, framed=None):
        """Every frame of a run: `values` [F, rows, cols] (NaN: an empty cell), coloured on [−limit, limit];
        `labels` [F, rows, cols] the text of each cell; `shown` [F, rows, cols] each cell's opacity (1 by
        default); `framed` one (top row, bottom row, first column, last column) per frame, or None."""
        values = np.asarray(values, dtype=np.float64)
        F, rows, cols = values.shape
        t = min(t, F - 1)
        codes = quantize(values, limit).ravel()                                 # [F · rows · cols]
        fill = np.array([*PALETTE, EMPTY])[np.minimum(codes, len(PALETTE))]              # empty → EMPTY
        shown = np.broadcast_to(1.0 if shown is None else np.asarray(shown, dtype=np.float64), values.shape)
        # a veiled cell (shown < 1) pales its colour, not its number: italic text on the pale colour, dark or white
        # as each cell reads best (a faded number was 2.1-2.4:1 against its cell)
        veiled = shown.ravel() < 1
        y, x = np.mgrid[0:rows, 0:cols] + 0.5                                  # cell centres [rows, cols]
        self.cells.data = {"x": np.tile(x.ravel(), F), "y": np.tile(y.ravel(), F), "value": values.ravel(),
                           "fill": fill.tolist(), "alpha": shown.ravel(),
                           "label": [str(s) for s in np.asarray(labels).ravel()],
                           "ink": readable_ink(fill, shown.ravel(), light=LIGHT_INK),
                           "style": np.where(veiled, "italic", "normal").tolist()}
        set_frame(self.cell_filter, rows * cols, t)
        boxes = framed if framed is not None else [(0, 0, 0, 0)] * F
        self.outline.data = {"top": [b[0] for b in boxes], "bottom": [b[1] for b in boxes],
                             "left": [b[2] for b in boxes], "right": [b[3] for b in boxes]}
        set_frame(self.outline_filter, 1, t)


class CostPicture:
    """Multiply-adds of the two orders against T, log–log, for one d; dots at the chosen T, and the counts
    there in the legend under the picture. The axes hold every length and head dimension of the
    controls, so that two settings can be compared."""

    def __init__(self, title, x_label, y_label, *, width=340, height=300):
        low = min(2 * LENGTHS[0] ** 2 * DIMS[0], 2 * LENGTHS[0] * DIMS[0] ** 2)
        high = max(2 * LENGTHS[-1] ** 2 * DIMS[-1], 2 * LENGTHS[-1] * DIMS[-1] ** 2)
        self.figure = style_figure(new_figure(title=title, width=width, height=height, x_axis_type="log",
                                          y_axis_type="log", x_range=Range1d(LENGTHS[0] / 1.3, LENGTHS[-1] * 1.3),
                                          y_range=Range1d(low / 2, high * 2)), x_label, y_label)
        self.figure.xaxis.ticker = FixedTicker(ticks=[8, 64, 512, 4096])
        self.figure.yaxis.ticker = FixedTicker(ticks=[10.0 ** e for e in range(4, 12, 2)])
        self.figure.yaxis.formatter = powers_of_ten()
        self.figure.grid.visible = True
        self.figure.grid.grid_line_alpha = 0.35
        self.lines, self.dots, self.items, self.drawn = {}, {}, {}, {}
        # the two told apart by dash and marker as well as colour (the dot marks only the chosen T)
        for form, color, marker, dash in (("parallel", BLUE, "square", "solid"),
                                          ("recurrent", VERMILLION, "circle", "dashed")):
            self.lines[form] = ColumnDataSource({"T": [], "count": []})
            self.dots[form] = ColumnDataSource({"T": [], "count": []})
            line = self.figure.line("T", "count", source=self.lines[form], color=color, line_width=3, line_dash=dash)
            dot = self.figure.scatter("T", "count", source=self.dots[form], color=color, size=13, marker=marker)
            self.items[form] = LegendItem(label=value(""), renderers=[line, dot])
            self.drawn[form] = [line, dot, self.items[form]]
        self.figure.add_layout(Legend(items=list(self.items.values()), label_text_font_size=LABEL_SIZE, padding=2,
                                      spacing=2, border_line_alpha=0, click_policy="none"), "below")
        self.now = Span(location=LENGTHS[0], dimension="height", line_color="#52606d", line_dash="dashed",
                        line_width=2)
        self.figure.add_layout(self.now)
        self.figure.add_tools(HoverTool(tooltips=[("T", "@T"), ("", "@count{0,0}")]))

    def show(self, curves, T, labels):
        """`curves`: {form: count at each of LENGTHS} (model.cost_curves); `labels`: {form: legend text}."""
        at = list(LENGTHS).index(T)
        for form, curve in curves.items():
            self.lines[form].data = {"T": list(LENGTHS), "count": [float(c) for c in curve]}
            self.dots[form].data = {"T": [T], "count": [float(curve[at])]}
            self.items[form].label = value(labels[form])
        self.now.location = T


def powers_of_ten():
    """10⁴, 10⁶ …: a count's size at a glance, the same in every language (a new model per figure: a
    Bokeh model belongs to one document, and every visitor's page is a document of its own)."""
    return CustomJSTickFormatter(code=callback("powers_of_ten"))
