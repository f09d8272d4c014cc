"""A page's run as a file: GIF, MP4, a zip of PNG frames, one PNG, CSV, or a lesson in one HTML file.

    result = make_file(page, "gif", size=(960, 540), fps=2)        # page: an app.export.pages adapter
    result.data, result.filename, result.mime

Every export is bounded before it starts (frames × pixels, the size of a frame, the frame rate) and
while it runs (seconds, bytes): past a limit it raises `ExportRefused` with a message in the page's
language, so a hosted demo cannot be brought down by one visitor's export.

GIF through Pillow (see `gif_bytes`); MP4 (H.264) through imageio and imageio-ffmpeg, whose wheel
carries its own ffmpeg binary.
"""
import csv
import io
import os
import re
import tempfile
import time
import zipfile
from dataclasses import dataclass

import numpy as np

from lineare.app.export.draw import draw
from lineare.app.i18n import _, format_number, language

FORMATS = ("gif", "mp4", "zip", "png", "csv", "html")
MIME = {"gif": "image/gif", "mp4": "video/mp4", "zip": "application/zip", "png": "image/png",
        "csv": "text/csv", "html": "text/html"}
SIZES = {"small": (960, 540), "projector": (1280, 720), "full-hd": (1920, 1080)}
DEFAULT_SIZE = {"gif": SIZES["small"], "mp4": SIZES["projector"], "zip": SIZES["projector"],
                "png": SIZES["full-hd"], "html": SIZES["small"]}


@dataclass(frozen=True)
class Limits:
    """What one export may cost. The defaults keep one export under about a minute on two busy cores."""
    min_width: int = 320
    max_width: int = 1920
    max_height: int = 1080
    max_pixel_frames: int = 128 * 1280 * 720         # 128 frames at 1280 × 720, 56 at 1920 × 1080
    min_fps: float = 0.5                             # the player's own range
    max_fps: float = 8.0
    max_seconds: float = 90.0
    max_bytes: int = 60 * 2 ** 20


LIMITS = Limits()


class ExportRefused(Exception):
    """An export that would pass a limit; its message (already translated) says which and what to do."""


@dataclass
class ExportFile:
    data: bytes
    filename: str
    mime: str


def parse_size(text):
    """'1280x720' or a name of SIZES → (width, height); None for a malformed one."""
    text = str(text).strip().lower()
    if text in SIZES:
        return SIZES[text]
    width, sep, height = text.replace("×", "x").partition("x")
    if not sep or not (width.strip().isdigit() and height.strip().isdigit()) or len(text) > 12:
        return None
    return int(width), int(height)


def check(fmt, frames, size, fps, limits=LIMITS):
    """Refuse an export before it starts (ExportRefused), with what was asked and what is allowed."""
    if fmt not in FORMATS:
        raise ExportRefused(_("“{format}” is not a format this app writes: choose one of {formats}.").format(
            format=str(fmt)[:20], formats=", ".join(FORMATS)))
    if fmt == "csv":
        return
    width, height = size
    if not (limits.min_width <= width <= limits.max_width and 180 <= height <= limits.max_height
            and 1.2 <= width / height <= 2.4):
        raise ExportRefused(_("A picture of {width} × {height} pixels is not made here: the width goes from "
                              "{low} to {high} pixels, the height up to {tall}, wider than tall (1280 × 720 "
                              "fills a projector).").format(width=width, height=height, low=limits.min_width,
                                                           high=limits.max_width, tall=limits.max_height))
    if not (limits.min_fps <= fps <= limits.max_fps):
        raise ExportRefused(_("A speed of {fps} frames per second is not made here: choose between {low} and "
                              "{high}.").format(fps=format_number(fps), low=format_number(limits.min_fps),
                                                high=format_number(limits.max_fps)))
    if fmt in ("gif", "mp4", "zip", "html") and frames * width * height > limits.max_pixel_frames:
        most = limits.max_pixel_frames // (width * height)
        raise ExportRefused(_("{frames} frames of {width} × {height} pixels are more than one export may "
                              "hold here (at this size, at most {most}): choose a smaller size or a shorter "
                              "run.").format(frames=frames, width=width, height=height, most=most))


class Budget:
    """The clock and the byte count of one export."""

    def __init__(self, limits=LIMITS, progress=None, total=1):
        self.limits, self.progress, self.total, self.done = limits, progress, max(total, 1), 0
        self.deadline = time.monotonic() + limits.max_seconds

    def tick(self, amount=1):
        if time.monotonic() > self.deadline:
            raise ExportRefused(_("This export took longer than {seconds} seconds, the most this server gives "
                                  "one: choose a smaller size or a shorter run, or try again when the server "
                                  "is less busy.").format(seconds=format_number(self.limits.max_seconds)))
        self.done += amount
        if self.progress is not None:
            self.progress(min(self.done, self.total), self.total)

    def bytes(self, data):
        if len(data) > self.limits.max_bytes:
            raise ExportRefused(_("The file would be {size} MB, more than the {most} MB one export may be here: "
                                  "choose a smaller size or a shorter run.").format(
                size=format_number(round(len(data) / 2 ** 20, 1)),
                most=format_number(self.limits.max_bytes // 2 ** 20)))
        return data


def make_file(page, fmt, *, size=None, fps=2.0, t=None, table=None, limits=LIMITS, progress=None):
    """One export of `page` (an app.export.pages adapter) as an ExportFile, in the page's language.

    `t`: the frame of a PNG (default: the page's); `table`: the CSV's table (default: the first);
    `progress(done, total)` is called as frames are drawn and encoded (from the calling thread)."""
    size = tuple(size or DEFAULT_SIZE.get(fmt, SIZES["projector"]))
    with language(page.language):
        frames = page.length()
        check(fmt, frames, size, fps, limits)
        stem = f"lineare-{page.slug}"
        if fmt == "csv":
            tables = page.tables()
            if not tables:
                raise ExportRefused(_("This page has no numbers to save as CSV."))
            name = table or next(iter(tables))
            if name not in tables:
                raise ExportRefused(_("This page has no table “{name}”: it has {names}.").format(
                    name=str(name)[:40], names=", ".join(tables)))
            data = csv_bytes(page, page.table(name))
            return ExportFile(Budget(limits).bytes(data), f"{stem}-{name}.csv", MIME["csv"])
        if fmt == "png":
            t = page.default_frame() if t is None else min(max(int(t), 0), frames - 1)
            budget = Budget(limits, progress, 1)
            image = draw(page.scene(t), size)
            budget.tick()
            return ExportFile(budget.bytes(png_bytes(image)), f"{stem}-{t + 1}.png", MIME["png"])
        # the formats of a whole run: every frame drawn, then encoded (progress: half each)
        budget = Budget(limits, progress, 2 * frames)
        images = []
        for i in range(frames):
            images.append(np.asarray(draw(page.scene(i), size)))          # [height, width, 3] uint8
            budget.tick()
        encode = {"gif": gif_bytes, "mp4": mp4_bytes, "zip": zip_bytes, "html": None}[fmt]
        if fmt == "html":
            from lineare.app.export.lesson import lesson_html
            data = lesson_html(page, images, fps, budget)
        else:
            data = encode(images, fps, budget)
        return ExportFile(budget.bytes(data), f"{stem}.{fmt}", MIME[fmt])


def png_bytes(image):
    """Pillow's default compression: `optimize` made frames 3 % smaller at four times the time."""
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def gif_bytes(images, fps, budget):
    """An animated GIF that loops, each frame shown 1/fps seconds.

    Each frame gets its own 256 colours by Pillow's fast octree, without dithering (flat heat-map cells
    stay flat): 64 frames of 960 × 540 took 3.8 s and 0.6 MB this way, against 14.5 s and 1.0 MB through
    imageio's Pillow plugin, which quantizes by median cut (measured on a busy two-core machine)."""
    from PIL import Image

    frames = []
    for image in images:
        frames.append(Image.fromarray(image).quantize(256, method=Image.Quantize.FASTOCTREE,
                                                      dither=Image.Dither.NONE))
        budget.tick()
    out = io.BytesIO()
    frames[0].save(out, format="GIF", save_all=True, append_images=frames[1:], duration=round(1000 / fps), loop=0)
    return out.getvalue()


def mp4_bytes(images, fps, budget):
    """An H.264 MP4 (yuv420p: plays in browsers and presentation software) through imageio-ffmpeg."""
    import imageio.v2 as imageio

    handle, path = tempfile.mkstemp(suffix=".mp4")
    os.close(handle)
    try:
        # macro_block_size=2: sizes like 960 × 540 stay as they are (yuv420p needs even sides only)
        with imageio.get_writer(path, format="FFMPEG", fps=fps, codec="libx264", pixelformat="yuv420p",
                                macro_block_size=2, quality=8, ffmpeg_log_level="error") as writer:
            for image in images:
                writer.append_data(image)
                budget.tick()
        with open(path, "rb") as f:
            return f.read()
    finally:
        os.remove(path)


def zip_bytes(images, fps, budget):
    """Every frame as a numbered PNG, in one zip."""
    from PIL import Image

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:        # PNG is compressed already
        for i, image in enumerate(images):
            archive.writestr(f"frame-{i + 1:03d}.png", png_bytes(Image.fromarray(image)))
            budget.tick()
    return out.getvalue()


def csv_bytes(page, table):
    """The table with a header: the page, its link, its settings, the units; then one row per line.
    Text that came from a visitor (typed words, a URL's values) stays on its header line or in its
    cell (`one_line`, `text_cell`)."""
    out = io.StringIO()
    settings = "&".join(f"{k}={v}" for k, v in page.settings().items())
    out.write(f"# {one_line(f'Lineare · {page.title()} · {table.title}')}\n")
    out.write(f"# {one_line(f'/{page.slug}?{settings}&lang={page.language}')}\n")
    for note in table.notes:
        out.write(f"# {one_line(note)}\n")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([text_cell(name) for name in table.columns])
    writer.writerows([[cell(v) for v in row] for row in table.rows])
    return out.getvalue().encode("utf-8")


CONTROL = re.compile("[\x00-\x1f\x7f\x85\u2028\u2029]")
FORMULA_START = ("=", "+", "-", "@")       # a spreadsheet reads a cell starting so as a formula


def one_line(text):
    """`text` with every control character (a newline, a tab, a carriage return …) made a space."""
    return CONTROL.sub(" ", str(text))


def text_cell(text):
    """A text cell a spreadsheet shows as text: on one line, and a leading = + - @ escaped with a quote."""
    text = one_line(text)
    return "'" + text if text.startswith(FORMULA_START) else text


def cell(value):
    """A CSV cell: floats in full (they read back to the same number), NaN and ±inf empty, numbers as
    numbers (a minus sign is theirs), text as `text_cell`."""
    if isinstance(value, (float, np.floating)):
        return repr(float(value)) if np.isfinite(value) else ""
    if isinstance(value, (np.integer, np.bool_)):
        return value.item()
    if isinstance(value, (bool, int)):
        return value
    return "" if value is None else text_cell(value)
