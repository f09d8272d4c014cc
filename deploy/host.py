"""Host a public Lineare demo: several single-process servers behind nginx, in one command.

    scripts/host --port 8080 --origin demo.example.org --workers 2 --max-sessions 60

scripts/host runs `python -m lineare.deploy.host`. It starts `--workers` servers (`python -m lineare.app` on
127.0.0.1, ports --port+1 …), each a single Tornado process with its own event loop, then nginx on
--address:--port with deploy/nginx.conf filled in. Everything nginx writes (its configuration, pid,
logs, temporary files, static cache) and the servers' logs go to --run-dir, so no root is needed once
nginx is installed (`apt-get install nginx`). Ctrl-C or SIGTERM stops all of it; a server that dies
is started again, and nginx sends it nobody until it answers and is primed.

Each server gets, besides `python -m lineare.app`'s own flags (idle sessions closed after a minute,
websocket compression):
  --reuse-sessions  a GET renders a kept page; the visitor's session is built when its websocket
                    connects (app/server/panel_setup.py), so a bare GET, a probe or a link preview
                    builds nothing, and any server can take the websocket;
  --warm            (unless --no-warm) every page built once at start, so the first visitor does
                    not pay for the imports and caches; then every page is rendered once per
                    language, so that each server keeps the page it renders to later GETs;
  --liveness        /liveness, answered without building anything (nginx drops its ?endpoint=);
  --use-xheaders    the visitor's address and scheme from nginx's X-Real-IP / X-Forwarded-Proto;
  --rooms           one store for a live class's rooms (an SQLite file in --run-dir, or --rooms redis://…), so
                    that a class's phones and its projector may reach any server;
  --num-threads     (with --threads N) Panel's thread pool for session callbacks;
  --admin           (with --admin) Panel's admin page at http://127.0.0.1:<server port>/admin, on this
                    machine only (nginx does not pass /admin);
and one secret key (BOKEH_SECRET_KEY, made per run unless given) so that every server accepts the
session tokens of the others. PyTorch runs on cores / workers threads per server.
"""
import argparse
import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from lineare.app.server.security import HEADERS_FILE
from lineare.app.serve import SETUP, port_problem
from lineare import arguments

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
PAGES = ROOT / "app" / "pages"
WS_SLACK = 10                # the websockets' cap is this much above the pages' (see nginx.conf)
CLASS_SIZE = 45              # one address's live sessions by default: a class behind one school address
STATIC_PER_PAGE = 30         # static files one address may fetch at once, per page it may open (a page loads ~20)
STATIC_PER_S = 30            # … and then per second
START_TIMEOUT_S = 180        # --warm builds every page before a server listens
RESTARTS = 3                 # a server that dies this many times in a row soon after starting: give up


LOG_LIMIT = 50 << 20         # bytes a log may reach before it is rotated (one older copy is kept: <name>.1)
ROTATE_EVERY_S = 10


NGINX_LOGS = ("access.log", "nginx-error.log")      # the files nginx opens itself (nginx.conf, -e)


def rotate_logs(run_dir, nginx_pid=None, limit=LOG_LIMIT):
    """Keep every log of `run_dir` under about `limit` bytes, with one older copy (<name>.1). nginx's own
    files are renamed and nginx told to reopen them (SIGUSR1); the others (the servers' output, which
    they append to) are copied and emptied: lines written in between are lost. Returns the names rotated."""
    rotated = []
    for log in sorted(Path(run_dir).glob("*.log")):
        backup = log.with_name(log.name + ".1")
        try:
            if log.stat().st_size <= limit:
                continue
            if log.name in NGINX_LOGS:
                log.replace(backup)
            else:
                shutil.copyfile(log, backup)
                os.truncate(log, 0)
        except OSError:
            continue
        rotated.append(log.name)
    if nginx_pid and set(rotated) & set(NGINX_LOGS):
        with contextlib.suppress(ProcessLookupError):
            os.kill(nginx_pid, signal.SIGUSR1)
    return rotated


class HostError(RuntimeError):
    """Something the operator has to fix; the message says what."""


def nginx_binary():
    found = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx")
                                            if os.access(p, os.X_OK)), None)
    if not found:
        raise HostError("nginx is not installed. On Debian or Ubuntu: sudo apt-get install nginx "
                        "(scripts/host then runs it as you, with its files under --run-dir).")
    return found


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def page_routes():
    """The pages' routes for nginx's allow-list: one per file of app/pages/ ("home" is also "/")."""
    return sorted(p.stem for p in PAGES.glob("*.py"))


def origins(args):
    """The public hosts a browser may open a websocket from."""
    return args.origin or [f"localhost:{args.port}", f"127.0.0.1:{args.port}"]


def server_command(args, port):
    # one process each: nginx spreads the visitors over the servers (python -m lineare.app alone forks one per core)
    command = [sys.executable, "-m", "lineare.app", "--port", str(port), "--address", "127.0.0.1", "--one-process",
               "--rooms", rooms_url(args), "--room-size", str(args.room_size)]      # one store for every server
    # the server's own address only for /admin: nginx forwards the visitor's Origin as it is, so a page
    # of this machine's localhost:PORT would pass nginx too
    own = [f"127.0.0.1:{port}", f"localhost:{port}"] if args.admin else []
    for origin in [*origins(args), *own]:
        command += ["--allow-websocket-origin", origin]
    if not args.no_warm:
        command.append("--warm")
    command += ["--", "--reuse-sessions", "--liveness", "--use-xheaders",
                "--setup", str(SETUP)]     # python -m lineare.app caps websocket messages
    if args.threads:
        command += ["--num-threads", str(args.threads)]
    if args.admin:
        command.append("--admin")
    return command + list(args.panel_args)


def rooms_url(args):
    """Where the servers keep a live class's rooms: --rooms, else an SQLite file in the run directory (all the
    servers of this machine reach it; servers on several machines share a Redis: --rooms redis://…)."""
    return args.rooms or f"sqlite:///{Path(args.run_dir).resolve()}/rooms.sqlite"


def server_environment(args, secret):
    threads = str(args.torch_threads or max(1, (os.cpu_count() or 1) // args.workers))
    return {**os.environ, "BOKEH_SECRET_KEY": secret,             # python -m lineare.app signs the session ids with it
            "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads, "PYTHONUNBUFFERED": "1"}


def nginx_user_line():
    """nginx started by root would hand its workers to `nobody`, who may not reach the run directory:
    they stay root then (main() warns). Started by anyone else, nginx runs as that user."""
    return "user root root;" if os.geteuid() == 0 else ""


def address_socket(run_dir):
    """The unix socket of nginx's second hop (the per-address count); a socket's path has at most 107 bytes."""
    path = Path(run_dir) / "addresses.sock"
    if len(str(path).encode()) > 107:
        raise HostError(f"--run-dir is too long a path for a unix socket in it ({path}): choose a shorter one")
    return path


def nginx_conf(args, server_ports, run_dir, down=()):
    fields = {
        "RUN": str(run_dir), "DEPLOY": str(DEPLOY), "HEADERS": str(HEADERS_FILE), "USER": nginx_user_line(),
        "LISTEN": f"{args.address}:{args.port}", "STATUS_PORT": str(args.status_port),
        "SERVERS": "\n".join(f"        server 127.0.0.1:{p} max_fails=1 fail_timeout=5s{' down' if p in down else ''};"
                             for p in server_ports),
        "ADDRESS_SOCKET": str(address_socket(run_dir)),
        "PAGES": "|".join(page_routes()),
        "MAX_SESSIONS": str(args.max_sessions), "MAX_SESSIONS_WS": str(args.max_sessions + WS_SLACK),
        "PER_ADDRESS": str(args.per_address), "PER_ADDRESS_WS": str(args.per_address + WS_SLACK),
        "RATE": f"{args.rate}r/m", "BURST": str(args.burst),
        "STATIC_RATE": f"{STATIC_PER_S}r/s", "STATIC_BURST": str(STATIC_PER_PAGE * max(args.burst, args.per_address)),
        "MAX_URL": args.max_url,
        "CONNECTIONS": str(max(1024, 6 * (args.max_sessions + WS_SLACK) + 256)),
        "FILES": str(max(2048, 12 * (args.max_sessions + WS_SLACK) + 512)),
    }
    text = (DEPLOY / "nginx.conf").read_text()
    for name, value in fields.items():
        text = text.replace("{{" + name + "}}", value)
    if "{{" in text:
        raise HostError(f"deploy/nginx.conf has a field scripts/host does not fill: {text[text.index('{{'):][:40]}")
    return text


# what each refusal says (nginx serves these pages itself, from --run-dir/pages), and what the operator can raise
BUSY = {
    "full": {
        "it": ("La demo è piena",
               "Sono aperte {max_sessions} pagine, quante questa demo ne accoglie. Riprova fra un minuto.",
               "Chi gestisce la demo può alzare il limite: <code>scripts/host --max-sessions</code> "
               "(ora {max_sessions})."),
        "en": ("The demo is full",
               "{max_sessions} pages are open, as many as this demo takes. Try again in a minute.",
               "Whoever runs the demo can raise the limit: <code>scripts/host --max-sessions</code> "
               "(now {max_sessions})."),
    },
    "network": {
        "it": ("Troppe pagine dalla stessa rete",
               "Da questa rete (un indirizzo solo, come quello di una scuola) sono già aperte {per_address} pagine, "
               "quante un indirizzo ne può avere. Chiudi le pagine che non servono, o riprova fra un minuto.",
               "Chi gestisce la demo può alzare il limite per una classe più grande: "
               "<code>scripts/host --class-size</code> (ora {per_address})."),
        "en": ("Too many pages from one network",
               "{per_address} pages are already open from this network (one address, such as a school's), as many "
               "as one address may have. Close the pages you do not need, or try again in a minute.",
               "Whoever runs the demo can raise the limit for a larger class: <code>scripts/host --class-size</code> "
               "(now {per_address})."),
    },
    "often": {
        "it": ("Troppe richieste da questa rete",
               "Da questo indirizzo sono state aperte troppe pagine in poco tempo. Riprova fra un minuto.",
               "Chi gestisce la demo può alzare il limite: <code>scripts/host --rate</code> e <code>--burst</code> "
               "(ora {rate} al minuto, {burst} di fila)."),
        "en": ("Too many requests from this network",
               "Too many pages were opened from this address in a short time. Try again in a minute.",
               "Whoever runs the demo can raise the limit: <code>scripts/host --rate</code> and <code>--burst</code> "
               "(now {rate} a minute, {burst} at once)."),
    },
}


def busy_pages(args):
    """{file name: HTML} of the pages nginx answers a refusal with, one per limit, both languages."""
    import html

    template = (DEPLOY / "pages" / "busy.html").read_text(encoding="utf-8")
    values = {"max_sessions": args.max_sessions, "per_address": args.per_address, "rate": args.rate,
              "burst": args.burst}
    pages = {}
    for reason, languages in BUSY.items():
        page = template
        for code, (title, text, operator) in languages.items():
            for field, value in (("TITLE", html.escape(title)), ("TEXT", html.escape(text.format(**values))),
                                 ("OPERATOR", operator.format(**values))):       # the operator's line has <code>
                page = page.replace("{{" + code.upper() + "_" + field + "}}", value)
        pages[f"busy-{reason}.html"] = page
    return pages


def answers(url, timeout=2):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status == 200
    except OSError:
        return False


class Host:
    """The servers and nginx of one run; a context manager (stops everything on exit)."""

    def __init__(self, args, command=None):
        self.args = args
        self.command = command or server_command          # (args, port) → the server's command line
        self.run_dir = Path(args.run_dir).resolve()
        self.servers = {}              # port → Popen
        self.down = set()              # ports nginx sends nobody to: restarted servers not yet primed
        self._conf_lock = threading.Lock()
        self.nginx = None
        self.secret = args.secret_key or secrets.token_urlsafe(32)
        address = "127.0.0.1" if args.address in ("", "0.0.0.0", "::") else args.address
        self.url = f"http://{address}:{args.port}"

    # ---------------------------------------------------------------- start and stop

    def start(self):
        args = self.args
        binary = nginx_binary()
        shutil.rmtree(self.run_dir / "cache", ignore_errors=True)      # files of another version of the app
        for sub in ("tmp", "cache", "pages"):
            (self.run_dir / sub).mkdir(parents=True, exist_ok=True)
        for name, page in busy_pages(args).items():
            (self.run_dir / "pages" / name).write_text(page, encoding="utf-8")
        first = args.first_server_port if args.first_server_port is not None else args.port + 1
        ports = [free_port() for _ in range(args.workers)] if first == 0 else \
            [first + i for i in range(args.workers)]
        if args.status_port is None:
            args.status_port = free_port() if first == 0 else first + args.workers
        for port in [args.port, *ports, args.status_port]:                    # before starting anything
            problem = port_problem(args.address if port == args.port else "127.0.0.1", port)
            if problem:
                raise HostError(problem)
        conf = self.run_dir / "nginx.conf"
        conf.write_text(nginx_conf(args, ports, self.run_dir))
        self._nginx_command = [binary, "-p", str(self.run_dir), "-c", str(conf),
                               "-e", str(self.run_dir / "nginx-error.log"), "-g", "daemon off;"]
        check = subprocess.run(self._nginx_command[:-2] + ["-t", "-q"], capture_output=True, text=True)
        if check.returncode != 0:
            raise HostError(f"nginx refused the configuration {conf}:\n{check.stderr.strip()}")
        for port in ports:
            self._start_server(port)
        self._wait_for_servers(ports)
        if not args.no_warm:
            self._prime(ports)
        self.nginx = self._spawn(self._nginx_command, "nginx")
        deadline = time.monotonic() + 20
        while not answers(f"{self.url}/liveness"):
            if self.nginx.poll() is not None:
                raise HostError(f"nginx exited ({self.nginx.returncode}): see {self.run_dir}/nginx-error.log")
            if time.monotonic() > deadline:
                raise HostError(f"nginx did not answer on {self.url} within 20 s")
            time.sleep(0.2)
        self._write_state(ports)
        return self

    def _spawn(self, command, log, **options):
        """A process of its own session writing to run_dir/<log>.log: the child holds the file, this process
        closes its own copy once the child has it."""
        with open(self.run_dir / f"{log}.log", "ab") as out:
            return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, **options)

    def _start_server(self, port):
        self.servers[port] = self._spawn(self.command(self.args, port), f"server-{port}", cwd=ROOT,
                                         env=server_environment(self.args, self.secret))
        self.servers[port].started = time.monotonic()

    def _wait_for_servers(self, ports):
        deadline = time.monotonic() + START_TIMEOUT_S
        waiting = set(ports)
        while waiting:
            for port in sorted(waiting):
                process = self.servers[port]
                if process.poll() is not None:
                    raise HostError(f"the server on port {port} exited ({process.returncode}): "
                                    f"see {self.run_dir}/server-{port}.log")
                if answers(f"http://127.0.0.1:{port}/liveness"):
                    waiting.discard(port)
            if waiting and time.monotonic() > deadline:
                raise HostError(f"servers on ports {sorted(waiting)} did not answer within {START_TIMEOUT_S} s")
            time.sleep(0.3)

    def _prime(self, ports):
        """Render every page in each language once on every server, so that each keeps the page it
        renders for that page and language (--reuse-sessions) before the first visitors come: a crowd
        reaching a cold page at once would each build a whole session."""
        from concurrent.futures import ThreadPoolExecutor

        from lineare.app.i18n import LANGUAGES

        def prime(port):
            for route in ["", *page_routes()]:
                for language in LANGUAGES:
                    answers(f"http://127.0.0.1:{port}/{route}?lang={language}", timeout=60)
        with ThreadPoolExecutor(len(ports)) as pool:
            list(pool.map(prime, ports))

    def _write_state(self, ports):
        """host.json in the run directory: what bench/load.py and an operator need to find."""
        state = {"url": self.url, "nginx_pid": self.nginx.pid, "status_port": self.args.status_port,
                 "servers": [{"port": p, "pid": self.servers[p].pid} for p in ports],
                 "max_sessions": self.args.max_sessions}
        (self.run_dir / "host.json").write_text(json.dumps(state, indent=1))

    def pids(self):
        """{name: pid} of every process of the host (servers and nginx's master)."""
        found = {f"server:{port}": p.pid for port, p in self.servers.items()}
        if self.nginx is not None:
            found["nginx"] = self.nginx.pid
        return found

    def stop(self):
        processes = [p for p in [self.nginx, *self.servers.values()] if p is not None]
        for process in processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)     # each runs in its own process group
        deadline = time.monotonic() + 10
        for process in processes:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *_exc):
        self.stop()

    # ---------------------------------------------------------------- supervise

    def _set_down(self, port, down):
        """Mark `port` down (or up again) in nginx's configuration and have nginx reload it (SIGHUP):
        connections already open stay with the old workers until they close."""
        with self._conf_lock:
            (self.down.add if down else self.down.discard)(port)
            conf = self.run_dir / "nginx.conf"
            conf.write_text(nginx_conf(self.args, sorted(self.servers), self.run_dir, self.down))
            if self.nginx is not None and self.nginx.poll() is None:
                os.kill(self.nginx.pid, signal.SIGHUP)

    def _bring_back(self, port):
        """A restarted server: once it answers, primed as at start (unless --no-warm), then given visitors."""
        try:
            self._wait_for_servers([port])
        except HostError:
            return                                   # supervise() sees it exit and starts it again
        if not self.args.no_warm:
            self._prime([port])
        self._set_down(port, False)

    def supervise(self, stopping):
        """Until `stopping()`: start again a server that died; raise HostError if nginx dies, or if a
        server keeps dying right after its start."""
        failures = {port: 0 for port in self.servers}
        rotated = time.monotonic()
        while not stopping():
            time.sleep(1)
            if time.monotonic() - rotated > ROTATE_EVERY_S:
                rotate_logs(self.run_dir, self.nginx.pid)
                rotated = time.monotonic()
            if self.nginx.poll() is not None:
                raise HostError(f"nginx exited ({self.nginx.returncode}): see {self.run_dir}/nginx-error.log")
            for port, process in list(self.servers.items()):
                if process.poll() is None:
                    if time.monotonic() - process.started > 60:
                        failures[port] = 0
                    continue
                failures[port] += 1
                if failures[port] > RESTARTS:
                    raise HostError(f"the server on port {port} keeps exiting: see {self.run_dir}/server-{port}.log")
                print(f"host: the server on port {port} exited ({process.returncode}); starting it again",
                      file=sys.stderr, flush=True)
                self._set_down(port, True)          # nobody is sent there until it answers and is primed
                self._start_server(port)
                threading.Thread(target=self._bring_back, args=(port,), daemon=True).start()


def nginx_size(text):
    """An nginx size: a number of bytes, or with k or m (8k, 1m)."""
    if not re.fullmatch(r"[1-9][0-9]{0,6}[kKmM]?", text):
        raise argparse.ArgumentTypeError(f"expected a size like 8k or 16384, got {text!r}")
    return text


def parse(argv):
    argv = list(argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(
        prog="scripts/host", description="Serve Lineare as a public demo: several servers behind nginx.",
        epilog="Arguments after -- go to every server's `panel serve` unchanged.", formatter_class=arguments.Formatter)
    parser.add_argument("--port", type=arguments.port, default=8080, help="where visitors connect (nginx)")
    parser.add_argument("--address", default="0.0.0.0", help="interface nginx listens on (default: all)")
    parser.add_argument("--origin", action="append", metavar="HOST[:PORT]",
                        help="the public host name(s) in the visitors' address bar (repeat); the websocket "
                             "is refused from any other page. Default: localhost:PORT and 127.0.0.1:PORT")
    parser.add_argument("--workers", type=arguments.positive, default=max(1, os.cpu_count() or 1),
                        help="server processes (default: one per core)")
    parser.add_argument("--max-sessions", type=arguments.at_least(1, 59_999), default=60,
                        help="live sessions (open pages) over all servers; past it: 'the demo is full'")
    parser.add_argument("--class-size", type=arguments.at_least(1, 65_535), default=CLASS_SIZE,
                        help="the largest class expected behind one address (a school's): one address may hold "
                             "this many live sessions (default: %(default)s)")
    parser.add_argument("--per-address", type=arguments.at_least(1, 65_535), default=None,
                        help="live sessions from one IP address (default: --class-size, at most --max-sessions); "
                             "past it: 'too many pages from one network'")
    parser.add_argument("--rate", type=arguments.positive, default=30,
                        help="pages and new sessions per minute from one IP address, each (after the burst)")
    parser.add_argument("--burst", type=arguments.positive, default=None,
                        help="pages or sessions one IP address may open at once (default: 60, or --class-size if "
                             "larger)")
    parser.add_argument("--max-url", type=nginx_size, default="8k",
                        help="longest request line (and header line), nginx size")
    parser.add_argument("--threads", type=arguments.at_least(0), default=0,
                        help="Panel's --num-threads per server (0: none)")
    parser.add_argument("--torch-threads", type=arguments.at_least(0), default=0,
                        help="PyTorch threads per server (default: cores / workers)")
    parser.add_argument("--admin", action="store_true",
                        help="Panel's admin page on each server, at http://127.0.0.1:<server port>/admin only")
    parser.add_argument("--no-warm", action="store_true", help="do not build every page once at start")
    parser.add_argument("--first-server-port", type=arguments.at_least(0, 65_535), default=None,
                        help="the servers' ports start here (default: --port + 1; 0: any free ports)")
    parser.add_argument("--status-port", type=arguments.port, default=None,
                        help="nginx's status page on 127.0.0.1 (default: after the servers' ports)")
    parser.add_argument("--secret-key", default=os.environ.get("BOKEH_SECRET_KEY"),
                        help="signs the session ids (default: $BOKEH_SECRET_KEY, else a new one per run)")
    parser.add_argument("--rooms", default=None, metavar="URL",
                        help="where live classes keep their rooms, for every server: redis://HOST:PORT/DB for servers "
                             "on several machines (default: rooms.sqlite in --run-dir)")
    parser.add_argument("--room-size", type=int, default=60, help="students one live class takes (default: 60)")
    checkout = (ROOT / "pyproject.toml").exists()          # else installed (pip install .): not in site-packages
    parser.add_argument("--run-dir", default=str((ROOT if checkout else Path.cwd()) / ".host"),
                        help="nginx's files and every log (default: .host/ in the repository; installed: in the "
                             "current folder)")
    args = parser.parse_args(argv)
    args.panel_args = extra
    if args.per_address is None:
        args.per_address = min(args.class_size, args.max_sessions)
    if args.burst is None:
        args.burst = max(60, args.class_size)
    if not (1 <= args.workers and 1 <= args.max_sessions < 60_000 and 1 <= args.per_address < 65_536):
        parser.error("--workers, --max-sessions and --per-address must be at least 1 (nginx counts below 65,536)")
    return args


def main(argv=None):
    args = parse(sys.argv[1:] if argv is None else argv)
    stop, running = [], []

    def on_signal(*_):
        stop.append(True)
        if not running:                       # still starting: leave now (Host stops what it started)
            raise KeyboardInterrupt
    for stopping in (signal.SIGTERM, signal.SIGINT):     # SIGINT too: a background job ignores it otherwise
        signal.signal(stopping, on_signal)
    if os.geteuid() == 0:
        print("host: running as root, so nginx's workers do too; on a public machine run scripts/host "
              "as an ordinary user (nginx needs no root on a port above 1024)", file=sys.stderr)
    try:
        with Host(args) as host:
            print(f"Lineare is hosted on {host.url} ({args.workers} servers on ports "
                  f"{', '.join(map(str, host.servers))}; at most {args.max_sessions} live sessions).\n"
                  f"  liveness: {host.url}/liveness   nginx status: http://127.0.0.1:{args.status_port}/nginx-status\n"
                  + ("  admin (this machine only): "
                     + ", ".join(f"http://127.0.0.1:{p}/admin" for p in host.servers) + "\n" if args.admin else "")
                  + f"  logs: {host.run_dir}/   Ctrl-C stops it.", file=sys.stderr, flush=True)
            running.append(True)
            host.supervise(lambda: bool(stop))
    except HostError as error:
        print(f"host: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
