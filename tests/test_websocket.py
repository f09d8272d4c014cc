"""A hostile client against a running `python -m app`: query arguments that would move where scripts
load from, and Bokeh protocol messages a browser of ours never sends (app/security.py, app/websocket.py).

Each attack is checked the way a visitor would meet it: a second, fresh session pulls its page and
must see exactly what it saw before the attack.
"""
import asyncio
import re
import time
import urllib.error
import urllib.request

import numpy as np
import pytest
from bokeh.models import ColumnDataSource, Slider
from bokeh_wire import Wire, fingerprint, page_token

from app import security
from app.devtools import running_server

COMMAND = ("python -m app --port {port} --address 127.0.0.1 --allow-websocket-origin 127.0.0.1:{port} "
           "--secret-key-file {key} > {log} 2>&1")
EVIL = "http://evil.example/"


class Server:
    def __init__(self, url, log):
        self.url, self.log = url, log

    def get(self, path):
        """(status, headers, body) of a GET; an HTTP error is an answer too."""
        try:
            with urllib.request.urlopen(self.url + path, timeout=120) as response:
                return response.status, response.headers, response.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as error:
            return error.code, error.headers, error.read().decode("utf-8", "replace")

    def mark(self):
        return len(self.log.read_text(encoding="utf-8", errors="replace").splitlines())

    def lines_since(self, mark):
        time.sleep(0.5)
        lines = self.log.read_text(encoding="utf-8", errors="replace").splitlines()[mark:]
        return [line for line in lines if "WebSocket connection" not in line and "ServerConnection" not in line]

    def run(self, coroutine):
        return asyncio.run(coroutine)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("websocket")
    log = folder / "server.log"
    command = COMMAND.replace("{key}", str(folder / "key")).replace("{log}", str(log))
    with running_server(shell_command=command) as url:
        while "with process id" not in log.read_text():
            time.sleep(0.1)
        yield Server(url, log)


def addresses(page):
    """Every script's and stylesheet's address in a page."""
    return re.findall(r'<script[^>]*\bsrc="([^"]*)"', page) + re.findall(r'<link[^>]*\bhref="([^"]*)"', page)


# ---------------------------------------------------------------------------------------------- 0: links


@pytest.mark.parametrize("argument", ["bokeh-absolute-url", "bokeh-app-path", "bokeh-autoload-element",
                                      "bokeh-api", "bokeh-version"])
def test_a_bokeh_argument_in_a_link_does_not_move_scripts_and_styles(server, argument):
    status, _, plain = server.get("/state")
    status_evil, _, page = server.get(f"/state?{argument}={EVIL}")
    assert status == status_evil == 200
    assert "evil.example" not in page
    assert addresses(page) and addresses(page) == addresses(plain)
    assert all(not re.match(r"^(https?:)?//", address) for address in addresses(page)), addresses(page)


def test_autoload_cannot_point_a_page_at_another_host(server):
    status, _, body = server.get(f"/state/autoload.js?bokeh-autoload-element=x&bokeh-absolute-url={EVIL}")
    assert status == 400 and "evil.example" not in body


def test_the_classroom_server_sends_the_hosted_mode_security_headers(server):
    expected = security.security_headers()
    assert "default-src 'self'" in expected["Content-Security-Policy"]
    for path in ["/state", "/static/js/bokeh.min.js", "/no-such-page"]:
        _, headers, _ = server.get(path)
        assert {name: headers.get(name) for name in expected} == expected, path


# ---------------------------------------------------------------------------------------------- 1: patches


async def settled(url, path, tries=6):
    """What a fresh session of `path` shows, once two in a row show the same: a page's first visits may
    still find a count being made for every session (the held-out accuracy)."""
    seen = None
    for _ in range(tries):
        async with Wire.open(url, path) as wire:
            shown = fingerprint(await wire.pull())
        if shown == seen:
            return shown
        seen = shown
        await asyncio.sleep(1)
    raise AssertionError(f"{path}: fresh sessions differ from each other")


def _first(document, kind, test=lambda model: True):
    return next(model for model in document.models if isinstance(model, kind) and test(model))


def _curve_source(document):
    return _first(document, ColumnDataSource, lambda s: len(s.data.get("y", ())) > 1)


ATTACKS = {
    "ColumnsPatched": lambda d: {"kind": "ColumnsPatched", "model": {"id": _curve_source(d).id}, "attr": "data",
                                 "patches": {"type": "map", "entries": [["y", [[0, 0.5], [1, 0.5]]]]}},
    "ColumnsStreamed": lambda d: {"kind": "ColumnsStreamed", "model": {"id": _curve_source(d).id}, "attr": "data",
                                  "data": {"type": "map", "entries": [["x", [1.0]], ["y", [0.5]]]}},
    "ColumnDataChanged": lambda d: {"kind": "ColumnDataChanged", "model": {"id": _curve_source(d).id},
                                    "attr": "data", "data": {"type": "map", "entries": [["y", [0.5, 0.5]]]}},
    "data": lambda d: {"kind": "ModelChanged", "model": {"id": _curve_source(d).id}, "attr": "data",
                       "new": {"type": "map", "entries": [["y", [0.5, 0.5]]]}},
    "RootRemoved": lambda d: {"kind": "RootRemoved", "model": {"id": d.roots[0].id}},
    "RootAdded": lambda d: {"kind": "RootAdded", "model": {"type": "object", "name": "Div", "id": "evil1",
                                                           "attributes": {"text": "the demo moved to evil.example"}}},
    "TitleChanged": lambda d: {"kind": "TitleChanged", "title": "the demo moved to evil.example"},
    "a slider's title": lambda d: {"kind": "ModelChanged", "model": {"id": _first(d, Slider).id}, "attr": "title",
                                   "new": "the demo moved to evil.example"},
    "a slider's end": lambda d: {"kind": "ModelChanged", "model": {"id": _first(d, Slider).id}, "attr": "end",
                                 "new": 1e9},
    "a new model as a value": lambda d: {"kind": "ModelChanged", "model": {"id": _first(d, Slider).id},
                                         "attr": "value", "new": {"type": "object", "name": "Div", "id": "evil2"}},
    "a value out of bounds": lambda d: {"kind": "ModelChanged", "model": {"id": _first(d, Slider).id},
                                        "attr": "value", "new": 1e9},
}


def test_a_client_cannot_change_what_a_later_visitor_sees(server):
    """Where memory fails: its curves come from process-wide caches, the attack's target in the issue.
    One attacking session, a new connection to it per attack (three refusals close one); then a fresh
    visitor's page is compared with the page before the attacks."""
    async def scenario():
        seen = await settled(server.url, "/memory-fails")
        token = await asyncio.to_thread(page_token, server.url + "/memory-fails")
        answers = {}
        for attack, event in ATTACKS.items():
            mark = server.mark()
            async with Wire.open(server.url, "/memory-fails", token=token) as attacker:
                document = await attacker.pull()
                before = fingerprint(document)
                reply = await attacker.patch([event(document)])
            async with Wire.open(server.url, "/memory-fails", token=token) as attacker:
                own = fingerprint(await attacker.pull())
            answers[attack] = reply, own == before, server.lines_since(mark)
        async with Wire.open(server.url, "/memory-fails") as later:
            return seen, fingerprint(await later.pull()), answers

    seen, later, answers = server.run(scenario())
    for attack, (reply, unchanged, lines) in answers.items():
        assert reply == ("ERROR", "refused"), attack                             # short, no traceback
        assert unchanged, f"{attack} changed the attacker's own page"
        assert len(lines) == 1 and "refused" in lines[0] and len(lines[0]) < 300, (attack, lines)
    assert later == seen


def test_push_doc_and_unknown_messages_are_refused(server):
    async def scenario():
        async with Wire.open(server.url, "/state") as wire:
            await wire.send(wire.message("PUSH-DOC", {"doc": {"roots": [], "title": "evil"}}))
            pushed = await wire.reply()
            await wire.send(wire.message("EVIL", {}))
            return pushed.msgtype, pushed.content, await wire.read()

    mark = server.mark()
    kind, content, after_unknown = server.run(scenario())
    assert kind == "ERROR" and content == {"text": "refused", "traceback": None}
    assert after_unknown is None                                   # a message Bokeh cannot read: closed
    lines = server.lines_since(mark)
    assert len(lines) == 2 and all("refused" in line and len(line) < 300 for line in lines), lines


def test_refusals_close_the_connection_after_three(server):
    async def scenario():
        async with Wire.open(server.url, "/state") as wire:
            replies = [await wire.patch([{"kind": "TitleChanged", "title": str(i)}]) for i in range(3)]
            return replies, wire.connection.close_code

    replies, code = server.run(scenario())
    assert replies == [("ERROR", "refused")] * 2 + [(None, None)] and code == 1008


def test_a_widget_value_within_bounds_is_applied(server):
    async def scenario():
        async with Wire.open(server.url, "/memory-fails") as wire:
            slider = _first(await wire.pull(), Slider)
            return await wire.patch([{"kind": "ModelChanged", "model": {"id": slider.id}, "attr": "value",
                                      "new": slider.start}])

    assert server.run(scenario()) == ("OK", None)


def test_an_unreadable_or_huge_message_closes_the_connection_with_one_short_line(server):
    async def scenario(*fragments):
        async with Wire.open(server.url, "/state") as wire:
            await wire.send_raw(*fragments)
            return await wire.read()

    mark = server.mark()
    assert server.run(scenario("{not json", "{}", "{}")) is None
    assert server.run(scenario("x" * (300 * 1024))) is None                   # above the 256 KB a message may have
    lines = server.lines_since(mark)
    assert lines and len(lines) <= 2 and all(len(line) < 300 for line in lines), lines
    assert not any("Traceback" in line for line in lines)


# ---------------------------------------------------------------------------------------------- shared arrays


def test_cached_arrays_shared_by_every_session_are_read_only():
    from app.dashboards.architectures import model as architectures
    from app.dashboards.memory_fails import model as memory_fails

    curve = memory_fails.curve("delta", 16, "random", 0, 0)
    run = memory_fails.recall("delta", 16, "random", 8, 0, 0)
    for array in [*curve.values(), run.weights, run.targets, architectures.forgetting_curve("retnet")]:
        assert isinstance(array, np.ndarray) and not array.flags.writeable
        with pytest.raises(ValueError):
            array[0] = 0.5


# ---------------------------------------------------------------------------------------------- 2: kept sessions


def test_a_kept_session_is_never_handed_to_a_visitor(monkeypatch):
    """--reuse-sessions on a server nobody primed: Panel handed the first visitor of a page the kept
    session's own token, so that visitor's messages changed the session every later GET renders. In
    process, with a one-line page: the session ids of the visitors' tokens are never a kept session's."""
    import panel as pn
    from bokeh.util.token import get_session_id
    from panel.io.state import state

    from app.devtools import free_port

    security.install()
    monkeypatch.setattr(pn.config, "reuse_sessions", True)
    monkeypatch.setattr(state, "_sessions", {})
    monkeypatch.setattr(state, "_session_key_funcs", {})
    port = free_port()
    server = pn.serve({"page": lambda: pn.pane.Markdown("one line")}, port=port, address="127.0.0.1",
                      threaded=True, show=False, websocket_origin=[f"127.0.0.1:{port}"])
    try:
        deadline = time.monotonic() + 30
        tokens = []
        while len(tokens) < 3:
            try:
                tokens.append(page_token(f"http://127.0.0.1:{port}/page"))
            except (OSError, AttributeError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        kept = {session.id for session in state._sessions.values()}
        visitors = {get_session_id(token) for token in tokens}
        assert len(kept) == 1 and len(visitors) == 3 and not kept & visitors
    finally:
        server.stop()
