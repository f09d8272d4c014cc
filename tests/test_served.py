"""The served path is the oracle: every page as a visitor gets it from `python -m lineare.app`'s multi-process default —
the GET answered from a kept page by one process, the session built where the websocket lands — is the page that
Panel and Bokeh as released serve (`--no-patches`), in both languages, a lesson's link and presenter mode, and a
knob answers the same. Patched or not is a fixture (a server of each kind, shared with test_processes), never
whatever an earlier test left installed."""
import pytest

from lineare.app.dashboards import DASHBOARDS
from served import visit

# every route (the landing page and each dashboard's), in both languages, then a lesson's link and presenter mode
PAGES = [f"/{slug}?lang={language}" for slug in ("", *(d.slug for d in DASHBOARDS)) for language in ("en", "it")]
LESSON, PRESENTER = "/state?lesson=state&card=2&lang=it", "/memory-fails?lang=en&present=1"
KNOB_PAGE = "/state?variant=deltanet&preset=crowd&lang=en"


async def turn_a_knob(wire):
    """Move the page's first visible fractional slider to its middle, as a browser's release sends it: the
    replies and the value."""
    document = await wire.pull()
    slider = next(model for model in document.models if type(model).__name__ == "Slider" and model.visible
                  and model.step < 1)
    steps = round((slider.end - slider.start) / slider.step)
    value = round(slider.start + slider.step * (steps // 2 if steps // 2 * slider.step + slider.start != slider.value
                                                else steps // 2 + 1), 6)
    replies = [await wire.patch([{"kind": "ModelChanged", "model": {"id": slider.id}, "attr": attr, "new": value}])
               for attr in ("value", "value_throttled")]
    return replies, value


def pages_served(served):
    """What every page looks like served by `served` (a server fixture): {path: (frame, document)} with the
    websocket on the process that answered the GET for the unpatched server and on the other for the patched one (a
    session built for a page written elsewhere: the case the kept pages and the stylesheet hook exist for); the
    lesson and presenter links both ways; the knob's page with the knob turned."""
    url, processes, log = served
    websocket_on = 0 if "--no-patches" in log.read_text() else 1
    seen = {path: visit(url, processes, path, websocket_on)[:2] for path in PAGES}
    for path in (LESSON, PRESENTER):
        seen[path] = visit(url, processes, path, websocket_on)[:2]
        seen[path, "other"] = visit(url, processes, path, 1 - websocket_on)[:2]
    seen["knob"] = visit(url, processes, KNOB_PAGE, websocket_on, knob=turn_a_knob)
    return seen


@pytest.fixture(scope="module")
def served(served_patched, served_unpatched):
    """Every page as each kind of server serves it: {"patched": …, "unpatched": …} (pages_served)."""
    return {"patched": pages_served(served_patched), "unpatched": pages_served(served_unpatched)}


@pytest.mark.parametrize("kind", ["patched", "unpatched"])
def test_every_page_is_served_whole_from_either_process(served, kind):
    seen = served[kind]
    for path in PAGES:
        _frame, document = seen[path]
        assert '"__ref:' in document and len(document) > 20_000, (kind, path)       # a page, not an error
    for path in (LESSON, PRESENTER):                   # the same page whichever process built the session
        assert seen[path] == seen[path, "other"], (kind, path)
    assert "LessonCard" in seen[LESSON][1]
    assert "--lineare-scale: 1.25" in seen[PRESENTER][0] and "--lineare-scale: 1.25" not in seen[PAGES[0]][0]


def test_the_patched_server_serves_what_panel_and_bokeh_serve(served):
    ours, theirs = served["patched"], served["unpatched"]
    for path in [*PAGES, LESSON, PRESENTER]:
        assert ours[path][0] == theirs[path][0], (path, "the GET's page (its frame) differs from Panel's")
        assert ours[path][1] == theirs[path][1], (path, "the document differs from the one Panel and Bokeh serve")


def test_a_knob_answers_the_same_patched_or_not(served):
    for kind in ("patched", "unpatched"):
        _frame, before, (answer, after) = served[kind]["knob"]
        replies, _value = answer
        assert replies == [("OK", None), ("OK", None)] and after != before, (kind, replies)
    ours, theirs = served["patched"]["knob"][1:], served["unpatched"]["knob"][1:]
    assert ours[1][0] == theirs[1][0]                  # the replies and the value
    for one, other in ((ours[0], theirs[0]), (ours[1][1], theirs[1][1])):       # before the knob, after it
        at = next((i for i, (a, b) in enumerate(zip(one, other)) if a != b), min(len(one), len(other)))
        assert one == other, (one[at - 300:at + 200], other[at - 300:at + 200])
