"""Many visitors at once on the hosted demo (scripts/host): what the servers do for a classroom.

    .venv/bin/python -m lineare.bench.load [crowd|heavy|churn|burst|class] [--viewers N] [--browsers B] [--workers W]
                                   [--url URL --run-dir DIR] [--app [--app-arg=ARG …]] [--json]

Without --url it starts its own hosted mode (deploy.host: W servers behind nginx, --warm, the per-IP
limits raised because every viewer comes from 127.0.0.1) and stops it afterwards. With --url it
measures a running one; --run-dir (its host.json) lets it find the servers' processes. With --app it
starts `python -m lineare.app` instead (what ./scripts/app runs: one process per core; --app-arg=--one-process
for one), on localhost with no nginx, and opens the state page a few times in each language first.

A viewer speaks Bokeh's protocol as the browser does, over nginx: GET the page (the HTML carries the
session token), open the websocket with the token, PULL-DOC-REQ, send what the page sends when it
has rendered (its location, then `document_ready`), then move a knob as the page does (two PATCH-DOC
messages, `value` and `value_throttled`). It never builds Bokeh objects, so that the 2 cores go to
the servers. Stepping and playing run in the browser and send nothing (app/components/player.py):
the real Chromium pages (--browsers) check that — they step and play and count what they send — and
time the knob → new picture and the lateness of played frames as a person sees them.

Modes:
  crowd  --browsers real Chromium pages open /state?variant=deltanet&preset=crowd (the teacher's),
         then --viewers open it over --ramp seconds and stay (a class opening the teacher's link);
         once all are in, each viewer moves the β slider --knobs times (--think seconds apart) while
         the browser pages move it, step and play. Prints page open (GET sent → document received),
         knob → new frames (PATCH-DOC sent → the message with the player's new run received, its
         pictures with or before it), errors, dropped sessions (websockets the server closed), pages
         refused as full, the servers' CPU (per page opened, per knob move) and RSS, and the browser
         numbers.
  heavy  --viewers open the state page (over --ramp seconds) and keep moving their knob (--think);
         after --before seconds one more visitor opens /memory-fails?dk=64&pairs=256&rewrites=32.
         Prints the others' knob → frames before and while it is built.
  churn  opens and closes --sessions sessions, two at a time; the servers' RSS after the first 20 and
         after all of them, each once the idle sessions have been closed (Bokeh discards a session
         60 s after its websocket closed; the server gives the memory back within 20 s after that).

  burst  "open the link now": --viewers (30) arrive at random within --ramp seconds (10), and each,
         as soon as its page is in, moves the β slider --knobs times (3), --think seconds apart (2.5-3.5).
         Prints page open p50/p95, knob → new frames, errors, dropped sessions, the servers' CPU.
         Targets: ./scripts/app on 2 cores, 30 within 10 s: page open p95 ≤ 3 s, 0 errors; the hosted
         mode with 2 servers, 60 within 10 s: the same.

  class  a live class (app/classroom/): a projector (--lesson, a lesson card in presenter mode) starts a class,
         --viewers phones (60) join it, then for --cards cards (2) each phone answers at a random moment within
         --think's upper bound, the projector shows the answers, reveals and moves to the next card. Prints the
         phones' join times, answer → the projector's tally (the k-th answer sent, until the tally counts k),
         reveal → every phone, next card → every phone. Target: answer → tally p95 ≤ 1 s, 0 errors.

Targets (on this machine: 2 cores, hosted mode with 2 servers): crowd of 50: 0 errors, 0 dropped,
page open p95 ≤ 3 s, knob → new frames p95 ≤ 500 ms; heavy: knob → frames p95 ≤ 500 ms while the
heavy page is built; churn of 500: RSS within 10 % of the RSS after 20.
"""
import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field

import numpy as np
import psutil
from bokeh.protocol import Protocol
from bokeh.protocol.receiver import Receiver
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest
from tornado.websocket import websocket_connect

from lineare.bench import python_speed

STATE_PAGE = "/state?variant=deltanet&preset=crowd"
HEAVY_PAGE = "/memory-fails?dk=64&pairs=256&rewrites=32"
TIMEOUT_S = 60                  # a page or a knob that takes longer is an error
TARGETS = {"page_open_p95_s": 3.0, "knob_p95_ms": 500.0, "heavy_knob_p95_ms": 500.0, "rss_growth": 0.10,
           "tally_p95_ms": 1000.0}
CLASS_LESSON = "/softmax?lesson=softmax&card=1&present=1&lang=it"


def summary(values):
    """p50, p95, max and count of `values` (None when there are none)."""
    if not len(values):
        return None
    values = np.asarray(values, dtype=float)
    return {"p50": float(np.percentile(values, 50)), "p95": float(np.percentile(values, 95)),
            "max": float(values.max()), "n": int(values.size)}


# ---------------------------------------------------------------- one protocol viewer

class Refused(Exception):
    """nginx answered with its demo-is-full (503) or too-many-requests (429) page."""


def find_models(obj, name, found):
    """Every serialized Bokeh model of type `name` in a document's JSON."""
    if isinstance(obj, dict):
        if obj.get("type") == "object" and obj.get("name") == name:
            found.append(obj)
        for value in obj.values():
            find_models(value, name, found)
    elif isinstance(obj, list):
        for value in obj:
            find_models(value, name, found)
    return found


@dataclass
class Viewer:
    """One visitor's page over the protocol; times in seconds from time.perf_counter()."""
    base: str
    path: str = STATE_PAGE
    opened: float | None = None               # GET sent → document received
    knob_ms: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    refused: int | None = None                # the HTTP status of a refusal
    dropped: bool = False                     # the server closed the websocket
    done: bool = False                        # finished its part (or failed): only waits to close
    received_bytes: int = 0
    stylesheets: list = field(default_factory=list)   # the URLs of the pulled document's imported stylesheets
    address: str | None = None                # the source address (one of this machine's), e.g. another loopback

    async def open(self, page_base=None):
        """GET the page (from `page_base` if given, e.g. another server), then its websocket at `base`."""
        started = time.perf_counter()
        await self.connect(await self.get_page(page_base), started)

    async def get_page(self, page_base=None):
        """GET the page; its session token."""
        try:
            response = await AsyncHTTPClient().fetch(HTTPRequest((page_base or self.base) + self.path,
                                                                 request_timeout=TIMEOUT_S,
                                                                 network_interface=self.address))
        except HTTPClientError as error:
            if error.code in (429, 503):
                self.refused = error.code
                raise Refused(error.code) from error
            raise
        return re.search(r'"token":\s*"([^"]+)"', response.body.decode()).group(1)

    async def connect(self, token, started=None):
        """Open the page's websocket with `token` and pull its document, as the page does once loaded;
        `opened`: seconds since `started` (default: now)."""
        started = time.perf_counter() if started is None else started
        route = self.path.split("?")[0].rstrip("/")
        url = self.base.replace("http", "ws", 1) + route + "/ws"
        self.socket = await websocket_connect(
            HTTPRequest(url, headers={"Origin": self.base}, request_timeout=TIMEOUT_S, network_interface=self.address),
            subprotocols=["bokeh", token], compression_options={}, max_message_size=256 * 2 ** 20)
        # browsers send small messages at once (Chromium sets TCP_NODELAY on its sockets); with Nagle's
        # algorithm a knob's second message waited for the server's delayed ACK, ~40 ms per move
        self.socket.protocol.stream.set_nodelay(True)
        self.receiver, self.inbox = Receiver(Protocol()), asyncio.Queue()
        self.reader = asyncio.ensure_future(self._read())
        await self._next(lambda m: m.msgtype == "ACK")
        await self._send("PULL-DOC-REQ", {})
        reply = await self._next(lambda m: m.msgtype == "PULL-DOC-REPLY")
        self.opened = time.perf_counter() - started
        doc = self.document = reply.content["doc"]
        self.stylesheets = [sheet["attributes"]["url"] for sheet in find_models(doc, "ImportedStyleSheet", [])]
        location = find_models(doc, "Location", [])
        if location:                                     # what the page says once it has rendered
            await self._patch([self._change(location[0]["id"], "href", self.base + self.path)])
        await self._patch([{"kind": "MessageSent", "msg_type": "bokeh_event",
                            "msg_data": {"type": "event", "name": "document_ready", "values": {"type": "map"}}}])
        self.sliders = [s for s in find_models(doc, "Slider", [])
                        if s["attributes"].get("visible", True) and s["attributes"].get("step", 1) < 1]

    async def move_knob(self):
        """Move the first visible fractional slider to another value; time until the new run arrives
        (the message that carries the player's new run number)."""
        slider = self.sliders[0]["attributes"]
        step, now = slider["step"], slider["value"]
        choices = [v for v in np.arange(slider["start"], slider["end"] + step / 2, step)
                   if abs(v - now) > step / 2 and v > 0]
        value = slider["value"] = round(float(random.choice(choices)), 6)
        while not self.inbox.empty():                  # what came before the move is not its answer
            if self.inbox.get_nowait() is None:
                raise ConnectionError("the server closed the websocket")
        started, before = time.perf_counter(), self.received_bytes
        model = self.sliders[0]["id"]
        await self._patch([self._change(model, "value", value)])
        await self._patch([self._change(model, "value_throttled", value)])
        # the player's run counter comes with (or, with Panel's --num-threads, after) the run's pictures:
        # the page draws the new frames when it changes (app/components/player.py)
        await self._next(lambda m: m.msgtype == "PATCH-DOC" and any(
            e.get("kind") == "ModelChanged" and e.get("attr") == "run" for e in m.content.get("events", [])))
        self.knob_ms.append(1000 * (time.perf_counter() - started))
        return self.received_bytes - before

    async def close(self):
        with contextlib.suppress(Exception):
            self.closing = True
            self.socket.close()
            await asyncio.wait_for(self.reader, 5)

    # the wire

    @staticmethod
    def _change(model, attr, new):
        return {"kind": "ModelChanged", "model": {"id": model}, "attr": attr, "new": new}

    async def _patch(self, events):
        await self._send("PATCH-DOC", {"events": events})

    async def _send(self, msgtype, content):
        header = json.dumps({"msgid": uuid.uuid4().hex, "msgtype": msgtype})
        for part in (header, "{}", json.dumps(content)):
            await self.socket.write_message(part)

    async def _read(self):
        while True:
            fragment = await self.socket.read_message()
            if fragment is None:
                if not getattr(self, "closing", False):
                    self.dropped = True
                await self.inbox.put(None)
                return
            self.received_bytes += len(fragment)
            message = await self.receiver.consume(fragment)
            if message is not None:
                if message.msgtype == "ERROR":
                    self.errors.append(f"server error: {message.content.get('text', '')[:200]}")
                await self.inbox.put(message)

    async def _next(self, wanted):
        deadline = time.perf_counter() + TIMEOUT_S
        while True:
            message = await asyncio.wait_for(self.inbox.get(), max(0.01, deadline - time.perf_counter()))
            if message is None:
                raise ConnectionError("the server closed the websocket")
            if wanted(message):
                return message


async def visit(viewer, knobs, pause, hold, begin=None):
    """Open; once `begin` is set (an Event; None: at once) move the knob `knobs` times, `pause()`
    seconds apart; then wait for `hold` (an Event; None: no wait) and close."""
    try:
        await viewer.open()
        if begin is not None:
            await begin.wait()
        for _ in range(knobs):
            await asyncio.sleep(pause())
            await viewer.move_knob()
        viewer.done = True
        if hold is not None:
            await hold.wait()
    except Refused:
        pass
    except Exception as error:                       # counted and reported, never raised
        viewer.errors.append(f"{type(error).__name__}: {error}"[:300])
    finally:
        viewer.done = True
        if hasattr(viewer, "socket"):
            await viewer.close()
    return viewer


# ---------------------------------------------------------------- a live class over the protocol

def plain(value):
    """A value of Bokeh's JSON (maps as {"type": "map", "entries": …}) as Python's."""
    if isinstance(value, dict):
        if value.get("type") == "map":
            return {k: plain(v) for k, v in value.get("entries", [])}
        if value.get("type") == "number":
            return float(value["value"])
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def data_model(doc, component):
    """The serialized data model of a page's component (its class's name: Panel names it Phone1, Phone2 …)."""
    found = []

    def walk(obj):
        if isinstance(obj, dict):
            if obj.get("type") == "object" and re.fullmatch(component + r"\d*", str(obj.get("name"))):
                found.append(obj)
            for value in obj.values():
                walk(value)
        elif isinstance(obj, list):
            for value in obj:
                walk(value)
    walk(doc)
    return found[0] if found else None


@dataclass
class Follower(Viewer):
    """A page of a live class over the protocol: it keeps the latest value the server sent of its component's
    attributes (`values`), with the time each came (`seen`: [(time, attr, value)])."""
    values: dict = field(default_factory=dict)
    seen: list = field(default_factory=list)

    async def follow(self, component):
        """Open the page, find its `component` (its data model), keep its values as they come."""
        await self.open()
        model = data_model(self.document, component)
        if model is None:
            raise LookupError(f"no {component} on {self.path}")
        self.model = model["id"]
        self.values = plain(model["attributes"])
        self.changed = asyncio.Event()
        self.follower = asyncio.ensure_future(self._follow())

    async def _follow(self):
        while True:
            message = await self.inbox.get()
            if message is None:
                self.changed.set()
                return
            if message.msgtype != "PATCH-DOC":
                continue
            for event in message.content.get("events", []):
                if event.get("kind") == "ModelChanged" and event.get("model", {}).get("id") == self.model:
                    value = plain(event.get("new"))
                    self.values[event["attr"]] = value
                    self.seen.append((time.perf_counter(), event["attr"], value))
            self.changed.set()

    async def until(self, attribute, condition, timeout=TIMEOUT_S):
        """Wait until condition(the latest `attribute`) holds; the time (perf_counter) the first value for which it
        holds arrived (now, if it held before anything came)."""
        deadline, start = time.perf_counter() + timeout, len(self.seen)
        while not condition(self.values.get(attribute)):
            if self.follower.done():
                raise ConnectionError("the server closed the websocket")
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), max(0.01, deadline - time.perf_counter()))
        return next((t for t, attr, value in self.seen[start:] if attr == attribute and condition(value)),
                    time.perf_counter())

    async def write(self, attribute, value):
        await self._patch([self._change(self.model, attribute, value)])


@dataclass
class Phone(Follower):
    """A student's phone: joins by code, answers, sketches (what app/js/classroom/phone.js writes)."""
    token: str = ""

    async def join(self, code, language="en"):
        self.path = f"/join?code={code}&lang={language}"
        await self.follow("Phone")
        await self.write("hello", [code, self.token])
        await self.until("screen", lambda screen: screen.get("view") not in (None, "code") or screen.get("error"))
        if self.values["screen"].get("error"):
            raise Refused(self.values["screen"]["error"])
        self.token = self.values["place"][1]

    @property
    def screen(self):
        return self.values.get("screen", {})

    async def answer(self, choice):
        await self.write("answer", [self.screen["turn"], choice])


@dataclass
class Teacher(Follower):
    """The projector's page of a lesson card in presenter mode: starts a class, shows, reveals, moves it on."""
    presses: int = 0
    grant: str = ""

    async def start(self, path):
        self.path = path
        await self.follow("ClassPanel")
        await self.command("start")
        await self.until("grant", bool)
        self.grant = self.values["grant"]              # the tab keeps it (sessionStorage) for the next pages
        await self.until("room", lambda room: room.get("view") == "on")
        return self.values["room"]["code"]

    async def command(self, name):
        self.presses += 1
        await self.write("command", [name, self.presses])

    @property
    def room(self):
        return self.values.get("room", {})

    async def next_card(self):
        """Next card: the room moves, the projector follows the card's link and is the room's teacher there."""
        await self.command("next")
        await self.until("room", lambda room: room.get("go"))
        href, grant = self.room["go"], self.grant
        await self.close()
        self.closing, self.path, self.values, self.seen = False, "/" + href.lstrip("./"), {}, []
        await self.follow("ClassPanel")
        await self.write("key", grant)
        await self.until("room", lambda room: room.get("view") == "on" and room.get("here"))


async def lesson(base, teacher_path, phones, cards, think, log, languages=("en", "it")):
    """A class: the teacher starts it on `teacher_path`, the phones join, then for each of `cards` cards they
    answer (each at a random moment within `think` seconds), the teacher shows the answers, reveals and moves on.
    Returns what each side saw: answer → tally times, reveal → phones, next card → phones, errors."""
    teacher = Teacher(base)
    code = await teacher.start(teacher_path)
    log(f"class {code} opened on {teacher_path}")
    await asyncio.gather(*(phone.join(code, languages[i % len(languages)]) for i, phone in enumerate(phones)))
    await teacher.until("room", lambda room: room.get("joined") == len(phones))
    tally_ms, reveal_ms, next_ms, choices_made = [], [], [], []
    for number in range(cards):
        turn = phones[0].screen["turn"]
        for phone in phones:
            assert phone.screen.get("view") == "card" and phone.screen["turn"] == turn, phone.screen
        sent = []

        async def answer(phone, rng=random.Random(number)):
            await asyncio.sleep(rng.uniform(0, think))
            choice = rng.randrange(len(phone.screen["choices"]))
            sent.append(time.perf_counter())
            await phone.answer(choice)
            return choice
        begun = len(teacher.seen)
        choices_made.append(await asyncio.gather(*(answer(p) for p in phones)))
        await teacher.until("room", lambda room: room.get("answered") == len(phones))
        # the k-th answer sent is counted once the projector's tally reaches k (answers taken in the order sent)
        shown = [(t, v["answered"]) for t, attr, v in teacher.seen[begun:] if attr == "room"]
        for k, at in enumerate(sorted(sent), start=1):
            tally_ms.append(1000 * (next(t for t, n in shown if n >= k) - at))
        await teacher.command("show")
        await teacher.until("room", lambda room: room.get("phase") == "showing" and room.get("counts"))
        started = time.perf_counter()
        await teacher.command("reveal")
        for phone in phones:
            reveal_ms.append(1000 * (await phone.until("screen", lambda screen: screen.get("phase") == "revealed")
                                     - started))
        if number + 1 < cards:
            started = time.perf_counter()
            moved = asyncio.gather(*(phone.until("screen", lambda screen: screen.get("turn", turn) != turn)
                                     for phone in phones))
            await teacher.next_card()
            next_ms += [1000 * (arrived - started) for arrived in await moved]
    return {"code": code, "teacher": teacher, "tally_ms": tally_ms, "reveal_ms": reveal_ms, "next_ms": next_ms,
            "choices": choices_made}


async def live_class(base, args, meter, log):
    """`class` mode: one teacher and --viewers phones through --cards cards (see lesson())."""
    phones = [Phone(base) for _ in range(args.viewers)]
    errors = []
    try:
        seen = await lesson(base, args.lesson, phones, args.cards, args.think[1], log)
    except Exception as error:                       # counted and reported, never raised
        seen = {"tally_ms": [], "reveal_ms": [], "next_ms": []}
        errors.append(f"{type(error).__name__}: {error}"[:300])
    errors += [e for p in phones for e in p.errors]
    for viewer in [*phones, seen.get("teacher")]:
        if viewer is not None:
            await viewer.close()
    return {"mode": "class", "path": args.lesson, "viewers": len(phones), "cards": args.cards, "errors": errors,
            "think_s": args.think[1],
            "dropped": sum(p.dropped for p in phones), "joined_s": summary([p.opened for p in phones if p.opened]),
            "tally_ms": summary(seen["tally_ms"]), "reveal_ms": summary(seen["reveal_ms"]),
            "next_ms": summary(seen["next_ms"])}


# ---------------------------------------------------------------- the servers' processes

class Meter:
    """CPU seconds and RSS of the host's processes (the servers, nginx and its workers), sampled
    every second in a thread; also this process's own CPU (the load generator shares the cores)."""

    def __init__(self, pids):
        self.processes = {name: psutil.Process(pid) for name, pid in pids.items()}
        self.peak, self.samples, self._stop = 0, [], threading.Event()

    def _tree(self, name):
        process = self.processes[name]
        return [process, *(process.children(recursive=True) if name == "nginx" else [])]

    def cpu_seconds(self):
        total = 0.0
        for name in self.processes:
            for process in self._tree(name):
                with contextlib.suppress(psutil.Error):
                    times = process.cpu_times()
                    total += times.user + times.system
        return total

    def rss(self):
        """{name: RSS in MiB} of each server (and nginx, all its processes)."""
        sizes = {}
        for name in self.processes:
            with contextlib.suppress(psutil.Error):
                sizes[name] = sum(p.memory_info().rss for p in self._tree(name)) / 2 ** 20
        return sizes

    def servers_rss(self):
        return sum(v for k, v in self.rss().items() if k.startswith("server"))

    def __enter__(self):
        self.started, self.cpu0, self.own0 = time.perf_counter(), self.cpu_seconds(), time.process_time()

        def sample():
            while not self._stop.wait(1.0):
                self.peak = max(self.peak, self.servers_rss())
        self.thread = threading.Thread(target=sample, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *_exc):
        self._stop.set()
        self.thread.join()
        wall = time.perf_counter() - self.started
        self.result = {"wall_s": wall, "cpu_s": self.cpu_seconds() - self.cpu0,
                       "cpu_cores": (self.cpu_seconds() - self.cpu0) / wall,
                       "load_generator_cpu_s": time.process_time() - self.own0,
                       "rss_mib": self.rss(), "servers_rss_peak_mib": max(self.peak, self.servers_rss())}


# ---------------------------------------------------------------- real pages in Chromium

FRAMES_JS = """() => {
  window.__frames = []
  document.addEventListener("lineare:frame", e => window.__frames.push([performance.now(), e.detail.t]))
}"""


def browser_visits(base, count, results, opened, begin, ready):
    """`count` Chromium pages on the state page, in one thread (Playwright's sync API). They open first,
    as the teacher's projector would (`opened` is set once they are in); once `begin` is set, each in
    turn moves the β slider (→ picture, bench.app's watcher), steps with → and plays for 5 s. Records
    open seconds, knob ms, messages sent while stepping and playing, played frames' lateness, errors.
    A class's browsers run on the pupils' machines, these on the servers' 2 cores: opened among the
    class (a page costs Chromium ~5 s of CPU here), they measured this machine's Chromium more than
    the servers. A latecomer's page while the others move their knobs is the heavy mode's case."""
    from lineare.app.devtools import browser

    try:
        with browser() as chromium:
            pages = []
            for _ in range(count):
                context = chromium.new_context(viewport={"width": 1366, "height": 768}, locale="en-US")
                page, sent, problems = context.new_page(), [], []
                page.on("websocket", lambda ws, sent=sent: ws.on("framesent", lambda payload: sent.append(payload)))
                page.on("pageerror", lambda error, problems=problems: problems.append(str(error)[:200]))
                page.on("console",
                        lambda m, problems=problems: problems.append(m.text[:200]) if m.type == "error" else None)
                record = {"errors": problems}
                results.append(record)
                pages.append((context, page, sent, record))
                try:
                    started = time.perf_counter()
                    page.goto(base + STATE_PAGE, timeout=TIMEOUT_S * 1000)
                    page.locator(".bk-Figure").first.wait_for(timeout=TIMEOUT_S * 1000)
                    page.wait_for_function("() => document.body.dataset.lineareKeys === 'ready'",
                                           timeout=TIMEOUT_S * 1000)
                    record["open_s"] = time.perf_counter() - started
                except Exception as error:
                    problems.append(f"{type(error).__name__}: {str(error)[:200]}")
            opened.set()
            begin.wait()
            for context, page, sent, record in pages:
                try:
                    if "open_s" in record:
                        use_page(page, sent, record)
                except Exception as error:
                    record["errors"].append(f"{type(error).__name__}: {str(error)[:200]}")
                finally:
                    context.close()
    except RuntimeError as error:                    # no Chromium here
        results.append({"errors": [f"no browser: {error}"]})
    finally:
        opened.set()
        ready.set()


def use_page(page, sent, record):
    """Move the β slider and time it, step three times, play for 5 s (see browser_visits)."""
    from lineare.bench.app import WATCH_JS

    page.evaluate(WATCH_JS)
    page.evaluate(FRAMES_JS)
    figure = page.locator(".bk-Figure").first
    page.evaluate("figure => window.__bench.arm(figure)", figure.element_handle())
    page.get_by_role("slider").first.press("ArrowLeft")
    page.wait_for_function("() => window.__bench.t1 !== null || window.__bench.failed",
                           timeout=TIMEOUT_S * 1000)
    knob = page.evaluate("() => window.__bench.failed ? null : window.__bench.t1 - window.__bench.t0")
    record["knob_ms"] = knob
    if knob is None:
        record["errors"].append("the knob changed no picture")
    page.wait_for_timeout(500)
    page.locator("body").click(position={"x": 5, "y": 700})      # focus off the slider
    before = len(sent)
    for _step in range(3):
        page.keyboard.press("ArrowRight")
        page.wait_for_timeout(200)
    page.evaluate("() => { window.__frames = [] }")
    page.keyboard.press("Space")                                  # play
    page.wait_for_timeout(5000)
    page.keyboard.press("Space")
    record["sent_stepping_playing"] = len(sent) - before
    record["frames"] = page.evaluate("() => window.__frames")


def lateness(frames, speed=2.0):
    """(late ms of each played frame after the first, frames skipped) from [(ms, t), …] of one play."""
    if len(frames) < 2:
        return [], 0
    (t0, first), late = frames[0], []
    for when, t in frames[1:]:
        late.append(max(0.0, (when - t0) - 1000 * (t - first) / speed))
    shown = {t for _when, t in frames}
    skipped = len(set(range(first, frames[-1][1] + 1)) - shown)
    return late, skipped


def browser_summary(records):
    late, skipped, knob, opened, sent, errors = [], 0, [], [], 0, []
    for r in records:
        frame_late, frame_skipped = lateness(r.get("frames", []))
        late += frame_late
        skipped += frame_skipped
        knob += [r["knob_ms"]] if r.get("knob_ms") is not None else []
        opened += [r["open_s"]] if "open_s" in r else []
        sent += r.get("sent_stepping_playing", 0)
        errors += r["errors"]
    return {"pages": len(records), "open_s": summary(opened), "knob_ms": summary(knob),
            "frame_late_ms": summary(late), "frames_skipped": skipped, "sent_stepping_playing": sent,
            "errors": errors}


# ---------------------------------------------------------------- the modes

def viewers_summary(viewers):
    return {"viewers": len(viewers), "page_open_s": summary([v.opened for v in viewers if v.opened]),
            "knob_ms": summary([ms for v in viewers for ms in v.knob_ms]),
            "errors": [e for v in viewers for e in v.errors], "dropped": sum(v.dropped for v in viewers),
            "refused": sum(v.refused is not None for v in viewers),
            "received_mib": sum(v.received_bytes for v in viewers) / 2 ** 20}


async def crowd(base, args, meter, log):
    """The browser pages open, then the viewers arrive over the ramp; once all are in (a class that has
    opened the page), each moves the knob, and the browser pages move it, step and play."""
    begin, hold = asyncio.Event(), asyncio.Event()
    viewers = [Viewer(base) for _ in range(args.viewers)]
    think = lambda: random.uniform(*args.think)
    pages, browsers_in, browsers_begin, ready = [], threading.Event(), threading.Event(), threading.Event()
    if args.browsers:
        threading.Thread(target=browser_visits, args=(base, args.browsers, pages, browsers_in, browsers_begin, ready),
                         daemon=True).start()
        while not browsers_in.is_set():
            await asyncio.sleep(0.2)
    else:
        ready.set()
    tasks = []
    for viewer in viewers:
        tasks.append(asyncio.ensure_future(visit(viewer, args.knobs, think, hold, begin)))
        await asyncio.sleep(args.ramp / max(1, args.viewers))
    while not all(v.opened is not None or v.done for v in viewers):
        await asyncio.sleep(0.2)
    arrived = meter.cpu_seconds()
    opened = sum(v.opened is not None for v in viewers)
    log(f"{opened} of {len(viewers)} viewers in" + (f" and {args.browsers} browser pages" if args.browsers else "")
        + "; moving knobs")
    begin.set()
    browsers_begin.set()
    while not all(v.done for v in viewers) or not ready.is_set():
        await asyncio.sleep(0.5)
    used = meter.cpu_seconds()
    open_now = sum(1 for v in viewers if v.opened and not v.dropped and not v.errors)
    log(f"all viewers done; {open_now} open at once, closing")
    hold.set()
    await asyncio.gather(*tasks)
    moves = sum(len(v.knob_ms) for v in viewers)
    browser_opens = sum("open_s" in r for r in pages)
    browser_moves = sum(r.get("knob_ms") is not None for r in pages)
    per_open = (arrived - meter.cpu0) / (opened + browser_opens) if opened else None
    per_knob = (used - arrived) / (moves + browser_moves) if moves else None
    return {"mode": "crowd", "path": STATE_PAGE, "ramp_s": args.ramp, "knobs_per_viewer": args.knobs,
            "think_s": list(args.think), "concurrent_at_end": open_now, **viewers_summary(viewers),
            "cpu_per_open_s": per_open, "cpu_per_knob_s": per_knob,
            # the first moves come within one think time of each other (the class is told to move the knob)
            "knob_first_ms": summary([v.knob_ms[0] for v in viewers if v.knob_ms]),
            "knob_later_ms": summary([ms for v in viewers for ms in v.knob_ms[1:]]),
            "browsers": browser_summary(pages) if args.browsers else None}


async def burst(base, args, meter, log):
    """A class told "open the link now": the viewers arrive at random within --ramp seconds, and each,
    once its page is in, moves the knob --knobs times, --think seconds apart (about every 3 s)."""
    hold = asyncio.Event()
    viewers = [Viewer(base) for _ in range(args.viewers)]
    think = lambda: random.uniform(*args.think)
    arrivals = sorted(random.uniform(0, args.ramp) for _ in viewers)
    started, tasks = time.perf_counter(), []
    for viewer, at in zip(viewers, arrivals):
        await asyncio.sleep(max(0.0, at - (time.perf_counter() - started)))
        tasks.append(asyncio.ensure_future(visit(viewer, args.knobs, think, hold)))
    while not all(v.opened is not None or v.done for v in viewers):
        await asyncio.sleep(0.2)
    log(f"{sum(v.opened is not None for v in viewers)} of {len(viewers)} pages in "
        f"{time.perf_counter() - started:.1f} s after the first arrival; knobs moving")
    while not all(v.done for v in viewers):
        await asyncio.sleep(0.5)
    hold.set()
    await asyncio.gather(*tasks)
    opened = sum(v.opened is not None for v in viewers)
    moves = sum(len(v.knob_ms) for v in viewers)
    return {"mode": "burst", "path": STATE_PAGE, "ramp_s": args.ramp, "knobs_per_viewer": args.knobs,
            "think_s": list(args.think), **viewers_summary(viewers), "opened": opened, "knob_moves": moves}


async def heavy(base, args, meter, log):
    hold, stop = asyncio.Event(), asyncio.Event()
    viewers = [Viewer(base) for _ in range(args.viewers)]
    opening = []
    for viewer in viewers:
        opening.append(asyncio.ensure_future(viewer.open()))
        await asyncio.sleep(args.ramp / max(1, args.viewers))
    for viewer, result in zip(viewers, await asyncio.gather(*opening, return_exceptions=True)):
        if isinstance(result, Exception):
            viewer.errors.append(f"{type(result).__name__}: {result}"[:300])
    log(f"{sum(v.opened is not None for v in viewers)} viewers open; moving knobs")
    knobs = []                                      # (sent at, ms, viewer)

    async def keep_moving(viewer):
        while not stop.is_set():
            await asyncio.sleep(random.uniform(*args.think))
            started = time.perf_counter()
            try:
                await viewer.move_knob()
            except Exception as error:
                viewer.errors.append(f"{type(error).__name__}: {error}"[:300])
                return
            knobs.append((started, viewer.knob_ms[-1]))
    movers = [asyncio.ensure_future(keep_moving(v)) for v in viewers if v.opened is not None]
    await asyncio.sleep(args.before)
    heavy_viewer = Viewer(base, HEAVY_PAGE)
    heavy_started = time.perf_counter()
    await visit(heavy_viewer, 0, lambda: 0, None)
    heavy_done = time.perf_counter()
    log(f"heavy page opened in {heavy_done - heavy_started:.1f} s")
    await asyncio.sleep(args.after)
    stop.set()
    await asyncio.gather(*movers)
    hold.set()
    await asyncio.gather(*(v.close() for v in viewers))
    during = [ms for at, ms in knobs if heavy_started <= at <= heavy_done]
    before = [ms for at, ms in knobs if at < heavy_started]
    return {"mode": "heavy", "path": STATE_PAGE, "heavy_path": HEAVY_PAGE, **viewers_summary(viewers),
            "heavy_open_s": heavy_viewer.opened, "heavy_errors": heavy_viewer.errors,
            "knob_before_ms": summary(before), "knob_during_ms": summary(during)}


async def churn(base, args, meter, log):
    done, errors, refused = 0, [], 0
    rss = {}

    async def one():
        viewer = Viewer(base)
        await visit(viewer, 0, lambda: 0, None)
        return viewer

    async def run(count):
        nonlocal done, refused
        while count > 0:
            batch = await asyncio.gather(*(one() for _ in range(min(2, count))))
            for viewer in batch:
                errors.extend(viewer.errors)
                refused += viewer.refused is not None
            count -= len(batch)
            done += len(batch)
            if done % 50 == 0:
                log(f"{done} sessions opened and closed; servers' RSS {meter.servers_rss():.0f} MiB")

    async def settle(label):
        log(f"waiting {args.settle:.0f} s for the idle sessions to be closed ({label})")
        await asyncio.sleep(args.settle)
        rss[label] = meter.servers_rss()

    first = min(20, max(1, args.sessions // 2))
    rss["start"] = meter.servers_rss()
    await run(first)
    await settle(f"after {first}")
    await run(args.sessions - first)
    await settle(f"after {args.sessions}")
    growth = rss[f"after {args.sessions}"] / rss[f"after {first}"] - 1
    return {"mode": "churn", "path": STATE_PAGE, "sessions": args.sessions, "errors": errors,
            "refused": refused, "rss_mib": rss, "rss_growth": growth}


# ---------------------------------------------------------------- targets, output, main

def targets(result):
    """[(what, target, value, pass)] for the mode's targets."""
    rows = []
    if result["mode"] in ("crowd", "burst"):
        opened, knob = result["page_open_s"], result["knob_ms"]
        rows += [("errors", "0", len(result["errors"]), not result["errors"]),
                 ("dropped sessions", "0", result["dropped"], result["dropped"] == 0),
                 ("page open p95", f"≤ {TARGETS['page_open_p95_s']:g} s", opened and opened["p95"],
                  bool(opened) and opened["p95"] <= TARGETS["page_open_p95_s"]),
                 ("knob → new frames p95", f"≤ {TARGETS['knob_p95_ms']:g} ms", knob and knob["p95"],
                  bool(knob) and knob["p95"] <= TARGETS["knob_p95_ms"])]
    elif result["mode"] == "heavy":
        during = result["knob_during_ms"]
        rows.append(("others' knob → frames p95 while the heavy page is built",
                     f"≤ {TARGETS['heavy_knob_p95_ms']:g} ms", during and during["p95"],
                     bool(during) and during["p95"] <= TARGETS["heavy_knob_p95_ms"]))
    elif result["mode"] == "class":
        tally = result["tally_ms"]
        rows += [("errors", "0", len(result["errors"]), not result["errors"]),
                 ("answer → the projector's tally p95", f"≤ {TARGETS['tally_p95_ms']:g} ms", tally and tally["p95"],
                  bool(tally) and tally["p95"] <= TARGETS["tally_p95_ms"])]
    else:
        rows.append(("RSS growth, first 20 → all sessions", f"≤ {100 * TARGETS['rss_growth']:g} %",
                     100 * result["rss_growth"], result["rss_growth"] <= TARGETS["rss_growth"]))
    return rows


def fmt(stats, scale=1.0, unit=""):
    if not stats:
        return "—"
    return (f"p50 {stats['p50'] * scale:.2f}{unit}  p95 {stats['p95'] * scale:.2f}{unit}  "
            f"max {stats['max'] * scale:.2f}{unit}  (n={stats['n']})")


def print_report(report):
    r, m, s = report["result"], report["machine"], report["servers"]
    where = (f"{m['workers']} servers behind nginx" if not m.get("app") else
             f"python -m lineare.app ({m['workers']} server process{'es' if m['workers'] != 1 else ''})")
    print(f"Lineare load test, mode {r['mode']}: {m['cpus']} CPUs (shared: load average {m['load_before']} "
          f"at the start, {m['load_after']} at the end; plain-Python speed {m['python_speed_s']:.3f} s, "
          f"bench.python_speed), {where} at {m['url']}")
    if r["mode"] == "burst":
        print(f"  viewers           {r['viewers']} on {r['path']}, arriving at random within {r['ramp_s']:g} s, "
              f"each then moving the knob {r['knobs_per_viewer']} times, {r['think_s'][0]:g}–{r['think_s'][1]:g} s "
              "apart")
        print(f"  server CPU        {s['cpu_s']:.1f} s in all ({r['opened']} pages opened, {r['knob_moves']} knob "
              "moves)")
    if r["mode"] in ("crowd", "heavy"):
        print(f"  viewers           {r['viewers']} on {r['path']}"
              + (f" (arriving over {r['ramp_s']:g} s, then {r['knobs_per_viewer']} knob moves each, "
                 f"{r['think_s'][0]:g}–{r['think_s'][1]:g} s apart; {r['concurrent_at_end']} open at once at the end)"
                 if r["mode"] == "crowd" else ""))
    if r["mode"] in ("crowd", "heavy", "burst"):
        print(f"  page open         {fmt(r['page_open_s'], unit=' s')}")
        print(f"  knob → frames     {fmt(r['knob_ms'], unit=' ms')}")
        if r["mode"] == "crowd":
            print(f"    first moves     {fmt(r['knob_first_ms'], unit=' ms')}  (the whole class within "
                  f"{r['think_s'][1]:g} s)")
            print(f"    later moves     {fmt(r['knob_later_ms'], unit=' ms')}")
        print(f"  errors            {len(r['errors'])}" + (f": {r['errors'][:3]}" if r["errors"] else ""))
        print(f"  dropped sessions  {r['dropped']}    refused (demo full / too many): {r['refused']}")
        print(f"  received          {r['received_mib']:.1f} MiB")
    if r["mode"] == "crowd" and r["cpu_per_open_s"] is not None:
        print(f"  server CPU        {r['cpu_per_open_s']:.2f} s per page opened"
              + (f", ≈ {1000 * r['cpu_per_knob_s']:.0f} ms per knob move" if r["cpu_per_knob_s"] is not None else ""))
    if r["mode"] == "heavy":
        print(f"  heavy page        {r['heavy_path']} opened in "
              + (f"{r['heavy_open_s']:.1f} s" if r["heavy_open_s"] else f"— ({r['heavy_errors']})"))
        print(f"  others' knob → frames before it: {fmt(r['knob_before_ms'], unit=' ms')}")
        print(f"  others' knob → frames while it is built: {fmt(r['knob_during_ms'], unit=' ms')}")
    if r["mode"] == "class":
        print(f"  class             1 projector ({r['path']}) and {r['viewers']} phones, {r['cards']} cards; "
              f"each phone answers at a random moment within {r['think_s']:g} s")
        print(f"  phone joins       {fmt(r['joined_s'], unit=' s')}")
        print(f"  answer → tally    {fmt(r['tally_ms'], unit=' ms')}  (the k-th answer sent: until the projector "
              "counts k)")
        print(f"  reveal → phones   {fmt(r['reveal_ms'], unit=' ms')}")
        print(f"  next card → phones {fmt(r['next_ms'], unit=' ms')}  (the projector's next page built meanwhile)")
        print(f"  errors            {len(r['errors'])}" + (f": {r['errors'][:3]}" if r["errors"] else "")
              + f"    dropped sessions {r['dropped']}")
    if r["mode"] == "churn":
        print(f"  sessions opened and closed: {r['sessions']}, errors {len(r['errors'])}, refused {r['refused']}")
        print("  servers' RSS: " + ", ".join(f"{k} {v:.0f} MiB" for k, v in r["rss_mib"].items()))
    b = r.get("browsers")
    if b:
        print(f"  browser pages     {b['pages']}: open {fmt(b['open_s'], unit=' s')}")
        print(f"                    knob → picture {fmt(b['knob_ms'], unit=' ms')}")
        print(f"                    played frames late {fmt(b['frame_late_ms'], unit=' ms')}, "
              f"skipped {b['frames_skipped']}")
        print(f"                    messages sent while stepping and playing: {b['sent_stepping_playing']}, "
              f"errors {len(b['errors'])}" + (f": {b['errors'][:3]}" if b["errors"] else ""))
    print(f"  servers           CPU {s['cpu_s']:.0f} s in {s['wall_s']:.0f} s ({s['cpu_cores']:.2f} cores), "
          f"RSS " + ", ".join(f"{k} {v:.0f} MiB" for k, v in s["rss_mib"].items())
          + f", servers' peak {s['servers_rss_peak_mib']:.0f} MiB; "
          f"the load generator used {s['load_generator_cpu_s']:.0f} s of CPU")
    print("Targets:")
    for what, target, value, ok in report["targets"]:
        shown = "—" if value is None else (f"{value:.2f}" if isinstance(value, float) else str(value))
        print(f"  {what:<58} {target:>10}  {shown:>9}  {'PASS' if ok else 'MISS'}")


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m lineare.bench.load", description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", nargs="?", default="crowd", choices=("crowd", "heavy", "churn", "burst", "class"))
    parser.add_argument("--viewers", type=int, default=None, help="protocol viewers (crowd 50, heavy 20, burst 30)")
    parser.add_argument("--browsers", type=int, default=2, help="real Chromium pages (crowd only)")
    parser.add_argument("--knobs", type=int, default=3, help="knob moves per viewer (crowd, burst)")
    parser.add_argument("--ramp", type=float, default=None,
                        help="seconds over which the viewers arrive (crowd 60, heavy 20, burst 10)")
    parser.add_argument("--think", type=lambda text: tuple(float(x) for x in text.split("-")), default=None,
                        metavar="MIN-MAX", help="seconds between one viewer's knob moves (default 2-6; burst 2.5-3.5)")
    parser.add_argument("--app", action="store_true",
                        help="measure python -m lineare.app (./scripts/app: one process per core) instead of the "
                             "hosted mode")
    parser.add_argument("--app-arg", action="append", default=[],
                        help="one more argument for python -m lineare.app (repeat), e.g. --app-arg=--one-process")
    parser.add_argument("--sessions", type=int, default=500, help="sessions to open and close (churn)")
    parser.add_argument("--settle", type=float, default=None,
                        help="seconds to wait for idle sessions to be closed (churn; default: Bokeh's lifetime + 2 "
                             "checks + the interval of app/server/memory.py's trims)")
    parser.add_argument("--before", type=float, default=15.0, help="heavy: seconds of knob moves before the heavy page")
    parser.add_argument("--after", type=float, default=3.0, help="heavy: seconds of knob moves after it opened")
    parser.add_argument("--workers", type=int, default=2, help="servers of the hosted mode it starts")
    parser.add_argument("--url", help="measure this running host instead of starting one")
    parser.add_argument("--run-dir", help="with --url: the host's run directory (host.json: its processes)")
    parser.add_argument("--host-arg", action="append", default=[],
                        help="one more argument for the host it starts (repeat), e.g. --host-arg=--threads=2")
    parser.add_argument("--cards", type=int, default=2, help="class: the lesson's cards the class goes through")
    parser.add_argument("--lesson", default=CLASS_LESSON, help="class: the projector's first card (presenter mode)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="one JSON object instead of the table")
    args = parser.parse_args(argv)
    args.viewers = args.viewers if args.viewers is not None else \
        {"crowd": 50, "heavy": 20, "churn": 0, "burst": 30, "class": 60}[args.mode]
    args.ramp = args.ramp if args.ramp is not None else \
        {"crowd": 60.0, "heavy": 20.0, "churn": 0.0, "burst": 10.0, "class": 0.0}[args.mode]
    args.think = args.think or ((2.5, 3.5) if args.mode == "burst" else (2.0, 6.0))
    if args.settle is None:
        from lineare.app.server.memory import TRIM_INTERVAL_S
        from lineare.app.serve import IDLE_CHECK_MS, IDLE_LIFETIME_MS
        args.settle = (IDLE_LIFETIME_MS + 2 * IDLE_CHECK_MS) / 1000 + TRIM_INTERVAL_S
    if args.mode != "crowd":
        args.browsers = 0
    return args


@contextlib.contextmanager
def hosted(args, log):
    """(base URL, {name: pid}) of the host to measure: a running one (--url) or one started here."""
    os.environ["LINEARE_NEW_SESSION_EVERY_S"] = "0.001"    # every viewer comes from 127.0.0.1 (app/server/limits.py)
    if args.app and not args.url:
        with app_server(args, log) as found:
            yield found
        return
    if args.url:
        pids = {}
        if args.run_dir:
            state = json.loads(open(os.path.join(args.run_dir, "host.json")).read())
            pids = {f"server:{s['port']}": s["pid"] for s in state["servers"]} | {"nginx": state["nginx_pid"]}
        yield args.url.rstrip("/"), pids
        return
    import tempfile

    from lineare.deploy import host

    viewers = args.viewers + args.browsers + 2
    with tempfile.TemporaryDirectory(prefix="lineare-load-") as run_dir:
        options = host.parse(["--port", str(host.free_port()), "--address", "127.0.0.1",
                              "--first-server-port", "0", "--workers", str(args.workers),
                              "--max-sessions", str(max(60, viewers)), "--per-address", "60000",
                              "--rate", "100000", "--burst", "100000", "--run-dir", run_dir, *args.host_arg])
        log(f"starting the hosted mode: {args.workers} servers behind nginx (every page is built once first) …")
        with host.Host(options) as running:
            yield running.url, running.pids()


def forked(parent, settle_s=1.0, most_s=15.0):
    """The server processes `python -m lineare.app` forked (itself when it forked none): the port answers once it is
    bound, before the fork, so the processes are counted once their number has stayed the same for `settle_s`
    (a count taken at once missed one and left its CPU out of a burst's total)."""
    deadline, seen, since = time.monotonic() + most_s, None, time.monotonic()
    while time.monotonic() < deadline:
        children = parent.children()
        if seen is None or len(children) != len(seen):
            seen, since = children, time.monotonic()
        elif time.monotonic() - since >= settle_s:
            break
        time.sleep(0.1)
    return seen or [parent]


@contextlib.contextmanager
def app_server(args, log):
    """(base URL, {name: pid}) of `python -m lineare.app` started here (its own processes: one per core unless
    --app-arg says otherwise), every page opened once in each language first, as a teacher would have."""
    from lineare.app.devtools import running_server
    from lineare.app.i18n import LANGUAGES

    log("starting python -m lineare.app " + " ".join(args.app_arg) + " …")
    with running_server(processes=tuple(args.app_arg)) as base:
        port = int(base.rsplit(":", 1)[1])
        found = [p for p in psutil.Process().children(recursive=True)
                 if "lineare.app" in p.cmdline() and str(port) in p.cmdline()]          # forked servers share it
        parent = next(p for p in found if p.ppid() not in {q.pid for q in found})
        servers = forked(parent)
        pids = {f"server:{p.pid}": p.pid for p in servers}

        async def warm():              # each process imports and fills its caches at its first pages
            for language in LANGUAGES:
                for _ in range(2 * len(servers)):
                    viewer = Viewer(base, STATE_PAGE + f"&lang={language}")
                    await viewer.open()
                    await viewer.close()
        asyncio.run(warm())
        yield base, pids


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    random.seed(args.seed)
    log = lambda line: print(f"[bench/load] {line}", file=sys.stderr, flush=True)
    load_before, speed = [round(x, 2) for x in os.getloadavg()], python_speed()
    with hosted(args, log) as (base, pids):
        mode = {"crowd": crowd, "heavy": heavy, "churn": churn, "burst": burst, "class": live_class}[args.mode]
        with Meter(pids) as meter:
            result = asyncio.run(mode(base, args, meter, log))
    report = {"machine": {"cpus": os.cpu_count(), "load_before": load_before, "python_speed_s": round(speed, 3),
                          "load_after": [round(x, 2) for x in os.getloadavg()], "url": base,
                          "workers": sum(name.startswith("server") for name in pids) or None,
                          "app": bool(args.app)},
              "servers": meter.result, "result": result}
    report["targets"] = targets(result)
    if args.json:
        print(json.dumps(report, indent=1, ensure_ascii=False, default=str))
    else:
        print_report(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
