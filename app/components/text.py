"""Explanations next to the pictures: plain words at level *Elementare*, formulas at *Superiore*.

Formulas are written in LaTeX between `$…$` and turned into MathML on the server (latex2mathml),
which browsers render natively: no KaTeX/MathJax script and no web fonts to fetch, so the app stays
offline. (Panel bundles KaTeX's script and CSS but not its font files.)

latex2mathml builds an XML tree and then un-escapes its serialisation, so `\text{<img …>}` would come
out as live HTML. `formula` serialises the tree itself instead: every text is escaped, and only
presentation attributes survive (no `href`, `style`, event handlers).

Numbers in formulas are written with a decimal point in the source and shown in the page's language:
an Italian page gets `<mn>0,99</mn>` (LaTeX's `0{,}99` would come out as a number, an operator and a
number).
"""
import html
import logging
import re
from xml.etree.ElementTree import tostring

import panel as pn
import param
from latex2mathml.converter import convert_to_element

from lineare.app.i18n import _, current_language

TEXT_CSS = """
:host { font-size: calc(17px * var(--lineare-scale, 1)); line-height: 1.45; color: #1f2933; }
p { margin: 0 0 0.5em 0; }
math { font-size: 1.12em; }
.display { display: block; margin: 0.3em 0 0.6em 0; font-size: 1.15em; }
strong { color: #102a43; }
"""
log = logging.getLogger("lineare")
_MATH = re.compile(r"(\$\$.+?\$\$|\$.+?\$)", re.S)
_BOLD = re.compile(r"\*\*(.+?)\*\*")
# MathML presentation attributes latex2mathml writes; any other (href, style, on…) is dropped
_ATTRIBUTES = {"xmlns", "display", "mathvariant", "mathcolor", "mathbackground", "mathsize", "stretchy",
               "fence", "separator", "lspace", "rspace", "accent", "accentunder", "movablelimits", "largeop",
               "symmetric", "minsize", "maxsize", "form", "displaystyle", "scriptlevel", "linethickness",
               "columnalign", "columnlines", "columnspacing", "rowalign", "rowlines", "rowspacing", "frame",
               "framespacing", "notation", "width", "height", "depth", "voffset", "columnspan", "rowspan",
               "open", "close", "separators", "align", "equalrows", "equalcolumns"}


def formula(latex, display=False):
    """MathML for one LaTeX formula, safe whatever the LaTeX says (ours only, still: see the module doc);
    its numbers in the current language's decimal mark."""
    comma = current_language() == "it"
    try:
        math = convert_to_element(latex, display="block" if display else "inline")
    except Exception as error:                       # a formula latex2mathml cannot read: its source, escaped
        log.warning("formula %r not converted: %s: %s", latex[:80], type(error).__name__, error)
        return f"<code>{html.escape(latex)}</code>"
    for element in math.iter():
        # latex2mathml writes symbols as character references in the text: make them characters,
        # so that serialising escapes everything else once (`<` and `&` included)
        element.text = html.unescape(element.text) if element.text else element.text
        element.tail = html.unescape(element.tail) if element.tail else element.tail
        if comma and element.tag.endswith("mn") and element.text:
            element.text = element.text.replace(".", ",")
        for name in [name for name in element.attrib if name.lower() not in _ATTRIBUTES]:
            del element.attrib[name]
    return tostring(math, encoding="unicode")


def to_html(text):
    """Our explanation text → HTML: paragraphs on blank lines, **bold**, $inline$ and $$display$$ math.

    Everything outside the formulas is escaped, so a translation can never inject markup.
    """
    paragraphs = []
    for paragraph in re.split(r"\n\s*\n", text.strip()):
        parts = []
        for piece in _MATH.split(paragraph):
            if piece.startswith("$$"):
                parts.append(f'<span class="display">{formula(piece[2:-2], display=True)}</span>')
            elif piece.startswith("$") and piece.endswith("$") and len(piece) > 1:
                parts.append(formula(piece[1:-1]))
            else:
                parts.append(_BOLD.sub(r"<strong>\1</strong>", html.escape(piece)))
        paragraphs.append("<p>" + "".join(parts) + "</p>")
    return "".join(paragraphs)


class Explanation(pn.viewable.Viewer):
    """A short text that follows the session's level: `elementare` or `superiore` (either may be empty)."""

    elementare = param.String(default="")
    superiore = param.String(default="")
    level = param.Selector(default="elementare", objects=["elementare", "superiore"])
    veiled = param.Boolean(default=False, doc="hidden whatever its text, and its text not sent (a lesson card's "
                           "answer, before the student has acted)")
    shown = param.Boolean(default=True, doc="False: hidden whatever its text (notes switched off)")

    def __init__(self, session=None, **params):
        if session is not None:
            params.setdefault("level", session.level)
        layout = {name: params.pop(name) for name in ("width", "sizing_mode", "margin", "css_classes")
                  if name in params}
        extra = params.pop("stylesheets", [])
        super().__init__(**params)
        if "width" not in layout:
            layout.setdefault("sizing_mode", "stretch_width")
        layout.setdefault("margin", (4, 10))
        # its pane is made when the page first shows it: one that Explanations shows is never made
        self._pane, self._pane_params = None, dict(stylesheets=[TEXT_CSS, *extra], **layout)
        if session is not None:
            session.param.watch(lambda e: setattr(self, "level", e.new), "level")

    def html(self):
        """The HTML of the text at the current level; "" while veiled or without text."""
        text = self.superiore if self.level == "superiore" else self.elementare
        return to_html(text) if text and not self.veiled else ""

    @param.depends("elementare", "superiore", "level", "veiled", "shown", watch=True)
    def _draw(self):
        if self._pane is not None:
            self._pane.object = self.html()
            self._pane.visible = bool(self._pane.object) and self.shown

    def __panel__(self):
        if self._pane is None:
            self._pane = pn.pane.HTML(**self._pane_params)
            self._draw()
        return self._pane


# the parts of one text section, spaced as separate texts would be (each pane's 4 px margins above and below)
SECTION_CSS = """
.part { display: flow-root; }
.part + .part { margin-top: 8px; }
"""


class Explanations(pn.viewable.Viewer):
    """Explanations that follow one another on a page, drawn in one HTML pane: one text section is one Panel object
    and one Bokeh model, not one per paragraph. Each keeps its own texts, level, veil and visibility (a hidden one
    is left out); laid out as the first one asked (width, sizing_mode, margin, stylesheets)."""

    def __init__(self, *texts):
        super().__init__()
        self.texts = texts
        self._pane = pn.pane.HTML(**{**texts[0]._pane_params,
                                     "stylesheets": [*texts[0]._pane_params["stylesheets"], SECTION_CSS]})
        for text in texts:
            text.param.watch(self._draw, ["elementare", "superiore", "level", "veiled", "shown"])
        self._draw()

    def _draw(self, *_events):
        parts = [text.html() for text in self.texts if text.shown]
        self._pane.object = "".join(f'<div class="part">{part}</div>' for part in parts if part)
        self._pane.visible = bool(self._pane.object)

    def __panel__(self):
        return self._pane


def inline_html(text):
    """`to_html` for a short text inside a line (a table cell, a definition): without the paragraph."""
    converted = to_html(text)
    return converted[3:-4] if converted.startswith("<p>") and converted.count("<p>") == 1 else converted


# a narrow column's displayed formula: never wider than the column, even in presenter mode (larger type).
# The widest line we display is about 15.5 em of its own font, so 6.4 % of the column's width keeps it inside.
FIT_CSS = """
:host { container-type: inline-size; }
.display { font-size: min(1.15em, 6.4cqi); }
"""

POINT_STYLE = {"border-left": "6px solid #1d4f7a", "background": "#eef4fb", "border-radius": "6px"}


def point_box(text):
    """The sentence that says what to notice on a page, right under its title, framed: `text` (an Explanation, or
    any Panel object) carries the frame itself, its own margin turned into the frame's padding, rather than a
    Column around it (one Panel object and one Bokeh model fewer, on every page that has a point). Returns the
    framed Panel object."""
    part = text.__panel__() if isinstance(text, Explanation) else text
    if "point" in part.css_classes:                 # framed already
        return part
    top, right, bottom, left = _four(part.margin)
    part.param.update(styles={**part.styles, **POINT_STYLE, "padding": f"{top}px {right}px {bottom}px {left}px"},
                      css_classes=[*part.css_classes, "point"], sizing_mode="stretch_width", margin=(6, 10, 8, 10))
    return part


def _four(margin):
    """A Panel margin (one number, (vertical, horizontal) or (top, right, bottom, left)) as four numbers."""
    if isinstance(margin, (int, float)):
        return (margin,) * 4
    return (*margin, *margin) if len(margin) == 2 else tuple(margin)


# a table wider than a phone's column scrolls sideways in its own box, not the page: the box is a named region
# the keyboard can focus and scroll; a shadow at an edge shows there is more that way (the backgrounds scrolled
# with the content cover the shadows where the table ends), and a line under it says so when the box is
# narrower than the table. In a table of short cells, a cell stays on one line (headings wrap between words),
# one of class "wrap" wraps within a minimum width.
SCROLL_BOX_CSS = """
.scroll-frame { container-type: inline-size; max-width: 100%; }
.scroll-box { overflow-x: auto; max-width: 100%;
  background: linear-gradient(to right, #ffffff 30%, rgba(255, 255, 255, 0)) left / 32px 100% no-repeat local,
              linear-gradient(to left, #ffffff 30%, rgba(255, 255, 255, 0)) right / 32px 100% no-repeat local,
              radial-gradient(farthest-side at 0 50%, rgba(16, 42, 67, 0.28), rgba(16, 42, 67, 0)) left / 12px 100%
                no-repeat scroll,
              radial-gradient(farthest-side at 100% 50%, rgba(16, 42, 67, 0.28), rgba(16, 42, 67, 0)) right / 12px 100%
                no-repeat scroll; }
.scroll-box:focus-visible { outline: 3px solid #102a43; outline-offset: 2px; }
.scroll-box.one-line td { white-space: nowrap; }
.scroll-box.one-line .wrap { white-space: normal; min-width: 16em; }
.scroll-hint { display: none; margin: 2px 0 6px 0; font-size: calc(16px * var(--lineare-scale, 1)); color: #52606d; }
"""


def scroll_box(table_html, name, fits=40, one_line=True):
    """`table_html` (trusted HTML: ours, escaped) in a box that scrolls sideways when the column is narrower;
    `name`: what the table is (the region's name, for a screen reader); `fits`: about how wide the table is, in
    ems of its type: under that width the line "scroll sideways" shows; `one_line`: short cells, each kept on one
    line (a table of sentences wraps them). Its styles: SCROLL_BOX_CSS."""
    hint = html.escape(_("Scroll sideways to see every column →"))
    # a container query cannot read a variable: its width is written into the box's own rule
    show = f"<style>@container (max-width: {float(fits):.1f}em) {{ .scroll-hint {{ display: block; }} }}</style>"
    kind = "scroll-box one-line" if one_line else "scroll-box"
    return (f'<div class="scroll-frame">{show}<div class="{kind}" role="region" '
            f'aria-label="{html.escape(name, quote=True)}" tabindex="0">{table_html}</div>'
            f'<p class="scroll-hint" aria-hidden="true">{hint}</p></div>')
