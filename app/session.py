"""One `Session` per browser session: its language, its explanation level, its notices, its stores.

Dashboards keep their data stores in `session.stores`, so everything a visitor computed lives and
dies with their session: two tabs never share state, and a closed tab frees its records
(`Document.on_session_destroyed`). `Session.current()` finds the session of the running callback.
"""
import weakref

import param

from lineare.app.i18n import LANGUAGES, negotiate, set_language
from lineare.app.lessons import LESSONS, MAX_CARD
from lineare.app.urlstate import read_query, write_query

LEVELS = ("elementare", "superiore")

_sessions = weakref.WeakKeyDictionary()          # Bokeh document → Session


class Session(param.Parameterized):
    """The page-level state of one visitor: what every dashboard shares."""

    language = param.Selector(default="en", objects=list(LANGUAGES), doc="language of every text")
    level = param.Selector(default="elementare", objects=list(LEVELS),
                           doc="elementare: plain words; superiore: formulas and paper names")
    notices = param.List(default=[], doc="(source, message) pairs shown at the top of the page")
    present = param.Boolean(default=False, doc="presenter mode: sidebar closed, larger type")
    notebook = param.Boolean(default=False, doc="a laboratory in a notebook cell (lineare.labs): its knobs beside "
                                                "it, no menu")
    lesson = param.Selector(default="", objects=["", *LESSONS], doc="the lesson whose card is shown ('': none)")
    card = param.Integer(default=0, bounds=(0, MAX_CARD), doc="the lesson's card, from 1")

    URL = {"language": "lang", "level": "level"}
    # read from the link, never written into it (the lesson's links carry them from card to card)
    READ_ONLY_URL = {"present": "present", "lesson": "lesson", "card": "card"}

    def __init__(self, **params):
        super().__init__(**params)
        self.stores = {}                          # dashboard slug → its data store

    @classmethod
    def start(cls):
        """The session of the current request: language from ?lang= or Accept-Language, level from ?level=."""
        import panel as pn

        doc = pn.state.curdoc
        args = pn.state.session_args or {}
        headers = pn.state.headers or {}
        language = negotiate(headers.get("Accept-Language", ""))
        set_language(language, doc)               # notices about bad URL values are translated too
        values, notices = read_query(cls, {**cls.URL, **cls.READ_ONLY_URL}, args)
        values.setdefault("language", language)
        set_language(values["language"], doc)
        session = cls(notices=[("url", n) for n in notices], **values)
        _sessions[doc] = session
        doc.on_session_destroyed(lambda _context, doc=doc: forget(doc))
        write_query(session, cls.URL)
        return session

    @classmethod
    def frame_of(cls, arguments, accept_language=""):
        """What the frame around a page (the template: its language, presenter mode's type and folded
        sidebar) is drawn from, read from a request's query `arguments` as `start` reads them. Two requests
        with the same frame may be answered with the same HTML (a kept session's page, --reuse-sessions)."""
        values, _notices = read_query(cls, {"language": "lang", "present": "present"}, arguments or {})
        return values.get("language") or negotiate(accept_language), values.get("present", False)

    @classmethod
    def current(cls):
        import panel as pn

        return _sessions.get(pn.state.curdoc)

    def notify(self, source, messages):
        """Replace the notices of `source` (e.g. "url", "input") with `messages`."""
        kept = [(s, m) for s, m in self.notices if s != source]
        self.notices = kept + [(source, m) for m in messages]

    def add_notices(self, source, messages):
        """Add `messages` to those of `source`."""
        self.notices = list(self.notices) + [(source, m) for m in messages]

    def store(self, slug, factory):
        """The data store of dashboard `slug` in this session, made by `factory()` on first use."""
        if slug not in self.stores:
            self.stores[slug] = factory()
        return self.stores[slug]


def forget(doc):
    """Drop what a closed session held (its stores and their records)."""
    session = _sessions.pop(doc, None)
    if session is not None:
        session.stores.clear()


def live_sessions():
    return len(_sessions)
