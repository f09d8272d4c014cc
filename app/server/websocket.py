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
- Bokeh's events (a button's click, the document being ready, a tap …).

Everything else is refused before it reaches the document: a data source's columns (ColumnsPatched,
ColumnsStreamed, ColumnDataChanged), roots added or removed, the title, any other property, any new
model, PUSH-DOC, a message Bokeh cannot read. A binary frame, or a header that announces binary buffers
(which Bokeh's receiver would keep, buffer after buffer, until their announced count is reached), closes the
connection before anything of the message is kept. A refusal is answered with a short ERROR (no traceback),
logged as one short line, and after REFUSALS_BEFORE_CLOSE refusals the connection is closed. An
allowed change that fails (a value out of a widget's bounds) is answered and logged the same way.

A connection that sends nothing for IDLE_S (10 minutes; `python -m app --idle-minutes`) is closed: an
open page sends a sign of life once a minute while it is visible (app/components/presence.py), so a
class listening to its teacher keeps its pages and a tab left in the background or a script holding
a place is let go.

`install_allow_list()` replaces `WSHandler.on_message` and `on_pong` (listed in app/server/patches.py; Bokeh's
logs a failing message in full with its traceback,
Panel and Tornado log it again, and the ERROR reply carries the traceback) by `on_message` below.
"""
import json
import logging
import time

from tornado.ioloop import PeriodicCallback
from tornado.websocket import WebSocketClosedError

log = logging.getLogger("lineare.websocket")
REFUSALS_BEFORE_CLOSE = 3
MAX_TEXT = 10_000                     # characters of a text field without a max_length of its own
LOG_CHARS = 160                       # of a client's text in one log line
IDLE_S = 600                          # a connection that sends nothing this long is closed (--idle-minutes)
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
        return value.get("type") in SCALAR_TYPES and set(value) <= {"type", "value"}
    return False


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
    if attr not in WIDGET_VALUES:
        return True
    properties = model.properties()
    values = new if isinstance(new, list) and attr in ("value", "value_throttled") else [new]
    if attr == "clicks":
        return _number(new) and new >= 0
    if attr == "active" and "labels" in properties:
        chosen = new if isinstance(new, list) else [new]
        return all(isinstance(i, int) and 0 <= i < len(model.labels) for i in chosen)
    if attr == "active" and "tabs" in properties:
        return isinstance(new, int) and 0 <= new < len(model.tabs)
    if "options" in properties:
        return all(v in _choices(model.options) for v in values)
    for low, high in (("start", "end"), ("low", "high")):
        if low in properties and high in properties:
            lowest, highest = getattr(model, low), getattr(model, high)
            if not all(_number(v) for v in values if v is not None):
                return False
            return all(v is None or ((lowest is None or v >= lowest) and (highest is None or v <= highest))
                       for v in values)
    if isinstance(new, str):
        return len(new) <= (getattr(model, "max_length", None) or MAX_TEXT)
    return True


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


def check_event(event, document):
    """Raise Refused unless `event` (one JSON event of a PATCH-DOC) is something our browser sends."""
    kind = event.get("kind") if isinstance(event, dict) else None
    if kind == "MessageSent":
        from bokeh.events import _CONCRETE_EVENT_CLASSES

        data = event.get("msg_data")
        name = data.get("name") if isinstance(data, dict) else None
        if event.get("msg_type") != "bokeh_event" or name not in _CONCRETE_EVENT_CLASSES:
            raise Refused(f"message {short(event.get('msg_type'), 40)}/{short(name, 40)}")
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


def _close_idle(application):
    """Close every websocket of `application` (Bokeh's Tornado app) that sent nothing for IDLE_S."""
    now = time.monotonic()
    for connection in list(getattr(application, "_clients", ())):
        socket = getattr(connection, "_socket", None)
        if socket is None:
            continue
        last = getattr(socket, "lineare_last", None)
        if last is None:
            socket.lineare_last = now                # first seen now: it has IDLE_S from here
        elif now - last > IDLE_S:
            log.info("websocket %s from %s: closed after %d s without a message", short(socket.request.path, 60),
                     socket.request.remote_ip, now - last)
            socket.close(1000, "idle")


def _watch(socket):
    """Start the idle check of this socket's server (once), and note that the socket is alive."""
    if not _watching:
        application = socket.application
        check = PeriodicCallback(lambda: _close_idle(application), max(1.0, min(30.0, IDLE_S / 4)) * 1000)
        check.start()
        _watching.append(check)


def on_pong(self, data):
    """A pong says the client's socket is open, not that anyone uses it: it only starts the idle check."""
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
    self.lineare_last = time.monotonic()
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
        handler = self.handler._handlers[message.msgtype]
        reply = await handler(message, connection)
    except Refused as refused:
        reason = str(refused)
    except Exception as error:                 # an allowed change that failed, e.g. a value out of bounds
        reason = f"{message.msgtype} failed: {type(error).__name__}: {error}"
    else:
        reason = None
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


class OneLine(logging.Filter):
    """Panel's own "Callback failed … changing property {…}" record: one short line, no traceback."""

    def filter(self, record):
        if str(record.msg).startswith("Callback failed"):
            record.msg, record.args = short(record.getMessage()), ()
            record.exc_info = record.exc_text = None
        return True


_pong = None


def install(idle_s=IDLE_S, allow_list=True):
    """Close connections idle for `idle_s`; failed session callbacks in one line (Panel's exception handler and a
    log filter: public hooks); `allow_list`: put `on_message` in place of Bokeh's (install_allow_list)."""
    global IDLE_S
    import panel as pn

    IDLE_S = idle_s
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
