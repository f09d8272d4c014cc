"""The dashboards, in teaching order. A dashboard without a `build` yet is listed as coming.

To add one: write the package `app/dashboards/<name>/` (model.py: the store; view.py: the view, ending with
`build = <View>.build`; export.py, if the page has a download section: its app.export adapter, `Export`),
set `build=_page("<name>")` on its entry, and add its strings to the catalogs (`python -m lineare.app.i18n translate
it.json`). app/README.md walks through it.
"""
import importlib
from dataclasses import dataclass, field
from typing import Callable

from lineare.app.i18n import N_


@dataclass
class Page:
    """What a dashboard hands to the shell: its main area and its controls for the sidebar."""
    main: object
    controls: list = field(default_factory=list)


@dataclass(frozen=True)
class Dashboard:
    slug: str                                  # its URL path: /<slug>
    title: str                                 # msgid, translated with _() when drawn
    summary: str                               # msgid: two sentences for the landing page
    build: Callable | None = None              # build(session) -> Page; None while not built yet


def _page(package):
    """build() of app.dashboards.<package>.view, imported on first use (the landing page needs no torch)."""
    def build(session):
        return importlib.import_module(f"lineare.app.dashboards.{package}.view").build(session)
    build.package = package          # app.export.pages finds the page's export.py by it
    return build


DASHBOARDS = (
    Dashboard("softmax", N_("Take away the softmax"),
              N_("The chapter's opening move, on a sentence of eight words: take away the softmax and the table "
                 "of who looks at whom folds into a small summary (the state) with the same answers. Then count "
                 "what each order costs as the text grows."),
              build=_page("take_away_softmax")),
    Dashboard("two-bills", N_("Two bills"),
              N_("Softmax attention pays twice: every word (token) is compared with every word before it, "
                 "and its notebook of notes (the KV cache) grows with every word written. Here the notebook "
                 "grows word by word while the fixed-size summary (the state) does not."),
              build=_page("two_bills")),
    Dashboard("state", N_("The state fills up"),
              N_("The summary (state) of a linear-attention model is a small grid of numbers rewritten at "
                 "every word. Watch it fill up, step by step, on a sequence you choose or type."),
              build=_page("state_fills_up")),
    Dashboard("transition", N_("The transition knob"),
              N_("Every model of the family rewrites its summary in the same way and differs mostly in "
                 "how it keeps the past (the transition). Turn the forget and correct knobs to morph one model "
                 "into another."),
              build=_page("transition")),
    Dashboard("memory-fails", N_("Where memory fails"),
              N_("A fixed-size summary can keep only so many label–information pairs apart. Capacity curves "
                 "against the theoretical bound show where recall breaks down, and why."),
              build=_page("memory_fails")),
    Dashboard("parallel-recurrent", N_("Parallel = recurrent"),
              N_("The same model can be computed all at once, word by word, or in chunks, with the "
                 "same numbers. Compare the three ways and what each one costs as the sequence grows."),
              build=_page("parallel_recurrent")),
    Dashboard("architectures", N_("Architectures"),
              N_("RetNet, RWKV, xLSTM, Mamba-2, GLA and DeltaNet are settings of one skeleton. "
                 "See each one as a choice of transition, write and read-out."),
              build=_page("architectures")),
)

BY_SLUG = {d.slug: d for d in DASHBOARDS}
