"""What every page's export shares: the adapter's base class, HTML turned into lines, and the list of pages.

Each page's adapter lives beside the page, in app/dashboards/<page>/export.py (its class is that module's
`Export`); PAGES finds them from the dashboards' list, so a new page with an export is its folder and its line
in app/dashboards/__init__.py. An adapter reads one session's stores: scenes (frames), tables, words.

    page = PAGES["state"](session)        # session.stores holds the page's store(s)
    page.length()                          # frames of the current run (1: a still page)
    page.scene(t)                          # a scene.Scene: what frame t shows
    page.tables()                          # {name: scene.Table}

An adapter computes nothing new: it reads the store's run with the page's own model functions
(`head_frame`, `limits_of`, `rolling_median`, …), rounds colour ranges with `plots.nice_limit` as the
pictures do, and words frames with the page's own text functions, turned from HTML into plain lines.
"""
import importlib
import importlib.util
from collections.abc import Mapping
from html.parser import HTMLParser

import numpy as np

from lineare.app.export.scene import Strip
from lineare.app.i18n import _
from lineare.app.urlstate import serialize


class _Text(HTMLParser):
    """Our own HTML (already escaped) → lines of text; block elements and <br> end a line."""

    BLOCKS = {"p", "div", "br", "li", "tr", "h1", "h2", "h3"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.lines, self.line = [], ""

    def handle_starttag(self, tag, attrs):
        if tag in self.BLOCKS:
            self.flush()

    handle_endtag = lambda self, tag: self.flush() if tag in self.BLOCKS else None

    def handle_data(self, data):
        self.line += data

    def flush(self):
        text = " ".join(self.line.split())
        if text:
            self.lines.append(text)
        self.line = ""


def plain(markup):
    """Lines of plain text of one of the page's HTML snippets."""
    parser = _Text()
    parser.feed(markup)
    parser.close()
    parser.flush()
    return parser.lines


class _Boxes(HTMLParser):
    """A token strip's HTML (texts.token_strip, texts.trained_strip) → its boxes: token, mark, mood, ask."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.boxes, self.in_mark = [], False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        if "data-step" in attrs:
            self.boxes.append({"token": "", "mark": "", "mood": "", "ask": "ask" in classes})
        elif self.boxes and "answer" in classes:
            self.in_mark = True
        elif self.boxes and self.in_mark and ({"ok", "bad"} & set(classes)):
            self.boxes[-1]["mood"] = "ok" if "ok" in classes else "bad"

    def handle_endtag(self, tag):
        if tag == "div":
            self.in_mark = False

    def handle_data(self, data):
        if self.boxes:
            self.boxes[-1]["mark" if self.in_mark else "token"] += data


def strip_from_html(markup, current):
    parser = _Boxes()
    parser.feed(markup)
    boxes = parser.boxes
    return Strip(tokens=[b["token"].strip() for b in boxes], current=current,
                 marks=[" ".join(b["mark"].split()) for b in boxes], moods=[b["mood"] for b in boxes],
                 asks=[b["ask"] for b in boxes])


class PageExport:
    """What one page exports; subclasses read their store(s) from `session.stores`."""

    slug = None
    package = None                     # app.dashboards.<package>.view: the page's own URL code
    title_msgid = None

    def __init__(self, session, frame=None, speed=None):
        self.session = session
        self.frame, self.speed = frame, speed      # the player's, from the URL (None: not given)

    @property
    def store(self):
        return self.session.stores[self.slug]

    @property
    def language(self):
        return self.session.language

    @classmethod
    def open(cls, session, args):
        """Make this page's store(s) in `session` from untrusted URL args, with the page's own URL code
        (its view's `open_store`); URL problems become the session's notices."""
        import importlib

        view = importlib.import_module(f"lineare.app.dashboards.{cls.package}.view").build.__self__
        view.open_store(session, args)
        return cls(session)

    def title(self):
        return _(self.title_msgid)

    def settings(self):
        """The page's settings as its URL writes them."""
        return {key: serialize(getattr(self.store, name)) for name, key in self.store.URL.items()}

    def footer(self):
        words = " · ".join(f"{key}={value}" for key, value in self.settings().items())
        return f"Lineare · /{self.slug} · {words}"

    def length(self):
        return 1

    def default_frame(self):
        """The frame a picture shows unless told: the URL's, else the one the page opens on."""
        frame = self.opening_frame() if self.frame is None else self.frame
        return min(max(int(frame), 0), self.length() - 1)

    def opening_frame(self):
        return 0

    def scene(self, t):
        raise NotImplementedError

    def captions(self, t):
        return self.scene(t).caption

    TABLES = {}                        # table name → msgid of its title; `table_<name>()` makes it
    animated = False                   # a run of frames (GIF, MP4, lesson), or one picture

    def tables(self):
        """{name: translated title} of the page's tables."""
        return {name: _(title) for name, title in self.TABLES.items()}

    def table(self, name):
        return getattr(self, f"table_{name}")()

    def explanation(self):
        """The page's main explanation at the session's level (Markdown with $…$ formulas)."""
        return ""

    def step(self, t):
        return _("Step {t} of {n}").format(t=t + 1, n=self.length()) if self.length() > 1 else ""


def long_rows(rows, where, matrix):
    """Rows (…where, row, col, value) of a matrix, for a table in long form."""
    return rows + [[*where, r, c, value] for (r, c), value in np.ndenumerate(np.atleast_2d(matrix))]


class _Pages(Mapping):
    """slug → the adapter class of every page that has app/dashboards/<package>/export.py, in the dashboards'
    order. Found on first use: the adapters import this module."""

    def __init__(self):
        self._found = None

    def _pages(self):
        if self._found is None:
            from lineare.app.dashboards import DASHBOARDS

            found = {}
            for dashboard in DASHBOARDS:
                package = getattr(dashboard.build, "package", None)
                if package and importlib.util.find_spec(f"lineare.app.dashboards.{package}.export"):
                    found[dashboard.slug] = importlib.import_module(f"lineare.app.dashboards.{package}.export").Export
            self._found = found
        return self._found

    def __getitem__(self, slug):
        return self._pages()[slug]

    def __iter__(self):
        return iter(self._pages())

    def __len__(self):
        return len(self._pages())


PAGES = _Pages()
