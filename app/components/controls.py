"""Sidebar pieces several dashboards share: a bold section label, a plain note under a control, the
mechanism-mode knobs, and an example number a student counts from 1."""
import html

import panel as pn

from lineare.app.components.plots import number_format
from lineare.app.i18n import _

KNOB_DEBOUNCE_MS = 10


def sidebar_label(text):
    """A bold heading above a group of sidebar controls (text is escaped)."""
    return pn.pane.HTML(f"<b>{html.escape(text)}</b>", margin=(8, 10, 0, 10),
                        stylesheets=[":host { font-size: calc(16px * var(--lineare-scale, 1)); }"])


def sidebar_note(text):
    """A short plain line under a sidebar control that says what it means (text is escaped), at 16 px as every text
    a class reads from the back of the room."""
    return pn.pane.HTML(f"<span>{html.escape(text)}</span>", margin=(0, 10, 4, 10), sizing_mode="stretch_width",
                        stylesheets=[":host { font-size: calc(16px * var(--lineare-scale, 1)); color: #52606d; "
                                     "line-height: 1.35; }"])


def mechanism_knobs(store):
    """(forget α slider, correct β slider, seed box) bound to a store with alpha, beta and seed."""
    # the value beside the name in the page's number format (0,95 in Italian)
    # throttled: the store takes the value a released slider (or a key press) sends, one run per move; a
    # drag only moves the slider's own label on the way
    alpha = pn.widgets.FloatSlider.from_param(store.param.alpha, label=_("Forget α (1 keeps everything)"), step=0.01,
                                              format=number_format(decimals=2, fixed=True), sizing_mode="stretch_width",
                                              throttled=True)
    beta = pn.widgets.FloatSlider.from_param(store.param.beta, label=_("Correct β (1 replaces fully)"), step=0.05,
                                             format=number_format(decimals=2, fixed=True), sizing_mode="stretch_width",
                                             throttled=True)
    seed = pn.widgets.IntInput.from_param(store.param.seed, label=_("Random vectors (seed)"),
                                          sizing_mode="stretch_width")
    for slider in (alpha, beta):
        # Panel holds a slider's change for 50 ms in case more follow; a key press sends one, and the
        # new run is what a visitor waits for
        slider._debounce = KNOB_DEBOUNCE_MS
    return alpha, beta, seed


def example_input(store, name):
    """An IntInput of `store.example` as a student counts it, from 1: it shows example + 1 and writes back
    value - 1. The store (and so the URL, and the links already shared) keeps counting from 0."""
    first, last = store.param.example.bounds
    example = pn.widgets.IntInput(label=name, value=store.example + 1, start=first + 1, end=last + 1,
                                  sizing_mode="stretch_width")
    example.param.watch(lambda event: event.new is not None and setattr(store, "example", event.new - 1), "value")
    store.param.watch(lambda _event: setattr(example, "value", store.example + 1), "example")
    return example
