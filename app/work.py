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

A worker's queue is shared by every visitor of the process, so it is bounded and fair: each session has at most
one job queued or running (a store asks again when its job returns, with the settings of then), an address at
most `per_address`, the queue at most `max_waiting`; and jobs take turns address by address, then session by
session (`FairQueue`). Twelve sessions cycling seeds on Where memory fails, in one FIFO queue, moved another
visitor's seed change from 0.32 to 15.7 s; in turns, that visitor waits for the one job running.
Every worker's jobs share one interpreter, so a long job calls `give_way()` between its steps: it pauses there
while a job of an address that has used less of the workers lately runs (`Shares`).

`Shared` keeps what is computed once per process and read by every session (read-only results of
fixed inputs, e.g. the held-out accuracy of the shipped checkpoints).
"""
import atexit
import collections
import itertools
import logging
import sys
import threading
import time

from lineare.app.shared import read_only

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


class Busy(RuntimeError):
    """A job refused because its worker's queue is full (on_error gets it; nothing was computed)."""


def visitor_of(doc):
    """(address, session id) of the served document `doc`: whom a job is for, for the queues' turns."""
    context = getattr(doc, "session_context", None)
    request = getattr(context, "request", None)
    address = getattr(request, "remote_ip", None) if request is not None else None
    return address, getattr(context, "id", None) or id(doc)


class Rotation:
    """Keys taking turns: the next turn goes to the waiting key that has had the fewest turns lately, so that a key
    that has just come goes before one that has had a turn already (ties: the one served longest ago, or first
    come). A key's count starts from the turns being given now, so that waiting long is no credit for later."""

    def __init__(self):
        self._waiting = {}                            # key → [its next turn's number, order, its value]
        self._turns = {}                              # key → its next turn's number, while it is recent
        self._now = 0
        self._order = itertools.count()

    def __bool__(self):
        return bool(self._waiting)

    def __iter__(self):
        return iter(self._waiting)

    def value(self, key, default=None):
        entry = self._waiting.get(key)
        return default if entry is None else entry[2]

    def add(self, key, make):
        """The value of `key`, made (`make()`) and put in the rotation if the key was not waiting."""
        if key not in self._waiting:
            self._waiting[key] = [max(self._turns.pop(key, 0), self._now), next(self._order), make()]
        return self._waiting[key][2]

    def next(self, skip=()):
        """(key, value) whose turn it is, among the keys not in `skip`; None when none waits."""
        keys = [key for key in self._waiting if key not in skip]
        if not keys:
            return None
        key = min(keys, key=lambda k: self._waiting[k][:2])
        return key, self._waiting[key][2]

    def served(self, key, still_waiting=True):
        """`key` has had a turn (whether it waited for it or not)."""
        entry = self._waiting.get(key)
        turn = entry[0] if entry is not None else max(self._turns.get(key, 0), self._now)
        self._now = max(self._now, turn)
        if entry is not None and still_waiting:
            entry[0], entry[1] = turn + 1, next(self._order)
            return
        self._waiting.pop(key, None)
        self._turns[key] = turn + 1
        self._turns = {k: t for k, t in self._turns.items() if t > self._now}     # only the recent ones


class FairQueue:
    """Jobs waiting their turn, address by address and, within an address, session by session (`Rotation`): one
    address's (or one session's) many jobs wait behind a job of each other address, instead of every other
    visitor waiting behind all of them. Not thread-safe: its owner holds a lock (or the event loop)."""

    def __init__(self):
        self._addresses = Rotation()                  # address → Rotation(session → deque of jobs)
        self._size = 0

    def __len__(self):
        return self._size

    def put(self, address, session, job):
        self._addresses.add(address, Rotation).add(session, collections.deque).append(job)
        self._size += 1

    def pop(self, skip=()):
        """The next job in turn of an address not in `skip` (None when none waits)."""
        found = self._addresses.next(skip)
        if found is None:
            return None
        address, sessions = found
        session, jobs = sessions.next()
        job = jobs.popleft()
        self._size -= 1
        sessions.served(session, still_waiting=bool(jobs))
        self._addresses.served(address, still_waiting=bool(sessions))
        return job

    def idle(self):
        """Nothing waits or runs: who had turns in this busy spell no longer counts (each spell starts even)."""
        if not self._size:
            self._addresses = Rotation()

    def ran(self, address, session):
        """A job of `session` at `address` ran without waiting: it counts as that address's turn."""
        self._addresses.value(address, Rotation()).served(session, still_waiting=False)
        self._addresses.served(address, still_waiting=bool(self._addresses.value(address)))

    def count(self, address=None, session=None):
        """Jobs waiting from `address` (and `session`), or in all."""
        if address is None and session is None:
            return self._size
        sessions = self._addresses.value(address)
        if sessions is None:
            return 0
        if session is not None:
            return len(sessions.value(session, ()))
        return sum(len(sessions.value(key)) for key in sessions)


class Shares:
    """Each address's recent time of slow work in this process (every Worker's jobs, decaying by half every
    HALF_LIFE_S), and `give_way()` for a long job between its steps: a job pauses there while a job of another
    address that has used less runs, at most MAX_PAUSE_S at a time.

    Worker threads of one process share one interpreter: a job that is Python through and through (many small
    PyTorch runs) takes twice as long beside another, whatever the number of threads or cores. A crowd from one
    address that keeps a job running all the time (12 sessions turning seeds) so made another visitor's seed change
    3.6× slower than alone; pausing the crowd's job while the visitor's runs gives the visitor the interpreter,
    and when nobody else waits nobody pauses (the least-used running address never does: no deadlock)."""

    HALF_LIFE_S = 10.0
    MAX_PAUSE_S = 5.0
    POLL_S = 0.02                                     # a paused job looks again this often (shares change as jobs run)

    def __init__(self):
        self._lock = threading.Condition()
        self._used = {}                               # address → (seconds used, when counted)
        self._active = {}                             # thread id → (address, running since): jobs not paused

    def _decayed(self, address, now):
        seconds, then = self._used.get(address, (0.0, now))
        return seconds * 0.5 ** ((now - then) / self.HALF_LIFE_S)

    def _all_used(self, now):
        """{address: seconds used lately, with its jobs running now} (the lock held)."""
        used = {}
        for address, since in self._active.values():
            used[address] = used.get(address, self._decayed(address, now)) + now - since
        return used

    def used(self, address):
        """Seconds of work `address` used lately, with its jobs running now."""
        now = time.monotonic()
        with self._lock:
            return self._all_used(now).get(address, self._decayed(address, now))

    def start(self, address):
        """The calling thread runs a job of `address` (from now on until `stop()`)."""
        with self._lock:
            self._active[threading.get_ident()] = (address, time.monotonic())

    def stop(self):
        """The calling thread's job stops running (ends or pauses): its time is counted to its address."""
        now = time.monotonic()
        with self._lock:
            address, since = self._active.pop(threading.get_ident(), (None, None))
            if since is not None:
                self._used[address] = (self._decayed(address, now) + now - since, now)
                self._used = {a: spent for a, spent in self._used.items()
                              if self._decayed(a, now) > 1e-3}                       # forgotten once spent
            self._lock.notify_all()

    def _behind(self, address):
        """A job of another address that has used less than `address` runs (the lock held)."""
        now = time.monotonic()
        used = self._all_used(now)
        mine = used.get(address, self._decayed(address, now))
        return any(who != address and seconds < mine for who, seconds in used.items())

    def give_way(self):
        """Between two steps of a long job: pause while a job of an address that has used less runs (at most
        MAX_PAUSE_S). Nothing outside a Worker's job."""
        running = self._active.get(threading.get_ident())
        if running is None:
            return
        address = running[0]
        with self._lock:
            if not self._behind(address):
                return
        self.stop()
        deadline = time.monotonic() + self.MAX_PAUSE_S
        with self._lock:
            while time.monotonic() < deadline and self._behind(address):
                self._lock.wait(self.POLL_S)
        self.start(address)


SHARES = Shares()


def give_way():
    """For a long job between two of its steps (e.g. each point of a curve): let a less busy address's job run
    first (`Shares`). Does nothing outside a Worker's job: tests and scripts run straight through."""
    SHARES.give_way()


class Worker:
    """Background threads for one kind of slow work, with a bounded, fair queue.

    `submit(compute, on_done, on_error=None)` returns False (runs nothing, and hands `on_error` a `Busy`) when
    `max_waiting` jobs are already queued or running, when `per_address` of them are the same address's, or when
    the same session already has one queued or running: one job in flight per session, so that a crowd cannot
    pile up unbounded work. Jobs take turns address by address, then session by session (`FairQueue`), on
    `threads` threads, each address on one at most: a visitor's job starts at once beside a crowd's from another
    address instead of waiting for it to end (12 sessions cycling seeds: another visitor's seed change 3× slower
    waiting its turn on one thread).
    """

    def __init__(self, name, *, max_waiting=64, per_address=48, threads=2):
        self.name = name
        self.max_waiting, self.per_address, self.threads = max_waiting, per_address, threads
        self._queue = FairQueue()
        self._lock = threading.Condition()
        self._pool = []
        self._stopping = False
        self._running = collections.Counter()         # address → jobs running
        self.waiting = 0                              # jobs queued or running
        self._holders = collections.Counter()         # (address, session) → jobs queued or running
        self._addresses = collections.Counter()       # address → jobs queued or running

    def submit(self, compute, on_done, on_error=None):
        doc = current_document()
        if doc is None:                               # no server: nothing to keep responsive
            self._finish(compute, on_done, on_error)()
            return True
        address, session = visitor = visitor_of(doc)
        with self._lock:
            refused = (self._holders[visitor] >= 1
                       or (self.max_waiting is not None and self.waiting >= self.max_waiting)
                       or (self.per_address is not None and self._addresses[address] >= self.per_address))
            if not refused:
                self.waiting += 1
                self._holders[visitor] += 1
                self._addresses[address] += 1
                self._queue.put(address, session, (visitor, doc, compute, on_done, on_error))
                self._start()
                self._lock.notify()
        if refused:
            if on_error is not None:
                on_next_tick(doc, lambda: on_error(Busy(f"{self.name}: the queue is full")))
            return False
        return True

    def _start(self):
        if not self._pool:
            atexit.register(self._stop)
        while len(self._pool) < min(self.threads, self.waiting):
            thread = threading.Thread(target=self._serve, name=f"lineare-{self.name}-{len(self._pool)}", daemon=True)
            self._pool.append(thread)
            thread.start()

    def _stop(self):
        """At exit: the jobs running end, the others are dropped (a thread stopped inside PyTorch aborts Python)."""
        with self._lock:
            self._stopping = True
            self._lock.notify_all()
        for thread in self._pool:
            thread.join()

    def _serve(self):
        while True:
            with self._lock:
                job = None if self._stopping else self._queue.pop(skip=self._running)
                while job is None:
                    if self._stopping:
                        return
                    self._lock.wait()
                    job = self._queue.pop(skip=self._running)
                visitor, doc, compute, on_done, on_error = job
                self._running[visitor[0]] += 1
            SHARES.start(visitor[0])
            try:
                answer = self._finish(compute, on_done, on_error)
            finally:
                SHARES.stop()
                with self._lock:                      # before the answer: it may submit the session's next job
                    self._running[visitor[0]] -= 1
                    if not self._running[visitor[0]]:
                        del self._running[visitor[0]]
                    if not self._running:
                        self._queue.idle()
                    self._lock.notify_all()           # a job of that address may run now
                    self.waiting -= 1
                    self._holders[visitor] -= 1
                    self._addresses[visitor[0]] -= 1
                    if not self._holders[visitor]:
                        del self._holders[visitor]
                    if not self._addresses[visitor[0]]:
                        del self._addresses[visitor[0]]
            on_next_tick(doc, answer)

    @staticmethod
    def _finish(compute, on_done, on_error):
        """What to call with the outcome of `compute()`: on_done(result), or on_error(error)."""
        try:
            result = compute()
        except Exception as error:                    # reported to the page, never lost in a thread
            log.exception("slow work failed")
            # bound now: Python unbinds `error` after this block
            return (lambda error=error: on_error(error)) if on_error is not None else (lambda: None)
        return lambda: on_done(result)


class Latest:
    """A store's slow work for one kind of knob: one job at a time per session, on `worker` in a server (at once
    without one); settings that change meanwhile are computed when it returns, so a dragged slider costs two
    jobs, not one per position. `settings()` gives the arguments of `compute`; `done(result)` gets the result of
    the latest settings; `failed(error)` an error (a `Busy` when the worker's queue was full); `busy(True/False)`
    says when the session waits."""

    def __init__(self, worker, settings, compute, done, failed=lambda _error: None, busy=lambda _busy: None):
        self.worker, self.settings, self.compute = worker, settings, compute
        self.done, self.failed, self.busy = done, failed, busy
        self.running = False

    def ask(self):
        if self.running:
            return                             # _returned sees the new settings and asks again
        self.running = True
        self.busy(True)
        key = self.settings()
        self.worker.submit(lambda: self.compute(*key), lambda result: self._returned(key, result),
                           on_error=self._failed)

    def _returned(self, key, result):
        self.running = False
        if key != self.settings():
            self.ask()
            return
        self.busy(False)
        self.done(result)

    def _failed(self, error):
        self.running = False
        self.busy(False)
        self.failed(error)


class Shared:
    """Results computed once per process, shared read-only by every session (thread-safe): the NumPy arrays in
    them are made read-only (app/shared.py)."""

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
        value = read_only(make())
        with self._lock:
            return self._values.setdefault(key, value)
