"""Sections below the first screen, built when the visitor scrolls near them, not with the page.

    later = Later(lambda: MapSection(store, session))        # a Viewer: put `later` in the layout
    later.section()                                          # the section itself, made now if not yet

Until then the page holds only a marker of the section's height (`Near`): when the browser sees it come
within a screen of the window, or the keyboard reaches it (the marker is a button in the Tab order, named in the
page's language), it says so once, and the server makes the section in its place; the focus then goes on into it.
Where the page scrolls inside the template's main column rather than the window, that column clips the marker
first, and it is seen only once in view: deliberately left so, since an observer rooted at the column would make
the sections just below the first screen as the page opens, and the page would cost what it did before they were
put off.
The section's height depends on the column's width (a phone wraps its text and stacks its pictures): `height`
may be a number or the section's heights measured at a few widths, {column width: height}, and the marker takes
the height for its own width, read between them, so that the page hardly moves when the section arrives.
A page's time to open is mostly the server making its Bokeh models, and a section nobody scrolls to
then costs nothing. `build_all(doc)` makes every section of a document at once: what tests
that read a whole page use.
"""
import weakref

import panel as pn
import param
from panel.custom import JSComponent

from lineare.app.components.browser import module
from lineare.app.i18n import _

MARKER = "lineare-later"                      # the class of a section's marker, until it is made
MARKER_CSS = """
.marker { font-size: calc(16px * var(--lineare-scale, 1)); color: #52606d; padding: 4px 10px; }
.marker:focus-visible { outline: 3px solid #102a43; outline-offset: -3px; box-shadow: inset 0 0 0 6px #ffffff; }
"""
# kept on the page's Document itself (freed with it): its Later sections, and what the page's frame does to
# each part of the page (app/shell.py)
SECTIONS, FINISH = "lineare_later_sections", "lineare_later_finish"


class Near(JSComponent):
    """A section's marker: it tells the server, once, that it came near the window or was reached (see above)."""

    seen = param.Boolean(default=False, doc="the block came near the window")
    heights = param.List(default=[[0, 400]], doc="[[column width, height], …] by width: the block's height at "
                         "its own width is read between them (the first's below, the last's above)")
    label = param.String(default="", doc="what the marker says, to a screen reader and on the page")

    BROWSER_WRITES = ("seen",)                   # what the server accepts from the browser (app/server/websocket.py)

    _esm = module("near")
    _stylesheets = [MARKER_CSS]

    def __init__(self, **params):
        params.setdefault("label", _("Show the next part of this page"))
        super().__init__(**params)


class Later(pn.viewable.Viewer):
    """A section made by `make()` when the browser scrolls near it, or when `section()` asks for it;
    `placed(section)`, if given, once the section is in the page (a player told then to draw its frame again
    finds the section's pictures in the browser: told before, it missed them)."""

    def __init__(self, make, height=400, placed=None):
        super().__init__()
        self._make, self._section, self._placed, self._then = make, None, placed, []
        near = Near(heights=_points(height), sizing_mode="stretch_width", margin=0, css_classes=[MARKER])
        near.param.watch(lambda _event: self.section(), "seen")
        self._column = pn.Column(near, sizing_mode="stretch_width", margin=0)
        doc = pn.state.curdoc
        self._doc = weakref.ref(doc) if doc is not None else lambda: None
        if doc is not None:
            vars(doc).setdefault(SECTIONS, []).append(self)

    @property
    def made(self):
        return self._section is not None

    def resize(self, height):
        """The marker's height (a number or {column width: height}), until the section is made (a section whose
        size depends on the settings)."""
        if self._section is None:
            self._column.objects[0].heights = _points(height)

    def section(self):
        if self._section is None:
            self._section = self._make()
            # its layout made once: what the page's frame does to it (presenter mode's sizes) is what is shown (a
            # Viewer makes a new layout each time it is asked for one)
            shown = pn.panel(self._section)
            finish = getattr(self._doc(), FINISH, None)
            if finish is not None:
                finish(shown)
            for then in self._then:                # before it is placed: what it holds back is never sent
                then(self._section)
            self._column.objects = [shown]
            if self._placed is not None:
                self._placed(self._section)
        return self._section

    def when_made(self, then):
        """`then(section)` once the section is made (now, if it is already): a lesson card holds back a part of
        it without making it before the visitor scrolls near."""
        if self._section is not None:
            then(self._section)
        else:
            self._then.append(then)

    def __panel__(self):
        return self._column


def in_section(index, name):
    """A view's property: the attribute `name` of its section `view.lower[index]` (a Later), that section made
    first (a lesson card or a test that reads it finds it made)."""
    return property(lambda view: getattr(view.lower[index].section(), name))


def _points(height):
    """[[column width, height], …] by width, from a height or {column width: height}."""
    return sorted([width, h] for width, h in height.items()) if isinstance(height, dict) else [[0, height]]


def when_built(doc, finish):
    """`finish(section)` for each section of `doc` when it is made, before it is shown: what the page's frame
    does to the rest of the page when it is built (app/shell.py)."""
    if doc is not None:
        setattr(doc, FINISH, finish)


def build_all(doc):
    """Make every Later section of `doc` now (a test that reads the whole page)."""
    for later in getattr(doc, SECTIONS, []):
        later.section()


class SectionPart:
    """Parts of a page that live in a Later section: `things(section)` once it is made. A lesson card holds them back
    when the section comes, without making it at the page's opening (app/lessons.py)."""

    def __init__(self, later, things):
        self.later, self.things = later, things

    def now(self):
        """The parts, the section made now if not yet (what a card brings into view must be on the page)."""
        return list(self.things(self.later.section()))

    def when_made(self, then):
        self.later.when_made(lambda section: then(list(self.things(section))))
