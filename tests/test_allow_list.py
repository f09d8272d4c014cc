"""The websocket allow-list's pure functions (app/server/websocket.py, app/server/limits.py), table by table: every
widget kind at, inside and one past each bound; every property of our browser components' data models, in and out
of BROWSER_WRITES; every string cap; every Bokeh event type. No server: about a second."""
import json

import panel as pn
import pytest
from bokeh.document import Document
from bokeh.events import _CONCRETE_EVENT_CLASSES
from bokeh.models import (Button, CheckboxButtonGroup, CheckboxGroup, Column, Div, MultiChoice, MultiSelect,
                          NumericInput, RadioButtonGroup, RadioGroup, RangeSlider, Select, Slider, Spinner, Switch,
                          TabPanel, Tabs, TextAreaInput, TextInput, Toggle)
from panel.custom import ReactiveESM
from panel.models.widgets import FileDownload

import lineare.app.components.later  # noqa: F401  (every JSComponent of ours, for their data models)
import lineare.app.components.lesson  # noqa: F401
import lineare.app.components.player  # noqa: F401
import lineare.app.components.presence  # noqa: F401
import lineare.app.export.section  # noqa: F401
from lineare.app.server import limits, websocket
from lineare.app.server.websocket import Refused, allowed_change, check_event, within_bounds

# the longest text a browser may send, written out rather than imported: a raised limit in the code fails these tests
MAX_TEXT = 10_000

NAN = {"type": "number", "value": "nan"}

# (a widget, the attribute the browser writes, values accepted, values refused): at, inside and one past each bound
WIDGETS = [
    (Slider(start=0, end=10, step=1, value=5), "value", [0, 5, 10, 0.5], [-1, 11, 10.001, NAN, "5", [5], True]),
    (Slider(start=0, end=10, step=1, value=5), "value_throttled", [0, 10], [-1, 11]),
    (Slider(start=0.05, end=1, step=0.01, value=0.5), "value", [0.05, 1.0], [0.04, 1.01]),
    (RangeSlider(start=0, end=10, step=1, value=(2, 3)), "value", [[0, 10], [2, 3]], [[-1, 5], [0, 11], 5]),
    (Spinner(low=1, high=9, step=1, value=3), "value", [1, 9, 5, None], [0, 10, "x"]),
    (Spinner(low=1, high=9, step=1, value=3), "value_throttled", [1, 9], [0, 10]),
    (Spinner(low=None, high=None, value=3), "value", [-1e6, 1e6], [1e301, NAN, "3"]),
    (Spinner(low=0, high=9999, mode="int", value=3), "value", [0, 9999, None], [1.5, -1, 10_000]),
    (NumericInput(low=-2, high=2, value=0), "value", [-2, 2, 0], [-3, 3]),
    (Select(options=["a", "b"], value="a"), "value", ["a", "b"], ["c", "", 1]),
    (Select(options=[("a", "A"), ("b", "B")], value="a"), "value", ["a", "b"], ["A", "c"]),
    (Select(options={"one": ["a"], "two": [("b", "B")]}, value="a"), "value", ["a", "b"], ["B", "one"]),
    (MultiChoice(options=["a", "b", "c"], value=[]), "value", [[], ["a"], ["a", "c"]], [["d"], ["a", "d"], "a"]),
    (MultiSelect(options=["a", "b"], value=[]), "value", [["b"]], [["z"]]),
    (RadioButtonGroup(labels=["x", "y", "z"], active=0), "active", [0, 1, 2], [3, -1, True, 1.0, "1", None]),
    (RadioGroup(labels=["x", "y"], active=0), "active", [0, 1], [2, -1]),
    (CheckboxGroup(labels=["x", "y"], active=[]), "active", [[], [0], [0, 1]], [[2], [-1], [0, 2]]),
    (CheckboxButtonGroup(labels=["x", "y", "z"], active=[]), "active", [[2], [0, 1, 2]], [[3]]),
    (Tabs(tabs=[TabPanel(child=Div(), title="a"), TabPanel(child=Div(), title="b")]), "active", [0, 1], [2, -1]),
    (Toggle(active=False), "active", [True, False], [1, 0, "true", None]),
    (Switch(active=False), "active", [True], [2]),
    (FileDownload(), "clicks", [0, 1, 10_000], [-1, 1.5, True, "1", None]),
    (TextInput(max_length=5), "value", ["", "abcde"], ["abcdef", 5]),
    (TextInput(max_length=5), "value_input", ["abcde"], ["abcdef"]),
    (TextInput(), "value", ["x" * MAX_TEXT], ["x" * (MAX_TEXT + 1)]),
    (TextAreaInput(max_length=None), "value", ["x" * MAX_TEXT], ["x" * (MAX_TEXT + 1)]),
    (TextAreaInput(), "value", ["x" * 500], ["x" * 501]),                  # Bokeh's own cap, 500
    (TextAreaInput(max_length=MAX_TEXT * 2), "value", ["x" * MAX_TEXT], ["x" * (MAX_TEXT + 1)]),
]


@pytest.mark.parametrize("widget, attr, accepted, refused", WIDGETS,
                         ids=[f"{type(w).__name__}.{a}-{i}" for i, (w, a, _y, _n) in enumerate(WIDGETS)])
def test_every_widget_kind_at_inside_and_past_its_bounds(widget, attr, accepted, refused):
    assert allowed_change(widget, attr, Document())
    for value in accepted:
        assert within_bounds(widget, attr, value), (attr, value)
    for value in refused:
        assert not within_bounds(widget, attr, value), (attr, value)


@pytest.mark.parametrize("widget", [Slider(start=0, end=1, value=0), TextInput(), RadioButtonGroup(labels=["a"]),
                                    Select(options=["a"]), Toggle(), Spinner()])
def test_a_widget_changes_its_value_and_nothing_else(widget):
    document = Document()
    for attr in widget.properties():
        assert allowed_change(widget, attr, document) == (attr in websocket.WIDGET_VALUES), attr


def our_components():
    """Every JSComponent of the app, with its Bokeh data model."""
    found, stack = [], list(ReactiveESM.__subclasses__())
    while stack:
        component = stack.pop()
        stack.extend(component.__subclasses__())
        if component.__module__.startswith("lineare.app.") and getattr(component, "_data_model", None) is not None:
            found.append(component)
    return sorted(found, key=lambda c: c.__name__)


def test_every_component_of_ours_is_looked_at():
    names = {component.__name__ for component in our_components()}
    assert {"Presence", "FrameProbe", "Near", "LessonCard", "Player", "FrameText"} <= names, names


@pytest.mark.parametrize("component", our_components(), ids=lambda c: c.__name__)
def test_every_data_model_property_in_and_out_of_browser_writes(component):
    model, document = component._data_model(), Document()
    writes = set(getattr(component, "BROWSER_WRITES", ()))
    assert writes <= set(model.properties())
    for attr in model.properties():
        assert allowed_change(model, attr, document) == (attr in writes), attr


def test_the_browsers_own_state_and_nothing_else_of_those_models():
    import bokeh.models as models
    from panel.models.browser import BrowserInfo
    from panel.models.layout import Card
    from panel.models.location import Location

    expected = {  # what a browser writes of each, written out here (not read from the allow-list)
        Location(): {"href", "hostname", "pathname", "protocol", "port", "search", "hash", "reload"},
        BrowserInfo(): {"dark_mode", "device_pixel_ratio", "language", "timezone", "timezone_offset", "webdriver",
                        "webgl"},
        models.Plot(): {"inner_width", "inner_height", "outer_width", "outer_height"},
        models.Range1d(): {"start", "end"}, models.DataRange1d(): {"start", "end"},
        models.Selection(): {"indices", "line_indices", "multiline_indices", "image_indices"},
        Card(): {"collapsed", "scroll_position"}, Column(): {"scroll_position"},
        models.ColumnDataSource(): set(), Div(): set(), models.Image(): set(), models.LinearColorMapper(): set(),
    }
    document = Document()
    for model, allowed in expected.items():
        for attr in model.properties():
            assert allowed_change(model, attr, document) == (attr in allowed), (type(model).__name__, attr)


def test_the_label_above_a_discrete_slider_and_no_other_text():
    document = Document()
    label, other = Div(text="0,5"), Div(text="hello")
    document.add_root(Column(children=[label, Slider(start=0, end=3, value=0)]))
    document.add_root(Column(children=[other]))
    assert allowed_change(label, "text", document)
    assert not allowed_change(other, "text", document)
    assert not within_bounds(label, "text", "x" * (MAX_TEXT + 1))


# ------------------------------------------------------------------------------------------------ events

def event(name, document=None, model=None, **values):
    entries = ([["model", {"id": model.id}]] if model is not None else []) + [[k, v] for k, v in values.items()]
    return {"kind": "MessageSent", "msg_type": "bokeh_event",
            "msg_data": {"type": "event", "name": name,
                         "values": {"type": "map", "entries": entries} if entries else {"type": "map"}}}


def subscribed(name):
    """A document with a button (and a Div) subscribed to `name`, and one that is not."""
    document = Document()
    listening, deaf = Button(), Button()
    listening.on_event(name, lambda _event: None)
    document.add_root(Column(children=[listening, deaf]))
    return document, listening, deaf


@pytest.mark.parametrize("name", sorted(_CONCRETE_EVENT_CLASSES))
def test_every_event_type(name):
    document, listening, deaf = subscribed(name)
    if name not in websocket.EVENTS:
        with pytest.raises(Refused):
            check_event(event(name, model=listening), document)
        with pytest.raises(Refused):
            check_event(event(name), document)
        return
    if websocket.EVENTS[name] is None:                         # the document's own: carries nothing
        check_event(event(name), document)
        with pytest.raises(Refused):
            check_event(event(name, x=1), document)
        return
    check_event(event(name, model=listening), document)
    for value in ["plain", 1.5, None, True, [1, "a"], {"type": "map", "entries": [["k", [1, 2]]]}, NAN]:
        for key in websocket.EVENTS[name]:
            check_event(event(name, model=listening, **{key: value}), document)
    with pytest.raises(Refused):
        check_event(event(name, model=deaf), document)            # a model that does not send it
    with pytest.raises(Refused):
        check_event(event(name), document)                        # no model
    with pytest.raises(Refused):
        check_event(event(name, model=listening, evil=1), document)  # a value it does not carry


OBJECTS = [{"type": "object", "name": "Div", "id": "x"}, {"id": "p1001"}, {"type": "ref", "id": "x"},
           {"type": "ndarray", "array": {"type": "bytes", "data": "AAAA"}, "shape": [1], "dtype": "float32"},
           {"type": "bytes", "data": "AAAA"}, {"type": "set"}, {"type": "date", "iso": "2026-01-01"},
           {"type": "number", "value": "1e9999"}, {"type": "map", "entries": [[1, 2]]}, "x" * (MAX_TEXT + 1),
           [[[[[[1]]]]]], list(range(websocket.EVENT_ITEMS + 1)), 1e301]


@pytest.mark.parametrize("value", OBJECTS, ids=range(len(OBJECTS)))
@pytest.mark.parametrize("name", [name for name, carried in websocket.EVENTS.items() if carried])
def test_an_event_never_carries_a_model_or_anything_bokeh_would_build(name, value):
    document, listening, _deaf = subscribed(name)
    with pytest.raises(Refused):
        check_event(event(name, model=listening, **{key: value for key in websocket.EVENTS[name]}), document)


def test_an_event_within_its_caps_is_accepted():
    document, listening, _deaf = subscribed("dom_event")
    check_event(event("dom_event", model=listening, node="x" * MAX_TEXT,
                      data=list(range(websocket.EVENT_ITEMS - 3))), document)
    check_event(event("dom_event", model=listening, data=[[[1]]]), document)


def test_an_event_that_is_not_one_is_refused():
    document, listening, _deaf = subscribed("button_click")
    good = event("button_click", model=listening)
    check_event(good, document)
    for broken in [{**good, "msg_type": "evil"}, {**good, "msg_data": None},
                   {**good, "msg_data": {**good["msg_data"], "type": "other"}},
                   {**good, "msg_data": {**good["msg_data"], "extra": 1}},
                   {**good, "msg_data": {**good["msg_data"], "values": {"model": {"id": listening.id}}}},
                   {**good, "msg_data": {**good["msg_data"], "values": {"type": "map", "entries": [
                       ["model", {"id": listening.id}], ["model", {"id": listening.id}]]}}},
                   {**good, "msg_data": {**good["msg_data"], "values": {"type": "map", "entries": [
                       ["model", {"id": listening.id, "name": "x"}]]}}}]:
        with pytest.raises(Refused):
            check_event(broken, document)


@pytest.mark.parametrize("kind", ["ColumnsPatched", "ColumnsStreamed", "ColumnDataChanged", "RootAdded",
                                  "RootRemoved", "TitleChanged", "MessageSent", "Evil", None])
def test_every_other_document_event_is_refused(kind):
    document = Document()
    slider = Slider(start=0, end=1, value=0)
    document.add_root(slider)
    with pytest.raises(Refused):
        check_event({"kind": kind, "model": {"id": slider.id}, "attr": "value", "new": 0}, document)


def test_a_model_change_is_checked_against_its_model():
    document = Document()
    slider = Slider(start=0, end=1, value=0)
    document.add_root(slider)
    change = {"kind": "ModelChanged", "model": {"id": slider.id}, "attr": "value"}
    check_event({**change, "new": 1}, document)
    for broken in [{**change, "new": 2}, {**change, "attr": "end", "new": 5}, {**change, "model": {"id": "nobody"}},
                   {**change, "attr": 5, "new": 1}, {**change, "new": {"type": "object", "name": "Div"}},
                   {**change, "model": slider.id, "new": 1}]:
        with pytest.raises(Refused):
            check_event(broken, document)


# ------------------------------------------------------------------------------------------------ plain values

def test_plain_values_lists_and_depths():
    assert websocket._plain(list(range(1000))) and not websocket._plain(list(range(1001)))
    assert websocket._plain([[1]]) and not websocket._plain([[[1]]])
    assert websocket._plain(NAN) and websocket._plain({"type": "number", "value": "-inf"})
    for refused in [{"type": "number", "value": "1"}, {"type": "number", "value": "nan", "x": 1}, {"id": "x"},
                    {"type": "object"}, object()]:
        assert not websocket._plain(refused), refused


# ------------------------------------------------------------------------------------------------ string caps

def test_a_log_line_carries_at_most_log_chars_of_a_clients_text():
    assert websocket.short("x" * websocket.LOG_CHARS) == "x" * websocket.LOG_CHARS
    assert len(websocket.short("x" * 10_000)) == websocket.LOG_CHARS
    assert websocket.short("a\nb\r\n\tc") == "a b c"


def test_a_string_anywhere_is_capped_at_max_text():
    document = Document()
    model = lineare.app.components.presence.Presence._data_model()
    assert within_bounds(model, "seen", 3)
    assert not within_bounds(model, "seen", "x" * (MAX_TEXT + 1))
    assert not within_bounds(model, "seen", "3")                       # not the property's type
    assert allowed_change(model, "seen", document)


# ------------------------------------------------------------------------------------------------ fragments

@pytest.mark.parametrize("header, problem", [
    ({"msgid": "1", "msgtype": "PATCH-DOC"}, False), ({"msgtype": "PATCH-DOC", "num_buffers": 0}, False),
    ({"msgtype": "PATCH-DOC", "num_buffers": None}, False), ({"msgtype": "PATCH-DOC", "num_buffers": 1}, True),
    ({"msgtype": "PATCH-DOC", "num_buffers": 10 ** 9}, True), ({"msgtype": "PATCH-DOC", "num_buffers": "1"}, True),
    ([1, 2], True), ("text", True)])
def test_a_header_announcing_buffers_is_refused_before_anything_is_kept(header, problem):
    class Socket:
        pass

    socket = Socket()
    found = websocket.fragment_problem(socket, json.dumps(header))
    assert (found is not None) == problem, found
    if not problem:                                     # the next two fragments are not headers
        assert websocket.fragment_problem(socket, "{not json") is None
        assert websocket.fragment_problem(socket, "{}") is None
        assert websocket.fragment_problem(socket, "{not json") is not None
    assert websocket.fragment_problem(Socket(), b"\0") == "a binary frame"


# ------------------------------------------------------------------------------------------------ time limits

class Clocked:
    """A socket as the idle check sees it."""


@pytest.mark.parametrize("opened, last, now, reason", [
    (0, 0, websocket.IDLE_S, None), (0, 0, websocket.IDLE_S + 1, "idle"), (0, 100, websocket.IDLE_S + 1, None),
    (0, None, websocket.IDLE_S + 1, "idle"), (0, websocket.LIFETIME_S, websocket.LIFETIME_S, None),
    (0, websocket.LIFETIME_S, websocket.LIFETIME_S + 1, "lifetime")])
def test_a_connection_closes_when_idle_or_too_old(opened, last, now, reason):
    socket = Clocked()
    socket.lineare_opened = opened
    if last is not None:
        socket.lineare_last = last
    assert websocket.closing_reason(socket, now) == reason


def test_a_connection_first_seen_is_counted_from_then():
    socket = Clocked()
    assert websocket.closing_reason(socket, 1000.0) is None and socket.lineare_opened == 1000.0
    assert websocket.closing_reason(socket, 1000.0 + websocket.IDLE_S + 1) == "idle"


def test_the_presence_beat_keeps_a_page_well_inside_the_idle_timeout():
    """A visible page says it is there every BEAT_MS; the server closes a connection silent for IDLE_S (the
    default of `python -m lineare.app --idle-minutes`): a beat or two lost (a slow network, a throttled tab) must
    not close a page a class is looking at."""
    import re

    from lineare.app.components.presence import Presence
    from lineare.app.serve import IDLE_S

    [beat] = re.findall(r"^const BEAT_MS = (\d+)$", Presence._esm.read_text(encoding="utf-8"), re.MULTILINE)
    assert IDLE_S == websocket.IDLE_S
    assert 3 * int(beat) <= IDLE_S * 1000


def test_pulls_come_in_a_burst_then_one_per_interval_per_session():
    """20 pulls at once, then one per 2 s (written out: a raised limit fails here)."""
    socket = Clocked()
    socket.lineare_session = "pulling"
    assert [limits.may_pull(socket, now=0.0) for _ in range(21)] == [True] * 20 + [False]
    assert not limits.may_pull(socket, now=1.8)
    assert limits.may_pull(socket, now=2.1)
    assert not limits.may_pull(socket, now=2.2)
    again = Clocked()
    again.lineare_session = "pulling"                       # the same page connected again: nothing given back
    assert not limits.may_pull(again, now=2.2)
    other = Clocked()
    other.lineare_session = "another"
    assert limits.may_pull(other, now=2.2)                                                  # each page its own
    assert [limits.may_pull(socket, now=1000.0) for _ in range(21)] == [True] * 20 + [False]   # refilled, not past


def test_an_address_starts_a_class_of_sessions_at_once_then_one_a_second(monkeypatch):
    monkeypatch.setattr(limits, "_new_sessions", limits.Bucket(limits.NEW_SESSIONS_BURST, limits.NEW_SESSION_EVERY_S))
    starts = [limits.may_start_session("school", now=0.0) for _ in range(61)]
    assert starts == [True] * 60 + [False]                                  # a class of 60 behind one address
    assert limits.may_start_session("home", now=0.0)                                    # each address its own
    assert limits.may_start_session("school", now=limits.NEW_SESSION_EVERY_S * 1.01)
    assert not limits.may_start_session("school", now=limits.NEW_SESSION_EVERY_S * 1.02)


def test_a_session_holds_at_most_its_share_of_websockets():
    session = "test-session"
    sockets = [Clocked() for _ in range(4)]               # 3 per page (written out), then one too many
    for socket in sockets:
        socket.lineare_session = session
    try:
        assert [limits.add_socket(session, s) for s in sockets] == [True, True, True, False]
        limits.socket_closed(sockets[0])                  # closed: its place is free
        assert limits.add_socket(session, sockets[-1])
        assert len(limits.sockets_of(session)) == 3
    finally:
        for socket in sockets:
            limits.socket_closed(socket)
    assert limits.sockets_of(session) == [] and session not in limits._sockets     # nothing kept of it


def test_a_panel_widget_model_is_checked_as_its_bokeh_model():
    slider = pn.widgets.IntSlider(start=0, end=4, value=1).get_root(Document())
    assert within_bounds(slider, "value", 4) and not within_bounds(slider, "value", 5)


def test_a_session_callback_that_fails_counts_as_a_refusal_of_the_sessions_sockets():
    """A value the allow-list let through that the page then refused (Panel's exception handler runs with the
    session's document current): each failure counts against every socket of that session, the third closes."""
    from types import SimpleNamespace

    from panel.io.state import set_curdoc

    class Socket:
        def __init__(self):
            self.request, self.closed = SimpleNamespace(path="/state/ws", remote_ip="10.0.0.1"), None

        def close(self, code, reason):
            self.closed = (code, reason)

    sockets, other = [Socket(), Socket()], Socket()
    for socket in sockets:
        limits.add_socket("failing", socket)
    limits.add_socket("another", other)
    document = SimpleNamespace(session_context=SimpleNamespace(id="failing"))
    try:
        with set_curdoc(document):
            for _ in range(2):
                websocket.failed_callback(ValueError("Integer parameter must be an integer"))
            assert [socket.closed for socket in sockets] == [None, None]               # the third closes
            websocket.failed_callback(ValueError("Integer parameter must be an integer"))
    finally:
        for session, socket in [("failing", sockets[0]), ("failing", sockets[1]), ("another", other)]:
            limits.drop_socket(session, socket)
    assert [socket.closed for socket in sockets] == [(1008, "too many refused messages")] * 2
    assert other.closed is None


# ------------------------------------------------------------------------------------------------ exact edges
# every limit written out, as the module docstring says it, so that a raised (or lowered) limit fails here

def test_an_events_values_are_capped_at_200_items_and_4_levels_each():
    """Each value an event carries is counted on its own: the list itself and its items, 200 in all."""
    assert websocket.plain_data(list(range(199))) and not websocket.plain_data(list(range(200)))
    assert websocket.plain_data([[[[1]]]]) and not websocket.plain_data([[[[[1]]]]])      # the 1 at depth 4, 5
    assert websocket.plain_data("x" * MAX_TEXT) and not websocket.plain_data("x" * (MAX_TEXT + 1))


def message(msgtype, content=None, buffers=()):
    from types import SimpleNamespace
    return SimpleNamespace(msgtype=msgtype, content={"events": []} if content is None else content,
                           buffers=list(buffers))


def test_only_patches_pulls_and_server_info_are_handled_and_a_patch_carries_no_buffer():
    document = Document()
    for handled in ("PATCH-DOC", "PULL-DOC-REQ", "SERVER-INFO-REQ"):
        websocket.check(message(handled), document)
    for kind in ("PUSH-DOC", "OK", "ERROR", "PULL-DOC-REPLY", "EVIL"):
        with pytest.raises(Refused):
            websocket.check(message(kind), document)
    with pytest.raises(Refused, match="binary buffers"):
        websocket.check(message("PATCH-DOC", buffers=[b"\0"]), document)
    with pytest.raises(Refused):
        websocket.check(message("PATCH-DOC", content={"events": None}), document)


def test_a_value_no_widget_takes_is_refused_even_where_the_widget_has_no_bounds():
    """A text box has no bounds to check a map against: the value's shape alone refuses it."""
    document = Document()
    box = TextInput()
    document.add_root(box)
    change = {"kind": "ModelChanged", "model": {"id": box.id}, "attr": "value"}
    check_event({**change, "new": "text"}, document)
    for shape in [{"type": "object", "name": "Div", "id": "x"}, {"id": "x"}, [["a"]], list(range(1001))]:
        with pytest.raises(Refused):
            check_event({**change, "new": shape}, document)


def test_a_half_sent_request_waits_20_seconds_at_most_by_default():
    from tornado.httpserver import HTTPServer

    limits.request_timeouts()
    try:
        server = HTTPServer(lambda request: None)
        assert (server.conn_params.header_timeout, server.conn_params.body_timeout) == (20, 20)
    finally:
        HTTPServer.configure(None)                                 # Tornado's own defaults for later tests
