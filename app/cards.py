"""What a lesson card is, and the small helpers its answers are written with.

A record of its own so that the lesson framework (app/lessons.py) and each page's cards
(app/dashboards/<page>/lesson.py) can both import it. Card modules import their page's model inside
the card's functions, not at the top: the landing page lists the lessons without loading torch.

A card has three moments, and owns the page in each:

- *before*: its question and choices; every part of the page it names in `hides` is held back (a text not
  drawn, a picture's series not sent, a legend entry or a title left out), so nothing on the page answers;
- *after the choice*: still nothing that answers; the card says what to do (`press`: play to frame `at`, or
  sketch the curve it asks about on the empty axes of `guess`), and what it names in `look` is on screen;
- *after the action* (the frame `at` reached, the guess drawn, or at once for a card with neither): the
  observation and the verdict, and the held-back parts come back.

`answer(store)` gives the page's own words (or numbers) that state the answer, computed from the store:
tests/test_lessons.py checks, card by card and in both languages, that none of them is visible before the
action and that all of them are after it.
"""
import math
from dataclasses import dataclass
from typing import Callable

from lineare.app.i18n import format_number


@dataclass(frozen=True)
class Guess:
    """A curve the student sketches on the empty axes of a picture before its true series is drawn over it."""

    picture: str                     # the name of the figure among the page's parts (its view's `parts()`)
    curve: Callable                  # store → (x, y): the true curve in the picture's units, computed from the store
    along: str = "x"                 # the axis the curve is a function of ("y": a row per token, drawn downwards)


@dataclass(frozen=True)
class Card:
    setup: dict                      # URL parameters this card opens on (strings, as in a URL)
    prompt: str                      # msgid: the question
    choices: tuple                   # msgids (or plain numbers) to choose from
    correct: Callable                # store → index of the right choice
    observe: Callable                # store → translated text: what happened
    answer: Callable                 # store → the page's texts (translated) that state the answer once it is out
    press: str = ""                  # msgid: what to do after choosing (empty: the answer comes with the choice)
    at: Callable | None = None       # store → the player's frame at which the answer is out (None: no player)
    guess: Guess | None = None       # a curve to sketch before the truth is drawn (the sketch is the action)
    hides: tuple = ()                # names of the page's parts (its view's `parts()`) held back until the action
    look: tuple = ()                 # names of the parts the card speaks of: brought under it and outlined
    # names of what lies just above the first looked part and comes up with it when the screen has room for both
    # (not outlined): a row the card speaks of stays whole instead of half under the card
    lead: tuple = ()


def percent(share):
    """0.834 → '83' (written in the current language)."""
    return format_number(round(100 * float(share)))


def nearest(values, x, log=False):
    """Index of the value closest to x (on a log scale: by ratio, for sizes that differ tenfold)."""
    distance = (lambda v: abs(math.log(v / x))) if log else (lambda v: abs(v - x))
    return min(range(len(values)), key=lambda i: distance(values[i]))


def decimal(x, decimals=1):
    return format_number(round(float(x), decimals), decimals)


def plain(text):
    """A page's text as a reader sees it: our Markdown or HTML without its marks, spaces collapsed (what a card's
    `answer` gives, and what tests/test_lessons.py compares with the page)."""
    import html
    import re

    from lineare.app.components.text import to_html

    shown = re.sub(r"<[^>]+>", "", to_html(text) if "<" not in text else text)
    return " ".join(html.unescape(shown).split())
