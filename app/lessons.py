"""Lessons: a path through the chapter, three to five cards a page, each predict → act → observe.

A lesson lives in the URL (`?lesson=state&card=2`): the card's `setup` is applied to the page's
query before the page is built, so a shared link to card 3 opens card 3 on the settings it needs, and
the rest of the page works as usual (the student may turn any knob). The right prediction and the
observation are computed from the page's store after it is built, never written by hand: a card
whose model changes still tells the truth.

Each page's cards are the tuple CARDS of app/dashboards/<page>/lesson.py (app.cards.Card records):

    Card(setup={"variant": "deltanet", "preset": "overwrite", "t": "0"},
         prompt=N_("…"), choices=(N_("21"), N_("99")), correct=lambda store: …,
         at=lambda store: …, press=N_("Press ▶ Play …"), observe=lambda store: _("…").format(…),
         answer=lambda store: [the page's words that state it], hides=("point", "readout"), look=("player",))

The card owns the page until the student has acted: the parts it names in `hides` (its view's `parts()`, a
dictionary of the page's texts, series and marks by name) are held back (app/components/veil.py) and come back
when the player reaches `at`, when the sketch of a `guess` is drawn, or with the choice itself on a card that has
neither. The free laboratory (no `lesson=` in the URL) holds nothing back.
"""
import html
import importlib
import importlib.util

from lineare.app.components.later import SectionPart
from lineare.app.dashboards import BY_SLUG, DASHBOARDS
from lineare.app.i18n import _

MAX_CARD = 20                        # a URL's card number beyond this is refused, not looked up
SKETCH = "#7b3294"                   # the student's sketch, drawn over a picture: purple, dot-dashed, hollow diamonds



def _written(dashboard):
    """The cards of `dashboard` (CARDS in app/dashboards/<package>/lesson.py), or None."""
    package = getattr(dashboard.build, "package", None)
    if package is None or importlib.util.find_spec(f"lineare.app.dashboards.{package}.lesson") is None:
        return None
    return importlib.import_module(f"lineare.app.dashboards.{package}.lesson").CARDS


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
    home = (f"./?lang={session.language}&level={session.level}" + ("&present=1" if session.present else "")
            + "#lessons")
    return {"previous_href": previous or "", "next_href": after or "", "back_href": link(slug, number, session),
            "list_href": home}


def parts(view, names, now=True):
    """The page's parts named `names` (its view's `parts()`): a list of Panel objects and Bokeh models. A part in a
    section below the first screen is made now (`now`), or skipped when it is not made yet."""
    table, found = view.parts() if view is not None else {}, []
    for name in names:
        part = table[name]
        if isinstance(part, SectionPart):
            found += part.now() if now or part.later.made else []
        else:
            found += list(part)
    return found


def hold_back(veil, view, names):
    """Hold back the parts `names` of the page: those of a section not yet made when it is made (never sent)."""
    table = view.parts() if view is not None else {}
    for name in names:
        part = table[name]
        if isinstance(part, SectionPart):
            part.when_made(veil.hold)
        else:
            veil.hold(part)


def setup_values(store, card):
    """The store's values of the settings the card opens on (what makes its observation true)."""
    names = [name for name, key in getattr(store, "URL", {}).items() if key in card.setup]
    return {name: getattr(store, name) for name in names}


def card_words(slug, number, session):
    """The card's words: its verdicts, links and the sketch's instructions, in the page's language."""
    words = {"right": _("Right."), "wrong": _("Not this time."), "previous": _("Previous card"),
             "next": _("Next card"), "next_lesson": _("Next lesson"), "label": _("Lesson card"),
             "list": _("All lessons"), "end": _("This is the lesson's last card."),
             "stale": _("The settings have left the card's: what it observes holds for the card's own settings, "
                        "not for these."),
             "back": _("Back to the card's settings"),
             "sketch_area": _("Your sketch of the line you expect"),
             "sketch_how": _("Draw the line you expect on the outlined picture: drag with the mouse or a finger, or "
                             "tap a few points; by keyboard, Tab to the picture, then the arrow keys."),
             "sketch_clear": _("Clear"), "sketch_check": _("Show the real line"),
             "play": "▶ " + _("Play") + " / ❚❚", "step": _("Step") + " →", "step_of": _("Step {t} of {n}"),
             "sketch_point": _("Point {n} of {count}, at {height}% of the axis."),
             "card_of": _("Card {n} of {count}").format(n=number, count=len(LESSONS[slug]))}
    return {**words, **links(slug, number, session)}


def lesson_card(session, store, view=None):
    """The card of this page's lesson, drawn for `store` (None when no lesson is asked for), holding back on the
    page `view` what its card names in `hides` until the student has acted."""
    import panel as pn

    from lineare.app.components.lesson import LessonCard
    from lineare.app.components.text import inline_html
    from lineare.app.components.veil import Veil

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
        observe=inline_html(card.observe(store)), words=card_words(slug, number, session),
        last=number == len(LESSONS[slug]), sizing_mode="stretch_width")
    session.param.watch(lambda _e: setattr(widget, "words", card_words(slug, number, session)),
                        ["level", "language", "present"])
    # the observation is true for the card's settings: once a knob leaves them, the card says so
    opened = setup_values(store, card)
    if opened:
        store.param.watch(lambda _e: setattr(widget, "stale", setup_values(store, card) != opened), list(opened))
    looked = parts(view, card.look)
    for thing in looked:
        thing = thing.__panel__() if isinstance(thing, pn.viewable.Viewer) else thing
        thing.css_classes = [*thing.css_classes, "lesson-look"]
    for thing in parts(view, card.lead):
        thing.css_classes = [*thing.css_classes, "lesson-lead"]
    widget.param.update(look=bool(looked), present=session.present)

    veil = Veil()
    hold_back(veil, view, card.hides)
    sketch = Sketched(widget, card, store, parts(view, [card.guess.picture])[0]) if card.guess else None
    players = [p for p in parts(view, ["player"] if "player" in (view.parts() if view else {}) else [])]

    def act():
        if widget.acted:
            return
        with pn.io.hold():
            veil.lift()
            for player in players:                      # a series given back is drawn at the browser's frame
                player.new_run(player.length)
            widget.acted = True

    def chose(event):
        if event.new >= 0 and card.at is None and card.guess is None:
            act()

    def played(event):
        if event.new and widget.chosen >= 0:
            act()

    def guessed(event):
        if not event.new or widget.chosen < 0:
            return
        sketch.draw(event.new)
        if card.at is None:
            act()

    widget.param.watch(chose, "chosen")
    widget.param.watch(played, "played")
    widget.param.watch(guessed, "guess")
    # a knob moved off the card's settings: the page is the free laboratory again, nothing held back
    widget.param.watch(lambda event: veil.lift() if event.new else None, "stale")
    return widget


class Sketched:
    """The student's sketch on a card's picture: a series of its own ("your guess"), drawn where the browser's
    sketch lay, and the sentence on where it differs from the true curve (`card.guess.curve`)."""

    def __init__(self, widget, card, store, figure):
        from bokeh.models import ColumnDataSource, LegendItem

        self.widget, self.card, self.store, self.figure = widget, card, store, figure
        self.source = ColumnDataSource({"x": [], "y": []})
        line = figure.line("x", "y", source=self.source, color=SKETCH, line_dash="dotdash", line_width=3,
                           level="overlay")
        dots = figure.scatter("x", "y", source=self.source, line_color=SKETCH, fill_color="white", marker="diamond",
                              size=9, line_width=2, level="overlay")
        for legend in figure.legend:
            legend.items = [*legend.items, LegendItem(label=_("your guess"), renderers=[line, dots])]
        widget.param.update(guess_figure=figure.id, guess_along=card.guess.along)

    def draw(self, sketch):
        from lineare.app.guess import differ, to_data

        x, y = to_data(sketch, self.figure)
        self.source.data = {"x": x, "y": y}
        truth_x, truth_y = self.card.guess.curve(self.store)
        self.widget.differ = html.escape(differ(sketch, self.figure, truth_x, truth_y, self.card.guess.along))
