"""Serve Lineare: `python -m app` (what `./scripts/app` runs), then open http://localhost:5006.

It is `panel serve` with the flags a classroom needs; the same pages are served by plain Panel with

    panel serve app/pages/*.py --index home

One file per page in app/pages/ (its route is the file's name); every page is built by
`app.shell.page`, so each has the same navigation, languages and URL state. All JavaScript, CSS and
fonts come from the server itself (Bokeh's and Panel's bundles, no CDN): it works with the network
cut. File-based apps also get Panel's per-session clean-up. Options: --port, --address,
--allow-websocket-origin for a hosted instance, --num-procs for several processes, --warm, --show,
--secret-key-file, --build-on-loop; anything after `--` goes to `panel serve` unchanged.

Pages are built on a thread of their own (app/building.py), so that one visitor opening a page does
not stop every other session of the process; --build-on-loop builds them as plain Panel does. On
Linux the server runs with PYTHONMALLOC=malloc and trims the C heap after sessions close
(app/memory.py), so that its memory comes back after a crowd has left.

Session ids are signed (app/security.py): with several server processes behind one proxy, give them
all the same --secret-key-file (or BOKEH_SECRET_KEY), since a page and its websocket may reach
different processes. A bokeh.client load test needs the key too: BOKEH_SECRET_KEY=… and
BOKEH_SIGN_SESSIONS=true in its environment. What a visitor's websocket may change is an allow-list
(app/websocket.py): widget values within the widget's bounds, our components' own state and Bokeh's
events; anything else is refused in one log line.
"""
import argparse
import errno
import os
import socket
import sys
from pathlib import Path

PAGES = Path(__file__).resolve().parent / "pages"
NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
IDLE_CHECK_MS = 10_000           # bounded work per visitor: idle sessions are closed and their stores freed
IDLE_LIFETIME_MS = 60_000
MAX_WEBSOCKET_MESSAGE = 256 * 1024    # a browser sends messages well under 1 KB (app/websocket.py); Tornado: 10 MB
COMPRESSION_LEVEL = 6            # permessage-deflate: a run's frames (8-bit colour steps) shrink to about half


def panel_serve_args(args, extra=()):
    """The `panel serve` command line for our options."""
    pages = sorted(str(p) for p in PAGES.glob("*.py"))
    origins = args.allow_websocket_origin or [f"localhost:{args.port}", f"127.0.0.1:{args.port}"]
    argv = ["panel", "serve", *pages, "--index", "home", "--port", str(args.port), "--address", args.address,
            "--num-procs", str(args.num_procs), "--check-unused-sessions", str(IDLE_CHECK_MS),
            "--unused-session-lifetime", str(IDLE_LIFETIME_MS),
            "--websocket-compression-level", str(COMPRESSION_LEVEL), "--session-ids", "signed",
            "--static-dirs", f"notebooks={NOTEBOOKS}",      # the state page links the NumPy notebook
            "--websocket-max-message-size", str(MAX_WEBSOCKET_MESSAGE)]
    if args.warm:
        argv.append("--warm")
    for origin in origins:
        argv += ["--allow-websocket-origin", origin]
    if args.show:
        argv.append("--show")
    return argv + list(extra)


def port_problem(address, port):
    """A sentence saying why `port` cannot be used, or None when it is free. Probed as Tornado binds
    (SO_REUSEADDR): a port whose last connections are still closing (TIME_WAIT, e.g. a proxy's, for a
    minute after a restart) is free for the server."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((address if address not in ("", "0.0.0.0") else "0.0.0.0", port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                return (f"Port {port} is already in use (another Lineare, or another program). "
                        f"Try another one: ./scripts/app --port {port + 1}")
            return f"Cannot listen on {address}:{port}: {error.strerror}."
    return None


def main(argv=None):
    command_line = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(prog="python -m app", description="Serve the Lineare dashboards.",
                                     epilog="Arguments after -- go to `panel serve` unchanged.")
    parser.add_argument("--port", type=int, default=5006)
    parser.add_argument("--address", default="localhost", help="interface to listen on (0.0.0.0: all)")
    parser.add_argument("--allow-websocket-origin", action="append", default=None, metavar="HOST[:PORT]",
                        help="hosts allowed to open the websocket (repeat; needed behind a proxy)")
    parser.add_argument("--num-procs", type=int, default=1, help="server processes (0: one per core)")
    parser.add_argument("--show", action="store_true", help="open a browser tab")
    parser.add_argument("--warm", action="store_true",
                        help="build every page once before listening (a hosted demo: the first visitor waits less; "
                             "the server then answers about 10 s later than the 3 s without it)")
    parser.add_argument("--secret-key-file", default=None, metavar="PATH",
                        help="file with the key that signs session ids, made when missing; give every "
                             "process of one demo the same file (default: BOKEH_SECRET_KEY, else a new key)")
    parser.add_argument("--build-on-loop", action="store_true",
                        help="build pages on the event loop, as plain Panel does (default: on a thread of their "
                             "own, so that a page being built does not stop every other visitor's session)")
    parser.add_argument("--idle-minutes", type=float, default=10.0,
                        help="close a connection that sent nothing this long (an open, visible page tells the "
                             "server once a minute that it is there; default: %(default)s)")
    args = parser.parse_args(argv)

    problem = port_problem(args.address, args.port)
    if problem:
        print(problem, file=sys.stderr)
        return 1
    if command_line and sys.platform.startswith("linux") and "PYTHONMALLOC" not in os.environ:
        # Python's small objects on the C allocator, so that memory comes back after visitors leave
        # (app/memory.py); PYTHONMALLOC=pymalloc keeps Python's own
        os.execve(sys.executable, [sys.executable, "-m", "app", *sys.argv[1:]],
                  {**os.environ, "PYTHONMALLOC": "malloc"})
    from app import memory, security, websocket
    try:
        # before anything imports Bokeh: it reads the key once, and forked processes inherit it
        os.environ["BOKEH_SECRET_KEY"] = security.secret_key(args.secret_key_file)
        # Bokeh's document checks only log warnings, and cost a sixth of a page's build
        os.environ.setdefault("BOKEH_VALIDATE_DOC", "false")
    except security.SecretKeyProblem as error:
        print(error, file=sys.stderr)
        return 1
    from app.i18n import compile_catalogs
    compile_catalogs(only_stale=True)            # a fresh checkout has .po files only
    print(f"Lineare: starting on http://{args.address}:{args.port} (the first start imports PyTorch: "
          "a few seconds) …", file=sys.stderr, flush=True)
    from panel.command import main as panel_main
    security.install()
    websocket.install(idle_s=args.idle_minutes * 60)
    memory.install()
    from app import building
    building.freeze_model_walks()
    if not args.build_on_loop:
        building.install()
    sys.argv = panel_serve_args(args, extra)
    return panel_main()


if __name__ == "__main__":
    sys.exit(main())
