"""Where this server's rooms live, and how the sessions of this process hear that their room changed.

    rooms()                                   # the store: --rooms (LINEARE_ROOMS), one per process
    stop = listen(code, on_change)            # in a session: on_change(state) on the session's next tick
                                              # after each change of the room (state None: the room is gone)

A class's phones and its projector are sessions on any of the server's processes (the kernel, or nginx, hands
each connection to one). Each process polls the store every POLL_S for the version of the rooms its sessions
follow (one query for all of them), reads a changed room once and hands it to each of those sessions through
Bokeh's next-tick callback (the one Document method safe from outside the session). An answer on one process
reaches the projector on another within POLL_S plus a read.
"""
import itertools
import logging
import os
import tempfile
import threading
import time

from lineare.app.classroom.store import IDLE_HOURS, ROOM_SIZE, open_rooms
from lineare.app.work import on_next_tick

log = logging.getLogger("lineare.classroom")
POLL_S = 0.15
EXPIRE_EVERY_S = 600
ROOMS_ENV, SIZE_ENV, LAN_ENV = "LINEARE_ROOMS", "LINEARE_ROOM_SIZE", "LINEARE_LAN"

_store, _store_lock = None, threading.Lock()


def default_rooms(port):
    """The classroom's store when --rooms is not given: an SQLite file of this server (its port), in the user's
    runtime folder (else the temporary one), shared by the processes python -m lineare.app forks."""
    folder = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return f"sqlite:///{folder}/lineare-{os.getuid() if hasattr(os, 'getuid') else 'user'}/rooms-{port}.sqlite"


def rooms():
    """This process's store (opened on first use, from LINEARE_ROOMS: python -m lineare.app's --rooms)."""
    global _store
    with _store_lock:
        if _store is None:
            url = os.environ.get(ROOMS_ENV) or default_rooms("panel-serve")      # plain `panel serve app/pages/*.py`
            _store = open_rooms(url, idle_hours=IDLE_HOURS)
        return _store


def room_size():
    """Students a room takes (python -m lineare.app's --room-size)."""
    try:
        return max(1, int(os.environ.get(SIZE_ENV, ROOM_SIZE)))
    except ValueError:
        return ROOM_SIZE


def serves_lan():
    """True when python -m lineare.app --lan serves the classroom's network (phones reach this machine's addresses)."""
    return os.environ.get(LAN_ENV) == "1"


class Listeners:
    """The rooms the sessions of this process follow, and the poller that tells them of a change."""

    def __init__(self):
        self._by_code = {}                     # code → {key: (doc, on_change)}
        self._seen = {}                        # code → the version last handed out
        self._keys = itertools.count()
        self._lock = threading.Lock()
        self._poller = None
        self._expired = time.monotonic()
        self._away = False

    def listen(self, code, on_change, doc):
        """Call on_change(state) on `doc`'s next tick after each change of room `code`; a function that stops."""
        key = next(self._keys)
        with self._lock:
            self._by_code.setdefault(code, {})[key] = (doc, on_change)
            start = self._poller is None
            if start:
                self._poller = "starting"
        if start:                              # on the event loop (a page may be built on a thread of its own)
            on_next_tick(doc, self._start)
        return lambda: self._forget(code, key)

    def _forget(self, code, key):
        with self._lock:
            listeners = self._by_code.get(code, {})
            listeners.pop(key, None)
            if not listeners:
                self._by_code.pop(code, None)
                self._seen.pop(code, None)

    def _start(self):
        from tornado.ioloop import PeriodicCallback

        self._poller = PeriodicCallback(self.poll, POLL_S * 1000)
        self._poller.start()

    def poll(self):
        """Read the versions of the rooms followed here; hand each changed room to its sessions."""
        with self._lock:
            codes = list(self._by_code)
        if time.monotonic() - self._expired > EXPIRE_EVERY_S:
            self._expired = time.monotonic()
            try:
                rooms().expire()
            except Exception:                  # the store is away: the next poll says so
                pass
        if not codes:
            return
        try:
            versions = rooms().versions(codes)
            changed = [c for c in codes if versions.get(c) != self._seen.get(c, -1)]
            states = {code: rooms().state(code) if code in versions else None for code in changed}
        except Exception as error:             # a store that is away: said once, the sessions keep what they show
            if not self._away:
                log.warning("rooms: the store does not answer (%s); trying again every %g s", error, POLL_S)
            self._away = True
            return
        if self._away:
            log.warning("rooms: the store answers again")
            self._away = False
        for code, state in states.items():
            self._seen[code] = versions.get(code)
            with self._lock:
                listeners = list(self._by_code.get(code, {}).values())
            for doc, on_change in listeners:
                on_next_tick(doc, lambda doc=doc, on_change=on_change, state=state: _in_session(doc, on_change, state))


def _in_session(doc, on_change, state):
    """on_change(state) as a callback of `doc`'s session: Panel's current document (its language, where its
    changes go) is `doc`, not whichever session's context the poller was started from."""
    from panel.io.state import set_curdoc

    with set_curdoc(doc):
        on_change(state)


LISTENERS = Listeners()


def listen(code, on_change, doc=None):
    """Follow room `code` from the current session (see Listeners.listen); stops when the session closes."""
    import panel as pn

    doc = doc or pn.state.curdoc
    stop = LISTENERS.listen(code, on_change, doc)
    try:
        doc.on_session_destroyed(lambda _context: stop())
    except Exception:                          # no server session (tests): the caller stops it
        pass
    return stop
