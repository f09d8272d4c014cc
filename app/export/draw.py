"""A `scene.Scene` as pixels, with Pillow: the same colours, ranges and words as the page.

Everything is laid out on a 1280 × 720 grid and scaled to the size asked for, so a frame reads the
same at 960 × 540 (a GIF for a slide) and at 1920 × 1080 (a projector). Heat maps go through
`plots.quantize` on the run's fixed range and `plots.PALETTE`, the browser's own colour steps.

Fonts: DejaVu Sans (Debian's fonts-dejavu-core, also what the page uses in Chromium there), else the
Source Sans Pro that ships inside Panel's wheel, else Pillow's built-in font (which has no accents:
`font_report` says which one is in use).
"""
import functools
from pathlib import Path

import numpy as np
from PIL import Image, ImageColor, ImageDraw, ImageFont

from lineare.app.components.plots import EMPTY, EMPTY_CODE, PALETTE, quantize
from lineare.app.export.scene import Bars, Curves, Heat
from lineare.app.i18n import format_number

BASE = (1280, 720)
INK, MUTED, FRAME = "#1f2933", "#52606d", "#9aa5b1"
HEADER, ACCENT, LIT = "#1d4f7a", "#f0b429", "#ffe8a3"
OK, BAD, GRID = "#1a7f37", "#b42318", "#e4e7eb"

# every colour index → RGB (255: an empty cell), as the browser's LinearColorMapper paints it
_LUT = np.array([ImageColor.getrgb(c) for c in PALETTE] + [ImageColor.getrgb(EMPTY)], dtype=np.uint8)
assert len(_LUT) == EMPTY_CODE + 1


def _panel_font(bold=False):
    import panel

    name = "source-sans-pro-semibold.ttf" if bold else "source-sans-pro-regular.ttf"
    found = list(Path(panel.__file__).parent.glob(f"dist/bundled/reveal.js*/dist/theme/fonts/source-sans-pro/{name}"))
    return str(found[0]) if found else None


@functools.lru_cache(maxsize=None)
def font(size, bold=False, mono=False):
    """A TrueType font of `size` pixels: DejaVu, else Panel's Source Sans Pro, else Pillow's own."""
    name = "DejaVuSansMono.ttf" if mono else "DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf"
    for candidate in (name, f"/usr/share/fonts/truetype/dejavu/{name}", _panel_font(bold)):
        if candidate is None:
            continue
        try:
            return ImageFont.truetype(candidate, size)
        except OSError:
            continue
    return ImageFont.load_default(size)


def font_report():
    """The family and style of the font the frames are written in."""
    return " ".join(font(20).getname())


def fade(colour, amount):
    """`colour` mixed with white (amount 0: as is, 1: white): what opacity does on a white page."""
    rgb = np.array(ImageColor.getrgb(colour), dtype=float)
    return tuple(int(round(c)) for c in rgb + (255 - rgb) * amount)


def nice_ticks(low, high, count=5):
    """Round tick values between low and high (steps of 1, 2 or 5 times a power of ten)."""
    span = high - low
    if not np.isfinite(span) or span <= 0:
        return [low]
    raw = span / count
    power = 10 ** np.floor(np.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = np.ceil(low / step - 1e-9) * step
    ticks = np.arange(first, high + step * 1e-6, step)
    return [float(round(t / step) * step) for t in ticks]


def tick_label(value, step):
    if 0 < step < 1e-3:                                     # tiny ranges (differences of float32 forms)
        return f"{value:.1e}" if value else "0"
    decimals = max(0, int(-np.floor(np.log10(step)))) if step > 0 else 0
    return format_number(round(value, decimals), decimals or None)


class Painter:
    """Draws on a canvas of `size`, in coordinates of the 1280 × 720 grid."""

    def __init__(self, size):
        self.image = Image.new("RGB", size, "white")
        self.ink = ImageDraw.Draw(self.image)
        self.s = size[0] / BASE[0]

    def px(self, *values):
        return [round(v * self.s) for v in values]

    def font(self, size, bold=False, mono=False):
        return font(max(6, round(size * self.s)), bold, mono)

    def text(self, xy, text, size=16, fill=INK, bold=False, mono=False, anchor="la", width=None):
        """Text at xy (grid units); cut with … to `width` grid units when given. Returns its width."""
        face = self.font(size, bold, mono)
        if width is not None:
            text = self.fit(text, face, width)
        self.ink.text(self.px(*xy), text, font=face, fill=fill, anchor=anchor)
        return face.getlength(text) / self.s

    def fit(self, text, face, width):
        limit = width * self.s
        if face.getlength(text) <= limit:
            return text
        while text and face.getlength(text + "…") > limit:
            text = text[:-1]
        return text + "…"

    def length(self, text, size=16, bold=False, mono=False):
        return self.font(size, bold, mono).getlength(text) / self.s

    def box(self, x0, y0, x1, y1, fill=None, outline=None, width=1, radius=0):
        self.ink.rounded_rectangle(self.px(x0, y0, x1, y1), radius=round(radius * self.s), fill=fill,
                                   outline=outline, width=max(1, round(width * self.s)))

    def line(self, points, fill, width=2, dash=False):
        points = [tuple(self.px(x, y)) for x, y in points]
        if len(points) < 2:
            return
        width = max(1, round(width * self.s))
        if not dash:
            self.ink.line(points, fill=fill, width=width, joint="curve")
            return
        on, off = (3 * self.s, 5 * self.s) if dash == "dotted" else (10 * self.s, 6 * self.s)   # pixels along it
        phase = 0.0                                  # how far into the pattern (on, then off) each segment starts:
        for (x0, y0), (x1, y1) in zip(points, points[1:]):   # a curve of short segments stays dashed
            span = float(np.hypot(x1 - x0, y1 - y0))
            at = 0.0
            while at < span:
                if phase < on:                       # drawing
                    end = min(at + on - phase, span)
                    a, b = at / span, end / span
                    self.ink.line([(x0 + (x1 - x0) * a, y0 + (y1 - y0) * a),
                                   (x0 + (x1 - x0) * b, y0 + (y1 - y0) * b)], fill=fill, width=width)
                else:                                # a gap
                    end = min(at + on + off - phase, span)
                phase = (phase + end - at) % (on + off)
                at = end

    def dot(self, x, y, size, fill, marker="circle"):
        x, y = self.px(x, y)
        r = max(1.5, size * self.s / 2)
        if marker == "circle":
            self.ink.ellipse([x - r, y - r, x + r, y + r], fill=fill)
        elif marker == "plus":
            for box in ([x - r, y - r / 3, x + r, y + r / 3], [x - r / 3, y - r, x + r / 3, y + r]):
                self.ink.rectangle(box, fill=fill)
        else:
            corners = MARKERS[marker]
            self.ink.polygon([(x + r * cx, y + r * cy) for cx, cy in corners], fill=fill)


def _star(points, inner):
    """The corners of a star of `points` points (outer radius 1, inner `inner`), the first one up."""
    angles = np.arange(2 * points) * np.pi / points - np.pi / 2
    radii = np.where(np.arange(2 * points) % 2 == 0, 1.0, inner)
    return tuple(zip(radii * np.cos(angles), radii * np.sin(angles)))


# a dot's shapes besides "circle" and "plus": corners around the dot's centre, its half-size 1 (y down), named as
# Bokeh names its markers
MARKERS = {"square": ((-1, -1), (1, -1), (1, 1), (-1, 1)),
           "triangle": ((0, -1.1), (1.1, 0.8), (-1.1, 0.8)),
           "inverted_triangle": ((0, 1.1), (1.1, -0.8), (-1.1, -0.8)),
           "diamond": ((0, -1.25), (0.9, 0), (0, 1.25), (-0.9, 0)),
           "hex": _star(3, 1.0),
           "star": _star(5, 0.45),
           "square_pin": ((-1, -1), (0, -0.6), (1, -1), (0.6, 0), (1, 1), (0, 0.6), (-1, 1), (-0.6, 0))}


def draw(scene, size=BASE):
    """The scene as an RGB image of `size` (width, height) pixels."""
    p = Painter(size)
    width, height = BASE[0], size[1] / p.s          # grid units: 1280 wide, as tall as the aspect gives
    p.box(0, 0, width, 52, fill=HEADER)
    p.text((24, 26), scene.title, size=24, fill="white", bold=True, anchor="lm", width=width - 300)
    if scene.step:
        p.text((width - 24, 26), scene.step, size=18, fill="white", anchor="rm")
    y = 64
    if scene.strip is not None:
        y = draw_strip(p, scene.strip, y, width)
    for line in scene.caption:
        p.text((24, y), line, size=17, fill=INK, width=width - 48)
        y += 24
    bottom = height - (26 if scene.footer else 8)
    if scene.footer:
        p.text((24, height - 8), scene.footer, size=12, fill=MUTED, anchor="ld", width=width - 48)
    draw_panels(p, scene.panels, 16, y + 6, width - 16, bottom)
    return p.image


def draw_strip(p, strip, top, width):
    """The token boxes, wrapped over lines; returns the y under them."""
    size = 17 if len(strip.tokens) <= 24 else 14
    pad, gap, tall = 8, 6, (46 if any(strip.marks) else 30) * size / 17
    x, y = 24.0, top
    for i, token in enumerate(strip.tokens):
        mark = strip.marks[i] if i < len(strip.marks) else ""
        box = max(p.length(token, size, mono=True), p.length(mark, size - 4)) + 2 * pad
        box = max(box, 30)
        if x + box > width - 24:
            x, y = 24.0, y + tall + gap
        future, current = i > strip.current, i == strip.current
        ask = i < len(strip.asks) and strip.asks[i]
        border = HEADER if current or ask else "#bcccdc"               # questions framed darker
        if current:
            p.box(x - 3, y - 3, x + box + 3, y + tall + 3, fill=ACCENT, radius=10)
        p.box(x, y, x + box, y + tall, fill=LIT if current else "white",
              outline=fade(border, 0.65) if future else border, width=2, radius=8)
        colour = fade(INK, 0.65) if future else INK
        p.text((x + box / 2, y + 4), token, size=size, fill=colour, mono=True, anchor="ma")
        if mark and not future:                      # an answer shows once its token is reached
            mood = strip.moods[i] if i < len(strip.moods) else ""
            p.text((x + box / 2, y + tall - 4), mark, size=size - 4, fill={"ok": OK, "bad": BAD}.get(mood, MUTED),
                   bold=bool(mood), anchor="md")
        x += box + gap
    return y + tall + 10


def draw_panels(p, panels, left, top, right, bottom):
    """Panels in the grid that leaves each the largest square plot (pictures stay square, curves wide)."""
    if not panels:
        return
    n = len(panels)
    side = lambda per_row: min((right - left) / per_row - 120, (bottom - top) / -(-n // per_row) - 80)
    per_row = max(range(1, n + 1), key=side)
    cell_w, cell_h = (right - left) / per_row, (bottom - top) / -(-n // per_row)
    for i, panel in enumerate(panels):
        r, c = divmod(i, per_row)
        x0, y0 = left + c * cell_w, top + r * cell_h
        draw_panel(p, panel, x0 + 6, y0, x0 + cell_w - 6, y0 + cell_h - 4)


def wrap(p, text, size, width, bold=False, lines=2):
    """`text` over at most `lines` lines of `width` grid units (the last one cut with …)."""
    out, words = [], text.split()
    while words and len(out) < lines:
        line = words.pop(0)
        while words and p.length(line + " " + words[0], size, bold) <= width:
            line += " " + words.pop(0)
        out.append(line)
    if words:
        out[-1] = p.fit(out[-1] + " " + " ".join(words), p.font(size, bold), width)
    return out


def draw_panel(p, panel, x0, y0, x1, y1):
    for line in wrap(p, panel.title, 15, x1 - x0, bold=True):
        p.text(((x0 + x1) / 2, y0), line, size=15, bold=True, anchor="ma", width=x1 - x0)
        y0 += 20
    y0 += 4
    if getattr(panel, "subtitle", ""):
        p.text(((x0 + x1) / 2, y0), panel.subtitle, size=14, fill=MUTED, anchor="ma")
        y0 += 20
    if isinstance(panel, Heat):
        draw_heat(p, panel, x0, y0, x1, y1)
    elif isinstance(panel, Bars):
        draw_bars(p, panel, x0, y0, x1, y1)
    elif isinstance(panel, Curves):
        draw_curves(p, panel, x0, y0, x1, y1)
    else:
        raise TypeError(f"no drawing for {type(panel).__name__}")


def _axis_labels(p, x_label, y_label, x0, y0, x1, y1, room=None):
    """The axis names: x under the plot box (over `room` grid units), y written upwards left of it."""
    if x_label:
        p.text(((x0 + x1) / 2, y1 + 22), x_label, size=13, fill=MUTED, anchor="ma", width=room or x1 - x0)
    if y_label:
        face = p.font(13)
        label = p.fit(y_label, face, y1 - y0)
        w, h = round(face.getlength(label)) + 2, round(18 * p.s)
        turned = Image.new("RGBA", (w, h), (255, 255, 255, 0))
        ImageDraw.Draw(turned).text((1, 0), label, font=face, fill=MUTED)
        turned = turned.rotate(90, expand=True)
        x, y = p.px(x0 - 50, (y0 + y1) / 2)
        p.image.paste(turned, (x, y - turned.height // 2), turned)


def draw_heat(p, panel, x0, y0, x1, y1):
    values = np.asarray(panel.values, dtype=float)
    rows, cols = values.shape
    left = 10 + max(p.length(label, 13) for label in panel.row_labels) if panel.row_labels else 54
    box_w, box_h = (x1 - x0) - left - 66, min((y1 - y0) - 44, 1.2 * ((x1 - x0) - left - 66))
    if panel.row_labels:                   # a few named vectors: wide cells, at most 3 times as tall
        cell_w = box_w / cols
        cell_h = min(box_h / rows, 3 * cell_w)
    else:                                  # a matrix: square cells, as on paper
        cell_w = cell_h = min(box_w / cols, box_h / rows)
    w, h = cell_w * cols, cell_h * rows
    gx = x0 + left + (box_w - w) / 2
    gy = y0 + 2
    codes = quantize(values, panel.limit)                                     # [rows, cols] uint8
    picture = Image.fromarray(_LUT[codes]).resize(tuple(max(1, v) for v in p.px(w, h)), Image.NEAREST)
    p.image.paste(picture, tuple(p.px(gx, gy)))
    p.box(gx, gy, gx + w, gy + h, outline=FRAME, width=1)
    if panel.row_labels:
        for i, label in enumerate(panel.row_labels):
            p.text((gx - 6, gy + (i + 0.5) * cell_h), label, size=13, anchor="rm", width=left - 4)
    else:
        for i in sorted({0, rows - 1}):
            p.text((gx - 6, gy + (i + 0.5) * cell_h), str(i), size=12, fill=MUTED, anchor="rm")
    for j in (range(cols) if panel.col_labels else sorted({0, cols - 1})):
        label = panel.col_labels[j] if panel.col_labels else str(j)
        p.text((gx + (j + 0.5) * cell_w, gy + h + 3), label, size=12, fill=MUTED, anchor="ma",
               width=cell_w if panel.col_labels else None)
    _axis_labels(p, panel.x_label, "" if panel.row_labels else panel.y_label, gx, gy, gx + w, gy + h, x1 - x0)
    # the colour bar: the whole scale, labelled at −limit, 0 and +limit
    bx, bh = gx + w + 12, max(h, 60)
    ramp = np.linspace(254, 0, 128).round().astype(np.uint8)[:, None]        # top: +limit (red)
    bar = Image.fromarray(_LUT[ramp]).resize(tuple(max(1, v) for v in p.px(12, bh)), Image.BILINEAR)
    p.image.paste(bar, tuple(p.px(bx, gy)))
    step = panel.limit
    for value, at in ((panel.limit, 0.0), (0.0, 0.5), (-panel.limit, 1.0)):
        p.text((bx + 16, gy + at * bh), tick_label(value, step / 10), size=11, fill=MUTED, anchor="lm")


def draw_bars(p, panel, x0, y0, x1, y1):
    values = np.asarray(panel.values, dtype=float)
    low, high = panel.y_range
    gx, gy, gw = x0 + 54, y0 + 2, (x1 - x0) - 64
    gh = min((y1 - y0) - 44, 0.9 * gw)
    p.box(gx, gy, gx + gw, gy + gh, outline=FRAME, width=1)
    ticks = nice_ticks(low, high, 4)
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    to_y = lambda v: gy + gh * (1 - (min(max(v, low), high) - low) / (high - low))
    for tick in ticks:
        p.text((gx - 5, to_y(tick)), tick_label(tick, step), size=11, fill=MUTED, anchor="rm")
    n = max(len(values), 1)
    slot = gw / n
    for i, value in enumerate(values):
        if np.isfinite(value):
            p.box(gx + i * slot + 0.1 * slot, to_y(value), gx + (i + 0.9) * slot, to_y(max(low, 0.0)),
                  fill=panel.color)
    for i in sorted({0, n - 1}):
        p.text((gx + (i + 0.5) * slot, gy + gh + 3), str(i), size=12, fill=MUTED, anchor="ma")
    _axis_labels(p, panel.x_label, panel.y_label, gx, gy, gx + gw, gy + gh, x1 - x0)


def legend_rows(p, series, width):
    """The legend's entries over as many rows as `width` needs: [[(series, x offset)], …]."""
    rows, x = [[]], 0.0
    for entry in series:
        room = 32 + p.length(entry.label, 13) + 18
        if rows[-1] and x + room > width:
            rows.append([])
            x = 0.0
        rows[-1].append((entry, x))
        x += room
    return rows


def draw_curves(p, panel, x0, y0, x1, y1):
    labelled = [s for s in panel.series if s.label]
    rows = legend_rows(p, labelled, (x1 - x0) - 70) if labelled else []
    legend = 24 * len(rows) + 2
    gx, gy, gw, gh = x0 + 70, y0 + 2, (x1 - x0) - 84, (y1 - y0) - 46 - legend
    (xl, xh), (yl, yh) = panel.x_range, panel.y_range
    to_x = lambda v: gx + gw * (v - xl) / (xh - xl)
    to_y = lambda v: gy + gh * (1 - (v - yl) / (yh - yl))
    for axis, (low, high) in (("x", panel.x_range), ("y", panel.y_range)):
        ticks = nice_ticks(low, high, 5)
        step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
        for tick in ticks:
            if axis == "x":
                p.line([(to_x(tick), gy), (to_x(tick), gy + gh)], GRID, width=1)
                p.text((to_x(tick), gy + gh + 3), tick_label(tick, step), size=11, fill=MUTED, anchor="ma")
            else:
                p.line([(gx, to_y(tick)), (gx + gw, to_y(tick))], GRID, width=1)
                p.text((gx - 5, to_y(tick)), tick_label(tick, step), size=11, fill=MUTED, anchor="rm")
    p.box(gx, gy, gx + gw, gy + gh, outline=FRAME, width=1)
    for series in panel.series:
        x, y = np.asarray(series.x, dtype=float), np.asarray(series.y, dtype=float)
        keep = np.isfinite(x) & np.isfinite(y)
        points = [(to_x(a), to_y(min(max(b, yl), yh))) for a, b in zip(x[keep], y[keep])]
        if series.kind == "line":
            p.line(points, series.color, width=series.width, dash=series.dash)
            for k in [] if series.marks is None else series.marks:
                p.dot(to_x(x[k]), to_y(min(max(y[k], yl), yh)), series.size, series.color, series.marker)
        else:
            for px_, py_ in points:
                if gy <= py_ <= gy + gh:                       # like the page: dots off the top are not drawn
                    p.dot(px_, py_, series.size, series.color, series.marker)
    _axis_labels(p, panel.x_label, panel.y_label, gx, gy, gx + gw, gy + gh)
    for r, row in enumerate(rows):                                 # the legend, under the plot
        ly = y1 - 10 - 24 * (len(rows) - 1 - r)
        for series, offset in row:
            x = gx + offset
            if series.kind == "line":
                p.line([(x, ly), (x + 26, ly)], series.color, width=series.width, dash=series.dash)
                if series.marks is not None:
                    p.dot(x + 13, ly, series.size, series.color, series.marker)
            else:
                p.dot(x + 13, ly, series.size, series.color, series.marker)
            p.text((x + 32, ly), series.label, size=13, anchor="lm")
