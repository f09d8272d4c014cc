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
time: a crowd leaving costs one trim, ~20 ms). Without glibc it does nothing.
"""
import ctypes

TRIM_DELAY_S = 5.0


def c_library():
    """The C library if it has glibc's malloc_trim, else None (macOS, musl, Windows)."""
    try:
        libc = ctypes.CDLL(None)
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        return libc
    except (OSError, AttributeError):
        return None


def install():
    libc = c_library()
    if libc is None:
        return
    import panel as pn
    from tornado.ioloop import IOLoop

    scheduled = []

    def trim():
        scheduled.clear()
        libc.malloc_trim(0)

    def destroyed(_session_context):
        if not scheduled:
            scheduled.append(IOLoop.current().call_later(TRIM_DELAY_S, trim))

    pn.state.on_session_destroyed(destroyed)
