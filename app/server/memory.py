"""Memory given back to the system once visitors have left (installed by `python -m app`).

A page build makes hundreds of thousands of small Python objects; when its session is discarded they
are freed, but the memory is not given back. Measured with bench/hostile.py (120 hostile page loads,
then the sessions discarded): the objects alive were the same 92 MB as after one visit of each page,
yet Python's own allocator held 301 arenas of 1 MiB instead of 121 — a few long-lived objects made
during the builds (caches) keep mostly empty arenas — and the process stayed at ~550 MiB instead of
~430. With Python on the C allocator (PYTHONMALLOC=malloc, which `python -m app` sets on Linux) and
glibc's malloc_trim after sessions are discarded, it went back to the ~355 MiB of a fresh server
after one visit of each page. Pages were not measurably slower.

`install()` registers, for every session destroyed, one malloc_trim TRIM_DELAY_S later (one at a
time, and at most one per TRIM_INTERVAL_S: a crowd leaving costs one trim). A discarded document is
a web of reference cycles that only the cycle collector frees, and it runs rarely once a server is
large, so the trim collects them first: without that, most of the memory was not free yet when it
ran. One server, 150 state pages opened and closed two at a time by bench/load.py's viewers, RSS
after 20 → after 150, both once the sessions were discarded: 438 → 600 MiB with the
trim alone, 383 → 392 MiB with the collection first. A full collection stops the event loop
~0.4 s with 20 pages alive (hence the interval). Without glibc there is no trim.

Once the server runs, everything made before that is still alive after a collection (the imports,
what the pages built by --warm left in the shared caches: ~300 000 objects) is moved out of the
collector's sight with gc.freeze(): they live as long as the process (and are still freed when
nothing refers to them), yet every full collection scanned them again (235 → 42 ms with 5 pages
alive, measured in-process).

The collector's oldest generation is looked at ten times less often than Python's default (`FULL_EVERY`): a
page build makes so many objects that it passed the default's count about every other page, and a full
collection then scanned every live session's objects, though they are rarely garbage (a discarded page is
freed by the trim above) — each pass longer as visitors arrive. `bench.load burst --viewers 60 --workers 2`,
the collections logged in the servers: 37 collections of over 5 ms, 7.5 of the servers' 26.1 s of CPU,
page open p95 3.95 s; with the oldest generation looked at every 100 passes of the middle one instead of 10: 7
such collections (the start-up freezes and the trim), 2.3 of 23.9 s, p95 3.20 s.
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


def install(forks=False):
    """`forks`: the server forks its processes after this (--num-procs), and an event loop made before
    the fork would be shared by them all (Tornado then fails to start): the start-up objects are
    frozen now, before the fork (which also keeps the processes' copies of them shared), and once
    more by each process at its first session (what the pages imported since)."""
    import panel as pn
    from tornado.ioloop import IOLoop

    young, middle, _oldest = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_EVERY)
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
    if libc is None:
        return

    scheduled, last = [], [-TRIM_INTERVAL_S]

    def trim():
        scheduled.clear()
        gc.collect()
        libc.malloc_trim(0)
        last[0] = time.monotonic()

    def destroyed(_session_context):
        if not scheduled:
            delay = max(TRIM_DELAY_S, last[0] + TRIM_INTERVAL_S - time.monotonic())
            scheduled.append(IOLoop.current().call_later(delay, trim))

    pn.state.on_session_destroyed(destroyed)
