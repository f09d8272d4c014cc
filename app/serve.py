"""Serve Lineare: `python -m lineare.app` (what `./scripts/app` runs), then open http://localhost:5006.

It is `panel serve` with the flags a classroom needs; the same pages are served by plain Panel with

    panel serve app/pages/*.py --index home

One file per page in app/pages/ (its route is the file's name); every page is built by
`app.shell.page`, so each has the same navigation, languages and URL state. All JavaScript, CSS and
fonts come from the server itself (Bokeh's and Panel's bundles, no CDN): it works with the network
cut. File-based apps also get Panel's per-session clean-up. Options: --port, --address,
--allow-websocket-origin for a hosted instance, --num-procs N or --one-process, --warm, --show,
--secret-key-file, --build-on-loop, --max-waiting-builds, --trim-seconds, --lan, --rooms, --room-size; anything
after `--` goes to `panel serve` unchanged.

A classroom opens the same link at once, and a page costs the server about a second of CPU to
build: so it serves from one process per core by default (Tornado forks them after binding the port;
the kernel hands each connection to one of them), each with cores ÷ processes PyTorch threads, and
says at start how many. `--one-process` (or `--num-procs 1`) serves from one, as before.

Pages are built on a thread of their own (app/server/building.py), so that one visitor opening a page does
not stop every other session of the process; --build-on-loop builds them as plain Panel does. On
Linux the server runs with PYTHONMALLOC=malloc and trims the C heap after sessions close
(app/server/memory.py), so that its memory comes back after a crowd has left.

A live class (app/classroom/) keeps its room where every process reaches it: an SQLite file of this server by
default (--rooms redis://HOST:PORT/DB for servers on several machines). --lan serves the classroom's network, so
that the students' phones reach the join page: it listens on every interface and lets this machine's network
addresses open the websocket.

Session ids are signed (app/server/security.py): with several server processes behind one proxy, give them
all the same --secret-key-file (or BOKEH_SECRET_KEY), since a page and its websocket may reach
different processes. A bokeh.client load test needs the key too: BOKEH_SECRET_KEY=… and
BOKEH_SIGN_SESSIONS=true in its environment. What a visitor's websocket may change is an allow-list
(app/server/websocket.py): widget values within the widget's bounds, our components' own state and Bokeh's
events; anything else is refused in one log line.
"""
import argparse
import contextlib
import errno
import os
import signal
import socket
import sys
from pathlib import Path

from lineare.app import data_path
from lineare.app.classroom.live import LAN_ENV, ROOMS_ENV, SIZE_ENV, default_rooms
from lineare.app.classroom.store import ROOM_SIZE
from lineare.app.server import building, memory
from lineare.app.server.websocket import IDLE_S, LIFETIME_S
from lineare import arguments

PAGES = Path(__file__).resolve().parent / "pages"
NOTEBOOKS = data_path("notebooks")
SETUP = Path(__file__).resolve().parent / "server" / "panel_setup.py"
IDLE_CHECK_MS = 10_000           # bounded work per visitor: idle sessions are closed and their stores freed
IDLE_LIFETIME_MS = 60_000
MAX_WEBSOCKET_MESSAGE = 256 * 1024    # our pages send under 1 KB a message (app/server/websocket.py); Tornado: 10 MB
STOP_WAIT_S = 1.5                # a stopping server's forked processes get this long before they are killed
COMPRESSION_LEVEL = 6            # permessage-deflate: a run's frames (8-bit colour steps) shrink to about half


def panel_serve_args(args, extra=()):
    """The `panel serve` command line for our options."""
    pages = sorted(str(p) for p in PAGES.glob("*.py"))
    origins = args.allow_websocket_origin or [f"localhost:{args.port}", f"127.0.0.1:{args.port}"]
    if getattr(args, "lan", False):
        origins = [*origins, *(f"{address}:{args.port}" for address in lan_addresses())]
    argv = ["panel", "serve", *pages, "--index", "home", "--port", str(args.port), "--address", args.address,
            "--num-procs", str(processes(args)), "--check-unused-sessions", str(IDLE_CHECK_MS),
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
    if processes(args) > 1:
        argv += shared_session_args(extra)
    return argv + list(extra)


def lan_addresses():
    """This machine's IPv4 addresses on its networks (what a phone in the classroom types), loopback left out.
    Read from the machine's own interfaces (psutil): nothing is sent anywhere."""
    import psutil

    found = []
    for addresses in psutil.net_if_addrs().values():
        for address in addresses:
            if address.family == socket.AF_INET and not address.address.startswith("127."):
                found.append(address.address)
    return found


def processes(args):
    """Server processes: --num-procs, else one per core on Linux. Elsewhere one: Windows cannot fork, and
    on macOS a process that forks after loading system frameworks may crash (--num-procs N to try)."""
    if getattr(args, "one_process", False):
        return 1
    if args.num_procs:
        return args.num_procs
    return max(1, os.cpu_count() or 1) if sys.platform.startswith("linux") else 1


def shared_session_args(extra=()):
    """Several processes share one port, and the kernel hands each connection to any of them: a page's
    GET and its websocket often reach different processes. They sign session ids with the same key
    (set before the fork), so any process accepts any page's websocket; with --reuse-sessions a GET
    renders a page kept per page and language, and the visitor's session is built once, where its
    websocket lands (app/server/panel_setup.py, as the hosted mode does), not also where the GET landed."""
    argv = [] if "--reuse-sessions" in extra else ["--reuse-sessions"]
    return argv + ([] if "--setup" in extra else ["--setup", str(SETUP)])


def process_threads(count):
    """PyTorch's threads per process: the cores shared among the processes (set before torch is imported)."""
    threads = str(max(1, (os.cpu_count() or 1) // count))
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, threads)


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


def start_note(args, count):
    """Why this many processes, in a few words for whoever starts the server."""
    if count == 1:
        return "one core" if (os.cpu_count() or 1) == 1 else "--num-procs N for more"
    if args.num_procs is None or args.num_procs == 0:
        return f"one per core: {count} cores; --one-process for one"
    return "--one-process for one"


# Bokeh's document checks only log warnings, and cost a sixth of a page's build; its "error diagnostics" check
# every callback's signature as Panel registers it (inspect.signature: 5-20 % of a page's build, in-process and
# in a live server) and suggest names in AttributeErrors. The servers (and bench.pages, measuring as they serve)
# run without both.
BOKEH_CHECKS = ("BOKEH_VALIDATE_DOC", "BOKEH_PERFORM_ERROR_DIAGNOSTICS")


def stop_together():
    """SIGTERM to the server's process (what `kill`, a supervisor or a service manager sends) and Ctrl-C stop every
    server process it forked, not only itself (Tornado's parent only waits for its children; they kept serving the
    port after it was gone). Ctrl-C reaches every process of the terminal's group: the forked ones go at once and
    quietly, the first says so in one line."""
    import psutil

    parent = os.getpid()

    def stop(signum, _frame):
        if os.getpid() != parent:                  # a forked server (its SIGTERM is Bokeh's own, on its loop)
            os._exit(0)
        if signum == signal.SIGINT:
            print("\nLineare: stopped (Ctrl-C).", file=sys.stderr, flush=True)
        children = psutil.Process().children(recursive=True)
        for child in children:
            with contextlib.suppress(psutil.Error):
                child.terminate()
        _gone, alive = psutil.wait_procs(children, timeout=STOP_WAIT_S)
        for child in alive:
            with contextlib.suppress(psutil.Error):
                child.kill()
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)


def bokeh_checks_off():
    for name in BOKEH_CHECKS:
        os.environ.setdefault(name, "false")


def main(argv=None):
    command_line = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(prog="python -m lineare.app", description="Serve the Lineare dashboards.",
                                     epilog="Arguments after -- go to `panel serve` unchanged.",
                                     formatter_class=arguments.Formatter)
    parser.add_argument("--port", type=arguments.port, default=5006, help="the port to listen on")
    parser.add_argument("--address", default="localhost", help="interface to listen on (0.0.0.0: all)")
    parser.add_argument("--allow-websocket-origin", action="append", default=None, metavar="HOST[:PORT]",
                        help="hosts allowed to open the websocket (repeat; needed behind a proxy)")
    parser.add_argument("--num-procs", type=arguments.at_least(0), default=None,
                        help="server processes, sharing the port (default and 0: one per core on Linux; elsewhere 1)")
    parser.add_argument("--one-process", action="store_true",
                        help="serve from one process (the same as --num-procs 1)")
    parser.add_argument("--show", action="store_true", help="open the app in a browser tab")
    parser.add_argument("--warm", action="store_true",
                        help="build every page once before listening (a hosted demo: the first visitor waits less; "
                             "the server then answers about 10 s later than the 3 s without it)")
    parser.add_argument("--secret-key-file", default=None, metavar="PATH",
                        help="file with the key that signs session ids, made when missing; give every "
                             "process of one demo the same file (default: BOKEH_SECRET_KEY, else a new key)")
    parser.add_argument("--build-on-loop", action="store_true",
                        help="build pages on the event loop, as plain Panel does (default: on a thread of their "
                             "own, so that a page being built does not stop every other visitor's session)")
    parser.add_argument("--idle-minutes", type=arguments.above(0.0), default=IDLE_S / 60,
                        help="close a connection whose page changed nothing this long (an open, visible page tells "
                             "the server once a minute that it is there; default: %(default)s)")
    parser.add_argument("--session-hours", type=arguments.above(0.0), default=LIFETIME_S / 3600,
                        help="close any connection open this long (a script can pretend to be a page that is "
                             "looked at; a reload opens the page again; default: %(default)s)")
    parser.add_argument("--trim-seconds", type=arguments.above(0.0), default=memory.TRIM_INTERVAL_S, metavar="S",
                        help="after visitors leave, give their memory back to the system (a full collection, then a "
                             "trim of the C heap) at most once this often (default: %(default)s)")
    parser.add_argument("--max-waiting-builds", type=arguments.positive, default=building.MAX_WAITING, metavar="N",
                        help="pages waiting to be built per server process; past it a new visitor's websocket is "
                             "closed with 'the server is busy' (default: %(default)s)")
    parser.add_argument("--patches", action="store_true",
                        help="list every replacement of a Panel, Bokeh, param or Tornado internal this server makes "
                             "(what, guard, versions checked, its test) and exit")
    parser.add_argument("--no-patches", action="store_true",
                        help="serve with none of them: Panel and Bokeh as released (no build thread, no websocket "
                             "allow-list, no limits per page, no cheaper builds; to compare, or on untested versions)")
    parser.add_argument("--lan", action="store_true",
                        help="serve the classroom's network (students' phones join a live class): listen on every "
                             "interface and accept this machine's network addresses as websocket origins")
    parser.add_argument("--rooms", default=None, metavar="URL",
                        help="where a live class's rooms are kept, for every server process: sqlite:///PATH (default: "
                             "a file of this server in the runtime folder) or redis://HOST:PORT/DB (servers on "
                             "several machines)")
    parser.add_argument("--room-size", type=arguments.positive, default=ROOM_SIZE, metavar="N",
                        help="students one live class takes (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.patches:
        from lineare.app.server import patches
        print(patches.rows())
        return 0
    if args.lan and args.address == "localhost":
        args.address = "0.0.0.0"
    try:
        from lineare.app.classroom.store import open_rooms

        rooms_url = args.rooms or default_rooms(args.port)
        open_rooms(rooms_url).check()          # a wrong URL, an unwritable folder, Redis away: said now
    except (ValueError, OSError) as error:
        parser.error(f"--rooms: {error}")
    os.environ[ROOMS_ENV], os.environ[SIZE_ENV] = rooms_url, str(args.room_size)   # read by every forked process
    os.environ[LAN_ENV] = "1" if args.lan else "0"

    problem = port_problem(args.address, args.port)
    if problem:
        print(problem, file=sys.stderr)
        return 1
    if command_line and sys.platform.startswith("linux") and "PYTHONMALLOC" not in os.environ:
        # Python's small objects on the C allocator, so that memory comes back after visitors leave
        # (app/server/memory.py); PYTHONMALLOC=pymalloc keeps Python's own
        os.execve(sys.executable, [sys.executable, "-m", "lineare.app", *sys.argv[1:]],
                  {**os.environ, "PYTHONMALLOC": "malloc"})
    from lineare.app.server import limits, security, websocket
    try:
        # before anything imports Bokeh: it reads the key once, and forked processes inherit it
        os.environ["BOKEH_SECRET_KEY"] = security.secret_key(args.secret_key_file)
        bokeh_checks_off()
    except security.SecretKeyProblem as error:
        print(error, file=sys.stderr)
        return 1
    from lineare.app.i18n import compile_catalogs
    compile_catalogs(only_stale=True)            # a fresh checkout has .po files only
    count = processes(args)
    if count > 1:
        process_threads(count)
    if args.lan:
        print("Lineare: students join a live class at " + ", ".join(
            f"http://{a}:{args.port}/join" for a in lan_addresses()), file=sys.stderr, flush=True)
    print(f"Lineare: starting on http://{args.address}:{args.port} with {count} server "
          f"process{'es' if count > 1 else ''} ({start_note(args, count)}; the first start imports PyTorch: "
          "a few seconds) …", file=sys.stderr, flush=True)
    from panel.command import main as panel_main
    security.one_line_for_closed_connections()
    websocket.install(idle_s=args.idle_minutes * 60, lifetime_s=args.session_hours * 3600, allow_list=False)
    limits.request_timeouts()              # Tornado's own setting, not a patch: half-sent requests cut off
    memory.install(forks=count > 1, interval_s=args.trim_seconds)
    if args.no_patches:
        print("Lineare: --no-patches: Panel and Bokeh as released (no build thread, no websocket allow-list, no "
              "security handlers, no limits per page, no cheaper builds)", file=sys.stderr, flush=True)
    else:
        from lineare.app.server import patches
        building.MAX_WAITING = max(1, args.max_waiting_builds)
        patches.install(skip=("build-on-thread",) if args.build_on_loop else ())
    sys.argv = panel_serve_args(args, extra)
    if command_line:
        stop_together()
    return panel_main()


if __name__ == "__main__":
    sys.exit(main())
