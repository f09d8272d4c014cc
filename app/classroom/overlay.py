"""A draw-your-guess card in a live class: every phone's sketch on the projector's picture, a faint line each and
their median bold, shown with the answers and before the truth.

    overlay = ClassSketches(figure, along="x")     # on the card's picture (its Guess names it)
    overlay.draw(sketches)                          # the room's sketches: lists of [x, y], fractions of the axes
    axes(figure, along)                             # what a phone needs to draw empty axes of the same picture

The median is taken along the axis the curve is a function of (`along`), on GRID points across it: at each
point, over the sketches that reach it (a sketch counts only over the stretch its student drew).
"""
import math

import numpy as np

from lineare.app.i18n import _

GRID = 41
FAINT, MEDIAN = "#7c5295", "#3d1a5b"       # the sketches' purple, as the student's own sketch on the page


def resampled(sketch, along="x", grid=GRID):
    """A sketch's value across the axis at `grid` points along it (NaN where the student did not draw)."""
    a = 0 if along == "x" else 1
    points = np.asarray(sketch, dtype=float).reshape(-1, 2)
    points = points[np.argsort(points[:, a], kind="stable")]
    at = np.linspace(0.0, 1.0, grid)
    values = np.interp(at, points[:, a], points[:, 1 - a])
    values[(at < points[0, a] - 1e-9) | (at > points[-1, a] + 1e-9)] = np.nan
    return values


def median_curve(sketches, along="x", grid=GRID):
    """(positions along the axis, the median across the sketches), fractions of the axes, where any sketch is."""
    at = np.linspace(0.0, 1.0, grid)
    if not sketches:
        return at[:0], at[:0]
    stack = np.stack([resampled(s, along, grid) for s in sketches])         # [sketches, grid]
    drawn = ~np.isnan(stack).all(axis=0)
    median = np.full(grid, np.nan)
    median[drawn] = np.nanmedian(stack[:, drawn], axis=0)
    return at[drawn], median[drawn]


def _axis(fraction, start, end, log):
    fraction = np.asarray(fraction, dtype=float)
    if log:
        return 10.0 ** (math.log10(start) + fraction * (math.log10(end) - math.log10(start)))
    return start + fraction * (end - start)


def _scales(figure):
    from bokeh.models import LogScale

    return (figure.x_range.start, figure.x_range.end, isinstance(figure.x_scale, LogScale)), \
        (figure.y_range.start, figure.y_range.end, isinstance(figure.y_scale, LogScale))


def axes(figure, along="x"):
    """The picture's axes as the room keeps them for the phones: [start, end, log, label] of x and y."""
    (x0, x1, xlog), (y0, y1, ylog) = _scales(figure)
    label = lambda axis: (axis[0].axis_label or "") if axis else ""
    return {"x": [float(x0), float(x1), xlog, label(figure.xaxis)],
            "y": [float(y0), float(y1), ylog, label(figure.yaxis)], "along": along}


class ClassSketches:
    """The class's sketches drawn on `figure`: one faint line per phone and their median, bold, in the legend."""

    def __init__(self, figure, along="x"):
        from bokeh.models import ColumnDataSource, LegendItem

        self.figure, self.along = figure, along
        self.each = ColumnDataSource({"xs": [], "ys": []})
        self.middle = ColumnDataSource({"x": [], "y": []})
        faint = figure.multi_line("xs", "ys", source=self.each, color=FAINT, line_alpha=0.3, line_width=2,
                                  level="overlay")
        bold = figure.line("x", "y", source=self.middle, color=MEDIAN, line_width=5, level="overlay")
        for legend in figure.legend:
            legend.items = [*legend.items, LegendItem(label=_("the class's sketches"), renderers=[faint]),
                            LegendItem(label=_("their median"), renderers=[bold])]

    def _data(self, a, b):
        """Fractions along the axis (`a`) and across it (`b`) → the picture's (x, y) units."""
        (x0, x1, xlog), (y0, y1, ylog) = _scales(self.figure)
        x, y = (a, b) if self.along == "x" else (b, a)
        return _axis(x, x0, x1, xlog), _axis(y, y0, y1, ylog)

    def draw(self, sketches):
        xs, ys = [], []
        for sketch in sketches:
            points = np.asarray(sketch, dtype=float).reshape(-1, 2)
            x, y = self._data(*((points[:, 0], points[:, 1]) if self.along == "x" else (points[:, 1], points[:, 0])))
            xs.append(x.tolist())
            ys.append(y.tolist())
        at, median = median_curve(sketches, self.along)
        x, y = self._data(at, median)
        self.each.data = {"xs": xs, "ys": ys}
        self.middle.data = {"x": x.tolist(), "y": y.tolist()}
