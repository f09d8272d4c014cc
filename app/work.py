"""Slow work off the event loop, with its result handed back to the session that asked for it.

    MEASURER = Worker("measure", max_waiting=3)           # module level: one thread per kind of work

    class FormsStore(param.Parameterized):
        def measure(self):                                # the store owns its slow work …
            MEASURER.submit(lambda: measure_costs(...), self._measured)

        def _measured(self, curve):                       # … and gets the result on the session's next
            self.curve = curve                            #    tick; views only watch `curve`

A Panel server runs one callback at a time per process: seconds of computing inside a callback
freeze every visitor. `Worker.submit` runs `compute` on the worker's own thread and calls
`on_done(result)` through Bokeh's `add_next_tick_callback` (the one Document method that is safe
from another thread), which holds the document's lock and so the session's language. Without a
server (tests, notebooks, scripts) it computes at once and calls `on_done` directly, so stores are
testable with no Panel at all.

`Shared` keeps what is computed once per process and read by every session (read-only results of
fixed inputs, e.g. the held-out accuracy of the shipped checkpoints).
"""
import logging
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

log = logging.getLogger("lineare")


def current_document():
    """The Bokeh document of the session running this code, or None outside a server session.
    Panel is looked up only if it is already loaded: models use this without importing Panel."""
    panel = sys.modules.get("panel")
    doc = panel.state.curdoc if panel is not None else None
    return doc if doc is not None and doc.session_context is not None else None


def on_next_tick(doc, callback):
    """Run `callback` on the session's next tick, which holds the document's lock (and its language);
    at once without a server; not at all once the session has closed."""
    if doc is None or doc.session_context is None:
        callback()
        return
    try:
        doc.add_next_tick_callback(callback)
    except Exception:                                 # the session closed meanwhile
        pass


class Worker:
    """One background thread for one kind of slow work, with a bounded queue.

    `submit(compute, on_done, on_error=None)` returns False (and runs nothing) when `max_waiting` jobs
    are already queued or running, so a crowd cannot pile up unbounded work.
    """

    def __init__(self, name, *, max_waiting=None):
        self.name = name
        self.max_waiting = max_waiting
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"lineare-{name}")
        self._lock = threading.Lock()
        self.waiting = 0                              # jobs queued or running

    def submit(self, compute, on_done, on_error=None):
        doc = current_document()
        if doc is None:                               # no server: nothing to keep responsive
            self._finish(None, compute, on_done, on_error)
            return True
        with self._lock:
            if self.max_waiting is not None and self.waiting >= self.max_waiting:
                return False
            self.waiting += 1
        self._executor.submit(self._run, doc, compute, on_done, on_error)
        return True

    def _run(self, doc, compute, on_done, on_error):
        try:
            self._finish(doc, compute, on_done, on_error)
        finally:
            with self._lock:
                self.waiting -= 1

    @staticmethod
    def _finish(doc, compute, on_done, on_error):
        try:
            result = compute()
        except Exception as error:                    # reported to the page, never lost in a thread
            log.exception("slow work failed")
            if on_error is not None:                  # bound now: Python unbinds `error` after this block
                on_next_tick(doc, lambda error=error: on_error(error))
            return
        on_next_tick(doc, lambda: on_done(result))


class Shared:
    """Results computed once per process, shared read-only by every session (thread-safe)."""

    def __init__(self):
        self._values = {}
        self._lock = threading.Lock()

    def get(self, key, default=None):
        return self._values.get(key, default)

    def __contains__(self, key):
        return key in self._values

    def compute(self, key, make):
        """The value of `key`, made by `make()` the first time (outside the lock: other keys go on)."""
        if key in self._values:
            return self._values[key]
        value = make()
        with self._lock:
            return self._values.setdefault(key, value)
