"""`python -m lineare.app` on its multi-process default, as tests reach it: a page's GET answered by one of its
processes and its websocket by another (the kernel hands each connection to any of them: here the others are stopped
while one is meant to answer), and what a visitor then gets over the wire."""
import asyncio
import os
import re
import signal
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import psutil

from lineare.app.devtools import running_server
from bokeh_wire import Wire, normalized

PULLS_UNTIL_STILL = 20                    # a page whose workers still compute is pulled again until it stands still


def children(url):
    """The server processes behind `url`: the children of the process listening on its port."""
    port = int(url.rsplit(":", 1)[1])
    for process in psutil.process_iter():
        try:
            if any(c.laddr.port == port and c.status == psutil.CONN_LISTEN for c in process.net_connections("tcp")):
                kids = process.children()
                if kids:
                    return kids
        except psutil.Error:
            continue
    return []


def only(running, stopped):
    """Let `running` alone accept connections: `stopped` cannot take them from the shared socket."""
    os.kill(stopped.pid, signal.SIGSTOP)
    os.kill(running.pid, signal.SIGCONT)


@contextmanager
def two_processes(log, *flags):
    """`python -m lineare.app --num-procs 2 FLAGS` (what ./scripts/app serves with on two cores): its URL, its two
    server processes (both running again afterwards)."""
    command = (f"python -m lineare.app --num-procs 2 --port {{port}} --address 127.0.0.1 --allow-websocket-origin "
               f"127.0.0.1:{{port}} {' '.join(flags)} > {log} 2>&1")
    with running_server(shell_command=command, processes=()) as url:
        deadline = time.monotonic() + 60
        while len(processes := children(url)) < 2 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert len(processes) == 2, f"python -m lineare.app --num-procs 2 {' '.join(flags)} did not fork two servers"
        try:
            yield url, processes, Path(log)
        finally:
            for process in processes:
                os.kill(process.pid, signal.SIGCONT)


def page_html(url, path):
    with urllib.request.urlopen(url + path, timeout=120) as response:
        return response.read().decode("utf-8")


def frame_of(page):
    """A GET's HTML with what differs between two answers named in order (the visitor's token, element ids)."""
    page = re.sub(r'"token":\s*"[^"]+"', '"token": "T"', page)
    page = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "U", page)
    return normalized(re.sub(r"'p\d+'", "'P'", page))          # the element holding the JSON (not in a served page)


def document_of(document, numbers=False):
    """What a visitor's page is made of, comparable between two sessions: the document's JSON (ids and counters in
    order) with every number written as # (measured times, counts still being made), unless `numbers`."""
    from bokeh.protocol import Protocol

    for model in document.models:             # the page's address: the browser's to say (a session built for a
        if type(model).__name__ == "Location":     # websocket has the websocket's own until the browser does)
            model.update(href="-", pathname="-", search="-", hash="-", hostname="-", port="-")
    text = normalized(Protocol().create("PULL-DOC-REPLY", "x", document).content_json)
    return text if numbers else re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "#", text)


async def pulled(wire, numbers=False):
    """The session's document once two pulls in a row agree (a worker's count may still be running)."""
    last = document_of(await wire.pull(), numbers)
    for _ in range(PULLS_UNTIL_STILL):
        await asyncio.sleep(0.3)
        now = document_of(await wire.pull(), numbers)
        if now == last:
            return now
        last = now
    raise AssertionError("the page kept changing")


def visit(url, processes, path, websocket_on, knob=None):
    """GET `path` from the first of `processes`, open its websocket on `processes[websocket_on]`: (the GET's frame,
    the pulled document, after `knob(wire)` if given: the document again and the knob's answer)."""
    first, second = processes
    only(first, second)
    try:
        html = page_html(url, path)
        token = re.search(r'"token":\s*"([^"]+)"', html).group(1)
        only(*(processes if websocket_on == 0 else processes[::-1]))
        route = path.split("?")[0]

        async def session():
            wire = await Wire.connect(url, route if route != "/" else "/", token)
            try:
                before = await pulled(wire, numbers=knob is not None)      # a knob changes numbers
                if knob is None:
                    return before, None
                answer = await knob(wire)
                return before, (answer, await pulled(wire, numbers=True))
            finally:
                wire.connection.close()
        document, knobbed = asyncio.run(session())
    finally:
        for process in processes:
            os.kill(process.pid, signal.SIGCONT)
    return frame_of(html), document, knobbed
