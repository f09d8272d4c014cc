"""Hostile page loads against one `python -m lineare.app` process: every answer, its log, and its memory.

    .venv/bin/python -m lineare.bench.hostile [--loads 250] [--settle 80] [--json]
    .venv/bin/python -m lineare.bench.hostile attacks [--only NAME …] [--app-dir DIR …]   # bench/attacks.py

`hostile_urls()` puts every URL parameter of every page (the stores' URL keys, the player's, the
session's) to huge, negative, NaN, infinite, empty, long, unicode and HTML-injection values, one
parameter at a time, plus a few whole-query attacks (a malformed or forged bokeh-token, a chosen
session id, repeated keys). The script starts a server (python -m lineare.app, log in a temporary folder),
visits each page once with a clean URL, then makes --loads GETs of hostile URLs (spread over the
list) and prints: the answers by status, any HTTP 500 and traceback in the server's log, and the
server's RSS at start, after the clean visits, after the hostile loads, each time --settle seconds
later (Bokeh discards a session 60 s after it was last used; a GET alone never connects, so its
session is discarded then). tests/test_security.py GETs a sample of the same URLs and runs a short
`measure` with short session lifetimes.
"""
import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VALUES = {
    "huge": "1" + "0" * 30, "float huge": "1e308", "negative": "-1", "negative huge": "-99999999999",
    "nan": "NaN", "infinite": "inf", "empty": "", "long": "x" * 4000, "unicode": "Ωμέγα‮ 🦄\u200b\u0301",
    "html": "\"><img src=x onerror=alert(1)><script>alert(1)</script>", "formula": "$\\text{<b>x</b>}$",
    "nul": "\x00", "path": "../../etc/passwd",
}
SESSION_KEYS = ("lang", "level", "present", "lesson", "t", "speed")          # the shell's and the player's
WHOLE = ["?bokeh-token=garbage", "?bokeh-token=a.b.c", "?bokeh-session-id=X", "?bokeh-session-id=",
         "?lang=it&lang=en&lang=%FF", "?" + "&".join(f"k{i}=v" for i in range(300))]


def page_keys():
    """{route: URL keys it reads}: the shell's and the player's on every page, plus each store's."""
    from lineare.app.dashboards import DASHBOARDS

    routes = {"/": list(SESSION_KEYS)}
    for dashboard in DASHBOARDS:
        package = dashboard.build.__closure__[0].cell_contents if dashboard.build else None
        keys = list(SESSION_KEYS)
        if package:
            model = importlib.import_module(f"lineare.app.dashboards.{package}.model")
            for value in vars(model).values():
                keys += [k for k in getattr(value, "URL", {}).values() if isinstance(getattr(value, "URL"), dict)]
            for extra in ("calculator",):                     # a second store of a page (Two bills)
                try:
                    module = importlib.import_module(f"lineare.app.dashboards.{package}.{extra}")
                except ModuleNotFoundError:
                    continue
                for value in vars(module).values():
                    keys += [k for k in getattr(value, "URL", {}).values() if isinstance(getattr(value, "URL"), dict)]
        routes[f"/{dashboard.slug}"] = sorted(set(keys))
    return routes


def hostile_urls():
    """Every (route, key, kind) with one hostile value, then the whole-query attacks on every route."""
    urls = []
    for route, keys in page_keys().items():
        for key in keys:
            for kind, value in VALUES.items():
                urls.append(f"{route}?{urllib.parse.urlencode({key: value})}")
        urls += [route + attack for attack in WHOLE]
    return urls


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=300) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024


def measure(loads=250, settle=80.0, panel_args=(), port=None, server_args=()):
    """Start a server, visit each page, make `loads` hostile GETs, wait `settle` s; the report (a dict).

    server_args: extra `python -m lineare.app` options, panel_args: extra `panel serve` options, e.g. shorter trim
    intervals and session lifetimes for a test."""
    from lineare.app.devtools import free_port
    port = port or free_port()
    base = f"http://127.0.0.1:{port}"
    urls = hostile_urls()
    with tempfile.TemporaryDirectory(prefix="lineare-hostile-") as folder:
        log_path = Path(folder) / "server.log"
        command = [sys.executable, "-m", "lineare.app", "--port", str(port), "--address", "127.0.0.1", "--one-process",
                   *server_args]
        with open(log_path, "w") as log:
            server = subprocess.Popen(command + (["--", *panel_args] if panel_args else []), cwd=ROOT, stdout=log,
                                      stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + 120
            while get_quietly(base + "/favicon.ico") is None:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError(f"the server did not start: {log_path.read_text()[-2000:]}")
                time.sleep(0.3)
            rss = {"start": rss_mib(server.pid)}
            for route in page_keys():
                get(base + route)
            time.sleep(settle)
            rss["after one clean visit of each page, sessions discarded"] = rss_mib(server.pid)
            statuses, started = {}, time.perf_counter()
            for i in range(loads):                  # spread over the whole list, then around again
                url = urls[(i * len(urls) // loads) % len(urls) if loads <= len(urls) else i % len(urls)]
                status = get(base + url)
                statuses.setdefault(status, []).append(url)
            seconds = time.perf_counter() - started
            rss[f"after {loads} hostile loads"] = rss_mib(server.pid)
            time.sleep(settle)
            rss["sessions discarded"] = rss_mib(server.pid)
            environment = Path(f"/proc/{server.pid}/environ").read_bytes().split(b"\0")
        finally:
            os.killpg(server.pid, 15)
            server.wait(timeout=30)
        text = log_path.read_text(errors="replace")
    return {"urls": len(urls), "loads": loads, "seconds": round(seconds, 1),
            "statuses": {status: len(found) for status, found in sorted(statuses.items())},
            "server_errors": statuses.get(500, [])[:10], "tracebacks": text.count("Traceback"),
            "rss_mib": {k: round(v) for k, v in rss.items()}, "load_average": os.getloadavg(),
            "pythonmalloc": next((v.split(b"=", 1)[1].decode() for v in environment
                                  if v.startswith(b"PYTHONMALLOC=")), None)}


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["attacks"]:                       # a hostile visitor's attacks and their victim: bench/attacks.py
        from lineare.bench.attacks import main as attacks
        return attacks(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m lineare.bench.hostile", description=__doc__.split("\n\n")[0])
    parser.add_argument("--loads", type=int, default=250, help="hostile GETs, spread over the list")
    parser.add_argument("--settle", type=float, default=80.0, help="seconds to wait for sessions to be discarded")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    report = measure(args.loads, args.settle, port=args.port or None)
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(f"{report['loads']} hostile loads of {report['urls']} URLs in {report['seconds']} s "
              f"(load average {report['load_average'][0]:.1f}: the machine may be shared)")
        print("  answers: " + ", ".join(f"HTTP {s}: {n}" for s, n in report["statuses"].items()))
        print(f"  HTTP 500: {report['server_errors'] or 'none'}; tracebacks in the log: {report['tracebacks']}")
        print(f"  the server's allocator: PYTHONMALLOC={report['pythonmalloc']}")
        for label, value in report["rss_mib"].items():
            print(f"  RSS {label}: {value} MiB")
    return 0


def get_quietly(url):
    try:
        return get(url)
    except OSError:
        return None


if __name__ == "__main__":
    sys.exit(main())
