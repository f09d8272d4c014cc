"""`python -m lineare.app` serves from one process per core by default: what it asks of `panel serve`, what it
says at start, and that a page whose GET one process answered opens its websocket on another."""
import asyncio
import contextlib
import os
import re
import signal
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from lineare.app import serve
from lineare.app.devtools import free_port
from lineare.bench.load import Viewer
from served import only

PAGE = "/state?variant=deltanet&preset=crowd&lang=it"


def parsed(monkeypatch, *argv):
    """panel serve's command line for `python -m lineare.app argv`, without serving and without installing the
    server's patches in this process (its environment comes back as it was)."""
    import panel.command

    from lineare.app import i18n
    from lineare.app.server import memory, patches, security, websocket
    captured = {}
    monkeypatch.setattr(panel.command, "main", lambda: captured.setdefault("argv", list(sys.argv)) and 0)
    for module, name in ((security, "one_line_for_closed_connections"), (memory, "install"), (patches, "install"),
                         (websocket, "install"), (i18n, "compile_catalogs")):
        monkeypatch.setattr(module, name, lambda *args, **kwargs: None)
    for name in ("BOKEH_SECRET_KEY", *serve.BOKEH_CHECKS, "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                 "LINEARE_ROOMS", "LINEARE_ROOM_SIZE", "LINEARE_LAN"):
        monkeypatch.setenv(name, "x")
        monkeypatch.delenv(name)                 # restored (absent) after the test
    monkeypatch.setattr(sys, "argv", sys.argv[:])
    assert serve.main(["--port", str(free_port()), *argv]) == 0
    return captured["argv"]


def option(argv, name):
    return argv[argv.index(name) + 1]


def test_one_process_per_core_by_default_sharing_sessions(monkeypatch, capsys):
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    monkeypatch.setattr(sys, "platform", "linux")
    argv = parsed(monkeypatch)
    assert option(argv, "--num-procs") == "4"
    # a GET renders a kept page; the visitor's session is built where its websocket lands
    assert "--reuse-sessions" in argv and option(argv, "--setup").endswith("app/server/panel_setup.py")
    assert os.environ["OMP_NUM_THREADS"] == "1"                 # the cores shared among the processes
    # Bokeh's checks that only cost a page's build are off in the server (the tests keep them)
    assert os.environ["BOKEH_VALIDATE_DOC"] == os.environ["BOKEH_PERFORM_ERROR_DIAGNOSTICS"] == "false"
    assert "with 4 server processes (one per core: 4 cores; --one-process for one" in capsys.readouterr().err


def test_one_process_on_request(monkeypatch, capsys):
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    for flags in (["--one-process"], ["--num-procs", "1"]):
        argv = parsed(monkeypatch, *flags)
        assert option(argv, "--num-procs") == "1"
        assert "--reuse-sessions" not in argv and "--setup" not in argv
        assert "with 1 server process (" in capsys.readouterr().err
    argv = parsed(monkeypatch, "--num-procs", "3", "--", "--setup", "mine.py")
    assert option(argv, "--num-procs") == "3" and argv.count("--setup") == 1 and option(argv, "--setup") == "mine.py"
    with pytest.raises(SystemExit):
        parsed(monkeypatch, "--num-procs", "-2")
    monkeypatch.setattr(sys, "platform", "darwin")                 # forking there is not safe by default
    assert option(parsed(monkeypatch), "--num-procs") == "1"
    assert option(parsed(monkeypatch, "--num-procs", "0"), "--num-procs") == "1"


def test_lan_serves_the_classrooms_network_and_keeps_the_rooms_for_every_process(monkeypatch, tmp_path):
    monkeypatch.setattr(serve, "lan_addresses", lambda: ["192.168.1.20"])
    argv = parsed(monkeypatch, "--lan", "--rooms", f"sqlite:///{tmp_path}/rooms.sqlite", "--room-size", "30")
    assert option(argv, "--address") == "0.0.0.0"
    origins = [argv[i + 1] for i, part in enumerate(argv) if part == "--allow-websocket-origin"]
    port = option(argv, "--port")
    assert origins == [f"localhost:{port}", f"127.0.0.1:{port}", f"192.168.1.20:{port}"]
    assert os.environ["LINEARE_ROOMS"] == f"sqlite:///{tmp_path}/rooms.sqlite"       # every forked process reads it
    assert (os.environ["LINEARE_ROOM_SIZE"], os.environ["LINEARE_LAN"]) == ("30", "1")
    with pytest.raises(SystemExit):
        parsed(monkeypatch, "--rooms", "postgres://nowhere")


def test_a_page_from_one_process_opens_its_session_on_another(served_patched):
    url, processes, log = served_patched
    first, second = processes
    viewers = [Viewer(url, PAGE), Viewer(url, PAGE)]
    try:
        only(first, second)
        # the pages, from the first process: both from its kept session, the second the HTML written for
        # the first with the second visitor's own token (app/server/building.py); Panel would have drawn new ids
        # for the page's elements
        pages = [urllib.request.urlopen(url + PAGE, timeout=60).read().decode() for _ in viewers]
        tokens = [re.search(r'"token":\s*"([^"]+)"', page).group(1) for page in pages]
        assert pages[0].replace(tokens[0], "T") == pages[1].replace(tokens[1], "T")
        only(second, first)

        async def connect_and_move(viewer, token):
            await viewer.connect(token)                      # its websocket, on the second
            await viewer.move_knob()
            await viewer.close()
        for viewer, token in zip(viewers, tokens):
            asyncio.run(connect_and_move(viewer, token))
    finally:
        for process in processes:
            os.kill(process.pid, signal.SIGCONT)
    assert tokens[0] != tokens[1]
    for viewer in viewers:
        assert viewer.opened is not None and len(viewer.knob_ms) == 1
        assert not viewer.errors and not viewer.dropped
        # a session built for a websocket points at the server's own copy of Panel's stylesheets, never a
        # CDN (app/server/panel_setup.py): a classroom is often offline
        assert viewer.stylesheets and not [url for url in viewer.stylesheets if "//" in url], viewer.stylesheets
    assert "with 2 server processes" in Path(log).read_text()


PRESENTER_CSS = "--lineare-scale: 1.25"          # app/shell.py PRESENT_CSS, in the page's HTML


def test_presenter_mode_is_part_of_the_kept_page_each_process_answers_from(served_patched):
    """Each process renders a GET from a page it keeps (--reuse-sessions): presenter mode is in that page's
    HTML (its type and folded sidebar), so a presenter's link and a plain one are never answered from the same
    kept page — whichever of them a process was asked for first."""
    url, processes, _log = served_patched

    def presenter(path):
        return PRESENTER_CSS in urllib.request.urlopen(url + path, timeout=60).read().decode()

    try:
        for running, stopped in (processes, processes[::-1]):
            only(running, stopped)
            assert presenter("/state?lang=it&present=1")
            assert not presenter("/state?lang=it")
            assert presenter("/state?lang=it&present=1&variant=gla")
            assert not presenter("/memory-fails?lang=en")
            assert presenter("/memory-fails?lang=en&present=true")
            assert not presenter("/memory-fails?lang=en&present=0")
            assert not presenter("/memory-fails")
    finally:
        for process in processes:
            os.kill(process.pid, signal.SIGCONT)


def test_only_the_language_and_presenter_mode_change_a_pages_frame():
    """A kept page's HTML (its frame: the template, its title, presenter mode's type and folded sidebar) is keyed
    by page, language and presenter mode (app/server/panel_setup.py): no other query argument may change it. In
    process, the state page's frame for each of the arguments its pages and lessons read."""
    from bokeh.document import Document
    from bokeh.resources import Resources
    from panel.io.application import build_single_handler_application
    from panel.io.server import server_html_page_for_session

    from lineare.app.serve import PAGES as PAGE_DIR
    from lineare.app.session import Session
    from lineare.bench.pages import fake_session
    from served import frame_of

    application = build_single_handler_application(str(PAGE_DIR / "state.py"))

    def frame(query, language="en"):
        doc = Document()
        session = fake_session(doc, "state", query, language)
        application.initialize_document(doc)
        assert len(doc.roots) == 6                 # Panel's four, the sidebar, the page
        return frame_of(server_html_page_for_session(session, resources=Resources(mode="server"), title=doc.title,
                                                     template=doc.template, template_variables=doc.template_variables))

    plain = frame("")
    for query in ("level=superiore", "lesson=state&card=2", "variant=gla&preset=crowd&t=3&speed=4&alpha=0.5",
                  "lesson=softmax&card=9&level=nonsense&present=maybe"):
        assert frame(query) == plain, query
        arguments = {name: [value.encode()] for name, value in (pair.split("=") for pair in query.split("&"))}
        assert Session.frame_of(arguments, "en") == ("en", False)      # the key of the kept page: the plain one
    assert frame("present=1") != plain and frame("", "it") != plain
    assert Session.frame_of({"present": [b"1"]}, "en") == ("en", True)


@pytest.mark.parametrize("how", ["SIGTERM to the server's process", "Ctrl-C"])
def test_stopping_the_server_stops_every_process_it_forked(tmp_path, how):
    """`kill PID` (what a supervisor sends) left the forked servers answering on the port; Ctrl-C (SIGINT to the
    terminal's whole group) printed a traceback per process. Now every process is gone within 2 s, and Ctrl-C says
    so in one line."""
    import subprocess

    import psutil

    from served import children

    port, log = free_port(), tmp_path / "server.log"
    with open(log, "w") as out:
        server = subprocess.Popen([sys.executable, "-m", "lineare.app", "--num-procs", "2", "--port", str(port),
                                   "--address", "127.0.0.1"], stdout=out, stderr=subprocess.STDOUT,
                                  start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while len(forked := children(f"http://127.0.0.1:{port}")) < 2:
            assert time.monotonic() < deadline and server.poll() is None, log.read_text()
            time.sleep(0.3)
        urllib.request.urlopen(f"http://127.0.0.1:{port}/favicon.ico", timeout=30).read()     # serving
        before = log.read_text()
        stopped = time.monotonic()
        if how == "Ctrl-C":
            os.killpg(server.pid, signal.SIGINT)            # what a terminal sends to its foreground group
        else:
            os.kill(server.pid, signal.SIGTERM)
        server.wait(timeout=10)
        _gone, alive = psutil.wait_procs(forked, timeout=max(0.1, 2 - (time.monotonic() - stopped)))
        assert not alive, f"{len(alive)} forked servers still running after {how}"
        assert time.monotonic() - stopped < 2.5
        said = log.read_text()[len(before):].strip().splitlines()
        if how == "Ctrl-C":
            assert said == ["Lineare: stopped (Ctrl-C)."], said
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGKILL)
