"""The page a student opens on a phone (`/join`, or the link of the projector's QR code): the class's current card,
its question and its choices only, large and touch-first, in the language the student picks; a tap to choose.

    page = join_page()            # app/pages/join.py: one per visit

The phone's browser code (app/js/classroom/phone.js) writes three things, and only these (BROWSER_WRITES, the
websocket's allow-list): `hello` ([code, token]: join the room, or come back to one's place after a reload),
`answer` ([turn, choice]) and `sketch` ([turn, [x, y], …]). Each is checked twice: its shape by the allow-list before
anything is applied (`browser_accepts`: a message of another shape is refused there, and too many refusals close
the connection), then against the room as it is in the store (the card's choices, the turn, the phase, the
phone's membership): what the room refuses changes nothing and the phone says why. Joining is rate limited: a
session may try TRIES codes, an address MISSES wrong codes (then one per MISS_EVERY_S), in each process; a phone
sends at most TAPS choices at once, then one per TAP_EVERY_S. Nothing the student types leaves the phone but the
code: the optional nickname stays in its browser.
"""
import html
import time
from pathlib import Path

import param
from panel.custom import JSComponent

from lineare.app.classroom import live
from lineare.app.classroom.store import MAX_CHOICES, Refused, check_points, clean_code
from lineare.app.i18n import LANGUAGES, _

TRIES = 5                      # codes one session may try
MISSES, MISS_EVERY_S = 20, 3.0  # wrong codes from one address at once, then one per MISS_EVERY_S (per process)
TAPS, TAP_EVERY_S = 12, 0.5     # choices one phone may send at once, then one per TAP_EVERY_S
MAX_TOKEN = 40
JS = Path(__file__).resolve().parent.parent / "js" / "classroom"


class Bucket:
    """`size` at once, then one per `every` seconds (a bucket that refills)."""

    def __init__(self, size, every):
        self.size, self.every = size, every
        self.tokens, self.then = float(size), time.monotonic()

    def take(self):
        now = time.monotonic()
        self.tokens = min(self.size, self.tokens + (now - self.then) / self.every)
        self.then = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True

    def full(self):
        return self.tokens + (time.monotonic() - self.then) / self.every >= self.size


_misses = {}                   # address → Bucket of wrong codes (in this process; full buckets forgotten)


def may_miss(address):
    """Count one wrong code from `address`; False once its bucket is empty."""
    for old in [a for a, b in _misses.items() if b.full()]:
        del _misses[old]
    bucket = _misses.setdefault(address, Bucket(MISSES, MISS_EVERY_S))
    return bucket.take()


def _pair(value, second):
    """[int ≥ 0, second-kind] as a browser sends it, or ValueError."""
    if not (isinstance(value, (list, tuple)) and len(value) == 2 and isinstance(value[0], int)
            and not isinstance(value[0], bool) and 0 <= value[0] < 2 ** 31):
        raise ValueError("a turn and its answer")
    second(value[1])


def _choice(c):
    if not (isinstance(c, int) and not isinstance(c, bool) and 0 <= c < MAX_CHOICES):
        raise ValueError("a choice is an index")


def _points(p):
    try:
        check_points(p)
    except Refused:
        raise ValueError("a sketch is 2 to 64 points in [0, 1]") from None


def _hello(value):
    if not (isinstance(value, (list, tuple)) and len(value) == 2 and isinstance(value[0], str)
            and len(value[0]) <= 20 and isinstance(value[1], str) and len(value[1]) <= MAX_TOKEN):
        raise ValueError("a code and a token")


def _sketch(value):
    """[turn, [x, y], [x, y], …]: the points follow the turn (a list of lists: the allow-list's plain data goes two
    lists deep)."""
    if not isinstance(value, (list, tuple)) or not value:
        raise ValueError("a turn and its points")
    _pair([value[0], 0], _choice)
    _points(list(value[1:]))


# what each attribute the browser writes must look like (empty: nothing yet)
SHAPES = {"hello": _hello, "answer": lambda v: _pair(v, _choice), "sketch": _sketch}


def browser_accepts(shapes, attr, value):
    """True when `value` has the shape `shapes[attr]` asks for (the websocket's allow-list asks before applying)."""
    try:
        if value:
            shapes[attr](value)
    except (ValueError, TypeError, KeyError):
        return False
    return True


class Shaped(param.List):
    """A list the browser writes, of the shape `shape` (a function that raises ValueError), or empty."""

    __slots__ = ["shape"]

    def __init__(self, shape, **params):
        self.shape = shape
        super().__init__(**params)

    def _validate_value(self, value, allow_None):
        super()._validate_value(value, allow_None)
        if value:
            self.shape(value)


class Phone(JSComponent):
    """A student's screen: what `screen` says (the server's), and the taps it writes back."""

    words = param.Dict(default={}, doc="the phone's words in its language")
    screen = param.Dict(default={}, doc="what to show: view (code, wait, card, ended, gone), the card, the verdict")
    place = param.List(default=[], doc="[code, token] of the room joined: the browser keeps it for a reload")
    hello = Shaped(SHAPES["hello"], default=[], doc="[code, token]: join (token '') or come back")
    answer = Shaped(SHAPES["answer"], default=[], doc="[turn, choice]")
    sketch = Shaped(SHAPES["sketch"], default=[], doc="[turn, [x, y], [x, y], …]")
    BROWSER_WRITES = ("hello", "answer", "sketch")

    @classmethod
    def browser_accepts(cls, attr, value):
        return browser_accepts(SHAPES, attr, value)

    _esm = JS / "phone.js"
    _stylesheets = [(JS / "phone.css").read_text()]


def phone_words(language):
    other = {"it": "English", "en": "Italiano"}[language]
    return {"title": _("Join the class"), "code": _("The code on the projector"), "join": _("Join"),
            "nickname": _("Nickname, if you like (it stays on this phone)"),
            "wait": _("You are in. Wait for the teacher's first card."),
            "tap": _("Tap your answer. You can change it until the teacher reveals the truth."),
            "in": _("Your answer is in. You can change it until the reveal."),
            "right": _("Right."), "wrong": _("Not this time."), "was": _("The right answer:"),
            "no_answer": _("You did not answer this card."),
            "ended": _("The class is over: thank you!"), "score": _("Your right answers: {right} of {count}."),
            "gone": _("This class is closed."), "again": _("Join another class"),
            "sketch": _("Then sketch the line you expect: drag a finger across the axes."),
            "send": _("Send my sketch"), "clear": _("Clear"), "sketched": _("Your sketch is in."),
            "you": _("You:"), "language": other, "language_code": "en" if language == "it" else "it"}


def refusal_message(reason, size=None):
    return {"unknown": _("No class has this code: check it on the projector."),
            "full": _("This class is full: it takes {size} students.").format(size=size or live.room_size()),
            "tries": _("Too many tries: wait a minute, then reload the page."),
            "late": _("Too late: the teacher has revealed the answer."),
            "fast": _("Too fast: wait a moment.")}.get(reason, _("Something went wrong: reload the page."))


class Student(param.Parameterized):
    """One phone's session: joins its room, follows it, sends its answers (see the module's docstring)."""

    def __init__(self, phone, language, address, code=""):
        super().__init__()
        self.phone, self.language, self.address = phone, language, address
        self.code, self.token, self.turn, self.chosen = None, None, None, -1
        self.tries, self.taps = 0, Bucket(TAPS, TAP_EVERY_S)
        self.right, self.counted = 0, set()
        self.stop = None
        self.drawn = None                 # (turn, phase, language): what the card view was last drawn for
        phone.screen = {"view": "code", "code": code}
        phone.param.watch(self._hello, "hello")
        phone.param.watch(self._answer, "answer")
        phone.param.watch(self._sketch, "sketch")

    def _hello(self, event):
        if not event.new or self.code is not None:
            return
        typed, token = event.new
        self.tries += 1
        code = clean_code(typed)
        try:
            if self.tries > TRIES:
                raise Refused("tries")                  # a phone that asked too often: not even the right code
            if code is None:
                raise Refused("unknown")
            token = live.rooms().join(code, token or None)
        except Refused as refusal:
            if refusal.reason == "unknown" and not may_miss(self.address):
                refusal = Refused("tries")
            self.phone.screen = {"view": "code", "code": typed[:8], "error": refusal_message(refusal.reason)}
            self.phone.hello = []                        # the same code may be tried again
            return
        self.code, self.token = code, token
        self.phone.place = [code, token]
        self.stop = live.listen(code, self.show)
        state = live.rooms().state(code)
        if state and state["card"] is not None:
            self.chosen = live.rooms().chosen(code, token, state["turn"])
        self.show(state)

    def _answer(self, event):
        if event.new and self._send(live.rooms().answer, *event.new):
            self.chosen = event.new[1]

    def _sketch(self, event):
        if event.new:
            self._send(live.rooms().sketch, event.new[0], list(event.new[1:]))

    def _send(self, write, turn, value):
        """write(code, token, turn, value) to the room unless the phone taps too fast; what the room refuses (a tap
        that crossed the reveal, a choice the card does not have) the phone says. True when the room took it."""
        if self.code is None:
            return False
        reason = None if self.taps.take() else "fast"
        if reason is None:
            try:
                write(self.code, self.token, turn, value)
                return True
            except Refused as refusal:
                reason = refusal.reason
        self.show(live.rooms().state(self.code), message=refusal_message(reason))
        return False

    def show(self, state, message=""):
        """Draw the room's `state` on the phone (on every change of the room; most change only its counts)."""
        if state is None:
            self.phone.screen = {"view": "gone"}
            if self.stop:
                self.stop()
            return
        if state["phase"] == "ended":
            self.phone.screen = {"view": "ended", "right": self.right, "count": len(self.counted)}
            return
        if state["card"] is None:
            self.phone.screen = {"view": "wait"}
            return
        drawn = (state["turn"], state["phase"], message)
        if drawn == self.drawn:
            return
        if state["turn"] != self.turn:
            if self.turn is not None:
                self.chosen = -1
            self.turn = state["turn"]
        self.drawn = drawn
        screen = {"view": "card", "turn": state["turn"], "phase": state["phase"], "chosen": self.chosen,
                  "message": message, **card_text(state["card"], self.language)}
        if state["phase"] == "revealed":
            screen.update(correct=state["correct"], explain=(state["explain"] or {}).get(self.language, ""))
            if state["turn"] not in self.counted:
                self.counted.add(state["turn"])
                self.right += int(self.chosen == state["correct"])
        self.phone.screen = screen


def card_text(card, language):
    """The card's heading, question and choices in the phone's language, and its sketch's axes."""
    from lineare.app.components.text import inline_html
    from lineare.app.lessons import LESSONS, TITLES

    cards = LESSONS.get(card["slug"], ())
    if not 1 <= card["number"] <= len(cards):
        return {"heading": "", "prompt": "", "choices": []}
    record = cards[card["number"] - 1]
    heading = _("Lesson: {title} · card {n} of {count}").format(title=_(TITLES[card["slug"]]), n=card["number"],
                                                                 count=len(cards))
    text = {"heading": html.escape(heading), "prompt": inline_html(_(record.prompt)),
            "choices": [html.escape(_(str(c))) for c in record.choices][:card["choices"]]}
    guess = card.get("guess")
    if guess:
        text["guess"] = {**guess, "x": [*guess["x"][:3], label_in(guess["x"][3], language)],
                         "y": [*guess["y"][:3], label_in(guess["y"][3], language)]}
    return text


def label_in(label, language):
    """An axis label the teacher's page wrote in its language, in the phone's (the catalogs read backwards)."""
    from lineare.app.i18n import translations

    if not isinstance(label, str):
        return ""
    for source in LANGUAGES:
        for msgid, text in getattr(translations(source), "_catalog", {}).items():
            if text == label and isinstance(msgid, str) and msgid:
                return translations(language).gettext(msgid)
    return label


def join_page():
    """The /join page: the phone, in the visitor's language, with the code of its link filled in."""
    import panel as pn

    from lineare.app.components.access import FRAME_CSS, VIEWPORT, PageFrame
    from lineare.app.components.presence import Presence
    from lineare.app.session import Session

    session = Session.start()
    args = pn.state.session_args or {}
    code = args.get("code", [b""])[0].decode("utf-8", "replace")[:20]
    phone = Phone(words=phone_words(session.language), sizing_mode="stretch_width")
    request = pn.state.curdoc.session_context.request if pn.state.curdoc.session_context else None
    Student(phone, session.language, getattr(request, "remote_ip", None) or "?", clean_code(code) or "")
    template = pn.template.BootstrapTemplate(title=_("Lineare · live class"), header_background="#1d4f7a",
                                             busy_indicator=None, meta_viewport=VIEWPORT)
    template.template = PageFrame.of(template.template, session.language)
    template.config.raw_css.extend([FRAME_CSS, JOIN_CSS])
    template.main.append(pn.Column(phone, Presence(height=0, width=0, margin=0), sizing_mode="stretch_width"))
    return template


# the phone's page: no sidebar (nothing in it), the column as wide as the screen up to a tablet's
JOIN_CSS = """
#sidebar, #sidebar-toggle { display: none !important; }
#main { max-width: 720px; margin: 0 auto; padding: 4px 6px 24px 6px; }
"""

