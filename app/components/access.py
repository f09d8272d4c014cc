"""Every student, every device: what the page frame adds for phones, screen readers and keyboards.

    template.template = PageFrame.of(template.template, language)    # once, when the shell builds the page
    template.config.raw_css.append(FRAME_CSS)

Panel's page template hard-codes `<html lang="en">` and an English "Toggle sidebar" on the ☰ button,
and has no viewport width of its own for phones below ~900 px. `PageFrame` rewrites those few places of
the page Panel renders (once per visit, before it is sent) and adds a skip link to the content and a
script that opens the sidebar as a drawer, closed, on narrow screens.
"""
import html
import json

import jinja2

from lineare.app.components.browser import page_script
from lineare.app.i18n import _

VIEWPORT = "width=device-width, initial-scale=1"
NARROW = 900            # below this many CSS pixels the sidebar is a drawer over the page, closed when it opens
SHORT = 480             # at most this many CSS pixels high (a laptop at 200 %), the header is one short row

# focus ring: a dark blue and white double ring shows on white (≥ 3:1 both) and on the blue header and buttons
FOCUS = "outline: 3px solid #102a43 !important; outline-offset: 2px; box-shadow: 0 0 0 5px #ffffff !important;"

FRAME_CSS = f"""
html {{ font-size: 16px; }}
dialog.lineare-numbers {{ max-width: min(96vw, 1100px); max-height: 90vh; overflow: auto; font-size: 16px;
                          color: #102a43; }}
dialog.lineare-numbers h2 {{ font-size: 20px; margin: 0 0 6px 0; }}
dialog.lineare-numbers table {{ border-collapse: collapse; font-variant-numeric: tabular-nums; margin: 8px 0; }}
dialog.lineare-numbers th, dialog.lineare-numbers td {{ border: 1px solid #bcccdc; padding: 2px 6px;
                                                        text-align: right; }}
dialog.lineare-numbers button {{ min-height: 44px; min-width: 88px; font-size: 16px; }}
.lineare-skip {{ position: absolute; left: 8px; top: -60px; z-index: 2000; background: #ffffff; color: #102a43;
                 padding: 10px 16px; border-radius: 6px; font-size: 18px; text-decoration: underline; }}
.lineare-skip:focus {{ top: 8px; {FOCUS} }}
#sidebar-toggle {{ min-width: 44px; min-height: 44px; }}
#sidebar-toggle:focus-visible, #header a:focus-visible {{ {FOCUS} }}
#main:focus {{ outline: none; }}
@media (max-width: {NARROW - 0.02}px) {{
  #content {{ position: relative; }}
  #sidebar {{ position: absolute; z-index: 1000; top: 0; left: 0; height: 100%; width: min(340px, 88vw) !important;
              max-width: 88vw !important; background: #ffffff; box-shadow: 4px 0 16px rgba(16, 42, 67, 0.35); }}
  #main {{ padding: 8px 14px 16px 4px; }}      /* Panel panes are 100 % wide plus a 10 px margin */
}}
/* a phone, a tablet, a window at 200 %: the header is one short row (it took a quarter of the height), the
   projector's buttons (presenter mode, full screen) left out; ?present=1 still works */
@media (max-width: {NARROW - 0.02}px), (max-height: {SHORT}px) {{
  #header {{ flex-wrap: nowrap; justify-content: flex-start; padding: 2px 8px; min-height: 0; }}
  #header-items {{ display: none !important; }}
  #header .title {{ font-size: 18px; line-height: 1.4; white-space: normal; flex: 1 1 0; min-width: 0; }}
}}
@media (prefers-reduced-motion: reduce) {{
  *, *::before, *::after {{ transition: none !important; animation: none !important;
                            scroll-behavior: auto !important; }}
}}
"""

# the frame's scripts are app/js/page/drawer.js (the sidebar as a drawer on a narrow screen, pictures fitted to
# their column), numbers.js (every picture's text alternative and its numbers as a table) and titles.js


class PageFrame(jinja2.Template):
    """Panel's page template, with the page's language, names in that language, a skip link and a drawer;
    everything else is Panel's own (Bokeh accepts only a jinja2 Template: this one is Panel's, copied)."""

    @classmethod
    def of(cls, template, language, parts=None):
        """`parts`: {"header": HTML, "sidebar": HTML} put at the start of the header's items and of the sidebar."""
        frame = object.__new__(cls)
        frame.__dict__.update(template.__dict__)
        frame.replacements = replacements(language, parts or {})    # translated now: pages render outside the session
        return frame

    def render(self, *args, **kwargs):
        page = super().render(*args, **kwargs)
        for old, new in self.replacements:
            page = page.replace(old, new, 1)
        return page


def replacements(language, parts):
    skip = html.escape(_("Skip to the content"))
    toggle = html.escape(_("Show or hide the menu"), quote=True)
    close = html.escape(_("Close"), quote=True)
    menu = html.escape(_("Menu"), quote=True)
    words = {"up": _("Increase"), "down": _("Decrease")}
    from lineare.app.server.building import busy_script
    from lineare.app.i18n import browser_locale
    picture_words = {
        "locale": browser_locale(language), "picture": _("Picture"), "close": _("Close"), "row": _("row"),
        "column": _("column"), "series": _("series {n}"), "series_head": _("series"), "step": _("(step {t})"),
        "grid": _("A grid of {rows} × {cols} numbers, from {low} to {high}."),
        "grid_marks": _("A grid of {rows} × {cols} cells: {marks}."),
        "grid_empty": _("A grid of {rows} × {cols} cells, all empty."),
        "points": _("Points: {n} ({series})."),
        "cells": _("{n} cells, from {low} to {high}."), "cells_marks": _("{n} cells: {marks}."),
        "nothing": _("Nothing drawn yet."), "value": _("value"),
        "numbers": _("Numbers of the picture: {title}"),
        "numbers_tip": _("Show the numbers of this picture as a table")}
    access_words = {"locale": browser_locale(language), "picture": _("Picture"), "row": _("row {n}"),
                    "pick": _("arrow keys pick one"), "none": _("none picked yet")}
    return [
        ('<html lang="en"', f'<html lang={json.dumps(language)}'),
        ('aria-label="Toggle sidebar"', f'aria-label="{toggle}"'),
        ('aria-label="Close"', f'aria-label="{close}"'),
        ("<body>", f'<body>\n<a class="lineare-skip" href="#main">{skip}</a>'),
        # landmarks: the header is the page's banner (Panel makes it a second, unnamed navigation), and the
        # sidebar (language, level, the laboratories' navigation, the page's knobs) a named region
        ('<nav class="navbar ', '<header class="navbar '),
        ('</nav>\n\n  <div class="row overflow-hidden" id="content">',
         '</header>\n\n  <div class="row overflow-hidden" id="content">'),
        ('id="sidebar">', f'id="sidebar" role="region" aria-label="{menu}">'),
        # Panel's sidebar is a list whose items are not list items: a plain box
        ('<ul class="nav flex-column">', '<div class="nav flex-column">' + parts.get("sidebar", "")),
        ('<div id="header-items">', '<div id="header-items">' + parts.get("header", "")),
        ("</ul>", "</div>"),
        ('<div class="col mh-100 float-left" id="main">',
         page_script("drawer", {"narrow": NARROW - 0.02, "words": words})
         + page_script("numbers", picture_words) + page_script("titles") + page_script("access", access_words)
         + page_script("frame") + busy_script()
         + '\n<div class="col mh-100 float-left" id="main" tabindex="-1" role="main">'),
    ]


# a visible focus on every widget, the selected button of a group included (Bokeh's own is a faint halo);
# names and values at 16 px at least (Bokeh's 12-13 px cannot be read on a projector), more in presenter mode
WIDGET_FOCUS_CSS = f"""
.bk-btn:focus-visible, .bk-btn.bk-active:focus-visible, .bk-input:focus-visible, select:focus-visible,
.noUi-handle:focus-visible, input:focus-visible {{ {FOCUS} z-index: 2; }}
.noUi-handle {{ min-width: 24px; min-height: 24px; }}
/* a number box tall enough that each of its two arrows is a fingertip's target, 24 px (they were 30 × 19) */
.bk-spin-wrapper > input.bk-input {{ min-height: 48px; }}
input[type="checkbox"], input[type="radio"] {{ width: 24px; height: 24px; }}
label, .bk-slider-title, .bk-clearfix, .bk-btn, .bk-input {{ font-size: calc(16px * var(--lineare-scale, 1)); }}
label, .bk-slider-title {{ overflow-wrap: anywhere; white-space: normal; }}
"""


CARD_FOCUS_CSS = f".card-header:focus-visible {{ {FOCUS} z-index: 2; }}"
# the links, disclosures and focusable boxes of a text (the browser's own ring is thin and faint)
TEXT_FOCUS_CSS = f"a:focus-visible, summary:focus-visible, [tabindex]:focus-visible {{ {FOCUS} }}"


def accessible_widgets(parts):
    """Every widget, card and text among `parts` gets a visible focus ring, and a button group its name (read by the
    page's access.js from the CSS custom property --lineare-name: Bokeh's button groups carry no name of their own); the
    states, and the other names and values, are set in the browser."""
    import panel as pn

    groups = (pn.widgets.RadioButtonGroup, pn.widgets.CheckButtonGroup)
    for part in every_part(parts):
        if isinstance(part, pn.widgets.Widget):
            sheets = [WIDGET_FOCUS_CSS]
            if isinstance(part, groups) and (part.label or part.name):
                sheets.append(group_name_css(part.label or part.name))
        elif isinstance(part, pn.layout.Card):                  # a card's header is a button: the same ring
            sheets = [CARD_FOCUS_CSS]
        elif isinstance(part, (pn.pane.HTML, pn.pane.Markdown)):
            sheets = [TEXT_FOCUS_CSS]
        else:
            continue
        missing = [sheet for sheet in sheets if sheet not in part.stylesheets]
        if missing:
            part.stylesheets = [*part.stylesheets, *missing]


def every_part(parts):
    """Each of `parts` (Panel objects or Viewers) and everything inside them, in one walk: a Column made only to walk
    them would be one more Panel object for every page."""
    import panel as pn

    return [found for part in parts for found in pn.panel(part).select()]


def group_name_css(name):
    """A stylesheet that gives a widget's element the name `name` in --lineare-name, a CSS string written as JSON
    (whose escapes CSS reads alike; the browser sets a stylesheet as text, never as HTML)."""
    return ":host { --lineare-name: %s; }" % json.dumps(str(name), ensure_ascii=False)
