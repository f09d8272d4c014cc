"""The dashboards of DESIGN §6, in teaching order. A dashboard without a `build` yet is listed as coming.

To add one: write `app/dashboards/<name>.py` with `build(session) -> Page`, import it here, set
`build=` on its entry, and add its strings to the catalogs (`python -m app.i18n update`).
"""
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


def _two_bills(session):
    from app.dashboards.two_bills import build
    return build(session)


def _state_fills_up(session):
    from app.dashboards.state_fills_up import build
    return build(session)


def _parallel_recurrent(session):
    from app.dashboards.parallel_recurrent import build
    return build(session)


def _memory_fails(session):
    from app.dashboards.memory_fails import build
    return build(session)


def _transition(session):
    from app.dashboards.transition import build
    return build(session)


def _architectures(session):
    from app.dashboards.architectures import build
    return build(session)


DASHBOARDS = (
    Dashboard("two-bills", N_("Two bills"),
              N_("Softmax attention pays twice: every token is compared with every other, and the "
                 "memory kept while generating grows with every token. Here the KV cache grows "
                 "token by token while the fixed-size state does not."),
              build=_two_bills),
    Dashboard("state", N_("The state fills up"),
              N_("The memory of a linear-attention model is a small matrix rewritten at every token. "
                 "Watch it fill up, step by step, on a sequence you choose or type."),
              build=_state_fills_up),
    Dashboard("transition", N_("The transition knob"),
              N_("Every model of the family rewrites its state in the same way and differs only in "
                 "how it keeps the past. Turn the forget and correct knobs to morph one model into another."),
              build=_transition),
    Dashboard("memory-fails", N_("Where memory fails"),
              N_("A fixed-size memory can keep only so many pairs apart. Capacity curves against the "
                 "theoretical bound show where recall breaks down, and why."),
              build=_memory_fails),
    Dashboard("parallel-recurrent", N_("Parallel = recurrent"),
              N_("The same model can be computed all at once, token by token, or in chunks, with the "
                 "same numbers. Compare the three forms and what each one costs as the sequence grows."),
              build=_parallel_recurrent),
    Dashboard("architectures", N_("Architectures"),
              N_("RetNet, RWKV, xLSTM, Mamba-2, GLA and DeltaNet are settings of one skeleton. "
                 "See each one as a choice of transition, write and read-out."),
              build=_architectures),
)

BY_SLUG = {d.slug: d for d in DASHBOARDS}
