"""What a student sees and hears on a loaded page, read in one call each (the scripts are tests/ui/seeing.js; shared by
the UI tests that already open every page, so that no page is loaded for these alone):

- `contrast_problems(page)`: every shown text of the page (DOM text against the background it sits on) at 4.5:1
  (3:1 when large: 24 px, or 18.66 px bold), and on every picture, computed from the colours its models draw with:
  its titles, axes, legends and the words and numbers written in it (against the cell they sit on) at 4.5:1, its
  marks (lines, dots, bars, areas, legend keys) at 3:1 against its background. A mark may pass by its fill or its
  outline; a colour scale (a heat map, colours mapped from numbers) and backdrops drawn under the rest are data
  and ground, not marks;
- `canvas_texts(page)`: every text a picture draws (titles, tick labels, axis names, colour-bar labels, legends, the
  words and numbers inside it) with its type size in CSS pixels, read from the drawn models;
- `unnamed_controls(page)`: every element the Tab key reaches with no role a screen reader can name, or no name;
- `picture_problems(page)`: each picture's text alternative and numbers table against what its models draw;
- `focus_ring(page)`: the focused element's halo (outline or ring) against what is around it;
- `redrawn(page, shoot, before)`: whether a picture comes to differ from an earlier screenshot of it.
"""
import re
from pathlib import Path

SEEING_JS = (Path(__file__).parent / "seeing.js").read_text(encoding="utf-8")


def _run(page, name):
    return page.evaluate(f"() => ({SEEING_JS.strip()}).{name}()")


def contrast_problems(page):
    return _run(page, "contrast")


def canvas_texts(page):
    return _run(page, "canvasTexts")


def unnamed_controls(page):
    return _run(page, "controls")


def picture_problems(page):
    page.evaluate("window.lineareMark && window.lineareMark()")
    return _run(page, "pictures")


def focus_ring(page):
    return _run(page, "focus")


def small_canvas_texts(page, least=16):
    """The pictures' texts under `least` px, as sentences."""
    return [f"«{t['picture']}»: {t['what']} at {t['px']:.1f} px" for t in canvas_texts(page) if t["px"] < least - 0.05]


def group_names(snapshot):
    """The button groups of an ARIA snapshot: {name: [(button, pressed)]}."""
    groups, current, depth = {}, None, 0
    for line in snapshot.splitlines():
        indent = len(line) - len(line.lstrip())
        found = re.match(r'\s*- group "([^"]*)"', line)
        if found:
            current, depth = groups.setdefault(found.group(1), []), indent
            continue
        if current is not None and indent <= depth:
            current = None
        button = re.match(r'\s*- button "([^"]*)"( \[pressed\])?', line)
        if button and current is not None:
            current.append((button.group(1), bool(button.group(2))))
    return groups


def redrawn(page, shoot, before, seconds=15, test=lambda before, now: now != before):
    """Whether `shoot()` (a picture of one figure) comes to differ from `before` (by `test`) within `seconds`. On a
    loaded machine a redraw can reach the browser after the texts sent with it, so a single look may be too early."""
    for _try in range(int(seconds / 0.25)):
        if test(before, shoot()):
            return True
        page.wait_for_timeout(250)
    return False
