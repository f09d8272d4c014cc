"""What a lesson card is, and the small helpers its answers are written with.

A record of its own so that the lesson framework (app/lessons.py) and each page's cards
(app/dashboards/<page>/lesson.py) can both import it. Card modules import their page's model inside
the card's functions, not at the top: the landing page lists the lessons without loading torch.
"""
import math
from dataclasses import dataclass
from typing import Callable

from app.i18n import format_number


@dataclass(frozen=True)
class Card:
    setup: dict                      # URL parameters this card opens on (strings, as in a URL)
    prompt: str                      # msgid: the question
    choices: tuple                   # msgids (or plain numbers) to choose from
    correct: Callable                # store → index of the right choice
    observe: Callable                # store → translated text: what happened
    press: str = ""                  # msgid: what to do to see it (empty: the answer shows at once)
    at: Callable | None = None       # store → the frame at which it shows (None: at once)
    # view → what on the page states the answer (Panel objects or Bokeh models), hidden until a choice
    veil: Callable | None = None
    # view → what the card asks about, when it lies below the first screen: brought into view and outlined
    look: Callable | None = None
    # view → what lies just above that part and comes up with it when the screen has room for both (not
    # outlined): a row the card speaks of stays whole instead of half under the card
    lead: Callable | None = None


def percent(share):
    """0.834 → '83' (written in the current language)."""
    return format_number(round(100 * float(share)))


def nearest(values, x, log=False):
    """Index of the value closest to x (on a log scale: by ratio, for sizes that differ tenfold)."""
    distance = (lambda v: abs(math.log(v / x))) if log else (lambda v: abs(v - x))
    return min(range(len(values)), key=lambda i: distance(values[i]))


def decimal(x, decimals=1):
    return format_number(round(float(x), decimals), decimals)
