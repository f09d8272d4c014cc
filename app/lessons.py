"""Lessons: a path through the chapter, three to five cards a page, each predict → press → observe.

A lesson lives in the URL (`?lesson=state&card=2`): the card's `setup` is applied to the page's
query before the page is built, so a shared link to card 3 opens card 3 on the settings it needs, and
the rest of the page works as usual (the student may turn any knob). The right prediction and the
observation are computed from the page's store after it is built, never written by hand: a card
whose model changes still tells the truth.

Each page's cards are the tuple CARDS of app/dashboards/<page>/lesson.py (app.cards.Card records):

    Card(setup={"variant": "deltanet", "preset": "overwrite", "t": "0"},
         prompt=N_("…"), choices=(N_("21"), N_("99")), correct=lambda store: …,
         at=lambda store: …, press=N_("Press ▶ Play …"), observe=lambda store: _("…").format(…))

A page without a player reveals the observation as soon as a prediction is chosen (no `at`, no `press`):
its card opens on the settings that show the answer.
"""
import html
import importlib
import importlib.util

from app.dashboards import BY_SLUG, DASHBOARDS
from app.i18n import _

MAX_CARD = 20                        # a URL's card number beyond this is refused, not looked up



def _written(dashboard):
    """The cards of `dashboard` (CARDS in app/dashboards/<package>/lesson.py), or None."""
    package = getattr(dashboard.build, "package", None)
    if package is None or importlib.util.find_spec(f"app.dashboards.{package}.lesson") is None:
        return None
    return importlib.import_module(f"app.dashboards.{package}.lesson").CARDS


# the path through the chapter: the dashboards' order
LESSONS = {d.slug: cards for d in DASHBOARDS if (cards := _written(d)) is not None}
TITLES = {slug: BY_SLUG[slug].title for slug in LESSONS}


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


def links(slug, number, session):
    """The card's words that are links: they follow the page's level (switched in place, without a reload)."""
    previous, after = neighbours(slug, number, session)
    return {"previous_href": previous or "", "next_href": after or "", "back_href": link(slug, number, session)}


def veil(things, shown):
    """Hide (or show again) what states a card's answer: an explanation, any other Panel object or a Bokeh
    model (a chart's note). Not drawn at all: a hidden box's text would still reach a screen reader, and
    Panel's text panes draw their text visible inside a box made invisible."""
    from app.components.text import Explanation

    for thing in things:
        if isinstance(thing, Explanation):
            thing.veiled = not shown
        else:
            thing.visible = shown


def setup_values(store, card):
    """The store's values of the settings the card opens on (what makes its observation true)."""
    names = [name for name, key in getattr(store, "URL", {}).items() if key in card.setup]
    return {name: getattr(store, name) for name in names}


def lesson_card(session, store, view=None):
    """The card of this page's lesson, drawn for `store` (None when no lesson is asked for); `view` is the
    page's view, whose texts that state the answer (the card's `veil`) stay hidden until a choice."""
    import panel as pn

    from app.components.lesson import LessonCard
    from app.components.text import inline_html

    found = card_of(session)
    if found is None:
        return None
    slug, number, card = found
    heading = html.escape(_("Lesson: {title} · card {n} of {count}").format(
        title=_(TITLES[slug]), n=number, count=len(LESSONS[slug])))
    widget = LessonCard(
        heading=heading, prompt=inline_html(_(card.prompt)),
        choices=[html.escape(_(c)) for c in card.choices], correct=card.correct(store),
        at=card.at(store) if card.at else -1, press=inline_html(_(card.press)) if card.press else "",
        observe=inline_html(card.observe(store)),
        words={"right": _("Right."), "wrong": _("Not this time."), "previous": _("Previous card"),
               "next": _("Next card"), "label": _("Lesson card"),
               "stale": _("The settings have left the card's: what it observes holds for the card's own settings, "
                        "not for these."),
               "back": _("Back to the card's settings"), **links(slug, number, session)},
        sizing_mode="stretch_width")
    session.param.watch(lambda _e: setattr(widget, "words", {**widget.words, **links(slug, number, session)}),
                        ["level", "language", "present"])
    # the observation is true for the card's settings: once a knob leaves them, the card says so
    opened = setup_values(store, card)
    if opened:
        store.param.watch(lambda _e: setattr(widget, "stale", setup_values(store, card) != opened), list(opened))
    looked = card.look(view) if card.look and view is not None else []
    for thing in looked:
        thing = thing.__panel__() if isinstance(thing, pn.viewable.Viewer) else thing
        thing.css_classes = [*thing.css_classes, "lesson-look"]
    for thing in card.lead(view) if card.lead and view is not None else []:
        thing.css_classes = [*thing.css_classes, "lesson-lead"]
    widget.param.update(look=bool(looked), present=session.present)
    veiled = card.veil(view) if card.veil and view is not None else []
    if veiled:
        veil(veiled, shown=False)
        widget.param.watch(lambda e: veil(veiled, shown=e.new >= 0), "chosen")
    return widget
