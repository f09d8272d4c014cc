"""What one page, one connection or one address may hold or ask of a server process, and turns taken fairly.

- Websockets per session (MAX_SOCKETS_PER_SESSION): a page opens one (two for a moment when it reconnects).
  Everything the server sends a session goes to each of its sockets: 61 sockets on one session moved that
  process's knob p95 from 120 to 593 ms. One more is closed at once with 1008 and one log line.
- Document pulls per session (PULLS_BURST, then one per PULL_EVERY_S, counted across its connections, so that
  connecting again gives nothing back): a page pulls its whole document once when it connects, and every pull is
  the whole document written as JSON (a flood moved page open from 0.27 to 1.18 s). A pull past them is refused
  like any refused message (app/server/websocket.py).
- New sessions per address (NEW_SESSIONS_BURST, then one per NEW_SESSION_EVERY_S; app/server/building.py refuses
  the websocket as busy past them): pages opened and closed at once, over and over from one address, cost the
  process more than its visitors' knobs (20 such clients: another visitor's knob p95 from 0.2 to 1.9 s).
- Turns (`Turns`, PAGE_WORK): the page builds and the document pulls of a process run one at a time; they wait
  their turn address by address, then session by session (app.work.FairQueue), so that a crowd of requests from
  one address waits behind one request of each other address instead of every other visitor waiting behind it.
- Half-sent requests (HEADER_TIMEOUT_S, BODY_TIMEOUT_S): Tornado waits an hour for a request's headers by
  default; a client that sends half a request and stops held 28,000 connections of the classroom server.
  `request_timeouts()` sets them through Tornado's own `HTTPServer.configure` (the defaults of every HTTPServer
  made afterwards, Bokeh's included): a public setting, not a patch.

The websockets per session are counted by `count_sockets()`, which replaces Bokeh's `WSHandler.open` and
`on_close` (app/server/patches.py lists it as "sockets-per-session": installed only on a tested set of versions,
left out with `python -m lineare.app --no-patches`); the pulls are counted by the allow-list's `on_message`
(app/server/websocket.py), the new sessions and the turns by the build thread's patches (app/server/building.py).
"""
import asyncio
import contextlib
import logging
import os
import time
import weakref

from lineare.app.work import FairQueue

log = logging.getLogger("lineare.limits")
MAX_SOCKETS_PER_SESSION = 3
PULLS_BURST = 20
PULL_EVERY_S = 2.0
NEW_SESSIONS_BURST = 60         # a class behind one address, at once
# (bench/load.py, whose viewers all come from 127.0.0.1, sets it next to nothing)
NEW_SESSION_EVERY_S = float(os.environ.get("LINEARE_NEW_SESSION_EVERY_S", 1.0))
HEADER_TIMEOUT_S = 20           # nginx gives a visitor 10 s for its headers; its own keep-alive to us is 15 s
BODY_TIMEOUT_S = 20
CLOSE_CODE = 1008

_sockets = {}                   # session id → WeakSet of its open websockets


def session_of(token):
    """The session id of a Bokeh token, or None when it cannot be read (app/server/security.py answers those)."""
    from bokeh.util.token import get_session_id

    try:
        session = get_session_id(token)
    except Exception:                               # not a token: whoever checks tokens refuses it
        return None
    return session if isinstance(session, str) else None


def sockets_of(session):
    """The open websockets of `session` (its id)."""
    return list(_sockets.get(session, ()))


def add_socket(session, socket):
    """Count `socket` for `session`; False (and nothing counted) when the session has its share already."""
    if len(sockets_of(session)) >= MAX_SOCKETS_PER_SESSION:
        return False
    _sockets.setdefault(session, weakref.WeakSet()).add(socket)
    return True


def drop_socket(session, socket):
    found = _sockets.get(session)
    if found is not None:
        found.discard(socket)
        if not found:
            del _sockets[session]


def socket_closed(socket):
    """`socket` has closed: it no longer holds a place of its session (nor its session an entry here)."""
    session = getattr(socket, "lineare_session", None)
    if session is not None:
        drop_socket(session, socket)


class Bucket:
    """`burst` at once per key, then one per `every_s` (a bucket that refills; a full one is forgotten)."""

    def __init__(self, burst, every_s):
        self.burst, self.every_s = burst, every_s
        self._left = {}                             # key → (what it may still take, when counted)

    def take(self, key, now=None):
        """True, and one taken, when `key` may take one now."""
        now = time.monotonic() if now is None else now
        left, then = self._left.get(key, (self.burst, now))
        left = min(self.burst, left + (now - then) / self.every_s)
        allowed = left >= 1
        self._left[key] = (left - 1 if allowed else left, now)
        for old in [k for k, (kept, when) in self._left.items() if kept + (now - when) / self.every_s >= self.burst]:
            del self._left[old]                     # refilled: the same as never seen
        return allowed


_pulls = Bucket(PULLS_BURST, PULL_EVERY_S)          # per session (or a socket without one)
_new_sessions = Bucket(NEW_SESSIONS_BURST, NEW_SESSION_EVERY_S)   # per address


def may_pull(socket, now=None):
    """True, and one pull counted, when the session of `socket` may pull its document now: PULLS_BURST at once,
    then one per PULL_EVERY_S."""
    return _pulls.take(getattr(socket, "lineare_session", None) or id(socket), now)


def may_start_session(address, now=None):
    """True, and one counted, when `address` may have a new session made now: NEW_SESSIONS_BURST at once (a
    class), then one per NEW_SESSION_EVERY_S."""
    return _new_sessions.take(address, now)


def address_of(socket):
    """The visitor's address of a websocket or request handler (nginx's X-Real-IP with --use-xheaders)."""
    request = getattr(socket, "request", None)
    return getattr(request, "remote_ip", None)


class Turns:
    """One at a time, in turns: `async with turns.turn(address, session): …`. A coroutine waits until every
    address before it in the round has had one turn (and, within its address, every session)."""

    def __init__(self, name):
        self.name = name
        self._queue = FairQueue()
        self._busy = False

    def waiting(self, address=None):
        return self._queue.count(address)

    @contextlib.asynccontextmanager
    async def turn(self, address, session):
        if not self._busy:
            self._queue.ran(address, session)       # its turn, taken at once
        else:
            future = asyncio.get_running_loop().create_future()
            self._queue.put(address, session, future)
            try:
                await future
            except asyncio.CancelledError:
                if future.done() and not future.cancelled():      # handed the turn as it was cancelled
                    self._next()
                raise
        self._busy = True
        try:
            yield
        finally:
            self._next()

    def _next(self):
        while True:
            future = self._queue.pop()
            if future is None:
                self._busy = False
                self._queue.idle()
                return
            if not future.done():                   # one cancelled meanwhile is passed over
                future.set_result(None)
                return


# a page's build and a document's JSON are Python through and through: two at once share one core's worth of the
# interpreter and each takes twice as long, so they take one set of turns (a visitor's page waits for at most one
# build or pull of each other address, never beside them)
PAGE_WORK = Turns("page work")


def request_timeouts(header_s=HEADER_TIMEOUT_S, body_s=BODY_TIMEOUT_S):
    """Every HTTPServer made from now on closes a connection whose request's headers (or body) take longer than
    this (Tornado's default: an hour for the headers)."""
    from tornado.httpserver import HTTPServer

    HTTPServer.configure(None, idle_connection_timeout=header_s, body_timeout=body_s)


def count_sockets():
    """Patch Bokeh's WSHandler (listed in app/server/patches.py): its `open` counts the websockets of each session
    and closes one past MAX_SOCKETS_PER_SESSION; its `on_close` lets the socket's place go (and skips Bokeh's own
    when Bokeh's keep-alive already let the connection go)."""
    from bokeh.server.views.ws import WSHandler

    open_socket, on_close = WSHandler.open, WSHandler.on_close
    if getattr(open_socket, "lineare_limits", False):
        return True

    def open(self, *args, **kwargs):
        session = session_of(getattr(self, "_token", None))
        if session is not None:
            if not add_socket(session, self):
                log.warning("websocket %s from %s: refused, %d connections to one page already", self.request.path,
                            self.request.remote_ip, MAX_SOCKETS_PER_SESSION)
                self.close(CLOSE_CODE, "too many connections to one page")
                return None
            self.lineare_session = session
        return open_socket(self, *args, **kwargs)

    def _on_close(self):
        socket_closed(self)
        connection = getattr(self, "connection", None)
        if connection is not None and getattr(connection, "_session", True) is None:
            # Bokeh's keep-alive pinged this socket while the server was closing it and let its connection go
            # then; Bokeh's on_close would fail on that (an assert, and a traceback in the log)
            return None
        return on_close(self)

    open.lineare_limits = True
    WSHandler.open, WSHandler.on_close = open, _on_close
    return True
