"""The teacher's side of a live class: a panel on a lesson page in presenter mode (the projector).

    panel = class_panel(session, slug, number, card, store, on_reveal)   # app/shell.py, presenter mode only

*Start a class* opens a room: the projector shows its short code, the address to open and its QR code (drawn here
with segno, as SVG: no network), then how many joined and how many answered, live. *Show answers* draws the
distribution of the choices; *Reveal* runs the card's action on the page (`on_reveal`: what app/lessons.py's
card does when a student acts) and tells every phone whether it was right, with the card's observation; *Next
card* moves the room (and every phone) to the lesson's next card and the projector follows its link; *End class*
shows a summary of the lesson and the class's results as CSV (counts per choice, share right: nobody's name).

Only the teacher's browser can move the room: opening it gives this session the room's secret (`grant`), which
its browser keeps in the tab (sessionStorage, never in a link: the address bar is on the projector) and writes
back as `key` when the lesson's next page opens. A session without the secret has nothing to send that the room
takes. One address opens at most ROOMS_PER_ADDRESS rooms in a burst (then one per ROOM_EVERY_S, per process).
"""
import csv
import html
import io

import param
from panel.custom import JSComponent

from lineare.app.classroom import live
from lineare.app.classroom.phone import JS, Bucket, Shaped, browser_accepts
from lineare.app.classroom.store import Refused
from lineare.app.i18n import LANGUAGES, _, format_number, language, ngettext

ROOMS_PER_ADDRESS, ROOM_EVERY_S = 5, 600.0
COMMANDS = ("start", "show", "reveal", "next", "end", "close")
_opened = {}                  # address → Bucket of rooms opened (this process)


def may_open(address):
    """Count one room opened from `address`; False once it opened ROOMS_PER_ADDRESS lately (in this process)."""
    for old in [a for a, b in _opened.items() if b.full()]:
        del _opened[old]
    return _opened.setdefault(address, Bucket(ROOMS_PER_ADDRESS, ROOM_EVERY_S)).take()


def _command(value):
    if not (isinstance(value, (list, tuple)) and len(value) == 2 and value[0] in COMMANDS
            and isinstance(value[1], int) and not isinstance(value[1], bool) and 0 <= value[1] < 2 ** 31):
        raise ValueError("a command and its count")


def _key(value):
    if not (isinstance(value, str) and len(value) <= 80):
        raise ValueError("a code and a secret")


SHAPES = {"command": _command, "key": _key}


class ClassPanel(JSComponent):
    """The projector's panel of a live class (see the module's docstring)."""

    words = param.Dict(default={}, doc="the panel's words in the page's language")
    room = param.Dict(default={}, doc="what to show: view (off, on, gone), code, link, QR code, counts …")
    grant = param.String(default="", doc="'CODE.SECRET' once a room is opened here: the browser keeps it in the tab")
    key = param.String(default="", doc="the tab's 'CODE.SECRET' written back when a page of the lesson opens")
    command = Shaped(SHAPES["command"], default=[], doc="[name, count] of the button pressed")
    BROWSER_WRITES = ("key", "command")

    @classmethod
    def browser_accepts(cls, attr, value):
        return browser_accepts(SHAPES, attr, value)

    _esm = JS / "projector.js"
    _stylesheets = [(JS / "projector.css").read_text()]


def panel_words():
    return {"start": _("Start a class"), "start_hint": _("Students answer each card on their phones."),
            "open": _("Open on a phone:"), "code": _("Code"), "joined": _("Joined"), "answered": _("Answered"),
            "show": _("Show answers"), "reveal": _("Reveal"), "next": _("Next card"), "end": _("End class"),
            "close": _("Close the class"), "csv": _("Download the results (CSV)"),
            "summary": _("Summary of the lesson"), "nobody": _("No answers."),
            "gone": _("The class has been closed."), "busy": _("No more classes can be opened from here now: try "
                                                               "again later."),
            "unreachable": _("Phones cannot open localhost: start the server with --lan (./scripts/app --lan)."),
            "qr": _("QR code of the address to open")}


def join_link(headers, code):
    """The address a phone opens: the teacher's page's own host (nginx's X-Forwarded-Proto for the scheme), or, when
    the teacher opened localhost, this machine's address on the classroom's network (python -m lineare.app --lan)."""
    from lineare.app.serve import lan_addresses

    host = str(headers.get("Host", "") or "localhost")
    scheme = "https" if str(headers.get("X-Forwarded-Proto", "")).lower() == "https" else "http"
    name, _colon, port = host.rpartition(":") if not host.endswith("]") else (host, "", "")
    name = name or host
    reachable = True
    if name in ("localhost", "127.0.0.1", "[::1]"):
        lan = lan_addresses() if live.serves_lan() else []
        if lan:
            host = f"{lan[0]}:{port}" if port else lan[0]
        else:
            reachable = False
    return f"{scheme}://{host}/join?code={code}", reachable


def qr_svg(link):
    """The QR code of `link` as inline SVG (a quiet zone of four modules, as readers expect)."""
    import segno

    return segno.make(link, error="m").svg_inline(scale=1, border=4, dark="#102a43", light="#ffffff", omitsize=True)


def describe(slug, number, card, figure=None, along="x"):
    """The card as the room keeps it: which, how many choices, its sketch's axes (None: no sketch)."""
    from lineare.app.classroom.overlay import axes

    return {"slug": slug, "number": number, "choices": len(card.choices),
            "guess": axes(figure, along) if figure is not None else None}


def guess_figure(card, view):
    """(the picture a draw-your-guess card has the students sketch on, the axis its curve runs along), or
    (None, "x") for a card without one (a card's `guess` names the picture among its view's `parts()`)."""
    guess = getattr(card, "guess", None)
    if guess is None or not hasattr(view, "parts"):
        return None, "x"
    from lineare.app.lessons import parts

    found = parts(view, [guess.picture])
    return (found[0] if found else None), guess.along


def page_reveal(widget, card):
    """What runs the card's action on the projector's page at Reveal, given the page's lesson card `widget`: it is
    sent what a student's browser sends when acting (the card layer's LessonCard: `chosen`, then the sketch of a
    draw-your-guess card, here the class's median, or `played` for a card whose answer is a frame of the player),
    so that the card gives the page back and shows its observation. None for a card without those."""
    if widget is None or not all(name in widget.param for name in ("chosen", "played", "guess")):
        return None

    def reveal(correct, sketches):
        from lineare.app.classroom.overlay import median_curve

        widget.chosen = correct
        guess = getattr(card, "guess", None)
        if guess is not None:
            at, median = median_curve(sketches, guess.along)
            points = [[a, m] if guess.along == "x" else [m, a] for a, m in zip(at.tolist(), median.tolist())]
            if len(points) >= 2:                   # no sketch came: the picture stays as it is
                widget.guess = points
        if getattr(card, "at", None) is not None:
            widget.played = True
    return reveal


def summary_rows(results):
    """Per card of the class: its heading, question, answers and share right, in the page's language."""
    from lineare.app.components.text import inline_html
    from lineare.app.lessons import LESSONS, TITLES

    rows = []
    for result in results:
        cards = LESSONS.get(result["slug"], ())
        if not 1 <= result["number"] <= len(cards):
            continue
        card, correct = cards[result["number"] - 1], result["correct"]
        right = result["counts"][correct] if correct is not None else None
        answered = result["answered"]
        if right is None:              # ended before the reveal
            score = ngettext("{n} answer", "{n} answers", answered).format(n=answered)
        else:
            score = ngettext("{right} of {n} right ({share}%)", "{right} of {n} right ({share}%)", right).format(
                right=right, n=answered, share=format_number(round(100 * right / answered)))
        rows.append({"heading": html.escape(_("{title} · card {n}").format(title=_(TITLES[result["slug"]]),
                                                                            n=result["number"])),
                     "prompt": inline_html(_(card.prompt)), "answered": answered, "right": right,
                     "score": score})
    return rows


def plain_text(text):
    """A card's text as a spreadsheet shows it: our Markdown and formulas without their marks."""
    import re

    from lineare.app.components.text import inline_html

    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", inline_html(text))).split())


def results_csv(results):
    """The class's results as CSV: a row per choice of each card (counts, which is right, the card's share right)."""
    from lineare.app.lessons import LESSONS, TITLES

    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["lesson", "card", "question", "choice", "answers", "right", "share_right"])
    for result in results:
        cards = LESSONS.get(result["slug"], ())
        if not 1 <= result["number"] <= len(cards):
            continue
        card, correct = cards[result["number"] - 1], result["correct"]
        share = "" if correct is None else f"{result['counts'][correct] / result['answered']:.3f}"
        for i, count in enumerate(result["counts"]):
            writer.writerow([_(TITLES[result["slug"]]), result["number"], plain_text(_(card.prompt)),
                             plain_text(_(str(card.choices[i]))), count,
                             "" if correct is None else ("yes" if i == correct else "no"), share])
    return out.getvalue()


class Teacher(param.Parameterized):
    """One projector page's side of the room: its commands, and the room drawn on its panel."""

    def __init__(self, panel, slug, number, card, store, on_reveal, address, headers, next_href, figure=None,
                 along="x"):
        super().__init__()
        self.figure, self.along = figure, along
        self.overlay, self.drawn_sketches = None, None
        self.panel, self.slug, self.number, self.card, self.store = panel, slug, number, card, store
        self.on_reveal, self.address, self.headers, self.next_href = on_reveal, address, headers, next_href
        self.code = self.secret = self.stop = None
        self.link = None
        panel.room = {"view": "off"}
        panel.param.watch(self._key, "key")
        panel.param.watch(self._command, "command")

    def describe(self):
        return describe(self.slug, self.number, self.card, self.figure, self.along)

    def _key(self, event):
        """The tab's secret of a room opened earlier: this page is the room's current card from now on."""
        code, _dot, secret = (event.new or "").partition(".")
        if self.code is not None or not code:
            return
        if not live.rooms().is_teacher(code, secret):
            self.panel.param.update(grant="", room={"view": "gone"})
            return
        self._follow(code, secret)

    def _follow(self, code, secret):
        self.code, self.secret = code, secret
        live.rooms().goto(code, secret, self.describe())
        self.link, reachable = join_link(self.headers, code)
        self.qr, self.reachable = qr_svg(self.link), reachable
        self.stop = live.listen(code, self.show)
        self.show(live.rooms().state(code))

    def _command(self, event):
        if not event.new:
            return
        name = event.new[0]
        if name == "start":
            if self.code is not None:
                return
            if not may_open(self.address):
                self.panel.room = {"view": "off", "busy": True}
                return
            try:
                code, secret = live.rooms().open(live.room_size())
            except Refused:
                self.panel.room = {"view": "off", "busy": True}
                return
            self.panel.grant = f"{code}.{secret}"
            self._follow(code, secret)
            return
        if self.code is None:
            return                                    # no room here: a browser of ours shows no such button
        try:
            self._run(name)
        except Refused:                               # the room is gone (closed elsewhere, or idle for hours)
            self.panel.param.update(grant="", room={"view": "gone"})
            self.code = self.secret = None

    def _run(self, name):
        rooms = live.rooms()
        if name == "show":
            rooms.show(self.code, self.secret)
        elif name == "reveal":
            correct, explain = self.reveal()
            rooms.reveal(self.code, self.secret, correct, explain)
        elif name == "next":
            following = self.following()
            if following is None:
                rooms.end(self.code, self.secret)
            else:
                rooms.goto(self.code, self.secret, describe(self.slug, self.number + 1, following))
                self.panel.room = {**self.panel.room, "go": self.next_href}
        elif name == "end":
            rooms.end(self.code, self.secret)
        elif name == "close":
            rooms.close(self.code, self.secret)
            self.panel.param.update(grant="", room={"view": "off"})
            if self.stop:
                self.stop()
            self.code = self.secret = None

    def sketches(self, turn):
        """The class's sketches over the card's picture (made when the answers are first shown)."""
        from lineare.app.classroom.overlay import ClassSketches

        if self.overlay is None:
            self.overlay = ClassSketches(self.figure, self.along)
        self.overlay.draw(live.rooms().sketches(self.code, turn))

    def following(self):
        from lineare.app.lessons import LESSONS

        cards = LESSONS[self.slug]
        return cards[self.number] if self.number < len(cards) else None

    def reveal(self):
        """The right choice and the card's observation in every language (each phone reads its own); the page
        runs the card's action (`on_reveal`)."""
        from lineare.app.components.text import inline_html

        correct = int(self.card.correct(self.store))
        explain = {}
        for code in LANGUAGES:
            with language(code):
                explain[code] = inline_html(self.card.observe(self.store))
        if self.on_reveal is not None:
            sketches = live.rooms().sketches(self.code, live.rooms().state(self.code)["turn"]) if self.figure else []
            self.on_reveal(correct, sketches)
        return correct, explain

    def show(self, state):
        """Draw the room on the panel (on every change: a join, an answer, a command)."""
        if state is None:
            if self.code is not None:
                self.panel.param.update(grant="", room={"view": "gone"})
            return
        card = state["card"] or {}
        here = (card.get("slug"), card.get("number")) == (self.slug, self.number)
        room = {"view": "on", "code": state["code"], "link": self.link, "qr": self.qr, "reachable": self.reachable,
                "joined": state["joined"], "size": state["size"], "answered": state["answered"],
                "phase": state["phase"], "here": here, "last": self.following() is None,
                "go": self.panel.room.get("go", "")}
        if here and state["phase"] in ("showing", "revealed"):
            room.update(counts=state["counts"], choices=[html.escape(_(str(c))) for c in self.card.choices],
                        correct=state["correct"])
            if self.figure is not None and (state["turn"], state["sketched"]) != self.drawn_sketches:
                self.sketches(state["turn"])
            self.drawn_sketches = (state["turn"], state["sketched"])
        if state["phase"] == "ended":
            room.update(summary=summary_rows(state["results"]), csv=results_csv(state["results"]))
        self.panel.room = room


def class_panel(session, slug, number, card, store, view=None, on_reveal=None):
    """The live class's panel of a lesson card's page in presenter mode (None elsewhere). `view`: the page's view
    (a draw-your-guess card's picture is among its parts); `on_reveal`: what runs the card's action on the page."""
    import panel as pn

    from lineare.app.lessons import neighbours

    if not session.present:
        return None
    panel = ClassPanel(words=panel_words(), height=0, width=0, margin=0)
    context = pn.state.curdoc.session_context if pn.state.curdoc else None
    request = getattr(context, "request", None)
    _previous, after = neighbours(slug, number, session)
    from lineare.app.lessons import LESSONS

    next_href = after if number < len(LESSONS[slug]) else ""
    Teacher(panel, slug, number, card, store, on_reveal, getattr(request, "remote_ip", None) or "?",
            dict(getattr(request, "headers", {}) or {}), next_href or "", *guess_figure(card, view))
    return panel
