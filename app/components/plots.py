"""Pictures: Bokeh figures whose data sources are patched in place, and that can hold a whole run.

Measured on a 2-core machine: updating a `ColumnDataSource` costs about a millisecond per picture, a
HoloViews redraw 50–700 ms (app/README.md, "Decisions"), so every picture is built from Bokeh glyphs.

Two ways to show numbers:
- `show(x)`: one picture (pages whose pictures change when a knob moves);
- `show_frames(frames, t)`: every frame of a run at once. The browser keeps them and the page's
  `Player` picks the frame to draw (an `IndexFilter` on the source, changed in the browser and never
  sent back: `syncable=False`), so playing and stepping cost the server nothing. Heat maps travel as
  8-bit colour indices against the run's fixed colour range (`quantize`); the hover turns an index
  back into its number (to within 1/127 of the range).

Glyphs are drawn on the figure's overlay layer: a new frame then repaints the glyph alone, not the
axes, ticks and colour bar (measured in headless Chromium: a step of 20 pictures 221 → 79 ms).

Colour ranges are fixed per run (`set_limit`), never per frame, so a colour means the same number at
every step. Colours diverge around zero (blue negative, white zero, red positive: ColorBrewer RdBu,
safe for the common colour-vision deficiencies).
"""
import weakref

import numpy as np
from bokeh.models import (AllLabels, BasicTicker, CategoricalAxis, CDSView, ColorBar, ColumnDataSource, CustomJSHover,
                          CustomJSTickFormatter, FactorRange, FixedTicker, Grid, HoverTool, IndexFilter, LinearAxis,
                          LinearColorMapper, NoOverlap, Range1d, Title)
from bokeh.palettes import RdBu11, interp_palette
from bokeh.plotting import figure

from lineare.app.components.browser import callback
from lineare.app.i18n import _, browser_locale

TITLE_SIZE = "14pt"         # a title must fit over a 280-px picture, in Italian too
LABEL_SIZE = "13pt"
TICK_SIZE = "12pt"          # 16 px: the least a class reads from the back of the room (ticks, colour bars)
CELL_SIZE = "12pt"          # 16 px: words and numbers written inside a picture (a cell's number, a ✓, a percentage)
EMPTY = "#c9d1db"        # cells that hold nothing yet (a KV cache not filled up to there)
LEVELS = 255             # colour indices 0 … 254; EMPTY_CODE marks an empty cell
EMPTY_CODE = 255
FRAME_TAG = "lineare-frame"      # tags of what the browser-side Player updates: see app/components/player.py
TEXT_TAG = "lineare-text"
OUTER_TAG = "lineare-outer"
DELTA_TAG = "lineare-delta"
PREFIX_TAG = "lineare-prefix"     # a line shown up to the current frame (curves.CurvesPicture)
UPDATE_TAG = "lineare-update"     # a state's change, rebuilt in the browser from the state's own frames


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


_SHARED = weakref.WeakKeyDictionary()        # a page's Document → {key: a model its pictures share}


def _per_page(key, make):
    """One model per page for `key`, shared by its pictures (outside a session: a new one each time)."""
    import panel as pn

    doc = pn.state.curdoc
    if doc is None:
        return make()
    shared = _SHARED.setdefault(doc, {})
    if key not in shared:
        shared[key] = make()
    return shared[key]


def number_format(language=None, decimals=3, fixed=False):
    """Tick labels written the way the page's language writes numbers (0,5 and 20.000 in Italian), by
    the browser's own Intl (Bokeh's NumeralTickFormatter(language="it") still wrote 20,000); `fixed`:
    always `decimals` digits (a slider's 0,80). One formatter per page for the same format, shared by
    its pictures and sliders (a page had twenty-two alike, each built and sent)."""
    return _per_page(("format", browser_locale(language), decimals, fixed),
                     lambda: _number_format(language, decimals, fixed))


def no_overlap():
    """A tick policy that leaves out a label that would run into the one before (long numbers on a
    phone's narrow picture: 20.00040.000…); one per page, shared by its axes."""
    return _per_page(("no-overlap",), NoOverlap)


def all_labels():
    """A tick policy that draws every label: the rows and columns of a picture that have names (models, words,
    questions), which a reader must find, whatever the room; one per page, shared by its axes."""
    return _per_page(("all-labels",), AllLabels)


def _number_format(language, decimals, fixed):
    return CustomJSTickFormatter(args={"locale": browser_locale(language), "decimals": decimals,
                                       "least": decimals if fixed else 0},
                                 code=callback("number_tick"))


def colour_bar(mapper):
    """A colour bar beside a heat map, its labels in the page's number format; its ticker and label policy shared
    by the page's colour bars, as the formatter is (models that only say what every bar says: each bar would make
    and send its own)."""
    ticker = _per_page(("colour-bar-ticks",), lambda: BasicTicker(desired_num_ticks=5))
    return ColorBar(color_mapper=mapper, ticker=ticker, formatter=number_format(), major_label_policy=no_overlap(),
                    major_label_text_font_size=TICK_SIZE, width=14)


def _without_spare_glyphs():
    """Bokeh makes two spare glyphs in Python with every renderer: the look of the points not selected and
    the look when muted from the legend, each a model built, walked and sent with the page (two of a
    picture's three glyphs). No legend of ours mutes, and only a picture with a selecting tool (a tap) ever
    has points not selected: elsewhere the renderer gets none ("auto"), and BokehJS makes its own where it
    would draw one. What a `nonselection_*` or `muted_*` option asks for is made as before."""
    from bokeh.models.tools import SelectTool
    from bokeh.plotting import _decorators, _renderer

    create, pop_visuals = _decorators.create_renderer, _renderer.pop_visuals
    if getattr(create, "lineare", False):
        return
    selectable = []                                 # the figure being drawn on has a selecting tool

    def create_renderer(glyphclass, plot, **kwargs):
        selectable.append(any(isinstance(tool, SelectTool) for tool in plot.toolbar.tools))
        try:
            return create(glyphclass, plot, **kwargs)
        finally:
            selectable.pop()

    def visuals(glyphclass, props, *, prefix="", **options):
        spare = prefix == "muted_" or (prefix == "nonselection_" and not (selectable and selectable[-1]))
        if spare and not any(name.startswith(prefix) for name in props):
            return None                             # no glyph: the renderer's "auto"
        return pop_visuals(glyphclass, props, prefix=prefix, **options)

    create_renderer.lineare = True
    _decorators.create_renderer, _renderer.pop_visuals = create_renderer, visuals


def _shared_defaults():
    """A data source's selection policy (how a tap picks rows) and a view's filter that keeps every row: Bokeh
    makes one of each per source and per renderer, models built, walked and sent with the page, that only
    say what every one of them says. BokehJS reads them and keeps nothing in them: a page shares one of
    each (outside a session: each its own). One given explicitly (a frame's IndexFilter) is kept."""
    from bokeh.models import AllIndices, CDSView, ColumnDataSource, UnionRenderers

    for cls, name, make in ((ColumnDataSource, "selection_policy", UnionRenderers), (CDSView, "filter", AllIndices)):
        init = cls.__init__
        if getattr(init, "lineare", False):
            continue

        def __init__(self, *args, _init=init, _name=name, _make=make, **kwargs):
            if _name not in kwargs:
                kwargs[_name] = _per_page((_name,), _make)
            _init(self, *args, **kwargs)

        __init__.lineare = True
        cls.__init__ = __init__


_without_spare_glyphs()
_shared_defaults()


def new_figure(tools="", grid=False, **options):
    """A Bokeh figure with no tools but those asked for (pictures add their own hover or tap): Bokeh's
    six default tools are a dozen models that every page would build, send and never show. No grid
    unless asked (style_figure hid it: two models a picture, built and sent for nothing); log axes
    (x_axis_type=…) come with Bokeh's own axes and hidden grid."""
    if "x_axis_type" in options or "y_axis_type" in options:
        return figure(tools=tools, toolbar_location=None, **options)
    fig = figure(tools=tools, toolbar_location=None, x_axis_type=None, y_axis_type=None, **options)
    for dimension, place, axis_range in ((0, "below", fig.x_range), (1, "left", fig.y_range)):
        # a number axis keeps a ticker of its own: the browser thins the ticks of one whose labels run together
        axis = CategoricalAxis() if isinstance(axis_range, FactorRange) else LinearAxis()
        if grid:
            fig.add_layout(Grid(dimension=dimension, axis=axis), "center")
        fig.add_layout(axis, place)
    return fig


def main_picture(fig, margin=None):
    """A page's main picture as a Panel object: the figure itself carries the class `main-picture` (what a lesson
    card brings up under it, what the tests look for) and the `margin`, rather than a Column around it made for
    them alone (a Panel object and a Bokeh model fewer per picture). The pane holds the class too: Panel writes a
    pane's classes over its figure's when they change (a lesson card's `lesson-look`). Not for a picture whose
    Column had a margin at its side: on a phone the figure fitted to the column (app/js/page/drawer.js) came out
    narrower with the margin its own (two bills; memory fails and architectures keep their Columns too)."""
    import panel as pn

    fig.css_classes = [*fig.css_classes, "main-picture"]
    if margin is not None:
        fig.margin = margin
    return pn.pane.Bokeh(fig, css_classes=["main-picture"])


def style_figure(fig, x_label, y_label):
    """Our look for a Bokeh figure: large labels for a projector, no toolbar, no grid, local number format."""
    fig.title.text_font_size = TITLE_SIZE
    fig.xaxis.axis_label = x_label
    fig.yaxis.axis_label = y_label
    for axis in (fig.xaxis, fig.yaxis):
        axis.axis_label_text_font_size = LABEL_SIZE
        axis.axis_label_text_font_style = "normal"
        axis.major_label_text_font_size = TICK_SIZE
        axis.major_label_policy = no_overlap()
    for axis, axis_range in ((fig.xaxis, fig.x_range), (fig.yaxis, fig.y_range)):
        if isinstance(axis_range, FactorRange):          # named rows (models): every one drawn, never dropped
            axis.major_label_policy = all_labels()
    for axis, axis_range in ((fig.xaxis, fig.x_range), (fig.yaxis, fig.y_range)):
        if not isinstance(axis_range, FactorRange):
            axis.formatter = number_format()
    fig.toolbar_location = None
    fig.outline_line_color = "#9aa5b1"
    fig.grid.visible = False
    return fig


def _luminance(colours):
    """WCAG's relative luminance of sRGB colours [N, 3] (0 … 255)."""
    c = np.asarray(colours, dtype=np.float64) / 255
    c = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return c @ np.array([0.2126, 0.7152, 0.0722])


def readable_ink(fills, alpha=1.0, dark="#000000", light="#ffffff"):
    """For each cell colour (hex, its opacity `alpha` over white), the one of `dark` and `light` its words
    are read in best: the higher contrast (black or white gives at least 4.58:1 on any colour; a number on a mid-red
    cell was white at 4.1:1)."""
    rgb = np.array([[int(f[i:i + 2], 16) for i in (1, 3, 5)] for f in fills], dtype=np.float64)    # [N, 3]
    alpha = np.broadcast_to(np.asarray(alpha, dtype=np.float64), (len(rgb),))[:, None]
    cell = _luminance(rgb * alpha + 255 * (1 - alpha))
    ink = {name: float(_luminance([[int(name[i:i + 2], 16) for i in (1, 3, 5)]])[0]) for name in (dark, light)}
    contrast = lambda a, b: (np.maximum(a, b) + 0.05) / (np.minimum(a, b) + 0.05)
    return np.where(contrast(cell, ink[light]) > contrast(cell, ink[dark]), light, dark).tolist()


def quantize(values, limit):
    """8-bit colour indices of `values` on the fixed range [−limit, limit] (NaN → EMPTY_CODE), uint8."""
    values = np.asarray(values, dtype=np.float64)
    codes = np.rint((np.clip(values / limit, -1.0, 1.0) + 1.0) * (LEVELS - 1) / 2)
    return np.where(np.isnan(values), EMPTY_CODE, np.nan_to_num(codes)).astype(np.uint8)


NICE = np.array([1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0])


def nice_limit(limit):
    """The colour range of a run, rounded up to 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power of ten:
    a knob that moves a little keeps the same colours (comparable runs), and the browser repaints only
    the pictures, not their colour bars."""
    limit = float(limit) if np.isfinite(limit) and limit > 1e-9 else 1.0
    power = 10.0 ** np.floor(np.log10(limit))
    return float(power * NICE[np.searchsorted(NICE, limit / power - 1e-12)])


def rank_one(frames, tolerance=1e-6):
    """(u [T, rows], w [T, cols]) with frames[t] = u[t] w[t]ᵀ, or None when a frame is not of rank one.

    Every write of the family is an outer product (v kᵀ, β v kᵀ, i v kᵀ): sent as its two vectors it
    costs rows + cols numbers a frame instead of rows × cols, and the browser multiplies them out."""
    frames = np.asarray(frames, dtype=np.float64)                                     # [T, rows, cols]
    T, rows, cols = frames.shape
    flat = np.abs(frames).reshape(T, -1)
    pivot = flat.argmax(1)                                                            # the largest entry
    i, j = np.divmod(pivot, cols)
    peak = frames[np.arange(T), i, j]                                                 # [T]
    safe = np.where(peak == 0, 1.0, peak)
    u = frames[np.arange(T), :, j]                                                    # its column [T, rows]
    w = frames[np.arange(T), i, :] / safe[:, None]                                    # its row / peak [T, cols]
    error = np.abs(u[:, :, None] * w[:, None, :] - frames).max()
    return (u, w) if error <= tolerance * max(np.abs(frames).max(), 1e-300) else None


def packed(columns):
    """Columns of float vectors as int16 codes, each on its own scale (max |x| / 32767), with the
    names and scales the Player needs to turn them back into numbers (`unpack` in player.py): 2 bytes
    a number instead of float32's 4, and deflate packs them twice as well; the error, 1/65534 of a
    column's largest number, is far below the 8-bit state's colour step they are combined with."""
    data, names, scales = {}, [], []
    for name, values in columns.items():
        values = np.asarray(values, dtype=np.float64).ravel()
        scale = float(np.abs(values).max()) / 32767 if values.size else 0.0
        scale = scale if scale > 0 else 1.0
        data[name] = [np.rint(values / scale).astype(np.int16)]
        names.append(name)
        scales.append(scale)
    return {**data, "packed": [names], "scales": [np.asarray(scales, dtype=np.float64)]}


def frame_filter():
    """The filter of a picture's rows: all of them, or (`set_frame`) those of one frame of a run."""
    return IndexFilter(indices=[0], syncable=False)


def set_frame(view_filter, rows_per_frame, t, upto=False):
    """Animate: frame t shows rows [t·n, (t+1)·n) (upto: [0, (t+1)·n)). The server points the filter at
    frame t (what the page shows first); the tag tells the browser's Player to move it from then on."""
    start = 0 if upto else t * rows_per_frame
    tags = [FRAME_TAG, rows_per_frame, "upto" if upto else "at"]
    view_filter.indices = list(range(start, (t + 1) * rows_per_frame))
    if view_filter.tags != tags:                   # tags hold no models, but Bokeh rescans for them on a change
        view_filter.tags = tags


def show_all(view_filter, rows):
    """Not animated: every row shown, and the Player leaves this picture alone."""
    view_filter.indices = list(range(rows))
    if view_filter.tags:
        view_filter.tags = []


class HeatMap:
    """What a matrix picture and a rows picture share: the colour scale, one image or a run of them.

    The glyph's mapper takes numbers on [−limit, limit] (`show`) or colour indices 0 … 254 (`show_frames`);
    the colour bar always shows numbers. Only attributes change between the two, never which models
    are linked: relinking a model makes Bokeh walk the whole document (~0.2 s on a full page)."""

    def _heat_map(self, fig, rows, cols, value_label):
        self.scale = LinearColorMapper(palette=PALETTE, low=-1, high=1, nan_color=EMPTY)   # the colour bar
        self.mapper = LinearColorMapper(palette=PALETTE, low=-1, high=1, nan_color=EMPTY)  # the glyph
        self.source = ColumnDataSource({"image": [np.full((rows, cols), np.nan)]}, syncable=False)
        self.filter = frame_filter()
        self.renderer = fig.image(image="image", x=0, y=0, dw=cols, dh=rows, source=self.source,
                                  view=CDSView(filter=self.filter), color_mapper=self.mapper, level="overlay")
        self.glyph = self.renderer.glyph
        fig.add_layout(colour_bar(self.scale), "right")
        # the number in the page's language (0,500 in Italian), as the colour bar writes it
        decode = CustomJSHover(args={"mapper": self.mapper, "scale": self.scale, "locale": browser_locale()},
                               code=callback("heat_map_value"))
        tooltips = [(value_label or _("value"), "@image{custom}")]        # the label in the page's language
        fig.add_tools(HoverTool(tooltips=tooltips, formatters={"@image": decode}))

    def set_limit(self, limit):
        """Fix the colour range to [−limit, limit] (call once per run, not per frame)."""
        limit = float(limit) if np.isfinite(limit) and limit > 1e-9 else 1.0
        self.scale.update(low=-limit, high=limit)
        if self.mapper.high_color is None:
            self.mapper.update(low=-limit, high=limit)
        return limit

    def show(self, matrix):
        """One picture, as numbers."""
        matrix = np.asarray(matrix, dtype=float).reshape(self._shape())
        self.mapper.update(low=self.scale.low, high=self.scale.high, high_color=None)
        show_all(self.filter, 1)
        self._set_tags([])
        _send_if_changed(self.source, image=[matrix])

    def show_frames(self, frames, limit, t=0):
        """Every frame of a run ([T, …] numbers), coloured on [−limit, limit]; the server shows frame t.
        Rank-one frames travel as their two vectors, the others as 8-bit colour indices."""
        limit = self.set_limit(nice_limit(limit))
        frames = np.asarray(frames, dtype=float).reshape(-1, *self._shape())                    # [T, r, c]
        t = min(t, len(frames) - 1)
        rows, cols = self._shape()
        # two float32 vectors beat rows × cols 8-bit codes only when 4 (rows + cols) < rows × cols (a
        # 16 × 16 matrix, not a single row)
        smaller = 4 * (rows + cols) < rows * cols
        factors = rank_one(frames) if smaller and not np.isnan(frames).any() else None
        if factors is not None:                  # one image, rebuilt by the Player from u[t] w[t]ᵀ
            u, w = factors
            self.mapper.update(low=-limit, high=limit, high_color=None)
            show_all(self.filter, 1)
            self._set_tags([OUTER_TAG, *self._shape()])
            # the Player draws frame t from u, w as soon as it renders: the first image is zeros, which
            # cost nothing once deflated, unless the page has no player
            first = np.outer(u[t], w[t]) if self.exact_first_frame else np.zeros((rows, cols))
            self.source.data = {"image": [first.astype(np.float32)], **packed({"u": u, "w": w})}
            return
        codes = quantize(frames, limit)                                                         # [T, r, c]
        # each frame as its change from the one before (mod 256): a state changes a little per token, so
        # the changes are small numbers that the websocket's deflate packs far better; the Player adds
        # them up again when the run arrives
        steps = np.diff(codes, axis=0, prepend=np.zeros_like(codes[:1]))                        # uint8 wraps
        self.mapper.update(low=0, high=LEVELS - 1, high_color=EMPTY)
        set_frame(self.filter, 1, t)
        self._set_tags([DELTA_TAG])
        # all the changes as one flat array: Bokeh sends each array of a column as a message of its own
        # (a header and a payload, each deflated), which cost more than the numbers; the Player splits
        # them into frames. The image column holds the first frame until then.
        self.source.data = {"image": [steps[0]], "steps": [steps.ravel()]}                      # [r, c], [T·r·c]

    def run_codes(self):
        """The colour codes of every frame of the run last sent by `show_frames`, [T, rows, cols], added
        up from their changes as the browser does."""
        data = self.source.data
        steps = np.asarray(data["steps"][0], dtype=np.uint8).reshape(-1, *np.shape(data["image"][0]))
        return np.cumsum(steps, axis=0, dtype=np.uint8)                   # wraps mod 256, as the browser's & 255

    exact_first_frame = False          # True: send frame t of a rank-one picture or an update as numbers
                                       # (a page with no player)

    def show_update(self, state, frames, limit, t, transition, write=None, owner=None):
        """A state's update at every frame, made in the browser from the state picture's frames.

        `frames` [T, rows, cols]: the exact updates (frame t is drawn by the server); `transition`:
        (diag [T, cols], a [T, cols], b [T, cols]) with A_t = diag + a bᵀ (a, b None: diagonal), and the
        browser draws S_{t-1}(A_t − I), plus u wᵀ when `write` = (u [T, rows], w [T, cols]) or the
        rank-one write picture that already carries them. The state
        travels once (8-bit, per frame), the update as 3 numbers per key channel and frame instead of a
        second picture: a whole run costs half. `owner`: another picture's update whose transition and
        write this one reuses (the part without the write: "what fades or is erased")."""
        limit = self.set_limit(nice_limit(limit))
        frames = np.asarray(frames, dtype=float).reshape(-1, *self._shape())                    # [T, r, c]
        t = min(t, len(frames) - 1)
        self.mapper.update(low=-limit, high=limit, high_color=None)
        show_all(self.filter, 1)
        # frame t as the server's first picture; the browser redraws it from the state at once, so
        # zeros when the page has a player (they cost nothing once deflated)
        scalar = False
        data = {"image": [(frames[t] if self.exact_first_frame else np.zeros_like(frames[t])).astype(np.float32)]}
        if owner is None:
            diag, a, b = transition
            flat = lambda x: np.zeros(0) if x is None else np.asarray(x, np.float64).ravel()
            diag = np.asarray(diag)
            scalar = bool(np.all(diag == diag[:, :1]))
            if scalar:                               # a scalar decay (or none): one number per frame
                diag = diag[:, 0]
            columns = {"diag": flat(diag), "a": flat(a), "b": flat(b)}
            if not isinstance(write, HeatMap):                          # else: the write picture's u, w
                u, w = write if write is not None else (None, None)
                columns.update(u=flat(u), w=flat(w))
            data.update(packed(columns))
        writer = write.source.id if isinstance(write, HeatMap) else ""
        self._set_tags([UPDATE_TAG, *self._shape(), state.source.id, state.scale.high,
                        "change" if owner is None else "removed", "" if owner is None else owner.source.id,
                        writer, "scalar" if owner is None and scalar else "channels"])
        self.source.data = data

    def _set_tags(self, tags):
        if self.source.tags != tags:
            self.source.tags = tags


class MatrixPicture(HeatMap):
    """A matrix as a heat map (row 0 at the top, like the matrix on paper), with a colour bar."""

    def __init__(self, title, x_label, y_label, rows, cols, *, width=340, height=320, value_label=None):
        self.rows, self.cols = rows, cols
        self.figure = style_figure(new_figure(title=title, width=width, height=height,
                                          x_range=Range1d(0, cols), y_range=Range1d(rows, 0)), x_label, y_label)
        self._heat_map(self.figure, rows, cols, value_label)

    def _shape(self):
        return self.rows, self.cols

    def set_rows(self, rows):
        """Change the number of rows (a KV cache sized to the sequence)."""
        self.rows = rows
        self.figure.y_range.update(start=rows, end=0)
        self.glyph.dh = rows

    def set_cols(self, cols):
        """Change the number of columns (a sequence of another length along x)."""
        self.cols = cols
        self.figure.x_range.update(start=0, end=cols)
        self.glyph.dw = cols


class BarsPicture:
    """One bar per entry of a vector, on a fixed vertical range (gates, attention weights)."""

    def __init__(self, title, x_label, y_label, size, *, y_range=(0, 1.05), width=300, height=260,
                 color="#3b6ea8"):
        self.size = size
        self.source = ColumnDataSource({"x": np.arange(size), "top": np.zeros(size)})
        self.filter = frame_filter()
        self.figure = style_figure(new_figure(title=title, width=width, height=height,
                                          x_range=Range1d(-0.6, size - 0.4), y_range=Range1d(*y_range)),
                                   x_label, y_label)
        self.figure.vbar(x="x", top="top", width=0.8, source=self.source, view=CDSView(filter=self.filter),
                         color=color, level="overlay")
        self.subtitle = Title(text="", text_font_size=LABEL_SIZE, text_font_style="normal", syncable=False)
        self.figure.add_layout(self.subtitle, "above")       # a second line under the title (e.g. β)
        self.figure.add_tools(HoverTool(tooltips=[(x_label, "@x"), (y_label, "@top{0.000}")]))

    def set_size(self, size):
        self.size = size
        self.figure.x_range.update(start=-0.6, end=max(size, 1) - 0.4)

    def show(self, values):
        values = np.asarray(values, dtype=float)
        show_all(self.filter, len(values))
        self.subtitle.tags = []
        _send_if_changed(self.source, x=np.arange(len(values)), top=values)

    def show_frames(self, frames, t=0, subtitles=None):
        """Every frame of a run, [T, size]; `subtitles`: one line per frame under the title (or None)."""
        frames = np.asarray(frames, dtype=float)
        T, size = frames.shape
        t = min(t, T - 1)
        set_frame(self.filter, size, t)
        # 32-bit numbers: the bars of a run are the larger part of a run's message after the heat maps
        self.source.data = {"x": np.tile(np.arange(size, dtype=np.int32), T), "top": frames.astype(np.float32).ravel()}
        texts = list(subtitles) if subtitles is not None else [""] * T
        self.subtitle.update(text=texts[t], tags=[TEXT_TAG, texts])


class RowsPicture(HeatMap):
    """A few named vectors of the same length, one per row, on a shared diverging colour scale."""

    def __init__(self, title, x_label, row_labels, size, *, width=340, height=220, value_label=None):
        self.rows, self.size = len(row_labels), size
        self.figure = style_figure(new_figure(title=title, width=width, height=height,
                                          x_range=Range1d(0, size), y_range=Range1d(self.rows, 0)), x_label, "")
        self._heat_map(self.figure, self.rows, size, value_label)
        self.figure.yaxis.ticker = FixedTicker(ticks=[i + 0.5 for i in range(self.rows)])
        self.figure.yaxis.major_label_overrides = {i + 0.5: label for i, label in enumerate(row_labels)}
        self.figure.yaxis.major_label_text_font_size = LABEL_SIZE

    def _shape(self):
        return self.rows, self.size

    def set_size(self, size):
        """Change the length of the vectors (e.g. another key dimension)."""
        self.size = size
        self.figure.x_range.update(start=0, end=size)
        self.glyph.dw = size


# the pictures' titles wrapped to their width in the browser: app/js/page/titles.js (in every page's frame)
