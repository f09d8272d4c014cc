"""Curves on fixed axes: a few named series (lines or dots) whose data sources are patched in place.

    picture = CurvesPicture(_("Memory held"), _("tokens in memory"), _("memory (kB)"))
    picture.line("cache", color=VERMILLION)
    picture.dots("cache_now", color=VERMILLION)
    picture.label("cache", _("KV cache"), ["cache", "cache_now"])   # one legend entry for both
    picture.set_ranges(x=(0, 64), y=(0, 140))      # once per run, never per frame
    picture.show("cache", x, y)                      # these points
    picture.show_frames("cache", x, y, t, upto=True) # a whole run: frame t shows points 0 … t (the Player)

Series are drawn on the figure's overlay layer: a new frame repaints the curves alone, not the axes
and their labels (a third of the time of a full repaint in a software-rendered browser).
Colours are Okabe & Ito's (safe for the common colour-vision deficiencies), and every series can
also differ by dash and marker, so a picture still reads in grey on a projector.
"""
import numpy as np
from bokeh.models import CDSView, ColumnDataSource, Legend, LegendItem, Range1d

from lineare.app.components.plots import (LABEL_SIZE, PREFIX_TAG, frame_filter, number_format, set_frame, show_all,
                                  new_figure, style_figure)

VERMILLION = "#d55e00"      # Okabe-Ito
BLUE = "#0072b2"
SKY = "#56b4e9"
ORANGE = "#946000"          # Okabe-Ito's orange (#e69f00) darkened: a mark on white at 3:1 even at alpha 0.8
GREY = "#7b8794"


class CurvesPicture:
    """A figure of named series on axes fixed per run; `show(name, x, y)` replaces one series' points."""

    def __init__(self, title, x_label, y_label, *, width=560, height=380, language="en", legend_columns=None):
        self.figure = style_figure(new_figure(title=title, width=width, height=height, grid=True,
                                    x_range=Range1d(0, 1), y_range=Range1d(0, 1)), x_label, y_label)
        self.figure.grid.visible = True
        self.figure.grid.grid_line_color = "#e4e7eb"
        for axis in (self.figure.xaxis, self.figure.yaxis):
            axis.formatter = number_format(language, decimals=2)
        # under the picture (in `legend_columns` columns, else one row): a legend never hides a curve
        self.legend = Legend(items=[], orientation="horizontal", label_text_font_size=LABEL_SIZE,
                             spacing=14, padding=4, border_line_alpha=0, click_policy="none")
        if legend_columns:
            self.legend.ncols = legend_columns
            # one column: a label longer than the frame wraps (Bokeh keeps it on one line, centred under the
            # frame, so a long Italian one ran off the canvas on both sides and took its marker with it)
            if legend_columns == 1:            # (presenter mode's pictures are as much wider as its type)
                wrap = max(width - 150, 200)
                self.legend.stylesheets = [f".bk-label {{ white-space: normal; "
                                           f"max-width: calc({wrap}px * var(--lineare-scale, 1)); }}"]
        self.figure.add_layout(self.legend, "below")
        self.sources, self.filters, self.renderers, self.items = {}, {}, {}, {}

    def _series(self, name, filtered=True):
        if name in self.sources:
            raise ValueError(f"a series named {name!r} exists already")
        self.sources[name] = ColumnDataSource({"x": np.zeros(0), "y": np.zeros(0)}, syncable=False)
        if not filtered:                      # Bokeh filters no connected glyph (a line): see show_frames
            return dict(source=self.sources[name])
        self.filters[name] = frame_filter()
        self.filters[name].indices = []              # no rows yet: an index past the data is a console warning
        return dict(source=self.sources[name], view=CDSView(filter=self.filters[name]))

    def line(self, name, *, color, dash="solid", width=3, alpha=1.0):
        self.renderers[name] = self.figure.line("x", "y", color=color, line_dash=dash, line_width=width,
                                                line_alpha=alpha, level="overlay", **self._series(name, False))
        return self.renderers[name]

    def dots(self, name, *, color, marker="circle", size=7, alpha=0.45):
        self.renderers[name] = self.figure.scatter("x", "y", color=color, marker=marker, size=size, alpha=alpha,
                                                   level="overlay", **self._series(name))
        return self.renderers[name]

    def label(self, key, text, names):
        """A legend entry `key` showing the glyphs of the series `names`; called again, it renames it."""
        if key in self.items:
            self.items[key].label = {"value": text}
            return
        self.items[key] = LegendItem(label=text, renderers=[self.renderers[n] for n in names])
        self.legend.items = list(self.legend.items) + [self.items[key]]

    def set_ranges(self, x=None, y=None):
        """Fix the axes (once per run: the frames then move inside a frame that does not jump)."""
        for axis, bounds in ((self.figure.x_range, x), (self.figure.y_range, y)):
            if bounds is None:
                continue
            low, high = (float(b) for b in bounds)
            if not (np.isfinite(low) and np.isfinite(high)) or high <= low:
                low, high = 0.0, 1.0
            axis.update(start=low, end=high)

    def set_y_label(self, label):
        self.figure.yaxis.axis_label = label

    def show(self, name, x, y):
        """These points of series `name`."""
        # copies: the arrays may be a process-wide cache's, and a data source's columns belong to one session
        data = {"x": np.array(x, dtype=float), "y": np.array(y, dtype=float)}
        if name in self.filters:
            self._filtered(name, data, lambda f: show_all(f, len(x)))
            return
        if self.sources[name].tags:
            self.sources[name].tags = []
        self.sources[name].data = data

    def _filtered(self, name, data, point_filter):
        """New rows and their filter, in the order in which the browser never filters rows it lacks (it
        applies each change on its own): more rows before the filter, fewer rows after it."""
        source, grows = self.sources[name], len(data["x"]) >= len(self.sources[name].data["x"])
        if grows:
            source.data = data
        point_filter(self.filters[name])
        if not grows:
            source.data = data

    def show_frames(self, name, x, y, t, upto=True):
        """A run of series `name`, one point per frame: frame t shows points 0 … t (upto) or point t alone.
        Dots hide the others with a frame filter; a line keeps all its points in `y_all` and the Player
        cuts it after frame t (NaN: a gap), as Bokeh filters no line."""
        x, y, t = np.array(x, dtype=float), np.array(y, dtype=float), min(t, len(x) - 1)        # copies, as above
        if name in self.filters:
            self._filtered(name, {"x": x, "y": y}, lambda f: set_frame(f, 1, t, upto=upto))
            return
        if not upto:
            raise ValueError(f"the line {name!r} shows points 0 … t only (upto=True)")
        shown = np.where(np.arange(len(y)) <= t, y, np.nan)
        if self.sources[name].tags != [PREFIX_TAG]:
            self.sources[name].tags = [PREFIX_TAG]
        self.sources[name].data = {"x": x, "y": shown, "y_all": y}
