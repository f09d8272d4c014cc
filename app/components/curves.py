"""Curves on fixed axes: a few named series (lines or dots) whose data sources are patched in place.

    picture = CurvesPicture(_("Memory held"), _("tokens in memory"), _("memory (kB)"))
    picture.line("cache", color=VERMILLION)
    picture.dots("cache_now", color=VERMILLION)
    picture.label("cache", _("KV cache"), ["cache", "cache_now"])   # one legend entry for both
    picture.set_ranges(x=(0, 64), y=(0, 140))      # once per run, never per frame
    picture.show("cache", x, y)                      # every frame: the first points of the run

Colours are Okabe & Ito's (safe for the common colour-vision deficiencies), and every series can
also differ by dash and marker, so a picture still reads in grey on a projector.
"""
import numpy as np
from bokeh.models import ColumnDataSource, Legend, LegendItem, Range1d
from bokeh.plotting import figure

from app.components.plots import LABEL_SIZE, number_format, style_figure

VERMILLION = "#d55e00"      # Okabe-Ito
BLUE = "#0072b2"
SKY = "#56b4e9"
ORANGE = "#e69f00"
GREY = "#7b8794"


class CurvesPicture:
    """A figure of named series on axes fixed per run; `show(name, x, y)` replaces one series' points."""

    def __init__(self, title, x_label, y_label, *, width=560, height=380, language="en", legend_columns=None):
        self.figure = style_figure(figure(title=title, width=width, height=height,
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
        self.figure.add_layout(self.legend, "below")
        self.sources, self.renderers, self.items = {}, {}, {}

    def _source(self, name):
        if name in self.sources:
            raise ValueError(f"a series named {name!r} exists already")
        self.sources[name] = ColumnDataSource({"x": np.zeros(0), "y": np.zeros(0)})
        return self.sources[name]

    def line(self, name, *, color, dash="solid", width=3, alpha=1.0):
        self.renderers[name] = self.figure.line("x", "y", source=self._source(name), color=color,
                                                line_dash=dash, line_width=width, line_alpha=alpha)
        return self.renderers[name]

    def dots(self, name, *, color, marker="circle", size=7, alpha=0.45):
        self.renderers[name] = self.figure.scatter("x", "y", source=self._source(name), color=color,
                                                   marker=marker, size=size, alpha=alpha)
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
        self.sources[name].data = {"x": np.asarray(x, dtype=float), "y": np.asarray(y, dtype=float)}
