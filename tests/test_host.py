"""The hosted mode's nginx (deploy/nginx.conf, run by deploy/host.py) in front of stand-in servers
(tests/host_stub.py, which report what reached them): what passes, what is refused, which headers.

The real app behind the same nginx, with browsers and the load test: tests/ui/test_host_ui.py.
Needs nginx (apt-get install nginx); skipped without it on a developer's machine, a failure in CI.
"""
import asyncio
import json
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.needs import unavailable
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from lineare.app.dashboards import DASHBOARDS
from lineare.deploy import host

ROOT = Path(__file__).resolve().parents[1]
STUB = ROOT / "tests" / "host_stub.py"


def require_nginx():
    try:
        host.nginx_binary()
    except host.HostError as error:
        unavailable("nginx for the hosted mode's tests", error)


def stub_command(_args, port):
    return [sys.executable, str(STUB), str(port)]


@contextlib.contextmanager
def stub_host(run_dir, *options):
    require_nginx()
    args = host.parse(["--port", str(host.free_port()), "--address", "127.0.0.1", "--first-server-port", "0",
                       "--workers", "2", "--no-warm", "--run-dir", str(run_dir), *options])
    with host.Host(args, command=stub_command) as running:
        yield running


def get(url, headers=None):
    """(status, headers, body text) of a GET; error statuses are answers too."""
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read().decode()


@pytest.fixture(scope="module")
def stubs(tmp_path_factory):
    with stub_host(tmp_path_factory.mktemp("host")) as running:
        yield running


def test_a_page_reaches_a_server_with_nginx_own_view_of_the_visitor(stubs):
    import json

    status, headers, body = get(stubs.url + "/state?variant=retnet",
                                {"X-Forwarded-For": "6.6.6.6", "X-Real-IP": "6.6.6.6", "X-Forwarded-Proto": "https"})
    assert status == 200
    seen = json.loads(body)
    assert seen["path"] == "/state" and seen["args"] == {"variant": ["retnet"]}
    assert seen["remote_ip"] == "127.0.0.1"                        # not the address the visitor claimed
    assert seen["headers"]["X-Forwarded-For"] == "127.0.0.1"
    assert seen["protocol"] == "http" and seen["headers"]["X-Forwarded-Proto"] == "http"
    assert seen["headers"]["Host"] == stubs.url.split("//")[1]      # what allow-websocket-origin checks against
    csp = headers["Content-Security-Policy"]
    assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp and "object-src 'none'" in csp
    assert headers["X-Frame-Options"] == "DENY"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Server"] == "nginx"                               # no version, no TornadoServer


@pytest.mark.parametrize("path", ["/", "/home", "/two-bills", "/memory-fails?dk=64", "/static/js/bokeh.min.js",
                                  "/favicon.ico", "/notebooks/parallel_equals_recurrent.ipynb"])
def test_pages_and_static_files_pass(stubs, path):
    assert get(stubs.url + path)[0] == 200


@pytest.mark.parametrize("path", ["/admin", "/admin/ws", "/state/autoload.js", "/state/metadata", "/nowhere",
                                  "/state/", "/../etc/passwd", "/components/x.js"])
def test_everything_else_is_not_found(stubs, path):
    status, headers, _body = get(stubs.url + path)
    assert status in (400, 404)
    assert headers["X-Frame-Options"] == "DENY"


def test_liveness_answers_without_its_arguments(stubs):
    import json

    status, _headers, body = get(stubs.url + "/liveness?endpoint=/state")     # Panel would build the page
    assert status == 200
    seen = json.loads(body)
    assert seen["path"] == "/liveness" and seen["args"] == {}


def test_a_url_over_the_limit_is_refused(stubs):
    assert get(stubs.url + "/state?text=" + "a" * 7000)[0] == 200
    assert get(stubs.url + "/state?text=" + "a" * 9000)[0] == 414


async def open_sockets(url, count):
    """`count` websockets to the state page, each with the port of the server that took it."""
    sockets = []
    for _ in range(count):
        socket = await websocket_connect(HTTPRequest(url.replace("http", "ws", 1) + "/state/ws"))
        sockets.append((socket, int(await socket.read_message())))
    return sockets


def test_sessions_are_balanced_over_the_servers_and_capped(tmp_path):
    with stub_host(tmp_path, "--max-sessions", "2", "--per-address", "2") as running:
        async def scenario():
            sockets = await open_sockets(running.url, 2)
            assert sorted(port for _s, port in sockets) == sorted(running.servers)     # one on each server
            full = get(running.url + "/state?variant=retnet")
            home = get(running.url + "/")
            sockets[0][0].close()
            await asyncio.sleep(0.5)
            again = get(running.url + "/state")
            sockets[1][0].close()
            return full, home, again

        (status, headers, body), home, again = asyncio.run(scenario())
    assert status == 503 and home[0] == 503
    assert "La demo è piena" in body and "The demo is full" in body and 'lang="en"' in body
    assert headers["Retry-After"] == "60" and headers["X-Frame-Options"] == "DENY"
    assert "Content-Security-Policy" in headers
    assert again[0] == 200                                                  # a place came free


def test_one_address_asking_too_often_gets_the_busy_page(tmp_path):
    with stub_host(tmp_path, "--rate", "1", "--burst", "2") as running:
        statuses = [get(running.url + "/state")[0] for _ in range(5)]
        status, _headers, body = get(running.url + "/two-bills")
        liveness = get(running.url + "/liveness")[0]
    assert statuses == [200, 200, 200, 429, 429]              # one, and a burst of two
    assert status == 429 and "Riprova fra un minuto" in body
    assert liveness == 200                                    # a probe is never limited


def test_a_server_that_dies_is_started_again(tmp_path):
    with stub_host(tmp_path) as running:
        port = next(iter(running.servers))
        first = running.servers[port]
        stop = threading.Event()
        watcher = threading.Thread(target=running.supervise, args=(stop.is_set,), daemon=True)
        watcher.start()
        os.killpg(first.pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while not (running.servers[port] is not first and host.answers(f"http://127.0.0.1:{port}/liveness")):
            assert time.monotonic() < deadline, "the server was not started again"
            time.sleep(0.2)
        stop.set()
        watcher.join()
        assert all(get(running.url + "/state")[0] == 200 for _ in range(4))


def blocks(text):
    """{(server number, location or "server"): [its directives]} of an nginx configuration (comments dropped)."""
    found, stack, servers = {}, [], 0
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if line.endswith("{"):
            name = line[:-1].strip()
            if name == "server":
                servers += 1
            stack.append(name)
            continue
        if line == "}":
            stack.pop()
            continue
        if line:
            where = stack[-1] if stack and stack[-1].startswith("location") else stack[-1] if stack else "main"
            found.setdefault((servers if "server" in stack else 0, where), []).append(line)
    return found


def test_every_limit_line_reads_its_own_flag(tmp_path):
    """Each flag a different number: every limit line of the filled configuration is checked against the flag it
    comes from (the live sessions, the class behind one address, the rates and bursts, the URL size)."""
    args = host.parse(["--port", "8080", "--run-dir", str(tmp_path), "--max-sessions", "37", "--class-size", "23",
                       "--rate", "17", "--burst", "41", "--max-url", "5k"])
    args.status_port = 8090
    conf = blocks(host.nginx_conf(args, [8081], tmp_path))
    pages, sockets = "location ~ ^/({})?$".format("|".join(host.page_routes())), \
        "location ~ ^/(({})/)?ws$".format("|".join(host.page_routes()))
    visitors, second = 1, 2                                  # the public server, then the per-address hop
    assert conf[visitors, pages] == ["limit_conn live 37;", "limit_req zone=pages burst=41 nodelay;",
                                     "proxy_pass http://addresses;"]
    assert conf[visitors, sockets][:2] == ["limit_conn live 47;", "limit_req zone=sessions burst=41 nodelay;"]
    assert conf[second, pages] == ["limit_conn address 23;", "proxy_pass http://lineare;"]
    assert conf[second, sockets][0] == "limit_conn address 33;"
    http = conf[0, "http"]
    assert "limit_req_zone $binary_remote_addr zone=pages:10m rate=17r/m;" in http
    assert "limit_req_zone $binary_remote_addr zone=sessions:10m rate=17r/m;" in http
    assert f"limit_req_zone $binary_remote_addr zone=files:10m rate={host.STATIC_PER_S}r/s;" in http
    assert "large_client_header_buffers 4 5k;" in http
    for static in ("location ^~ /static/", "location ^~ /notebooks/", "location = /favicon.ico"):
        assert f"limit_req zone=files burst={host.STATIC_PER_PAGE * 41} nodelay;" in conf[visitors, static]
        assert "proxy_cache_key $uri;" in conf[visitors, static]          # a query string is not a new file
    assert conf[0, "events"] == [f"worker_connections {max(1024, 6 * 47 + 256)};"]
    assert f"listen unix:{tmp_path / 'addresses.sock'};" in conf[second, "server"]
    given = host.parse(["--run-dir", str(tmp_path), "--per-address", "29", "--class-size", "23"])
    given.status_port = 8090
    assert blocks(host.nginx_conf(given, [8081], tmp_path))[second, pages][0] == "limit_conn address 29;"
    # static files: 30 per page an address may open, the larger of its burst and its live sessions
    wide = host.parse(["--run-dir", str(tmp_path), "--per-address", "59", "--burst", "41"])
    wide.status_port = 8090
    assert "limit_req zone=files burst=1770 nodelay;" in blocks(host.nginx_conf(wide, [8081], tmp_path))[
        visitors, "location ^~ /static/"]


@pytest.mark.parametrize("reason, flag, value", [("full", "--max-sessions", "37"), ("network", "--class-size", "23"),
                                                 ("often", "--rate", "17")])
def test_each_busy_page_says_which_limit_was_hit_in_both_languages(tmp_path, reason, flag, value):
    args = host.parse(["--run-dir", str(tmp_path), "--max-sessions", "37", "--class-size", "23", "--rate", "17"])
    pages = host.busy_pages(args)
    assert set(pages) == {"busy-full.html", "busy-network.html", "busy-often.html"}
    page = pages[f"busy-{reason}.html"]
    it, en = page.split('<section lang="en">')
    for words in (it, en):
        assert f"<code>scripts/host {flag}</code>" in words and value in words
    assert "{{" not in page and ("ora" in it and "now" in en)
    titles = {"full": ("La demo è piena", "The demo is full"),
              "network": ("Troppe pagine dalla stessa rete", "Too many pages from one network"),
              "often": ("Troppe richieste da questa rete", "Too many requests from this network")}[reason]
    assert titles[0] in it and titles[1] in en


def test_the_configuration_names_every_page_and_leaves_no_field(tmp_path):
    args = host.parse(["--port", "8080", "--run-dir", str(tmp_path)])
    args.status_port = 8090
    text = host.nginx_conf(args, [8081, 8082], tmp_path)
    assert "{{" not in text and "server 127.0.0.1:8081" in text and "server 127.0.0.1:8082" in text
    for page in ("home", *(dashboard.slug for dashboard in DASHBOARDS)):
        assert page in host.page_routes() and f"|{page}" in "|" + "|".join(host.page_routes())
    assert "least_conn;" in text and "limit_conn live 60;" in text and "limit_conn live 70;" in text


def test_without_nginx_the_message_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    monkeypatch.setattr(os, "access", lambda _path, _mode: False)
    with pytest.raises(host.HostError, match="apt-get install nginx"):
        host.nginx_binary()


def test_the_servers_get_the_hosting_flags():
    args = host.parse(["--port", "9000", "--origin", "demo.example.org", "--threads", "2", "--admin", "--", "--foo"])
    command = host.server_command(args, 9001)
    assert command[:7] == [sys.executable, "-m", "lineare.app", "--port", "9001", "--address", "127.0.0.1"]
    for flag in ("--reuse-sessions", "--liveness", "--use-xheaders", "--warm", "--admin", "--foo"):
        assert flag in command
    assert command[command.index("--num-threads") + 1] == "2"
    origins = [command[i + 1] for i, part in enumerate(command) if part == "--allow-websocket-origin"]
    assert origins == ["demo.example.org", "127.0.0.1:9001", "localhost:9001"]        # with --admin
    assert command.index("--warm") < command.index("--") < command.index("--reuse-sessions")
    environment = host.server_environment(args, "k")
    assert environment["BOKEH_SECRET_KEY"] == "k"
    # a live class's phones and projector may reach any server: one store of rooms for all of them
    rooms = command[command.index("--rooms") + 1]
    assert rooms.endswith("/rooms.sqlite") and rooms in host.server_command(args, 9002)
    assert command[command.index("--room-size") + 1] == "60"


def test_one_address_holds_a_class_and_the_servers_own_origins_are_for_admin_only():
    args = host.parse(["--port", "9000", "--origin", "demo.example.org"])
    assert args.max_sessions == 60 and args.per_address == args.class_size == 45 >= 40 and args.burst >= 45
    assert host.parse(["--class-size", "70"]).per_address == 60                             # at most the demo
    assert host.parse(["--class-size", "70", "--max-sessions", "100"]).burst == 70          # a class at once
    assert host.parse(["--max-sessions", "9", "--per-address", "9"]).per_address == 9      # given: kept
    command = host.server_command(args, 9001)
    origins = [command[i + 1] for i, part in enumerate(command) if part == "--allow-websocket-origin"]
    assert origins == ["demo.example.org"]                # nginx passes the visitor's Origin as it is


def test_logs_are_rotated_past_their_limit(tmp_path):
    reopened = tmp_path / "reopened"
    nginx = subprocess.Popen([sys.executable, "-c", "import signal, sys, time, pathlib\n"
                              f"signal.signal(signal.SIGUSR1, lambda *_: pathlib.Path({str(reopened)!r}).touch())\n"
                              "print('ready', flush=True)\ntime.sleep(30)"], stdout=subprocess.PIPE)
    try:
        assert nginx.stdout.readline() == b"ready\n"
        (tmp_path / "access.log").write_bytes(b"a" * 2000)
        (tmp_path / "server-8081.log").write_bytes(b"s" * 2000)
        (tmp_path / "nginx-error.log").write_bytes(b"e" * 10)              # under the limit: left alone
        assert host.rotate_logs(tmp_path, nginx.pid, limit=1000) == ["access.log", "server-8081.log"]
        assert (tmp_path / "access.log.1").stat().st_size == 2000 and not (tmp_path / "access.log").exists()
        assert (tmp_path / "server-8081.log.1").stat().st_size == 2000
        assert (tmp_path / "server-8081.log").stat().st_size == 0      # emptied: the server keeps appending to it
        assert (tmp_path / "nginx-error.log").stat().st_size == 10
        deadline = time.monotonic() + 5
        while not reopened.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert reopened.exists()                                         # nginx told to reopen its files
    finally:
        nginx.kill()
        nginx.wait()


def test_a_restarted_server_gets_no_visitor_before_it_answers(tmp_path):
    """The supervisor starts a server that died again; nginx sends it nobody (`down`) until it answers
    (and, without --no-warm, is primed), then it is back in the configuration."""
    with stub_host(tmp_path) as running:
        stop = threading.Event()
        supervisor = threading.Thread(target=running.supervise, args=(stop.is_set,), daemon=True)
        supervisor.start()
        port = sorted(running.servers)[0]
        conf = running.run_dir / "nginx.conf"
        os.killpg(running.servers[port].pid, signal.SIGKILL)
        seen_down, deadline = False, time.monotonic() + 30
        while time.monotonic() < deadline:
            text = conf.read_text()
            seen_down |= f"127.0.0.1:{port} max_fails=1 fail_timeout=5s down;" in text
            if seen_down and " down;" not in text:
                break
            time.sleep(0.05)
        stop.set()
        supervisor.join(5)
        assert seen_down and " down;" not in conf.read_text() and running.servers[port].poll() is None
        assert get(running.url + "/liveness")[0] == 200                     # nginx reloaded, still answering


async def visit(url, address, path="/state"):
    """One protocol client from `address` (a loopback address of its own): GET the page, then open its websocket.
    (status of the GET, its body, the open websocket or None)."""
    from tornado.httpclient import AsyncHTTPClient, HTTPClientError

    try:
        response = await AsyncHTTPClient().fetch(HTTPRequest(url + path, network_interface=address,
                                                             request_timeout=20))
    except HTTPClientError as error:
        return error.code, error.response.body.decode() if error.response else "", None
    socket = await websocket_connect(HTTPRequest(url.replace("http", "ws", 1) + path + "/ws",
                                                 network_interface=address, request_timeout=20))
    await socket.read_message()                                      # the stub's port: it is open
    return response.code, response.body.decode(), socket


def test_a_class_of_45_behind_one_address_gets_in_and_the_61st_visitor_is_told_the_demo_is_full(tmp_path):
    """The defaults (--max-sessions 60, --class-size 45): 45 protocol clients from one address all open their
    page; the 46th from that address is told, in both languages, that its network has too many pages and what
    the operator can raise; 15 more from another address fill the demo, and the 61st session is told the demo is
    full, and by which flag."""
    with stub_host(tmp_path) as running:
        async def scenario():
            school = [await visit(running.url, "127.0.0.1") for _ in range(45)]
            one_more = await visit(running.url, "127.0.0.1")
            others = [await visit(running.url, "127.0.0.2") for _ in range(15)]
            sixty_first = await visit(running.url, "127.0.0.3")
            for _status, _body, socket in school + others:
                if socket is not None:
                    socket.close()
            return school, one_more, others, sixty_first

        school, one_more, others, sixty_first = asyncio.run(scenario())
    assert [(status, socket is not None) for status, _b, socket in school + others] == [(200, True)] * 60
    status, body, socket = one_more
    assert status == 503 and socket is None
    assert "Troppe pagine dalla stessa rete" in body and "Too many pages from one network" in body
    assert "--class-size</code> (ora 45)" in body and "--class-size</code> (now 45)" in body
    status, body, socket = sixty_first
    assert status == 503 and socket is None
    assert "La demo è piena" in body and "The demo is full" in body and "--max-sessions</code> (now 60)" in body


def test_a_random_query_string_is_the_same_static_file_and_static_files_are_rate_limited(tmp_path):
    with stub_host(tmp_path, "--burst", "1", "--per-address", "1") as running:
        started = time.monotonic()                            # the address's first static file: its burst from here
        first = get(running.url + "/static/js/bokeh.min.js?v=1")
        again = [get(running.url + f"/static/js/bokeh.min.js?v={n}&x={n * 7}") for n in range(2, 6)]
        statuses = [get(running.url + f"/static/js/panel.min.js?v={n}")[0] for n in range(3 * host.STATIC_PER_PAGE)]
        refilled = int((time.monotonic() - started) * host.STATIC_PER_S) + 2     # the rate's own, meanwhile
    assert first[0] == 200 and json.loads(first[2])["args"] == {"v": ["1"]}
    assert all(status == 200 and body == first[2] for status, _h, body in again)    # kept: the servers saw one
    allowed = host.STATIC_PER_PAGE - 5                        # the burst, less the five files above
    assert statuses[:allowed] == [200] * allowed and set(statuses) == {200, 429}
    assert statuses.count(200) <= allowed + refilled < len(statuses), (statuses.count(200), refilled)
