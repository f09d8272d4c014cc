"""Server CPU per page opened: every page, both languages, and where the time goes.

    .venv/bin/python -m lineare.bench.pages [--reps N] [--pages state,home] [--languages it,en] [--server]
                                    [--no-patches] [--profile PAGE [--lang L]] [--json]

CPU time, never wall time: the machine these numbers come from is shared, and a busy neighbour
stretches the wall clock but not the CPU a page costs (it still varies a little: caches are shared).

In-process (default): each page is built as `python -m lineare.app` builds it (its speed patches, app/server/patches.py,
unless --no-patches; no document validation), on a fresh Document with the page's URL, then written as the browser
asks for it: the GET's HTML (Panel's `server_html_page_for_session`) and the PULL-DOC reply (the
Document's JSON). The first build of each page warms the per-process caches (runs, checkpoints,
texts) and is not counted; each counted build starts after a full collection (what one costs depends on
the whole process, and it fell into a page's phases at random). The thread's CPU time is split among:

  run       the engine and the dashboards' model functions (app/mechanism.py, engine/, */model.py),
            mostly served from the per-process caches after the first visitor;
  models    creating Bokeh models (their properties' defaults: most of a model's cost), wherever made;
  template  Panel's template turning the page into its Document (`BasicTemplate._init_doc`): the
            Panel → Bokeh conversion, less the models' own creation counted above;
  page      the rest of the page's script: Panel objects, texts, the shell;
  html      the GET's HTML page;
  json      the Document as the PULL-DOC reply (its JSON and binary buffers).

Only the building thread's CPU is counted in-process (a page that computes on a pool of threads
costs more than it shows here); --server counts every thread of the server.

--server: `python -m lineare.app` in a subprocess, one process on localhost serving as `./scripts/app`'s processes and
the hosted servers do (`--reuse-sessions`: a GET is written from the page kept per page and language, the
visitor's session is built when its websocket connects), unless --server-arg says otherwise (all its
processes are counted; `--server-arg=--one-process` alone: a plain one-process server, whose GET builds the
session and writes its whole page, ~30 ms more); each page opened --reps times
by bench.load's protocol viewer (GET, websocket, PULL-DOC, document_ready) after one warm-up, one
at a time; the server process's CPU time (user + system, psutil) from before the GET until the page
is in and the server has gone quiet. That is the "server CPU per page opened" of the targets, judged
on each page's median; the mean over every opening measured (the last line) also carries the rare
full collection and session discards that fall into one opening. The in-process split says where it goes.

--profile PAGE: cProfile of one build of PAGE (after a warm-up), the 40 costliest functions.

Each row also gives the machine's plain-Python speed measured just after it (`bench.python_speed`): on the
development machines it moved by up to 2× within an hour with nothing else running, and a row measured
while the machine was slow shows it.

Each row also gives the page's Panel objects (widgets, panes, layouts, components: what it is made of) and Bokeh
models, counted in-process (with --server: one build here, as the server builds it).

Target: ≤ 0.3 s of server CPU per page opened, for every page in both languages, with --no-patches.
"""
import argparse
import contextlib
import functools
import gc
import json
import os
import statistics
import sys
import threading
import time
import weakref
from types import SimpleNamespace

from lineare.app.dashboards import DASHBOARDS
from lineare.bench import python_speed

QUERIES = {"state": "variant=deltanet&preset=crowd"}        # a page opened with more than its defaults
PAGES = {"home": "", **{dashboard.slug: QUERIES.get(dashboard.slug, "") for dashboard in DASHBOARDS}}
LANGUAGES = ("en", "it")
PHASES = ("run", "models", "template", "page", "html", "json")
TARGET_S = 0.3
SPEED_NOTE = ("speed: the machine's plain-Python speed just after the row was measured (bench.python_speed, s; "
              "it moves by up to 2x from one hour or day to the next: compare rows of like speed)")
LOADED = ("CPU time, not wall time: the machine may be shared (load average {load} at the start); "
          "CPU time varies less than wall time but still varies; this machine's plain-Python speed "
          "{speed:.3f} s (bench.python_speed: compare days by it)")


# ---------------------------------------------------------------- in-process: where the time goes

class Phases:
    """Thread CPU time split among nested phases: time goes to the innermost phase open."""

    def __init__(self):
        self.thread = threading.get_ident()          # work other threads do for the page is not counted
        self.totals = dict.fromkeys(PHASES, 0.0)
        self.stack, self.mark = ["page"], time.thread_time()

    def _switch(self):
        now = time.thread_time()
        self.totals[self.stack[-1]] += now - self.mark
        self.mark = now

    @contextlib.contextmanager
    def phase(self, name):
        self._switch()
        self.stack.append(name)
        try:
            yield
        finally:
            self._switch()
            self.stack.pop()

    def wrap(self, function, name):
        @functools.wraps(function)
        def timed(*args, **kwargs):
            if threading.get_ident() != self.thread:
                return function(*args, **kwargs)
            with self.phase(name):
                return function(*args, **kwargs)
        timed.lineare_timed = True
        return timed


def run_functions():
    """Every function of the engine, app/mechanism.py and the dashboards' model.py modules, with the
    modules that hold it by name (they bind imported names at import time)."""
    def is_run_module(name):
        return isinstance(name, str) and (name.startswith("lineare.engine.") or name == "lineare.app.mechanism" or (
            name.startswith("lineare.app.dashboards.") and name.endswith(".model")))
    found = {}
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(("lineare.app.", "lineare.engine.")):
            continue
        for attr, value in list(vars(module).items()):
            if callable(value) and not isinstance(value, type) and is_run_module(getattr(value, "__module__", "")):
                found.setdefault(id(value), (value, []))[1].append((module, attr))
    return found.values()


@contextlib.contextmanager
def timed_phases(phases):
    """Patch the functions of each phase to report to `phases`; undone afterwards."""
    from bokeh.model import Model
    from panel.template.base import BasicTemplate

    patches = [(Model, "__init__", "models"), (BasicTemplate, "_init_doc", "template")]
    saved = []
    for owner, attr, name in patches:
        saved.append((owner, attr, vars(owner)[attr]))
        setattr(owner, attr, phases.wrap(vars(owner)[attr], name))
    for function, holders in run_functions():
        if getattr(function, "lineare_timed", False):
            continue
        timed = phases.wrap(function, "run")
        for module, attr in holders:
            saved.append((module, attr, function))
            setattr(module, attr, timed)
    try:
        yield
    finally:
        for owner, attr, original in reversed(saved):
            setattr(owner, attr, original)


class _Context(SimpleNamespace):
    """What a page reads of Bokeh's session context: the request's arguments and headers."""


def fake_session(doc, route, query, language):
    arguments = {k: [v.encode()] for k, v in (p.split("=", 1) for p in query.split("&") if p)}
    arguments["lang"] = [language.encode()]
    request = SimpleNamespace(arguments=arguments, headers={"Accept-Language": language}, cookies={},
                              path=f"/{route}", uri=f"/{route}?{query}", protocol="http", host="localhost")
    context = _Context(request=request, id="bench", token="bench", server_context=None, _document=doc,
                       session=None)
    doc._session_context = weakref.ref(context)
    return SimpleNamespace(document=doc, token="bench", id="bench", context=context)


_applications = {}


@contextlib.contextmanager
def panel_objects_counted(counted):
    """Count in counted[0] the Panel objects (widgets, panes, layouts, components, the template) made in the body on
    this thread: each passes through Viewable.__init__ once."""
    from panel.viewable import Viewable

    made, thread = vars(Viewable)["__init__"], threading.get_ident()

    @functools.wraps(made)
    def __init__(self, *args, **kwargs):
        if threading.get_ident() == thread:
            counted[0] += 1
        made(self, *args, **kwargs)

    Viewable.__init__ = __init__
    try:
        yield
    finally:
        Viewable.__init__ = made


def build_once(route, query, language, phases=None, timed=True):
    """Build the page of `route` on a fresh Document and write its HTML and JSON; {phase: CPU s}
    (timed=False: the phases are not timed, for a profile of the build alone)."""
    from bokeh.document import Document
    from bokeh.protocol import Protocol
    from bokeh.resources import Resources
    from panel.io.application import build_single_handler_application
    from panel.io.server import server_html_page_for_session

    from lineare.app.serve import PAGES as PAGE_DIR
    if route not in _applications:
        _applications[route] = build_single_handler_application(str(PAGE_DIR / f"{route}.py"))
    application = _applications[route]
    phases, counted = phases or Phases(), [0]
    with timed_phases(phases) if timed else contextlib.nullcontext(), panel_objects_counted(counted):
        doc = Document()
        session = fake_session(doc, route, query, language)
        phases.mark = time.thread_time()
        application.initialize_document(doc)
        with phases.phase("html"):
            server_html_page_for_session(session, resources=Resources(mode="server"), title=doc.title,
                                         template=doc.template, template_variables=doc.template_variables)
        with phases.phase("json"):
            message = Protocol().create("PULL-DOC-REPLY", "bench", doc)
        phases._switch()
    for callback in list(doc.session_destroyed_callbacks):      # as a closed session: stores freed
        with contextlib.suppress(Exception):
            callback(session.context)
    json_bytes = len(message.content_json) + sum(len(buffer.to_bytes()) for buffer in message.buffers)
    return {**phases.totals, "models_count": len(doc.models), "panel_objects": counted[0], "roots": len(doc.roots),
            "json_bytes": json_bytes}


@contextlib.contextmanager
def as_served(patched=True):
    """The server's own settings (app/serve.py) and, if `patched`, its patches that change what a build costs,
    for the body; the environment and the libraries as they were afterwards."""
    from lineare.app.server import patches
    from lineare.app.serve import BOKEH_CHECKS, bokeh_checks_off

    saved = {name: os.environ.get(name) for name in BOKEH_CHECKS}
    bokeh_checks_off()
    try:
        with patches.installed(patches.SPEED_PATCHES if patched else ()):
            yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def in_process(pages, languages, reps, patched=True):
    with as_served(patched):
        return _in_process(pages, languages, reps)


def _in_process(pages, languages, reps):
    rows = []
    for route in pages:
        for language in languages:
            build_once(route, PAGES[route], language)                 # warms the per-process caches
            runs = []
            for _ in range(reps):
                gc.collect()               # a full collection's cost is the whole process's, not the page's
                runs.append(build_once(route, PAGES[route], language))
            phases = {p: sum(r[p] for r in runs) / reps for p in PHASES}
            row = {"route": route, "language": language, "reps": reps, "phases": phases,
                   "total": sum(phases.values()), "models_count": runs[-1]["models_count"],
                   "panel_objects": runs[-1]["panel_objects"],
                   "json_bytes": runs[-1]["json_bytes"], "python_speed_s": python_speed(repeats=3)}
            rows.append(row)
            print(f"  {route} {language}: {row['total']:.3f} s", file=sys.stderr, flush=True)
    return rows


def profile(route, language, count=40, patched=True):
    import cProfile
    import pstats

    profiler = cProfile.Profile(time.thread_time)       # CPU time: a busy machine stretches the wall clock
    with as_served(patched):
        build_once(route, PAGES[route], language)
        profiler.enable()
        build_once(route, PAGES[route], language, timed=False)
        profiler.disable()
    stats = pstats.Stats(profiler)
    print(f"{route} ({language}): {stats.total_calls} function calls")
    stats.sort_stats("cumulative").print_stats(count)


# ---------------------------------------------------------------- a real server

def classroom_process():
    """python -m lineare.app's flags for one process that serves pages as the classroom's and the hosted mode's do."""
    from lineare.app.serve import shared_session_args
    return ("--one-process", "--", *shared_session_args())


def server_rows(pages, languages, reps, server_args=None):
    import asyncio

    import psutil

    from lineare.app.devtools import running_server
    from lineare.bench.load import Viewer

    def cpu(processes):
        total = 0.0
        for process in processes:
            with contextlib.suppress(psutil.Error):
                times = process.cpu_times()
                total += times.user + times.system
        return total

    def quiet(process, wait=0.3, most=5.0):
        """Wait until the server has used under 2 % of a core for `wait` seconds (a page's last
        messages, its JSON written on a thread)."""
        deadline, last = time.monotonic() + most, cpu(process)
        while time.monotonic() < deadline:
            time.sleep(wait)
            now = cpu(process)
            if now - last < 0.02 * wait:
                return
            last = now

    async def open_page(base, path):
        viewer = Viewer(base, path)
        await viewer.open()
        await asyncio.sleep(0.2)                   # the document_ready's answers
        await viewer.close()
        if viewer.errors:
            raise RuntimeError(viewer.errors[0])

    rows = []
    with running_server(processes=tuple(server_args or classroom_process())) as base:
        port = int(base.rsplit(":", 1)[1])
        found = [c for c in psutil.Process(os.getpid()).children(recursive=True)
                 if any(conn.laddr.port == port for conn in _listening(c))]
        top = next(p for p in found if p.ppid() not in {q.pid for q in found})
        server = [top, *top.children(recursive=True)]              # forked servers too (--num-procs)
        for route in pages:
            for language in languages:
                query = "&".join(p for p in (PAGES[route], f"lang={language}") if p)
                path = f"/{route if route != 'home' else ''}?{query}"
                for _ in server:                                     # warm-up, each process at least once
                    asyncio.run(open_page(base, path))
                quiet(server)
                costs = []
                for _ in range(reps):
                    before = cpu(server)
                    asyncio.run(open_page(base, path))
                    quiet(server)
                    costs.append(cpu(server) - before)
                rows.append({**server_row(route, language, costs), "python_speed_s": python_speed(repeats=3)})
                print(f"  {route} {language}: {rows[-1]['server_cpu_s']:.3f} s", file=sys.stderr, flush=True)
    return rows


def counted(rows, patched=True):
    """Each server row's page built once here, in-process as the server builds it: its Panel objects and Bokeh
    models (what the page is made of; its CPU is the server's, measured above)."""
    with as_served(patched):
        for row in rows:
            built = build_once(row["route"], PAGES[row["route"]], row["language"], timed=False)
            row.update(panel_objects=built["panel_objects"], models_count=built["models_count"])


def server_row(route, language, costs):
    return {"route": route, "language": language, "reps": len(costs), "costs_s": costs,
            "server_cpu_s": sum(costs) / len(costs), "median_s": statistics.median(costs),
            "min_s": min(costs), "max_s": max(costs)}


def _listening(process):
    import psutil
    with contextlib.suppress(psutil.Error):
        return [c for c in process.net_connections(kind="tcp") if c.status == psutil.CONN_LISTEN]
    return []


# ---------------------------------------------------------------- report

def print_table(rows, server):
    if server:
        # a page is judged on its usual opening (the median); now and then an opening also pays for the
        # process's full collection of garbage or for discarding closed sessions (up to ~1 s), which the
        # mean of a few openings shows at random: the last line spreads those over every opening measured
        print(f"{'page':<20}{'lang':<6}{'median s/page':>14}{'mean':>8}{'min':>8}{'max':>8}{'Panel':>7}{'models':>8}"
              f"{'speed':>8}  target ≤ {TARGET_S} s")
        for r in rows:
            mark = "ok" if r["median_s"] <= TARGET_S else "over"
            print(f"{r['route']:<20}{r['language']:<6}{r['median_s']:>14.3f}{r['server_cpu_s']:>8.3f}"
                  f"{r['min_s']:>8.3f}{r['max_s']:>8.3f}{r.get('panel_objects', '-'):>7}{r.get('models_count', '-'):>8}"
                  f"{_speed(r):>8}  {mark}")
        costs = [c for r in rows for c in r["costs_s"]]
        if costs:
            print(f"all {len(costs)} openings: {sum(costs):.2f} s of server CPU, {sum(costs) / len(costs):.3f} s "
                  "per page opened on average, collections and discards included")
        print(SPEED_NOTE)
        return
    head = "".join(f"{p:>9}" for p in PHASES)
    print(f"{'page':<20}{'lang':<6}{head}{'total':>9}{'Panel':>7}{'models':>8}{'JSON kB':>9}{'speed':>8}"
          "   (CPU s per page built)")
    for r in rows:
        cells = "".join(f"{r['phases'][p]:>9.3f}" for p in PHASES)
        print(f"{r['route']:<20}{r['language']:<6}{cells}{r['total']:>9.3f}{r['panel_objects']:>7}{r['models_count']:>8}"
              f"{r['json_bytes'] / 1e3:>9.0f}{_speed(r):>8}")
    print(SPEED_NOTE)


def _speed(row):
    return f"{row['python_speed_s']:.3f}" if "python_speed_s" in row else "-"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m lineare.bench.pages", description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--pages", default=",".join(PAGES), help="comma-separated routes (home for /)")
    parser.add_argument("--languages", default=",".join(LANGUAGES))
    parser.add_argument("--server", action="store_true", help="measure a real server's process CPU per page")
    parser.add_argument("--server-arg", action="append", default=None,
                        help="with --server: python -m lineare.app's flags for its processes (default: one process "
                             "serving as the classroom's do; repeat, e.g. --server-arg=--num-procs=2)")
    parser.add_argument("--no-patches", action="store_true",
                        help="measure Panel and Bokeh as released (python -m lineare.app --no-patches; "
                             "in-process: no patch)")
    parser.add_argument("--profile", metavar="PAGE", help="cProfile one build of PAGE")
    parser.add_argument("--lang", default="en", help="--profile's language")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    pages = [p for p in args.pages.split(",") if p]
    unknown = [p for p in pages if p not in PAGES]
    if unknown:
        parser.error(f"unknown pages {unknown}; known: {', '.join(PAGES)}")
    if args.profile:
        profile(args.profile, args.lang, patched=not args.no_patches)
        return 0
    load, speed = os.getloadavg()[0], python_speed()
    print(LOADED.format(load=f"{load:.2f}", speed=speed), file=sys.stderr)
    languages = args.languages.split(",")
    if args.server:
        server_args = list(args.server_arg or classroom_process())
        rows = server_rows(pages, languages, args.reps, ["--no-patches", *server_args] if args.no_patches
                           else server_args)
        counted(rows, patched=not args.no_patches)
    else:
        rows = in_process(pages, languages, args.reps, patched=not args.no_patches)
    if args.json:
        print(json.dumps({"load_average": load, "python_speed_s": speed, "server": args.server, "rows": rows},
                         indent=1))
    else:
        print(LOADED.format(load=f"{load:.2f}", speed=speed) + ".")
        print_table(rows, args.server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
