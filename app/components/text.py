"""Explanations next to the pictures: plain words at level *Elementare*, formulas at *Superiore*.

Formulas are written in LaTeX between `$…$` and turned into MathML on the server (latex2mathml),
which browsers render natively: no KaTeX/MathJax script and no web fonts to fetch, so the app stays
offline. (Panel bundles KaTeX's script and CSS but not its font files.)
"""
import html
import re

import panel as pn
import param
from latex2mathml.converter import convert

TEXT_CSS = """
:host { font-size: 17px; line-height: 1.45; color: #1f2933; }
p { margin: 0 0 0.5em 0; }
math { font-size: 1.12em; }
.display { display: block; margin: 0.3em 0 0.6em 0; font-size: 1.15em; }
strong { color: #102a43; }
"""
_MATH = re.compile(r"(\$\$.+?\$\$|\$.+?\$)", re.S)
_BOLD = re.compile(r"\*\*(.+?)\*\*")


def formula(latex, display=False):
    """MathML for one LaTeX formula (our own strings only: never pass user input here)."""
    return convert(latex, display="block" if display else "inline")


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

    def __init__(self, session=None, **params):
        if session is not None:
            params.setdefault("level", session.level)
        layout = {name: params.pop(name) for name in ("width", "sizing_mode", "margin") if name in params}
        super().__init__(**params)
        if "width" not in layout:
            layout.setdefault("sizing_mode", "stretch_width")
        layout.setdefault("margin", (4, 10))
        self._pane = pn.pane.HTML(stylesheets=[TEXT_CSS], **layout)
        if session is not None:
            session.param.watch(lambda e: setattr(self, "level", e.new), "level")
        self._draw()

    @param.depends("elementare", "superiore", "level", watch=True)
    def _draw(self):
        text = self.superiore if self.level == "superiore" else self.elementare
        self._pane.object = to_html(text) if text else ""
        self._pane.visible = bool(text)

    def __panel__(self):
        return self._pane


def inline_html(text):
    """`to_html` for a short text inside a line (a table cell, a definition): without the paragraph."""
    converted = to_html(text)
    return converted[3:-4] if converted.startswith("<p>") and converted.count("<p>") == 1 else converted
