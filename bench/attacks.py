"""A hostile visitor against one server process, and what another visitor sees meanwhile: the before/after table.

    .venv/bin/python -m lineare.bench.hostile attacks [--only NAME …] [--seconds 15] [--app-dir DIR] [--json]

For each attack a fresh server is started (`python -m lineare.app --one-process -- --reuse-sessions --setup …`, what
each server of the hosted mode runs; from --app-dir, e.g. an older checkout, to measure the same attack before a
change).
A victim, a protocol client as a browser speaks it (bench.load.Viewer), opens the state page (page open: GET sent →
document received) and moves its β slider (knob: change sent → the new run received) for --seconds alone, then again
while the attack runs from another loopback address (127.0.0.2, as another network would be), in a process of its
own (as another machine would be). Printed: the victim's page open and knob p50/p95 alone and under the attack, what
the attack was answered, and the server's RSS and CPU. The queue flood's victim changes Where memory fails' seed
instead of a knob (the seed's new curve).

Attacks (the hostile visitor of issue 45):
  knob     3 sessions turn the trained state page's example number every 0.3 s (its run was computed on the loop)
  queue    12 sessions on Where memory fails each turn the seed every 0.3 s (one shared FIFO queue of curves)
  builds   from one address, 40 clients open the page's websocket over and over (each a page build)
  churn    from one address, 20 clients open a page and close it at once, over and over
  event    2 sessions on the transition page send a 121 kB event naming 1,500 new models, again and again
  pulls    4 connections pull Where memory fails' whole document, again and again
  sockets  one session with 61 websockets moves its knob every 0.5 s (each change goes to every socket)
  buffers  one message announces 10⁹ binary buffers, then sends 80 MB of them (the server's RSS)
  export   2 sessions download every frame of the state page (a zip of full-HD PNGs; the server's RSS after, the
           pages still open)
"""
import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psutil
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from lineare.bench.load import STATE_PAGE, Viewer, find_models, summary

ROOT = Path(__file__).resolve().parents[1]
ATTACKER = "127.0.0.2"
MEMORY_PAGE = "/memory-fails?lang=en"
BUTTON_PAGE = "/transition?lang=en"       # a page with a Button (the state page's header buttons are the frame's HTML)


# ---------------------------------------------------------------------------------------------- the server

@contextlib.contextmanager
def server(app_dir):
    """A one-process server with the hosted mode's flags, started from `app_dir`: (base URL, its psutil.Process)."""
    from lineare.app.devtools import free_port

    port = free_port()
    setup = next(p for p in (Path(app_dir) / "app" / "server" / "panel_setup.py",     # deploy/ before December 7
                             Path(app_dir) / "deploy" / "panel_setup.py") if p.exists())
    command = [sys.executable, "-m", "lineare.app", "--port", str(port), "--address", "127.0.0.1", "--one-process",
               "--", "--reuse-sessions", "--setup", str(setup)]
    log = tempfile.NamedTemporaryFile(prefix="lineare-attacks-", suffix=".log", delete=False)
    process = subprocess.Popen(command, cwd=app_dir, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        import urllib.request
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(base + "/favicon.ico", timeout=5).read()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError(f"the server did not start: {Path(log.name).read_text()[-2000:]}") from None
                time.sleep(0.3)
        yield base, psutil.Process(process.pid), Path(log.name)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, 15)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:                  # a server still busy with the flood
            os.killpg(process.pid, 9)
            process.wait()


def cpu_seconds(process):
    times = process.cpu_times()
    return times.user + times.system


# ---------------------------------------------------------------------------------------------- the victim

def spinner(doc, words):
    """The visible Spinner whose title has `words` in it (an English page)."""
    return next(s for s in find_models(doc, "Spinner", [])
                if words in (s["attributes"].get("title") or "") and s["attributes"].get("visible", True))


async def seed_change(viewer):
    """Turn Where memory fails' seed; seconds until its new curve comes (a data source's new data)."""
    seed = spinner(viewer.document, "seed")
    while not viewer.inbox.empty():
        viewer.inbox.get_nowait()
    started = time.perf_counter()
    await viewer._patch([viewer._change(seed["id"], "value", random.randrange(10_000))])
    await viewer._next(lambda m: m.msgtype == "PATCH-DOC" and any(
        e.get("kind") == "ColumnDataChanged" or e.get("attr") == "data" for e in m.content.get("events", [])))
    return 1000 * (time.perf_counter() - started)


async def victim(base, seconds, seeds=False):
    """Opens the state page (or memory fails) and moves its knob three times, over and over for `seconds`."""
    opened, knobs, errors = [], [], []
    stop = time.monotonic() + seconds
    while time.monotonic() < stop:
        viewer = Viewer(base, MEMORY_PAGE if seeds else STATE_PAGE)
        try:
            await viewer.open()
            opened.append(viewer.opened)
            for _ in range(3):
                await asyncio.sleep(0.3)
                if seeds:
                    knobs.append(await seed_change(viewer))
                else:
                    await viewer.move_knob()                    # its time: viewer.knob_ms
            knobs.extend(viewer.knob_ms)
        except Exception as error:                           # counted: a victim that fails is the finding
            errors.append(f"{type(error).__name__}: {error}"[:120])
        finally:
            await viewer.close()
    return {"page_open_s": summary(opened), "knob_ms": summary(knobs), "errors": errors}


# ---------------------------------------------------------------------------------------------- the attacks

class Attack:
    """Counts what the attacker's messages were answered."""

    def __init__(self):
        self.sent, self.refused, self.closed, self.errors = 0, 0, 0, 0
        self.stopping = False


async def keep_sending(attack, base, path, send, pause):
    """One attacker session: `send(viewer)` every `pause` s; a closed connection is opened again, to the same
    session (its token)."""
    viewer, token = None, None
    while not attack.stopping:
        try:
            if viewer is None:
                viewer = Viewer(base, path, address=ATTACKER)
                token = token or await viewer.get_page()
                await viewer.connect(token)
            await send(viewer)
            attack.sent += 1
            await asyncio.sleep(pause)
            while not viewer.inbox.empty():
                message = viewer.inbox.get_nowait()
                if message is None:
                    attack.closed += 1
                    await viewer.close()
                    viewer = None
                    break
                attack.refused += message.msgtype == "ERROR"
        except Exception:
            attack.errors += 1
            if viewer is not None:
                await viewer.close()
            viewer = None
            await asyncio.sleep(0.2)
    if viewer is not None:
        await viewer.close()


def knob_flood(attack, base):
    async def turn(viewer):
        box = spinner(viewer.document, "Example")
        await viewer._patch([viewer._change(box["id"], "value", random.randrange(1, 10_000))])
    return [keep_sending(attack, base, "/state?mode=trained&lang=en", turn, 0.3) for _ in range(3)]


def queue_flood(attack, base):
    async def turn(viewer):
        await viewer._patch([viewer._change(spinner(viewer.document, "seed")["id"], "value", random.randrange(10_000))])
    return [keep_sending(attack, base, MEMORY_PAGE, turn, 0.3) for _ in range(12)]


def build_flood(attack, base):
    async def one():
        while not attack.stopping:
            viewer = Viewer(base, STATE_PAGE, address=ATTACKER)
            try:
                await viewer.connect(await viewer.get_page())
                attack.sent += 1
                await asyncio.sleep(2.0)
            except Exception:
                attack.refused += 1
                await asyncio.sleep(0.1)
            finally:
                with contextlib.suppress(Exception):
                    await viewer.close()
    return [one() for _ in range(40)]


def churn_flood(attack, base):
    """Pages opened and closed at once, over and over (their builds were queued for nobody)."""
    async def one():
        while not attack.stopping:
            viewer = Viewer(base, STATE_PAGE, address=ATTACKER)
            try:
                token = await viewer.get_page()
                route = STATE_PAGE.split("?")[0]
                socket = await websocket_connect(HTTPRequest(base.replace("http", "ws", 1) + route + "/ws",
                                                             headers={"Origin": base}, network_interface=ATTACKER),
                                                 subprotocols=["bokeh", token])
                socket.close()
                attack.sent += 1
            except Exception:
                attack.errors += 1
                await asyncio.sleep(0.1)
    return [one() for _ in range(20)]


BOMB = [{"type": "object", "name": "Div", "id": f"evil{i}", "attributes": {"text": "x" * 40}} for i in range(1500)]


def event_flood(attack, base):
    async def bomb(viewer):
        button = find_models(viewer.document, "panel.models.widgets.Button", [])[0]
        await viewer._patch([{"kind": "MessageSent", "msg_type": "bokeh_event", "msg_data": {
            "type": "event", "name": "button_click",
            "values": {"type": "map", "entries": [["model", {"id": button["id"]}], ["extra", BOMB]]}}}])
    return [keep_sending(attack, base, BUTTON_PAGE, bomb, 0.05) for _ in range(2)]


def pull_flood(attack, base):
    async def pull(viewer):
        await viewer._send("PULL-DOC-REQ", {})
    return [keep_sending(attack, base, MEMORY_PAGE, pull, 0.05) for _ in range(4)]


def socket_flood(attack, base):
    async def run():
        first = Viewer(base, STATE_PAGE, address=ATTACKER)
        token = await first.get_page()
        await first.connect(token)
        others = []
        for _ in range(60):
            other = Viewer(base, STATE_PAGE, address=ATTACKER)
            try:
                await other.connect(token)
                others.append(other)
            except Exception:
                attack.refused += 1
        while not attack.stopping:
            await asyncio.sleep(0.5)
            with contextlib.suppress(Exception):
                await first.move_knob()
                attack.sent += 1
        for viewer in [first, *others]:
            await viewer.close()
    return [run()]


FLOODS = {"knob": knob_flood, "queue": queue_flood, "builds": build_flood, "churn": churn_flood,
          "event": event_flood, "pulls": pull_flood, "sockets": socket_flood}


def flood_process(name, base, stop, counts):
    """Flood `name` until `stop` is set, then put what it was answered in `counts`. It runs in a process of its own,
    as a real attacker is another machine: sharing the victim's event loop, the flood's coroutines delayed the
    victim's own reading of its replies, and the victim's times were partly the attacker's."""
    async def run():
        attack = Attack()
        tasks = [asyncio.ensure_future(task) for task in FLOODS[name](attack, base)]
        while not stop.is_set():
            await asyncio.sleep(0.1)
        attack.stopping = True
        await asyncio.wait(tasks, timeout=30)
        counts.put({"sent": attack.sent, "refused": attack.refused, "closed": attack.closed, "errors": attack.errors})
    asyncio.run(run())


async def under(base, name, seconds, seeds=False):
    """The victim alone, then while the flood `name` runs: {"alone": …, "attacked": …, "attack": counts}."""
    alone = await victim(base, seconds, seeds)
    spawn = multiprocessing.get_context("spawn")
    stop, counts = spawn.Event(), spawn.Queue()
    attacker = spawn.Process(target=flood_process, args=(name, base, stop, counts), daemon=True)
    attacker.start()
    await asyncio.sleep(4.0)                           # the flood is on (its process started) before the victim comes
    attacked = await victim(base, seconds, seeds)
    stop.set()
    attack = await asyncio.get_running_loop().run_in_executor(None, counts.get, True, 60)
    attacker.join(timeout=10)
    return {"alone": alone, "attacked": attacked, "attack": attack}


async def buffers_bomb(base, process):
    viewer = Viewer(base, STATE_PAGE, address=ATTACKER)
    await viewer.open()
    before = process.memory_info().rss
    socket = viewer.socket
    header = {"msgid": uuid.uuid4().hex, "msgtype": "PATCH-DOC", "num_buffers": 10 ** 9}
    sent = 0
    with contextlib.suppress(Exception):
        for part in (json.dumps(header), "{}", json.dumps({"events": []})):
            await socket.write_message(part)
        for index in range(400):
            await socket.write_message(json.dumps({"id": str(index)}))
            await socket.write_message(b"\0" * (200 * 1024), binary=True)
            sent += 1
    await asyncio.sleep(2)
    grown = process.memory_info().rss - before
    await viewer.close()
    return {"buffers_sent": sent, "rss_grown_mib": round(grown / 2 ** 20, 1)}


async def export(base, process, sessions=2):
    """`sessions` pages each download every frame of the state page (a zip of full-HD PNGs of the crowd's run); the
    server's RSS with the pages open before, once the files are in (the pages still open), and 20 s later."""
    viewers, buttons = [], []
    for _ in range(sessions):
        viewer = Viewer(base, "/state?variant=deltanet&preset=crowd&lang=en")
        await viewer.open()
        card = find_models(viewer.document, "panel.models.layout.Card", [])
        card = next(c for c in card if "lineare-downloads" in c["attributes"].get("css_classes", []))
        await viewer._patch([viewer._change(card["id"], "collapsed", False)])
        await asyncio.sleep(1.0)
        await viewer._send("PULL-DOC-REQ", {})
        doc = (await viewer._next(lambda m: m.msgtype == "PULL-DOC-REPLY")).content["doc"]
        selects = find_models(doc, "panel.models.widgets.CustomSelect", [])
        for words in ("zip", "1920"):                        # every frame as PNG files, full HD: the largest file
            select = next(s for s in selects if any(words in str(o) for o in s["attributes"].get("options", [])))
            label = next(o for o in select["attributes"]["options"] if words in str(o))    # Panel sends the labels
            await viewer._patch([viewer._change(select["id"], "value", label[0] if isinstance(label, list) else label)])
            await asyncio.sleep(0.5)
        viewers.append(viewer)
        buttons.append(find_models(doc, "panel.models.widgets.FileDownload", [])[0])
    await asyncio.sleep(3)
    before = process.memory_info().rss
    sizes = []
    for viewer, button in zip(viewers, buttons):
        await viewer._patch([viewer._change(button["id"], "clicks", 1)])
        message = await viewer._next(lambda m: m.msgtype == "PATCH-DOC" and any(
            e.get("attr") == "data" and e.get("new") for e in m.content.get("events", [])))
        sizes.append(sum(len(e.get("new") or "") for e in message.content["events"] if e.get("attr") == "data"))
        await asyncio.sleep(6)                               # a session's next export waits 5 s after its last
    await asyncio.sleep(3)
    after = process.memory_info().rss
    kept = 0                                                 # what each page's document still holds of its file
    for viewer in viewers:
        await viewer._send("PULL-DOC-REQ", {})
        doc = (await viewer._next(lambda m: m.msgtype == "PULL-DOC-REPLY")).content["doc"]
        buttons = find_models(doc, "panel.models.widgets.FileDownload", [])
        kept += sum(len(button["attributes"].get("data") or "") for button in buttons)
    await asyncio.sleep(20)
    later = process.memory_info().rss
    for viewer in viewers:
        await viewer.close()
    return {"files_mib": [round(size / 2 ** 20, 1) for size in sizes],
            "kept_in_the_pages_mib": round(kept / 2 ** 20, 1),
            "rss_grown_mib": round((after - before) / 2 ** 20),
            "rss_grown_20s_later_mib": round((later - before) / 2 ** 20)}


def measure(name, app_dir, seconds):
    with server(app_dir) as (base, process, _log):
        async def run():
            for page in (MEMORY_PAGE, STATE_PAGE):                   # imports, caches, the held-out count
                warm = Viewer(base, page)
                await warm.open()
                await warm.close()
            cpu = cpu_seconds(process)
            if name == "buffers":
                result = await buffers_bomb(base, process)
            elif name == "export":
                result = await export(base, process)
            else:
                result = await under(base, name, seconds, seeds=(name == "queue"))
            result["server_cpu_s"] = round(cpu_seconds(process) - cpu, 1)
            result["server_rss_mib"] = round(process.memory_info().rss / 2 ** 20)
            return result
        return asyncio.run(run())


def row(name, label, result):
    if "alone" not in result:
        return f"  {name:8} {label:7} " + ", ".join(f"{k} {v}" for k, v in result.items())
    fmt = lambda s, scale, unit: "-" if s is None else f"{s['p50'] * scale:.0f}/{s['p95'] * scale:.0f}{unit}"
    alone, attacked, attack = result["alone"], result["attacked"], result["attack"]
    return (f"  {name:8} {label:7} page open p50/p95 {fmt(alone['page_open_s'], 1000, ' ms'):>13} → "
            f"{fmt(attacked['page_open_s'], 1000, ' ms'):>13}   knob {fmt(alone['knob_ms'], 1, ' ms'):>12} → "
            f"{fmt(attacked['knob_ms'], 1, ' ms'):>12}   victim errors {len(attacked['errors'])}   attack: sent "
            f"{attack['sent']}, refused {attack['refused']}, closed {attack['closed']}   server CPU "
            f"{result['server_cpu_s']} s, RSS {result['server_rss_mib']} MiB")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m lineare.bench.hostile attacks",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", default=None, choices=[*FLOODS, "buffers", "export"])
    parser.add_argument("--seconds", type=float, default=15.0, help="the victim's time alone, then under attack")
    parser.add_argument("--app-dir", action="append", default=None,
                        help="a checkout to run the server from (repeat to compare; default: this one)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    dirs = args.app_dir or [str(ROOT)]
    results = {}
    print(f"load average {os.getloadavg()[0]:.1f} at start (the machine may be shared)", flush=True)
    for name in args.only or [*FLOODS, "buffers", "export"]:
        for app_dir in dirs:
            label = "this" if Path(app_dir).resolve() == ROOT else Path(app_dir).name
            results.setdefault(name, {})[label] = result = measure(name, app_dir, args.seconds)
            print(row(name, label, result), flush=True)
    if args.json:
        print(json.dumps(results, indent=1, default=float))
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
