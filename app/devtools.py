"""For the UI tests and the screenshot script: a real server in a subprocess, and a browser to drive.

    with running_server() as url:          # python -m lineare.app on a free localhost port, killed afterwards
        with browser() as chromium: ...    # Debian's /usr/bin/chromium, else Playwright's own build
    with running_redis() as url: ...       # Debian's redis-server on a free port, nothing kept on disk
"""
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-dev-shm-usage"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(process, port, timeout, name):
    """Return once `process` accepts connections on localhost:`port`; RuntimeError if it exits first,
    TimeoutError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited with status {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{name} did not open port {port} within {timeout} s") from None
            time.sleep(0.2)


@contextlib.contextmanager
def running_server(port=None, timeout=90, shell_command=None, processes=("--one-process",)):
    """Start `python -m lineare.app` on localhost, wait until it answers, yield its base URL, then stop it.

    processes: the flags for its processes; one by default (the tests count one process's sessions),
    () for `python -m lineare.app`'s own default (one per core).

    shell_command: another way to start it, a bash line with {port} in it (run in the repository,
    with the virtual environment's bin/ first on PATH), e.g. the README's plain `panel serve …`.
    """
    port = port or free_port()
    log = open(ROOT / ".server.log", "w") if os.environ.get("LINEARE_SERVER_LOG") else subprocess.DEVNULL
    if shell_command is None:
        command = [sys.executable, "-m", "lineare.app", "--port", str(port), "--address", "127.0.0.1",
                   "--allow-websocket-origin", f"127.0.0.1:{port}", "--allow-websocket-origin", f"localhost:{port}",
                   *processes]                      # last: they may end with `-- <panel serve's flags>`
    else:
        command = ["bash", "-c", shell_command.format(port=port)]
    environment = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    process = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                               env=environment)
    try:
        wait_for_port(process, port, timeout, "the server")
        yield f"http://127.0.0.1:{port}"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)          # the server and nothing else (its own group)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def running_redis(timeout=20):
    """`redis-server` (Debian's package) on a free localhost port, in memory only, as a context manager that yields
    redis://127.0.0.1:PORT/0. Raises RuntimeError at once, before any `with`, when it is not installed."""
    binary = shutil.which("redis-server") or ("/usr/bin/redis-server" if os.path.exists("/usr/bin/redis-server")
                                               else None)
    if binary is None:
        raise RuntimeError("redis-server is not installed (Debian: apt-get install redis-server)")
    return _redis(binary, timeout)


@contextlib.contextmanager
def _redis(binary, timeout):
    port = free_port()
    process = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
                                "no", "--protected-mode", "yes"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for_port(process, port, timeout, "redis-server")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def chromium_path():
    """Debian's Chromium if installed, else None (then Playwright's own build is tried)."""
    for candidate in ("/usr/bin/chromium", shutil.which("chromium") or ""):
        if candidate and os.path.exists(candidate):
            return candidate
    return None


@contextlib.contextmanager
def browser():
    """A headless Chromium; raises RuntimeError when neither Debian's nor Playwright's is available."""
    from playwright.sync_api import Error, sync_playwright

    with sync_playwright() as p:
        path = chromium_path()
        try:
            instance = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS) if path \
                else p.chromium.launch(args=CHROMIUM_ARGS)
        except Error as error:
            raise RuntimeError(f"no usable Chromium: {error}") from error
        try:
            yield instance
        finally:
            instance.close()


def is_local(url):
    """True for requests that stay on this machine (and for data:/blob: URLs made by the page)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme in ("data", "blob", "about"):
        return True
    return parts.hostname in ("localhost", "127.0.0.1")


class SocketTraffic:
    """What a page's websocket carries from now on: the frames it sent and received, as Playwright gives
    them (Bokeh sends each message as a header frame, a metadata frame, a content frame and its buffers)."""

    def __init__(self, page):
        self.sent, self.received = [], []
        page.on("websocket", lambda ws: (ws.on("framesent", lambda frame: self.sent.append(frame)),
                                         ws.on("framereceived", lambda frame: self.received.append(frame))))

    def received_bytes(self, start=0):
        return sum(len(f.encode() if isinstance(f, str) else f) for f in self.received[start:])

    def unanswered(self):
        """Ids of the page's messages the server has not answered yet (it answers each with its id)."""
        asked = {h["msgid"] for h in _headers(self.sent)}
        return asked - {h.get("reqid") for h in _headers(self.received)}


def _headers(frames):
    return [json.loads(f) for f in frames if isinstance(f, str) and f.startswith('{"msgid"')]


def wait_until_quiet(page, traffic, quiet_ms=1500, timeout_ms=60_000):
    """Wait until every message the page sent is answered and nothing has moved either way for `quiet_ms`.
    A page still settling sends the figures' drawn sizes when its titles wrap (Bokeh syncs `inner_width`,
    `inner_height`), and the server's answer may come seconds later on a loaded machine: a fixed wait let
    either land in a test's "a step sends nothing" window."""
    waited, moved, quiet = 0, None, 0
    while quiet < quiet_ms or traffic.unanswered():
        if waited >= timeout_ms:
            raise TimeoutError(f"the page's websocket kept moving for {timeout_ms} ms")
        page.wait_for_timeout(100)
        waited += 100
        now = (len(traffic.sent), len(traffic.received))
        quiet = quiet + 100 if now == moved else 0
        moved = now
