"""Parts of a page held back until a lesson card's student has acted (app/lessons.py), then given back.

    veil = Veil()
    veil.hold([view.point, picture.renderers["bound"], picture.items["bound"]])
    ...
    veil.lift()                     # everything as the page's view last drew it

What "held back" means depends on the part, and it never reaches the browser while held:

- an `Explanation`: its text is not drawn (the pane is sent empty and hidden);
- any other Panel object (a text pane, a FrameText, a column): hidden;
- a Bokeh glyph renderer (a picture's series): its data source is taken off the figure and an empty one put in
  its place, so its numbers are not sent at all; the view keeps drawing into its own source, which comes back
  with whatever it holds then;
- a legend entry, a title, a label, a line across a figure (any Bokeh model with `visible`): not drawn.

While a part is held, the view may still show or hide it (a knob that changes the page): the veil keeps it
hidden and gives it back as the view last wanted it.
"""
import panel as pn
from bokeh.models import CDSView, ColumnDataSource, GlyphRenderer, Model

from lineare.app.components.text import Explanation


class Veil:
    """What a card holds back on its page; `lift()` gives it all back (once)."""

    def __init__(self):
        self.held, self._undo, self.lifted = [], [], False

    def hold(self, things):
        for thing in things:
            if self.lifted or any(thing is h for h in self.held):
                continue
            self.held.append(thing)
            self._undo.append(_hold(thing))

    def lift(self):
        if self.lifted:
            return
        self.lifted = True
        with pn.io.hold():
            for undo in self._undo:
                undo()
        self._undo = []


def _hold(thing):
    """Hold `thing` back; returns what gives it back."""
    if isinstance(thing, Explanation):
        thing.veiled = True
        return lambda: setattr(thing, "veiled", False)
    if isinstance(thing, pn.viewable.Viewer):
        thing = thing.__panel__()
    if isinstance(thing, pn.viewable.Viewable):
        return _hidden(thing, thing.visible, lambda f: thing.param.watch(lambda e: f(e.new), "visible"),
                       lambda w: thing.param.unwatch(w))
    if isinstance(thing, GlyphRenderer):
        return _series(thing)
    if isinstance(thing, Model) and "visible" in thing.properties():
        def watch(f):
            callback = lambda _attr, _old, new: f(new)
            thing.on_change("visible", callback)
            return callback
        return _hidden(thing, thing.visible, watch, lambda c: thing.remove_on_change("visible", c))
    raise TypeError(f"a lesson card cannot hold back {type(thing).__name__}")


def _hidden(thing, wanted, watch, unwatch):
    """Hide `thing` (a Panel or Bokeh object with `visible`) and keep it hidden while the view sets `visible`;
    give it back as the view last wanted it."""
    state = {"wanted": wanted, "quiet": False}

    def hide():
        state["quiet"] = True
        try:
            thing.visible = False
        finally:
            state["quiet"] = False

    def keep(new):
        if not state["quiet"]:
            state["wanted"] = new
            if new:
                hide()

    hide()
    watcher = watch(keep)

    def give_back():
        unwatch(watcher)
        thing.visible = state["wanted"]
    return give_back


def _series(renderer):
    """A picture's series held back: its source and view put aside, an empty source (same columns) in place."""
    source, view, visible = renderer.data_source, renderer.view, renderer.visible
    empty = ColumnDataSource({name: [] for name in source.column_names})
    renderer.update(data_source=empty, view=CDSView(), visible=False)

    def give_back():
        renderer.update(data_source=source, view=view, visible=visible)
    return give_back

