"""python -m app.export URL_OR_QUERY --format gif|mp4|zip|png|csv|html -o FILE

    python -m app.export "/state?variant=deltanet&t=12&lang=it" --format gif -o delta.gif
    python -m app.export "/two-bills?tokens=64&context=4096" --format csv --table tokens -o bills.csv

The URL is read as the page reads it: a bad value is replaced, as on the page, and said on standard
error as a warning (with --strict: refused, nothing written). The frame of a PNG is the URL's `t`, the
speed of an animation its `speed` (or --fps). Exits 2, with the reason, when an export is refused (a
limit, an unknown page or format, a bad value under --strict).
"""
import argparse
import sys
import time
from pathlib import Path

from app.export.files import FORMATS, SIZES, ExportRefused, make_file, parse_size
from app.export.query import open_page


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m app.export", description=__doc__.split("\n\n")[0])
    parser.add_argument("url", help='a page\'s link or its path and query, e.g. "/state?variant=deltanet&t=12"')
    parser.add_argument("--format", "-f", choices=FORMATS, help="default: the extension of -o")
    parser.add_argument("-o", "--output", required=True, help="the file to write")
    parser.add_argument("--size", help=f"WIDTHxHEIGHT or one of {', '.join(SIZES)} (default: by format)")
    parser.add_argument("--fps", type=float, help="frames per second of an animation (default: the URL's speed)")
    parser.add_argument("--table", help="CSV: which table (default: the page's first)")
    parser.add_argument("--strict", action="store_true",
                        help="refuse a link with a bad value instead of replacing the value (and warning)")
    options = parser.parse_args(argv)
    output = Path(options.output)
    fmt = options.format or output.suffix.lstrip(".").lower()
    started = time.perf_counter()
    try:
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
        result = make_file(page, fmt, size=size, fps=fps, table=options.table)
    except ExportRefused as refusal:
        print(f"refused: {refusal}", file=sys.stderr)
        return 2
    output.write_bytes(result.data)
    print(f"wrote {output} ({len(result.data) / 1e6:.2f} MB, {page.length()} frames on the page) "
          f"in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
