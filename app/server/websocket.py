"""What a visitor's websocket may change, and how anything else is answered.

Bokeh applies whatever a client sends in its protocol's PATCH-DOC (and even PUSH-DOC: a whole new
document). A browser of ours only ever sends:

- a widget's value (`value`, `value_throttled`, `value_input`, `active`, `clicks`), checked here against
  the widget's own bounds, options or labels before Panel sees it;
- what our own browser components write (`BROWSER_WRITES` of a JSComponent: the frame the download
  section reads, the page's sign of life), each value of the shape the component's `browser_accepts` asks for
  where it declares one (a live class's phone and projector);
- the label Panel's DiscreteSlider writes above its slider (a Div's text);
- the browser's own state: the page's URL (Location), the browser's settings (BrowserInfo), a plot's
  measured size, ranges and selection (pan, zoom, hover), a card folded or a tab chosen;
- Bokeh's events (EVENTS: a button's click, the document being ready, a DOM event of Panel's components), each
  from a model that subscribed to it and carrying plain data only (numbers, short strings, short lists and maps:
  a value that names a new model made Bokeh build it, ~1,500 objects from one 121 kB message).

Everything else is refused before it reaches the document: a data source's columns (ColumnsPatched,
ColumnsStreamed, ColumnDataChanged), roots added or removed, the title, any other property, any new
model, PUSH-DOC, a message Bokeh cannot read. A binary frame, or a header that announces binary buffers
(which Bokeh's receiver would keep, buffer after buffer, until their announced count is reached), closes the
connection before anything of the message is kept. A refusal is answered with a short ERROR (no traceback),
logged as one short line, and after REFUSALS_BEFORE_CLOSE refusals the connection is closed. An
allowed change that fails (a value out of a widget's bounds), or whose session callback fails afterwards (a
fraction in an integer box), counts the same way. A page's pulls of its whole document are limited too
(app/server/limits.py).

A connection whose page changes nothing for IDLE_S (10 minutes; `python -m lineare.app --idle-minutes`) is closed: only
an accepted change counts (not a pong, a pull, a refused message), and an open page sends one, its sign of life,
once a minute while it is visible (app/components/presence.py, BEAT_MS), so a class listening to its teacher
keeps its pages and a tab left in the background or a script holding a place is let go. Since a script can send
signs of life too, no connection lives longer than LIFETIME_S (4 hours; `--session-hours`): the page then says
its connection was lost, and a reload opens it again.

`install_allow_list()` replaces `WSHandler.on_message` and `on_pong` (listed in app/server/patches.py; Bokeh's
logs a failing message in full with its traceback, Panel and Tornado log it again, and the ERROR reply carries the
traceback) by `on_message` below.
"""
import json
import logging
import time

from tornado.ioloop import PeriodicCallback
from tornado.websocket import WebSocketClosedError

from lineare.app.server import limits

log = logging.getLogger("lineare.websocket")
REFUSALS_BEFORE_CLOSE = 3
MAX_TEXT = 10_000                     # characters of a text field without a max_length of its own
LOG_CHARS = 160                       # of a client's text in one log line
IDLE_S = 600                          # a connection that changes nothing this long is closed (--idle-minutes)
LIFETIME_S = 4 * 3600                 # no connection lives longer (--session-hours)
HANDLED = ("PATCH-DOC", "PULL-DOC-REQ", "SERVER-INFO-REQ")     # PUSH-DOC would replace the whole document

WIDGET_VALUES = frozenset({"value", "value_throttled", "value_input", "active", "clicks"})
PLOT_SIZE = frozenset({"inner_width", "inner_height", "outer_width", "outer_height"})
# Bokeh or Panel model class (or a base class) → what the browser itself writes there
BROWSER_STATE = {
    "Location": frozenset({"href", "hostname", "pathname", "protocol", "port", "search", "hash", "reload"}),
    "BrowserInfo": frozenset({"dark_mode", "device_pixel_ratio", "language", "timezone", "timezone_offset",
                              "webdriver", "webgl"}),
    "Plot": PLOT_SIZE,
    "Range1d": frozenset({"start", "end"}),
    "DataRange1d": frozenset({"start", "end"}),
    "Selection": frozenset({"indices", "line_indices", "multiline_indices", "image_indices"}),
    "Card": frozenset({"collapsed"}),
    "Column": frozenset({"scroll_position"}),
}
WIDGET_BASES = ("Widget", "InputWidget", "AbstractButton", "Tabs")
SCALAR_TYPES = ("number",)            # Bokeh's {"type": "number", "value": "nan"} for NaN and infinities
NOT_A_NUMBER = ("nan", "+inf", "-inf", "inf")
# the Bokeh events a page of ours sends (from a model that subscribed to them), and what each carries besides that
# model: None for an event of the document itself, which carries nothing
EVENTS = {
    "document_ready": None,
    "button_click": frozenset(),
    "dom_event": frozenset({"node", "data"}),         # Panel's ReactiveHTML and JSComponent DOM events
    "data_event": frozenset({"data"}),                # a JSComponent's message
}
EVENT_ITEMS = 200                     # numbers, strings, lists and maps in one event's values, at most
EVENT_DEPTH = 4


class Refused(Exception):
    """A message a client may not send; the text says why, briefly."""


def short(text, limit=LOG_CHARS):
    """`text` on one line, at most `limit` characters: what a log line may carry of a client's input."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _names(model):
    return {cls.__name__ for cls in type(model).__mro__}


def _component(model):
    """The JSComponent class whose data model `model` is, or None."""
    from panel.custom import ReactiveESM

    stack = list(ReactiveESM.__subclasses__())
    while stack:
        component = stack.pop()
        stack.extend(component.__subclasses__())
        if getattr(component, "_data_model", None) is type(model):
            return component
    return None


def _browser_writes(model):
    """The attributes a JSComponent's browser code writes, if `model` is such a component's data model."""
    return frozenset(getattr(_component(model), "BROWSER_WRITES", ()))


def browser_value_ok(model, attr, new):
    """A component that declares `browser_accepts(attr, value)` (the shape of what its browser code writes, e.g.
    a live class's phone) has each value checked by it here, before Panel applies anything."""
    accepts = getattr(_component(model), "browser_accepts", None) if "DataModel" in _names(model) else None
    return accepts is None or bool(accepts(attr, new))


def _plain(value, depth=0):
    """True for what a widget's value can be: numbers, strings, booleans, null, short lists of those."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, list):
        return depth < 2 and len(value) <= 1000 and all(_plain(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return _not_a_number(value)
    return False


def _not_a_number(value):
    """Bokeh's JSON for NaN and the infinities."""
    return value.get("type") in SCALAR_TYPES and set(value) == {"type", "value"} and value["value"] in NOT_A_NUMBER


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) < 1e300


def _choices(options):
    """The values a Select may take: its options are values, (value, label) pairs, or groups of those."""
    if isinstance(options, dict):
        options = [option for group in options.values() for option in group]
    return {option[0] if isinstance(option, (tuple, list)) else option for option in options or ()}


def within_bounds(model, attr, new):
    """A widget's value checked against the widget's own model before Panel sees it, so that a value
    out of bounds is refused here, in one line, rather than failing later in a callback."""
    if isinstance(new, str) and len(new) > MAX_TEXT:
        return False
    if not _fits_property(model, attr, new):
        return False
    if attr not in WIDGET_VALUES:
        return True
    properties = model.properties()
    values = new if isinstance(new, list) and attr in ("value", "value_throttled") else [new]
    if attr == "clicks":
        return new >= 0                              # a whole number: its property's type, checked above
    if attr == "active" and "labels" in properties:
        chosen = new if isinstance(new, list) else [new]
        return all(isinstance(i, int) and 0 <= i < len(model.labels) for i in chosen)     # not a bool: its type
    if attr == "active" and "tabs" in properties:
        return isinstance(new, int) and 0 <= new < len(model.tabs)
    if attr == "active":
        return True                                 # a toggle: true or false, its property's type, checked above
    if "options" in properties:
        return all(v in _choices(model.options) for v in values)
    for low, high in (("start", "end"), ("low", "high")):
        if low in properties and high in properties:
            lowest, highest = getattr(model, low), getattr(model, high)
            if not all(_number(v) for v in values if v is not None):
                return False
            if getattr(model, "mode", None) == "int" and not all(v is None or isinstance(v, int) for v in values):
                return False                        # a box of whole numbers (Panel's IntInput)
            return all(v is None or ((lowest is None or v >= lowest) and (highest is None or v <= highest))
                       for v in values)
    if isinstance(new, str):
        return len(new) <= (getattr(model, "max_length", None) or MAX_TEXT)
    return True


def _fits_property(model, attr, new):
    """True when `new` is a value of the property's own type (a number for a number, a list of two for a range);
    NaN and the infinities, which Bokeh sends as maps, are left to the bounds."""
    if isinstance(new, dict):
        return True
    descriptor = model.lookup(attr, raises=False) if hasattr(model, "lookup") else None
    return descriptor is None or descriptor.property.is_valid(new)


def _slider_label(model, document):
    """True for the Div above a Panel DiscreteSlider's slider: Panel's own link writes the chosen label
    into it in the browser, and the Div is synced back."""
    if type(model).__name__ != "Div":
        return False
    for parent in document.models:
        children = getattr(parent, "children", None)
        if isinstance(children, list) and model in children:
            return any(type(child).__name__ == "Slider" for child in children)
    return False


def allowed_change(model, attr, document):
    """True when a browser may set `attr` of `model` (a Bokeh model of the session's document)."""
    if attr == "text" and _slider_label(model, document):
        return True
    names = _names(model)
    if attr in WIDGET_VALUES and names & set(WIDGET_BASES):
        return True
    if any(attr in BROWSER_STATE.get(name, ()) for name in names):
        return True
    return "DataModel" in names and attr in _browser_writes(model)


def _entries(values):
    """The (key, value) pairs of a map as Bokeh's JSON writes it ({"type": "map", "entries": [[k, v], …]}), or
    None when `values` is not such a map."""
    if not isinstance(values, dict) or values.get("type") != "map" or not set(values) <= {"type", "entries"}:
        return None
    entries = values.get("entries", [])
    if not isinstance(entries, list) or not all(isinstance(e, list) and len(e) == 2 and isinstance(e[0], str)
                                                for e in entries):
        return None
    return entries


def plain_data(value, budget=None, depth=0):
    """True for data an event may carry: numbers, booleans, null, strings of at most MAX_TEXT characters, and
    lists and maps of those, at most EVENT_DEPTH deep and EVENT_ITEMS items in all; never a model (new or
    named), an array, bytes, a date or a set, which Bokeh would decode into objects."""
    budget = [EVENT_ITEMS] if budget is None else budget
    budget[0] -= 1
    if budget[0] < 0 or depth > EVENT_DEPTH:
        return False
    if value is None or isinstance(value, (bool, int, float)):
        return not isinstance(value, float) or abs(value) < 1e300
    if isinstance(value, str):
        return len(value) <= MAX_TEXT
    if isinstance(value, list):
        return all(plain_data(v, budget, depth + 1) for v in value)
    if isinstance(value, dict):
        if _not_a_number(value):
            return True
        entries = _entries(value)
        return entries is not None and all(plain_data(v, budget, depth + 1) for _k, v in entries)
    return False


def check_bokeh_event(data, document):
    """Raise Refused unless `data` (a MessageSent's msg_data) is one of EVENTS, from a model of `document` that
    subscribed to it, with plain data only."""
    if not isinstance(data, dict) or set(data) != {"type", "name", "values"} or data["type"] != "event":
        raise Refused("an event that is not one")
    name = data["name"]
    if not isinstance(name, str) or name not in EVENTS:
        raise Refused(f"event {short(name, 40)}")
    entries = _entries(data["values"])
    if entries is None or len({key for key, _v in entries}) != len(entries):
        raise Refused(f"event {name} with unreadable values")
    values = dict(entries)
    carried = EVENTS[name]
    if carried is None:
        if values:
            raise Refused(f"event {name} with values")
        return
    reference = values.pop("model", None)
    model = document.get_model_by_id(reference.get("id")) if isinstance(reference, dict) and \
        set(reference) == {"id"} and isinstance(reference.get("id"), str) else None
    if model is None or name not in model.subscribed_events:
        raise Refused(f"event {name} of a model that does not send it")
    if not set(values) <= carried or not all(plain_data(v) for v in values.values()):
        raise Refused(f"event {name} with values {short(sorted(values), 40)}")


def check_event(event, document):
    """Raise Refused unless `event` (one JSON event of a PATCH-DOC) is something our browser sends."""
    kind = event.get("kind") if isinstance(event, dict) else None
    if kind == "MessageSent":
        if event.get("msg_type") != "bokeh_event":
            raise Refused(f"message {short(event.get('msg_type'), 40)}")
        check_bokeh_event(event.get("msg_data"), document)
        return
    if kind != "ModelChanged":
        raise Refused(short(kind, 40))
    reference, attr = event.get("model"), event.get("attr")
    model = document.get_model_by_id(reference.get("id")) if isinstance(reference, dict) else None
    if model is None or not isinstance(attr, str):
        raise Refused("a change of an unknown model")
    if not allowed_change(model, attr, document):
        raise Refused(f"{type(model).__name__}.{short(attr, 40)}")
    new = event.get("new")
    if not _plain(new) or not within_bounds(model, attr, new) or not browser_value_ok(model, attr, new):
        raise Refused(f"{type(model).__name__}.{short(attr, 40)} = {short(new, 40)}")


def check(message, document):
    """Raise Refused unless `message` (a Bokeh protocol message from a client) may be handled."""
    kind = message.msgtype
    if kind not in HANDLED:
        raise Refused(short(kind, 40))
    if kind == "PATCH-DOC":
        events = message.content.get("events") if isinstance(message.content, dict) else None
        if not isinstance(events, list):
            raise Refused("a PATCH-DOC without events")
        if message.buffers:
            raise Refused("binary buffers")
        for event in events:
            check_event(event, document)


def _refuse(socket, reason, close=False):
    """Log one line; close the connection after REFUSALS_BEFORE_CLOSE refusals (`close`: at once). True when
    it was closed."""
    socket.lineare_refusals = getattr(socket, "lineare_refusals", 0) + 1
    closing = close or socket.lineare_refusals >= REFUSALS_BEFORE_CLOSE
    log.warning("websocket %s from %s: refused %s%s", short(socket.request.path, 60), socket.request.remote_ip,
                short(reason), " (closing the connection)" if closing else "")
    if closing:
        socket.lineare_closing = True          # what the client sent before it read the close is dropped unread
        socket.close(1008, "refused" if close else "too many refused messages")
    return closing


_watching = []


def closing_reason(socket, now):
    """Why `socket` is to be closed now ("idle": no accepted change for IDLE_S; "lifetime": open for LIFETIME_S),
    or None. A socket not seen before is noted as opened now."""
    opened = getattr(socket, "lineare_opened", None)
    if opened is None:
        socket.lineare_opened = opened = now
    if now - opened > LIFETIME_S:
        return "lifetime"
    if now - getattr(socket, "lineare_last", opened) > IDLE_S:
        return "idle"
    return None


def _close_idle(application):
    """Close every websocket of `application` (Bokeh's Tornado app) idle for IDLE_S or open for LIFETIME_S."""
    now = time.monotonic()
    for connection in list(getattr(application, "_clients", ())):
        socket = getattr(connection, "_socket", None)
        reason = closing_reason(socket, now) if socket is not None else None
        if reason is not None:
            log.info("websocket %s from %s: closed (%s) after %d s", short(socket.request.path, 60),
                     socket.request.remote_ip, reason, now - socket.lineare_opened)
            socket.lineare_closing = True        # what it sends before it reads the close is dropped unread
            socket.close(1000, reason)


def _watch(socket):
    """Start the idle check of this socket's server (once), and note that the socket is alive."""
    if not _watching:
        application = socket.application
        check = PeriodicCallback(lambda: _close_idle(application), max(1.0, min(30.0, IDLE_S / 4)) * 1000)
        check.start()
        _watching.append(check)


def on_pong(self, data):
    """A pong says the client's socket is open, not that anyone uses it: it only starts the idle check (Bokeh pings
    every 37 s; `panel serve --keep-alive` ms)."""
    _watch(self)
    return _pong(self, data)


def fragment_problem(socket, fragment):
    """Why a websocket fragment may not even be assembled, or None. A message of ours is three text
    fragments (header, metadata, content) and no binary buffer; a header that announces buffers would make
    Bokeh's receiver keep every buffer that follows until their count is reached (a number the client
    chooses), so the header is read and checked here before anything is kept."""
    if not isinstance(fragment, str):
        return "a binary frame"
    index = getattr(socket, "lineare_fragment", 0)
    socket.lineare_fragment = (index + 1) % 3
    if index != 0:
        return None
    try:
        header = json.loads(fragment)
    except ValueError:
        header = None
    if not isinstance(header, dict):
        return "an unreadable message header"
    if header.get("num_buffers", 0) not in (0, None):
        return f"a message announcing {short(header.get('num_buffers'), 20)} binary buffers"
    return None


async def on_message(self, fragment):
    """Bokeh's WSHandler.on_message, with `check` before a message is handled and short answers."""
    if getattr(self, "lineare_closing", False):
        return
    if getattr(self, "lineare_opened", None) is None:
        self.lineare_opened = time.monotonic()
    _watch(self)
    problem = fragment_problem(self, fragment)
    if problem is not None:                    # refused before Bokeh's receiver keeps any of it
        _refuse(self, problem, close=True)
        return
    try:
        message = await self.receiver.consume(fragment)
    except Exception as error:                 # not JSON, not Bokeh's protocol, a fragment out of order
        _refuse(self, f"an unreadable message ({type(error).__name__})")
        self.lineare_closing = True
        self.close(1003, "unreadable message")
        return
    if message is None:                        # more fragments to come
        return
    connection = self.connection
    reply = None
    try:
        check(message, connection.session.document)
        if message.msgtype == "PULL-DOC-REQ" and not limits.may_pull(self):
            raise Refused("too many pulls of the whole document")
        handler = self.handler._handlers[message.msgtype]
        reply = await handler(message, connection)
    except Refused as refused:
        reason = str(refused)
    except Exception as error:                 # an allowed change that failed, e.g. a value out of bounds
        reason = f"{message.msgtype} failed: {type(error).__name__}: {error}"
    else:
        reason = None
        if message.msgtype == "PATCH-DOC":
            self.lineare_last = time.monotonic()     # a change the page made: someone is there
    if reason is not None:
        if _refuse(self, reason):
            return
        reply = connection.protocol.create("ERROR", message.header["msgid"], "refused")   # made here: no traceback
    if reply is not None:
        try:
            await self.send_message(reply)
        except WebSocketClosedError:
            pass


def failed_callback(exception):
    """Panel's exception handler: a session callback that failed (a value Panel refused, a bug) in one
    line with the place it failed, instead of its traceback logged twice and the value in full."""
    frame = exception.__traceback__
    while frame is not None and frame.tb_next is not None:
        frame = frame.tb_next
    where = f" at {frame.tb_frame.f_code.co_filename}:{frame.tb_lineno}" if frame is not None else ""
    log.error("a session callback failed%s: %s", where, short(f"{type(exception).__name__}: {exception}"))
    _count_against_session(f"a value that failed in its callback ({type(exception).__name__})")


def _count_against_session(reason):
    """A session callback failed (Panel runs it with the session's document current): most often a value the
    allow-list let through that the page then refused. It counts as a refusal of each of the session's sockets,
    so that a client sending such values is closed after REFUSALS_BEFORE_CLOSE, as for a refused message."""
    import panel as pn

    doc = pn.state.curdoc
    context = getattr(doc, "session_context", None)
    session = getattr(context, "id", None)
    for socket in limits.sockets_of(session) if session is not None else ():
        if not getattr(socket, "lineare_closing", False):
            _refuse(socket, reason)


class OneLine(logging.Filter):
    """Panel's own "Callback failed … changing property {…}" record: one short line, no traceback."""

    def filter(self, record):
        if str(record.msg).startswith("Callback failed"):
            record.msg, record.args = short(record.getMessage()), ()
            record.exc_info = record.exc_text = None
        return True


_pong = None


def install(idle_s=IDLE_S, lifetime_s=LIFETIME_S, allow_list=True):
    """Close connections idle for `idle_s` or open for `lifetime_s`; failed session callbacks in one line (Panel's
    exception handler and a log filter: public hooks); `allow_list`: put `on_message` in place of Bokeh's
    (install_allow_list)."""
    global IDLE_S, LIFETIME_S
    import panel as pn

    IDLE_S, LIFETIME_S = idle_s, lifetime_s
    pn.config.exception_handler = failed_callback
    panel_log = logging.getLogger("panel.reactive")
    if not any(isinstance(one, OneLine) for one in panel_log.filters):
        panel_log.addFilter(OneLine())
    if allow_list:
        install_allow_list()


def install_allow_list():
    """Patch Bokeh's WSHandler: `on_message` and `on_pong` below in place of Bokeh's (Bokeh's logs a failing
    message in full with its traceback, Panel and Tornado log it again, and the ERROR reply carries the
    traceback)."""
    global _pong
    from bokeh.server.views.ws import WSHandler

    if WSHandler.on_message is on_message:
        return
    _pong = WSHandler.on_pong
    WSHandler.on_message, WSHandler.on_pong = on_message, on_pong
