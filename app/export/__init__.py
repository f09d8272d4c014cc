"""Take it out of the app: a page's run as GIF, MP4 or PNG frames, a picture as PNG, numbers as CSV, a
lesson as one HTML file that plays offline.

    from lineare.app.export import open_page, make_file
    page, notices = open_page("/state?variant=deltanet&t=12&lang=it")    # the page's own URL code
    make_file(page, "gif").data                                          # bytes of an animated GIF

| module | what |
|---|---|
| `pages.py` | the adapters' base and `PAGES`, found in `app/dashboards/<page>/export.py`: frames, tables, words |
| `scene.py` | what a frame shows, as data (heat maps, bars, curves, token strip, caption) |
| `draw.py` | a scene as pixels (Pillow), with the page's palette, fixed colour ranges and words |
| `files.py` | the file formats and the limits every export is checked against (`ExportRefused`) |
| `lesson.py` | the lesson: Bokeh's standalone HTML with the frames and a player, JavaScript inline |
| `query.py` | a URL or query → a session and its page, validated as the pages validate it |
| `section.py` | the download section every page with an export gets in its sidebar |
| `__main__.py` | `lineare export URL --format gif -o FILE` (also `python -m lineare.app.export …`) |
"""
from lineare.app.export.files import FORMATS, LIMITS, ExportRefused, Limits, make_file
from lineare.app.export.query import open_page

__all__ = ["FORMATS", "LIMITS", "ExportRefused", "Limits", "make_file", "open_page"]
