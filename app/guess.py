"""A sketched guess of a curve, against the true one: where it lies on the picture, and where the two differ.

    x, y = to_data(sketch, figure)                 # fractions of the axes (what the browser sends) → data units
    sentence = differ(sketch, figure, truth_x, truth_y, along="x")

The browser sends a sketch as fractions of the figure's frame (app/components/lesson.py checks them: 2 to 64
points, each coordinate in [0, 1]); the axes, linear or logarithmic, turn them into the picture's own units.
The two curves are compared where the student drew, in fractions of the frame: what the eye sees as far apart.
"""
import math

import numpy as np
from bokeh.models import LogScale

from lineare.app.i18n import _, format_number

CLOSE = 0.05                 # the sketch follows the truth when it is never further than this share of the frame


def _axis(fraction, start, end, log):
    fraction = np.asarray(fraction, dtype=float)
    if log:
        low, high = math.log10(start), math.log10(end)
        return 10.0 ** (low + fraction * (high - low))
    return start + fraction * (end - start)


def _fraction(value, start, end, log):
    value = np.asarray(value, dtype=float)
    if log:
        low, high = math.log10(start), math.log10(end)
        return (np.log10(np.maximum(value, 1e-300)) - low) / (high - low)
    return (value - start) / (end - start)


def _axes(figure):
    """((start, end, log) of x, of y): Bokeh draws a range's start at the left, and at the bottom."""
    return ((figure.x_range.start, figure.x_range.end, isinstance(figure.x_scale, LogScale)),
            (figure.y_range.start, figure.y_range.end, isinstance(figure.y_scale, LogScale)))


def to_data(sketch, figure):
    """The sketch's points in the figure's units: (x, y) arrays."""
    points = np.asarray(sketch, dtype=float).reshape(-1, 2)
    (x0, x1, xlog), (y0, y1, ylog) = _axes(figure)
    return _axis(points[:, 0], x0, x1, xlog), _axis(points[:, 1], y0, y1, ylog)


def number(x):
    """A value read off a picture, as a reader says it: 0,45 · 12 · 1,3 · 10⁸."""
    x = float(x)
    if x.is_integer() and abs(x) < 1e5:
        return format_number(int(x))
    if abs(x) >= 1e5:
        power = int(math.floor(math.log10(abs(x))))
        digits = "".join("⁰¹²³⁴⁵⁶⁷⁸⁹"[int(c)] if c.isdigit() else "⁻" for c in str(power))
        return f"{format_number(round(x / 10 ** power, 1), 1)} · 10{digits}"
    if abs(x) >= 10:
        return format_number(round(x))
    return format_number(round(x, 2), 2)


def differ(sketch, figure, truth_x, truth_y, along="x"):
    """One sentence: where the sketch is furthest from the true curve, or that it follows it. Compared at the
    true curve's points that lie within the stretch the student drew (along `along`)."""
    (x0, x1, xlog), (y0, y1, ylog) = _axes(figure)
    points = np.asarray(sketch, dtype=float).reshape(-1, 2)
    truth = np.stack([_fraction(truth_x, x0, x1, xlog), _fraction(truth_y, y0, y1, ylog)], axis=1)
    a = 0 if along == "x" else 1                              # the axis the curves are functions of
    points = points[np.argsort(points[:, a])]
    inside = (truth[:, a] >= points[0, a] - 1e-9) & (truth[:, a] <= points[-1, a] + 1e-9) & np.isfinite(truth).all(1)
    if not inside.any():
        return _("Your line lies outside the stretch where the real one is drawn.")
    drawn = np.interp(truth[inside, a], points[:, a], points[:, 1 - a])
    gaps = drawn - truth[inside, 1 - a]                     # [points compared], fractions of the frame
    if np.abs(gaps).max() <= CLOSE:
        return _("Your line follows the real one: nowhere are they more than a twentieth of the picture apart.")
    worst = int(np.argmax(np.abs(gaps)))
    where_fraction, yours_fraction = truth[inside, a][worst], drawn[worst]
    true_value = (truth_y if a == 0 else truth_x)[np.flatnonzero(inside)[worst]]
    if a == 0:
        where, yours = _axis(where_fraction, x0, x1, xlog), _axis(yours_fraction, y0, y1, ylog)
        axis = figure.xaxis[0].axis_label or ""
    else:
        where, yours = _axis(where_fraction, y0, y1, ylog), _axis(yours_fraction, x0, x1, xlog)
        axis = figure.yaxis[0].axis_label or ""
    return _("They differ most where «{axis}» is {where}: the real line is at {truth} there, yours at {yours}.").format(
        where=number(where), axis=axis, truth=number(true_value), yours=number(yours))
