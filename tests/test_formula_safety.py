"""Formulas are safe HTML whatever their LaTeX says (latex2mathml alone un-escapes its own output)."""
import html.parser

import latex2mathml.commands
import pytest

from lineare.app.components.text import formula, inline_html, to_html

HOSTILE = ['\\text{<img src=x onerror=alert(1)>}', '\\mbox{<script>alert(1)</script>}', 'a < b & c > d',
           '\\href{javascript:alert(1)}{x}', '\\style{position:fixed;inset:0}{x}', '\\color{red" onclick="x}{y}',
           '\\mathrm{</math><img src=x onerror=alert(1)>}', '\\text{&lt;b&gt;}', '\\unicode{x}']
MATHML = {"math", "mrow", "mi", "mn", "mo", "mtext", "mspace", "msub", "msup", "msubsup", "mfrac", "msqrt", "mroot",
          "mover", "munder", "munderover", "mstyle", "mtable", "mtr", "mtd", "menclose", "mpadded", "mphantom"}
EVENTS = ("on",)


class Markup(html.parser.HTMLParser):
    """The elements and attributes a browser's parser would make of `text`."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.tags, self.attributes, self.data = [], set(), []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes.update(name for name, _ in attrs)

    def handle_data(self, data):
        self.data.append(data)


def every_command():
    return sorted({v for v in vars(latex2mathml.commands).values() if isinstance(v, str) and v.startswith("\\")})


@pytest.mark.parametrize("latex", HOSTILE + [c + "{<img src=x onerror=alert(1)>}{\" onmouseover=\"x}{z}"
                                             for c in every_command()])
def test_no_formula_makes_html_or_handlers(latex):
    markup = Markup(formula(latex))
    assert set(markup.tags) <= MATHML | {"code"}, markup.tags
    assert not {a for a in markup.attributes if a.startswith(EVENTS)} and not markup.attributes & {"href", "style"}


def test_text_in_a_formula_stays_text():
    markup = Markup(formula("\\text{<img src=x onerror=alert(1)>}"))
    assert markup.tags == ["math", "mrow", "mtext"]
    assert "".join(markup.data).replace("\xa0", " ") == "<img src=x onerror=alert(1)>"   # shown, not run
    assert Markup(formula("a < b & c")).data == ["a", "<", "b", "&", "c"]


def test_our_formulas_are_unchanged():
    out = formula("S_t = \\alpha_t S_{t-1} + v_t k_t^\\top")
    assert Markup(out).tags[:3] == ["math", "mrow", "msub"] and "α" in out and "⊤" in out and "−" in out
    assert 'display="block"' in formula("x", display=True)


def test_a_formula_latex2mathml_cannot_read_shows_its_source():
    out = to_html("before $\\left( x$ after")
    assert "<code>\\left( x</code>" in out and out.startswith("<p>before ")


@pytest.mark.parametrize("prose", ['<img src=x onerror=alert(1)>', '<script>alert(1)</script> and **<b>bold</b>**',
                                   'a < b & c > d', '" onmouseover="x', '&lt;i&gt; already escaped'])
def test_prose_outside_formulas_is_shown_not_run(prose):
    """A translation is text: whatever it holds outside $…$ reaches the page as the characters it wrote."""
    for converted, wrapper in ((to_html(prose + " $x$"), "p"), (inline_html(prose), None)):
        markup = Markup(converted)
        assert set(markup.tags) <= {"p", "strong", "math", "mrow", "mi"}, markup.tags
        assert not markup.attributes - {"xmlns", "display"}
        shown = "".join(markup.data).replace("**", "")
        assert shown.startswith(prose.replace("**", "")), shown
        assert (markup.tags[0] == wrapper) if wrapper else "p" not in markup.tags
