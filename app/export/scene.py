"""What one exported picture shows, as plain data: a title, a token strip, a caption and a few panels.

The page adapters (`app/dashboards/<page>/export.py`) fill these from a store's numbers; `app.export.draw` turns one
into pixels. Heat maps carry numbers and the run's fixed colour range: the drawing quantizes them with
`app.components.plots.quantize`, exactly as the browser receives them, so a colour means the same
number in the app and in the file.
"""
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Heat:
    """A matrix on the diverging scale [−limit, limit] (NaN: an empty cell), row 0 at the top."""
    title: str
    values: np.ndarray                      # [rows, cols]
    limit: float                            # the run's colour range, already rounded (plots.nice_limit)
    x_label: str = ""
    y_label: str = ""
    row_labels: list | None = None          # a rows picture names its rows instead of numbering them
    col_labels: list | None = None          # … and its columns (a table of questions × answers)


@dataclass
class Bars:
    """One bar per entry, on a fixed vertical range."""
    title: str
    values: np.ndarray                      # [n]
    y_range: tuple = (0.0, 1.05)
    x_label: str = ""
    y_label: str = ""
    subtitle: str = ""
    color: str = "#3b6ea8"


@dataclass
class Series:
    """One named line or set of dots of a `Curves` panel."""
    label: str                              # "" keeps it out of the legend
    x: np.ndarray
    y: np.ndarray
    color: str
    kind: str = "line"                      # "line" or "dots"
    dash: object = False                    # False, True (dashed) or "dotted"
    width: float = 3.0
    size: float = 7.0
    marker: str = "circle"                  # dots, or a line's marks: a shape of draw.MARKERS
    marks: object = None                    # a line: the indices of its points that carry its marker, so that lines
                                            # of one dash are told apart without their colours (as on the page)


@dataclass
class Curves:
    """A few series on fixed axes (ranges fixed per run, like the page's)."""
    title: str
    series: list
    x_range: tuple
    y_range: tuple
    x_label: str = ""
    y_label: str = ""


@dataclass
class Strip:
    """The token strip: one box per token, the current one lit, each box's mark shown once reached."""
    tokens: list                            # box texts
    current: int
    marks: list = field(default_factory=list)       # text under a box ("" for none)
    moods: list = field(default_factory=list)       # "ok", "bad" or "" per mark (its colour)
    asks: list = field(default_factory=list)        # True where the box is a question (dashed frame)


@dataclass
class Scene:
    """One frame (or one picture) of a page."""
    title: str
    panels: list
    strip: Strip | None = None
    caption: list = field(default_factory=list)     # lines of plain text, in the page's language
    step: str = ""                                  # "Step 3 of 11"
    footer: str = ""                                # the settings, small, at the bottom


@dataclass
class Table:
    """Numbers of a page as a CSV file: one column per quantity, its unit in its name."""
    name: str                               # the file's stem and `--table` on the command line
    title: str                              # what it holds, in the page's language
    columns: list                           # names with units: "kv_cache_bytes", "softmax_ms"
    rows: list                              # one sequence of values per row
    notes: list = field(default_factory=list)       # more header lines (units, colour ranges)
