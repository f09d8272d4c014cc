"""`lineare export URL -o FILE` (also `python -m lineare.app.export`): a page's run as GIF, MP4, PNG frames, one PNG,
CSV or a one-file lesson, from the page's link.

    lineare export "/state?variant=deltanet&t=12&lang=it" -o delta.gif
    lineare export "/two-bills?tokens=64&context=4096" --table tokens -o bills.csv

The URL is read as the page reads it: a bad value is replaced, as on the page, and said on standard
error as a warning (with --strict: refused, nothing written). The frame of a PNG is the URL's `t`, the
speed of an animation its `speed` (or --fps). Exits 2, with the reason, when an export is refused (a
limit, an unknown page or format, a bad value under --strict, a folder that cannot hold the file).
A CSV holds the table alone (`pandas.read_csv(FILE)` reads it); what it is (the page, its link, the units)
goes beside it, in FILE's name with .about.txt.
"""
import argparse
import os
import sys
import time
from pathlib import Path

from tqdm import tqdm

from lineare.app.export.files import FORMATS, SIZES, ExportRefused, make_file, parse_size
from lineare.app.export.query import open_page
from lineare import arguments


def build_parser():
    parser = argparse.ArgumentParser(
        prog="python -m lineare.app.export", formatter_class=arguments.Formatter,
        description="Save a page's run as an animated GIF, an MP4 video, every frame (PNG files in a zip), one "
                    "PNG picture, a CSV table or a lesson in one HTML file that plays offline.",
        epilog="examples:\n"
               '  lineare export "/state?variant=deltanet&lang=it&t=5" -o deltanet.gif\n'
               '  lineare export "/state?variant=deltanet&t=5" -o step6.png\n'
               '  lineare export "/two-bills?tokens=64" --table tokens -o bills.csv\n'
               '  lineare export "/softmax?attention=linear" -o lesson.html --size small\n\n'
               "A CSV is the table alone (pandas.read_csv reads it as it is); its title, the link it came from "
               "and its units go to a text file beside it (bills.csv: bills.about.txt).")
    parser.add_argument("url", help='a page\'s link, or its path and query, e.g. "/state?variant=deltanet&t=12"')
    parser.add_argument("--format", "-f", choices=FORMATS, help="what to write (default: -o's extension)")
    parser.add_argument("-o", "--output", required=True, help="the file to write")
    parser.add_argument("--size", help=f"WIDTHxHEIGHT or one of {', '.join(SIZES)} (default: full-hd for a PNG, "
                                       "projector for MP4 and zip, small for GIF and HTML)")
    parser.add_argument("--fps", type=arguments.above(0.0),
                        help="frames per second of an animation (default: the link's speed, else 2)")
    parser.add_argument("--table", help="CSV: which of the page's tables (default: its first)")
    parser.add_argument("--strict", action="store_true",
                        help="refuse a link with a bad value instead of replacing the value (and warning)")
    return parser


def folder_problem(output):
    """Why `output` cannot be written, or None: checked before any work."""
    if output.is_dir():
        return f"{output} is a folder: give a file name, e.g. {output / 'lineare.gif'}"
    folder = output.parent
    if not folder.is_dir():
        return f"the folder {folder} does not exist: make it first, or write elsewhere"
    if not os.access(folder, os.W_OK):
        return f"cannot write in {folder}"
    return None


def main(argv=None):
    options = build_parser().parse_args(argv)
    output = Path(options.output)
    fmt = options.format or output.suffix.lstrip(".").lower()
    started = time.perf_counter()
    bar = None
    try:
        problem = folder_problem(output)
        if problem:
            raise ExportRefused(problem)
        size = None
        if options.size is not None:
            size = parse_size(options.size)
            if size is None:
                raise ExportRefused(f"--size {options.size!r}: write WIDTHxHEIGHT (e.g. 1280x720) or one of "
                                    f"{', '.join(SIZES)}")
        page, notices = open_page(options.url)
        for notice in notices:
            print(f"{'refused' if options.strict else 'warning'}: {notice}", file=sys.stderr)
        if notices and options.strict:
            return 2
        fps = options.fps if options.fps is not None else (page.speed or 2.0)
        bar = tqdm(total=1, unit="frame", desc=output.name, disable=None, file=sys.stderr, leave=False)
        result = make_file(page, fmt, size=size, fps=fps, table=options.table, progress=progress_of(bar))
    except ExportRefused as refusal:
        print(f"refused: {refusal}", file=sys.stderr)
        return 2
    finally:
        if bar is not None:
            bar.close()
    data, about = result.data, None
    if fmt == "csv":
        data, about = split_notes(data)
        output.with_name(output.stem + ".about.txt").write_text(about, encoding="utf-8")
    output.write_bytes(data)
    print(f"wrote {output} ({len(data) / 1e6:.2f} MB, {page.length()} frames on the page"
          f"{', what it holds in ' + output.stem + '.about.txt' if about else ''}) "
          f"in {time.perf_counter() - started:.1f} s")
    return 0


def progress_of(bar):
    """make_file's progress(done, total) as a tqdm bar (tqdm shows it on a terminal only)."""
    def progress(done, total):
        bar.total = total
        bar.update(done - bar.n)
    return progress


def split_notes(data):
    """(the table, its notes) of a CSV as app.export writes it: the leading '# ' lines are the notes."""
    lines = data.decode("utf-8").splitlines(keepends=True)
    count = next((i for i, line in enumerate(lines) if not line.startswith("# ")), len(lines))
    notes = "".join(line[2:] for line in lines[:count])
    return "".join(lines[count:]).encode("utf-8"), notes


if __name__ == "__main__":
    sys.exit(main())
