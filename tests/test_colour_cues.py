"""Meaning never carried by colour alone (issue 46): every page's pictures, read from their built Bokeh models, tell
their series and marks apart by something more than a colour; every sentence of both catalogs that names a colour
for a category names the mark, pattern or place that goes with it."""
import re

import numpy as np
import pytest
from babel.messages.pofile import read_po
from bokeh.models import ColumnDataSource, Legend, LegendItem
from bokeh.plotting import figure

from lineare.app.dashboards import DASHBOARDS
from tests.colour_cues import told_by_colour_alone
from tests.italian_pages import session_document

PAGES = [dashboard.slug for dashboard in DASHBOARDS]


@pytest.mark.parametrize("slug", PAGES)
def test_no_picture_of_a_page_tells_two_things_apart_by_colour_alone(slug):
    """Each page as a session builds it (its sections made on scroll too): no two series of different colours that
    look alike otherwise, no two colours of a coloured column without a mark, hatch, text or named row of their own.
    (The answers of «Where memory fails» that arrive from a worker: tests/test_recall_forensics.py.)"""
    from bokeh.plotting import figure as Figure

    doc, _session = session_document(slug, {"lang": "en"})
    figures = [model for model in doc.models if isinstance(model, Figure)]
    assert figures
    problems = [problem for picture in figures for problem in told_by_colour_alone(picture)]
    assert not problems, problems


def test_the_check_sees_what_colour_alone_tells():
    """The check itself, on small figures: it fails on each kind of colour-only difference and passes once the
    second cue is there."""
    def lines(dash):
        picture = figure()
        first = picture.line([0, 1], [0, 1], color="#0072b2")
        second = picture.line([0, 1], [1, 0], color="#d55e00", line_dash=dash)
        picture.add_layout(Legend(items=[LegendItem(label="a", renderers=[first]),
                                         LegendItem(label="b", renderers=[second])]))
        return picture

    assert told_by_colour_alone(lines("solid")) and not told_by_colour_alone(lines("dashed"))

    def marked_line(points):                  # markers along a line tell it apart, a single dot does not
        picture = lines("solid")
        x = list(np.linspace(0, 1, points))
        picture.legend.items[1].renderers.append(picture.scatter(x, x, marker="square", color="#d55e00"))
        return picture

    assert told_by_colour_alone(marked_line(1)) and not told_by_colour_alone(marked_line(5))

    def bars(hatch, marks):
        picture = figure()
        source = ColumnDataSource({"x": [1, 2, 3], "top": [1, 2, 3], "color": ["#0072b2", "#d55e00", "#d55e00"],
                                   "hatch": hatch})
        picture.vbar(x="x", top="top", width=0.8, color="color", hatch_pattern="hatch", source=source)
        picture.text(x=[1], y=[1.1], text={"value": "✓"} if marks else {"value": ""})
        return picture

    assert told_by_colour_alone(bars([" ", " ", " "], marks=False))
    assert not told_by_colour_alone(bars([" ", " ", " "], marks=True))          # the blue bar marked ✓
    assert not told_by_colour_alone(bars([" ", "/", "/"], marks=False))         # the orange ones striped
    assert told_by_colour_alone(bars([" ", "/", " "], marks=False))             # one orange bar like the blue


# a colour named for a category in a sentence, and the cues a picture draws beside colours: marks, patterns, dashes,
# shapes, frames and places (the cue named in the same sentence). A colour scale names no category: a message that
# maps a colour to a value ("blue: all", "red: close", "blue negative") is about a scale throughout, and so is a
# sentence that speaks of the scale
COLOUR = {"en": r"\b(blue|orange|orange-red|red|amber|green|yellow|grey|gray|purple|pink|black)\b",
          "it": r"\b(blu|arancio|arancione|ross[oaie]|ambra|verd[ei]|giall[oaie]|grigi[oaie]?|viola|ner[oaie]|rosa)\b"}
CUE = {"en": r"[✓✗━●]|\b(striped|hatched|dashed|dotted|solid|marked|squares?|dots?|diamonds?|triangles?|framed|"
             r"outlined|diagonal)\b",
       "it": r"[✓✗━●]|\b(a righe|tratteggiat\w*|punteggiat\w*|continu[ao]|segnat\w*|quadrat\w*|punt[oi]|rombi|"
             r"triangol\w*|incorniciat\w*|bordat\w*|diagonale)\b"}
VALUE = {"en": r"(negative|positive|close|fully|all|none)\b",
         "it": r"(negativ\w*|positiv\w*|molto|per intero|tutte|nessuna)\b"}
SCALE = {"en": r"\b(negative|positive|scale|paler)\b", "it": r"\b(negativ\w*|positiv\w*|scala|pallid\w*)\b"}


def colour_without_cue(text, lang):
    """The sentences of `text` that name a colour for a category without a cue beside it."""
    if re.search(COLOUR[lang] + r":?\s+" + VALUE[lang], text, re.I):
        return []
    return [sentence for sentence in re.split(r"(?<=[.!?;])\s+|\n+", text)
            if re.search(COLOUR[lang], sentence, re.I) and not re.search(CUE[lang], sentence, re.I)
            and not re.search(SCALE[lang], sentence, re.I)]


def test_a_sentence_that_names_a_colour_names_its_mark_too():
    """Every message of both catalogs, English and Italian: a sentence that tells the student what a colour means
    also names the mark, pattern, dash, shape or place the picture draws with it."""
    catalog = read_po(open("i18n/it/LC_MESSAGES/lineare.po", "rb"))
    found, named = [], 0
    for message in catalog:
        if not message.id:
            continue
        english = message.id if isinstance(message.id, tuple) else (message.id,)
        italian = message.string if isinstance(message.string, tuple) else (message.string,)
        for lang, texts in (("en", english), ("it", italian)):
            for text in texts:
                named += bool(re.search(COLOUR[lang], text or "", re.I))
                found += [(lang, sentence) for sentence in colour_without_cue(text or "", lang)]
    assert named > 20                                    # the catalogs were read, colours and all
    assert not found, found
