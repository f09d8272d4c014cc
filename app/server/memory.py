"""Memory given back to the system once visitors have left (installed by `python -m lineare.app`, patched or not:
it uses Panel's public session hooks and Python's own gc and glibc's malloc_trim, no library internal).

Invariants:

- after sessions are discarded, their memory goes back to the system: for every session destroyed, one full
  collection then `malloc_trim(0)` TRIM_DELAY_S later, one at a time and at most one per TRIM_INTERVAL_S (a crowd
  leaving costs one trim; `python -m lineare.app --trim-seconds` sets the interval, and the delay is never longer); a
  discarded document is a web of reference cycles only the collector frees, so the collection comes first. On Linux
  `python -m lineare.app` runs Python's small objects on the C allocator (PYTHONMALLOC=malloc), which the trim can
  give back; without glibc there is no trim, and nothing else changes;
- what is alive once the server runs (the imports, what --warm's pages left in the shared caches) is moved out of
  the collector's sight (`gc.freeze()`): it lives as long as the process and is still freed when nothing refers to
  it; with forked processes this is done before the fork (their copies stay shared) and once more in each process
  at its first session;
- the collector's oldest generation is looked at FULL_EVERY times less often than Python's default: a page build
  makes so many objects that the default scanned every live session's objects about every other page;
- the pages already built are moved out of the collector's sight too, each time a new session comes (`gc.freeze()`,
  which costs nothing): an open page lives until its session is discarded, and every full collection scanned all of
  them (40–60 pages open from one address: 0.4–1.4 s holding the interpreter, in whichever thread it fell, several
  times a minute while pages were opened). They come back (`gc.unfreeze()`) for the collection that follows a
  session discarded, the one place their cycles become garbage, and are moved out again after it.

What each of these measured (RSS after hostile loads, collections during a burst) is in bench/RESULTS.md.
"""
import ctypes
import gc
import time

TRIM_DELAY_S = 5.0
TRIM_INTERVAL_S = 20.0
FULL_EVERY = 100            # collections of the middle generation per look at the oldest one (Python: 10)


def c_library():
    """The C library if it has glibc's malloc_trim, else None (macOS, musl, Windows)."""
    try:
        libc = ctypes.CDLL(None)
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        return libc
    except (OSError, AttributeError):
        return None


def freeze_startup():
    gc.collect()
    gc.freeze()


def settle(_session_context=None):
    """A new session comes: every object alive now (the pages built so far) leaves the collector's sight."""
    gc.freeze()


def collect():
    """A full collection of everything, the settled pages included (their discarded ones are freed), then what is
    alive is settled again."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


def install(forks=False, interval_s=TRIM_INTERVAL_S):
    """`interval_s`: at most one trim this often (a shorter delay too, if it is shorter). `forks`: the server forks
    its processes after this (--num-procs), and an event loop made before the fork would be shared by them all
    (Tornado then fails to start): the start-up objects are frozen now, before the fork (which also keeps the
    processes' copies of them shared), and once more by each process at its first session (what the pages imported
    since)."""
    import panel as pn
    from tornado.ioloop import IOLoop

    young, middle, _oldest = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_EVERY)
    pn.state.on_session_created(settle)
    if forks:
        freeze_startup()
        first = []

        def created(_session_context):
            if not first:
                first.append(True)
                freeze_startup()
        pn.state.on_session_created(created)
    else:
        IOLoop.current().add_callback(freeze_startup)     # runs when the server starts, after --warm
    libc = c_library()
    wait_s = min(TRIM_DELAY_S, interval_s)
    scheduled, last = [], [-interval_s]

    def trim():
        scheduled.clear()
        collect()
        if libc is not None:                      # without glibc: the collection, no trim
            libc.malloc_trim(0)
        last[0] = time.monotonic()

    def destroyed(_session_context):
        if not scheduled:
            delay = max(wait_s, last[0] + interval_s - time.monotonic())
            scheduled.append(IOLoop.current().call_later(delay, trim))

    pn.state.on_session_destroyed(destroyed)
