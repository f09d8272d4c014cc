"""Lessons: a path through the chapter, three to five cards a page, each predict → press → observe.

A lesson lives in the URL (`?lesson=state&card=2`): the card's `setup` is applied to the page's
query before the page is built, so a shared link to card 3 opens card 3 on the settings it needs, and
the rest of the page works as usual (the student may turn any knob). The right prediction and the
observation are computed from the page's store after it is built, never written by hand: a card
whose model changes still tells the truth.

    Card(setup={"variant": "deltanet", "preset": "overwrite", "t": "0"},
         prompt=N_("…"), choices=(N_("21"), N_("99")), correct=lambda store: …,
         at=lambda store: …, press=N_("Press ▶ Play …"), observe=lambda store: _("…").format(…))
"""
import html
from dataclasses import dataclass
from typing import Callable

from app.i18n import N_, _, format_number

MAX_CARD = 20                        # a URL's card number beyond this is refused, not looked up


@dataclass(frozen=True)
class Card:
    setup: dict                      # URL parameters this card opens on (strings, as in a URL)
    prompt: str                      # msgid: the question
    choices: tuple                   # msgids (or plain numbers) to choose from
    correct: Callable                # store → index of the right choice
    observe: Callable                # store → translated text: what happened
    press: str = ""                  # msgid: what to do to see it (empty: the answer shows at once)
    at: Callable | None = None       # store → the frame at which it shows (None: at once)


# ----------------------------------------------------------------------------- The state fills up

def _asked(store, name):
    """The step where `name` is asked, and the memory's (answer, similarity, expected) there."""
    result = store.result
    t = next(i for i, token in enumerate(result.tokens) if token.kind == "ask" and token.key == name)
    return t, result.answers[t]


def _mixed(store, name):
    """0: the old number, 1: the new one, 2: a mix of both (the read-out matches neither well)."""
    _t, (answer, similarity, _expected) = _asked(store, name)
    if similarity < 0.9:
        return 2
    return 1 if answer == "99" else 0


def _percent(similarity):
    return format_number(round(100 * similarity))


def _all_right(store):
    answers = [a for token, a in zip(store.result.tokens, store.result.answers) if token.kind == "ask"]
    return sum(answer == expected for answer, _s, expected in answers), len(answers)


STATE = (
    Card(setup={"mode": "mechanism", "variant": "linear", "source": "preset", "preset": "phonebook",
                "keys": "perpendicular", "heads": "1", "t": "0"},
         prompt=N_("Four names are stored, each in a column of its own, then asked for. Will the memory "
                   "answer all four questions right?"),
         choices=(N_("Yes, all four"), N_("No, some get mixed up")),
         correct=lambda store: 0 if _all_right(store)[0] == _all_right(store)[1] else 1,
         at=lambda store: store.length() - 1,
         press=N_("Press ▶ Play (or → step by step) and watch the answers under the questions."),
         observe=lambda store: _("{right} of {asked} right: with a column each, no pair gets in another's "
                                 "way.").format(right=_all_right(store)[0], asked=_all_right(store)[1])),
    Card(setup={"mode": "mechanism", "variant": "linear", "source": "preset", "preset": "overwrite",
                "keys": "perpendicular", "heads": "1", "t": "0"},
         prompt=N_("Anna:21 is stored, and later Anna:99. Linear attention only adds. Asked «Anna?», what "
                   "will it answer?"),
         choices=("21", "99", N_("a mix of both")),
         correct=lambda store: _mixed(store, "Anna"),
         at=lambda store: _asked(store, "Anna")[0],
         press=N_("Step with → up to «Anna?» and look at the answer and at Anna's column."),
         observe=lambda store: _("It answers {answer}, but the match is only {percent}%: Anna's column holds "
                                 "21 and 99 added together.").format(
             answer=_asked(store, "Anna")[1][0], percent=_percent(_asked(store, "Anna")[1][1]))),
    Card(setup={"mode": "mechanism", "variant": "deltanet", "source": "preset", "preset": "overwrite",
                "keys": "perpendicular", "heads": "1", "beta": "1", "t": "0"},
         prompt=N_("The same words, now with DeltaNet, which corrects before it writes. What will it "
                   "answer for «Anna?»?"),
         choices=("21", "99", N_("a mix of both")),
         correct=lambda store: _mixed(store, "Anna"),
         at=lambda store: _asked(store, "Anna")[0],
         press=N_("Step with → and watch «What fades or is erased» at Anna:99."),
         observe=lambda store: _("It answers {answer} with a match of {percent}%: at Anna:99 the correction "
                                 "first took 21 out of Anna's column.").format(
             answer=_asked(store, "Anna")[1][0], percent=_percent(_asked(store, "Anna")[1][1]))),
    Card(setup={"mode": "mechanism", "variant": "linear", "source": "preset", "preset": "crowd",
                "keys": "perpendicular", "heads": "1", "t": "0"},
         prompt=N_("Now 24 names for 16 columns. Will «Anna?» still get back 26?"),
         choices=(N_("Yes"), N_("No")),
         correct=lambda store: 0 if _asked(store, "Anna")[1][0] == "26" and _asked(store, "Anna")[1][1] > 0.9 else 1,
         at=lambda store: _asked(store, "Anna")[0],
         press=N_("Press ▶ Play and watch the gauge of free columns turn red."),
         observe=lambda store: _("It answers {answer} (match {percent}%): the 17th name had to share Anna's "
                                 "column. A summary of fixed size has room for only so many names.").format(
             answer=_asked(store, "Anna")[1][0], percent=_percent(_asked(store, "Anna")[1][1]))),
)

LESSONS = {"state": STATE}
TITLES = {"state": N_("The state fills up")}


def card_of(session):
    """(slug, number, Card) of the lesson the session's URL asks for, or None."""
    slug, number = session.lesson, session.card
    cards = LESSONS.get(slug)
    if not cards or not 1 <= number <= len(cards):
        return None
    return slug, number, cards[number - 1]


def apply_setup(args, card):
    """The page's URL arguments with the card's setup over them (a shared link needs only lesson and card)."""
    args.update({key: [value.encode()] for key, value in card.setup.items()})


def link(slug, number, session):
    return (f"./{slug}?lang={session.language}&level={session.level}&lesson={slug}&card={number}"
            + ("&present=1" if session.present else ""))


def neighbours(slug, number, session):
    """Links to the previous and the next card (across pages, in the chapter's order), or None."""
    path = [(s, n) for s in LESSONS for n in range(1, len(LESSONS[s]) + 1)]
    i = path.index((slug, number))
    previous = link(*path[i - 1], session) if i > 0 else None
    after = link(*path[i + 1], session) if i + 1 < len(path) else None
    return previous, after


def lesson_card(session, store):
    """The card of this page's lesson, drawn for `store` (None when no lesson is asked for)."""
    from app.components.lesson import LessonCard
    from app.components.text import inline_html

    found = card_of(session)
    if found is None:
        return None
    slug, number, card = found
    previous, after = neighbours(slug, number, session)
    heading = html.escape(_("Lesson: {title} · card {n} of {count}").format(
        title=_(TITLES[slug]), n=number, count=len(LESSONS[slug])))
    return LessonCard(
        heading=heading, prompt=inline_html(_(card.prompt)),
        choices=[html.escape(_(c)) for c in card.choices], correct=card.correct(store),
        at=card.at(store) if card.at else -1, press=inline_html(_(card.press)) if card.press else "",
        observe=inline_html(card.observe(store)),
        words={"right": _("Right."), "wrong": _("Not this time."), "previous": _("Previous card"),
               "next": _("Next card"), "previous_href": previous or "", "next_href": after or "",
               "label": _("Lesson card")},
        sizing_mode="stretch_width")
