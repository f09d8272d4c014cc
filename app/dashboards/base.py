"""The base of every dashboard's view: one store per session, read from the URL and kept in it.

    class StateView(DashboardView):
        Store = StateStore                 # the model's param.Parameterized store, with its URL mapping
        slug = "state"

        def __init__(self, **params):      # draw from self.store; watch it, never compute here
            super().__init__(**params)
            ...

        def controls(self):                # widgets for the sidebar
            return [...]

    build = StateView.build                # what app.dashboards calls, once per browser session

`open_store` reads the untrusted URL through `app.urlstate.read_query` (bad values become notices,
never errors), makes the store once per session, and `build` keeps the URL in step with it.
"""
import html

import panel as pn
import param

from lineare.app.components.style import PAGE_CSS
from lineare.app.dashboards import Page
from lineare.app.urlstate import read_query, write_query


class DashboardView(pn.viewable.Viewer):
    """A dashboard's main area: draws its store, holds no data of its own."""

    Store = None                                   # the model's store class (a param.Parameterized)
    slug = None                                    # the page's path, also its key in session.stores

    store = param.Parameter(doc="this session's store")
    session = param.Parameter(doc="this browser session (language, level, notices)")

    @classmethod
    def open_store(cls, session, args):
        """This session's store, made from the URL `args` on first use; URL problems become notices."""
        values, notices = read_query(cls.Store, cls.Store.URL, args)
        store = session.store(cls.slug, lambda: cls.Store(**values))
        session.add_notices("url", notices)
        return store

    @classmethod
    def build(cls, session):
        store = cls.open_store(session, pn.state.session_args)
        view = cls(store=store, session=session)
        write_query(store, cls.Store.URL)
        return Page(main=view, controls=view.controls() + view.downloads())

    def controls(self):
        """The widgets this page puts in the sidebar."""
        return []

    def parts(self):
        """The page's parts a lesson card may name, by name (app/lessons.py): lists of Panel objects and Bokeh
        models (a text, a picture's series, its legend entry), or an app.components.later.SectionPart for those of
        a section below the first screen. Its cards hold them back until the student has acted, or bring them into
        view; the names are the cards' declarations, so they stay put."""
        return {}

    def downloads(self):
        """The sidebar's download section (app/export): the page's run, pictures and numbers as files,
        made from this session's store (the page's export.py says what it exports)."""
        from lineare.app.export.section import download_section
        return download_section(self)


def title(text):
    """The page's title (our own text, escaped)."""
    return pn.pane.HTML(f"<h1>{html.escape(text)}</h1>", stylesheets=[PAGE_CSS], margin=(0, 10))


def heading(text):
    """A section heading inside a page (our own text, escaped)."""
    return pn.pane.HTML(f"<h2>{html.escape(text)}</h2>", stylesheets=[PAGE_CSS], margin=(0, 10),
                        sizing_mode="stretch_width")
