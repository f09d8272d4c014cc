"""The dashboards, in teaching order. A dashboard without a `build` yet is listed as coming.

To add one: write the package `app/dashboards/<name>/` (model.py: the store; view.py: the view, ending with
`build = <View>.build`), set `build=_page("<name>")` on its entry, and add its strings to the catalogs
(`python -m app.i18n translate it.json`). app/README.md walks through it.
"""
import importlib
from dataclasses import dataclass, field
from typing import Callable

from app.i18n import N_


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
        return importlib.import_module(f"app.dashboards.{package}.view").build(session)
    return build


DASHBOARDS = (
    Dashboard("two-bills", N_("Two bills"),
              N_("Softmax attention pays twice: every token is compared with every other, and the "
                 "memory kept while generating grows with every token. Here the KV cache grows "
                 "token by token while the fixed-size state does not."),
              build=_page("two_bills")),
    Dashboard("state", N_("The state fills up"),
              N_("The memory of a linear-attention model is a small matrix rewritten at every token. "
                 "Watch it fill up, step by step, on a sequence you choose or type."),
              build=_page("state_fills_up")),
    Dashboard("transition", N_("The transition knob"),
              N_("Every model of the family rewrites its state in the same way and differs only in "
                 "how it keeps the past. Turn the forget and correct knobs to morph one model into another."),
              build=_page("transition")),
    Dashboard("memory-fails", N_("Where memory fails"),
              N_("A fixed-size memory can keep only so many pairs apart. Capacity curves against the "
                 "theoretical bound show where recall breaks down, and why."),
              build=_page("memory_fails")),
    Dashboard("parallel-recurrent", N_("Parallel = recurrent"),
              N_("The same model can be computed all at once, token by token, or in chunks, with the "
                 "same numbers. Compare the three forms and what each one costs as the sequence grows."),
              build=_page("parallel_recurrent")),
    Dashboard("architectures", N_("Architectures"),
              N_("RetNet, RWKV, xLSTM, Mamba-2, GLA and DeltaNet are settings of one skeleton. "
                 "See each one as a choice of transition, write and read-out."),
              build=_page("architectures")),
)

BY_SLUG = {d.slug: d for d in DASHBOARDS}
