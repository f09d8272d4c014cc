"""The app's speed: what one run costs the server, and step / knob → picture times in a real browser.

    .venv/bin/python -m lineare.bench.app [--json] [--reps N] [--quick] [--variants gla,...]
                                  [--knobs state,memory] [--no-browser] [--no-server]

The server computes a run once and sends all of its frames; the browser plays them (app/components/
player.py). So:

1. Server, one run: 64 tokens, 4 heads of d_k = d_v = 64 (the heaviest picture set of the state page,
   its trained mode's size with four heads), torch on 1 thread, every fixed-state variant:
   - engine: `engine.stepping.run` over the 64 tokens (inputs and gates from `bench.engine.make_inputs`);
   - frames: the state page's `head_frame` for every head and token, and the run's colour ranges;
   - pictures: the state page's own `HeadPanel.show_run` for the 4 heads, inside `pn.io.hold()` on a
     real Bokeh Document that Panel treats as a connected session's;
   - message: the PATCH-DOC message those events make (as Panel's `write_events` and `dispatch_tornado`
     write it), its size in bytes, and deflated at level 6 (what the websocket's permessage-deflate,
     turned on by `python -m lineare.app`, sends).
2. Browser: `python -m lineare.app` (app.devtools.running_server) and headless Chromium. For each entry of
   KNOBS: open the page, then per repetition press the knob's key and time it. A capture-phase
   keydown listener on `window` (the first page code to see the key) takes t0 = performance.now()
   and starts polling the target picture: at every animation frame it hashes the pixels of the
   figure's canvases (FNV-1a over getImageData of every layer); at the first frame whose hash differs from the one
   taken before the key, the new picture is on the canvas and is painted at the end of that frame,
   so a setTimeout(0) queued from there (it runs after the paint) takes t1. press → picture = t1 − t0.
   Per press it also counts the websocket messages the page sent and the bytes it received (player
   steps: none). Checked outside the timed window: after each repetition the page is left to settle
   and the figure is screenshotted; "changed" counts repetitions whose screenshot differs from the
   previous one (should be all), and as the keys alternate (→ then ←) the picture flips between two
   states, so "pictures" (distinct screenshots) should be 2.

A table goes to stdout (with --json one JSON object); progress goes to stderr. Targets (on this
machine): a player step → picture p95 ≤ 100 ms with no message to the server (1 and 4 heads); a knob
that changes the run → new frames p95 ≤ 300 ms; other knobs → picture p95 ≤ 200 ms; a 64-token,
4-head run ≤ 1 MB on the wire.
"""
import argparse
import contextlib
import json
import os
import platform
import sys
import threading
import time
import zlib
from dataclasses import asdict, dataclass

import numpy as np
import panel as pn
import torch
from bokeh.document import Document
from bokeh.document.events import DocumentPatchedEvent
from bokeh.protocol import Protocol
from panel.io.state import set_curdoc

from lineare.app.dashboards.state_fills_up.model import head_frame, limits_of
from lineare.app.dashboards.state_fills_up.pictures import HeadPanel
from lineare.app.devtools import SocketTraffic, wait_until_quiet
from lineare.bench import engine as engine_bench
from lineare.engine.ops import VARIANTS
from lineare.engine.stepping import run

HEADS, D, TOKENS = 4, 64, 64
RUN_TARGET_BYTES = 2 ** 20            # a 64-token, 4-head run on the wire
FIXED_STATE = tuple(v for v in VARIANTS if v != "softmax")


@dataclass(frozen=True)
class Knob:
    """A control to time: open `path`, focus the `focus`-th slider (None: the page), press `keys` in
    turn, and watch the `figure`-th Bokeh figure of the page (0 = the first)."""
    name: str
    path: str
    figure: int
    target_ms: float
    keys: tuple = ("ArrowRight", "ArrowLeft")
    focus: int | None = None
    silent: bool = False           # a player step: must send nothing to the server


KNOBS = [
    # the player's → / ← keys, in the browser: Head 1's memory S between step 1 and step 2 (both write a pair)
    Knob("state: step → / ←", "/state?lang=en&variant=gated_deltanet", figure=0, target_ms=100, silent=True),
    Knob("state, 4 heads: step → / ←", "/state?lang=en&variant=gated_deltanet&heads=4", figure=0,
         target_ms=100, silent=True),
    # the trained DeltaNet checkpoint on an MQAR example: layer 1's 64×64 memory S (both layers shown)
    Knob("state, trained: step → / ←", "/state?lang=en&mode=trained&variant=deltanet", figure=0,
         target_ms=100, silent=True),
    # a knob that changes the run: the α slider (±0.01) → the server sends new frames (1 and 4 heads)
    Knob("state: α slider → new run", "/state?lang=en&variant=gated_deltanet&t=6", figure=0,
         target_ms=300, keys=("ArrowLeft", "ArrowRight"), focus=0),
    Knob("state, 4 heads: α slider → new run", "/state?lang=en&variant=gated_deltanet&heads=4&t=6", figure=0,
         target_ms=300, keys=("ArrowLeft", "ArrowRight"), focus=0),
    # the α slider of the knob page, with a per-token gate so that α acts: the memory S after the sequence
    Knob("transition: α slider ← / →", "/transition?lang=en&gate=scalar", figure=1, target_ms=200,
         keys=("ArrowLeft", "ArrowRight"), focus=0),
    # a chart that changes only when a knob moves: the capacity curve, by the rewrites slider
    Knob("memory: rewrites slider → / ←", "/memory-fails?lang=en&dk=16", figure=0, target_ms=200, focus=0),
]


# ---------------------------------------------------------------- 1. server side

@contextlib.contextmanager
def served(doc):
    """Let Panel treat `doc` as a connected session's document on this thread (as `panel serve` does
    once the browser has connected), so `pn.io.hold()` releases the frame's events through
    `doc.unhold()` to the document's listeners instead of dropping them for a later full render."""
    with set_curdoc(doc):
        pn.state._thread_id = threading.get_ident()
        pn.state._connected[doc] = True
        yield


def message_parts(message):
    """Everything the server writes to the websocket for one message (as Panel's dispatch_tornado)."""
    parts = [message.header_json, message.metadata_json, message.content_json]
    for buffer in message.buffers:
        parts += [json.dumps(buffer.ref), buffer.to_bytes()]
    return [part.encode() if isinstance(part, str) else bytes(part) for part in parts]


def measure_run(variant, heads=HEADS, d=D, tokens=TOKENS):
    """{"engine_ms", "frames_ms", "pictures_ms", "message_ms", "run_ms", "bytes", "deflated"} of one run,
    sent to a page that already shows another run (the page's cards are built when it opens)."""
    cfg = engine_bench.Config(heads=heads, d_k=d, d_v=d)
    panels = [HeadPanel(h, None, explain=False, name=f"Head {h + 1}", d_k=d, d_v=d) for h in range(heads)]
    doc, events = Document(), []
    doc.add_root(pn.Column(*[p.layout for p in panels]).get_root(doc))
    doc.on_change(lambda event: events.append(event) if isinstance(event, DocumentPatchedEvent) else None)
    for panel in panels:
        panel.configure(variant, tokens)
    with served(doc):
        _o, _state, records = run(variant, *engine_bench.make_inputs(variant, tokens, cfg, seed=1)[:3],
                                  **engine_bench.make_inputs(variant, tokens, cfg, seed=1)[3])
        for h, panel in enumerate(panels):                                      # the run already shown
            panel.show_run([head_frame(variant, records, h, t) for t in range(tokens)], limits_of(records), 0)
        q, k, v, gates = engine_bench.make_inputs(variant, tokens, cfg)
        t0 = time.perf_counter()
        _o, _state, records = run(variant, q, k, v, **gates)
        t1 = time.perf_counter()
        frames = [[head_frame(variant, records, h, t) for t in range(tokens)] for h in range(heads)]
        limits = limits_of(records)
        t2 = time.perf_counter()
        events.clear()
        with pn.io.hold(doc):
            for panel, head in zip(panels, frames):
                panel.show_run(head, limits, 0)
        t3 = time.perf_counter()
        parts = message_parts(Protocol().create("PATCH-DOC", list(events)))
        t4 = time.perf_counter()
    pn.state._connected.pop(doc, None)
    raw = b"".join(parts)
    return {"engine_ms": 1000 * (t1 - t0), "frames_ms": 1000 * (t2 - t1), "pictures_ms": 1000 * (t3 - t2),
            "message_ms": 1000 * (t4 - t3), "run_ms": 1000 * (t4 - t0), "bytes": len(raw),
            "deflated": len(zlib.compress(raw, 6))}


def summary(values):
    values = np.asarray(values, dtype=float)
    return {"p50": float(np.percentile(values, 50)), "p95": float(np.percentile(values, 95)),
            "max": float(values.max()), "n": int(values.size)}


def server_part(variants, log):
    results = {}
    for variant in variants:
        measure_run(variant)                          # warm-up: first calls pay one-time costs
        results[variant] = measure_run(variant)
        r = results[variant]
        log(f"{variant}: run {r['run_ms']:.0f} ms, {r['bytes'] / 2 ** 20:.2f} MB "
            f"({r['deflated'] / 2 ** 20:.2f} MB deflated)")
    return results


# ---------------------------------------------------------------- 2. browser side

WATCH_JS = """() => {
  if (window.__bench) { return }
  const hash = (canvases) => {        // every layer of the figure: glyphs are drawn on the overlay canvas
    let h = 2166136261
    for (const canvas of canvases) {
      const pixels = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data
      const words = new Uint32Array(pixels.buffer)
      for (let i = 0; i < words.length; i++) { h = Math.imul(h ^ words[i], 16777619) }
    }
    return h >>> 0
  }
  const b = window.__bench = { armed: false, canvas: null, before: null, after: null, t0: null, t1: null,
                               failed: false, timeout_ms: 10000 }
  const poll = () => {
    if (!b.armed) { return }
    const h = hash(b.canvas)
    if (h !== b.before) {              // the new picture is on the canvas: painted at the end of this frame
      b.armed = false
      b.after = h
      setTimeout(() => { b.t1 = performance.now() }, 0)      // runs after that paint
    } else if (performance.now() - b.t0 > b.timeout_ms) {
      b.armed = false
      b.failed = true
    } else {
      requestAnimationFrame(poll)
    }
  }
  addEventListener("keydown", () => {
    if (b.armed && b.t0 === null) { b.t0 = performance.now(); requestAnimationFrame(poll) }
  }, true)
  b.arm = (figure) => {
    const find = (root, found) => {
      for (const el of root.querySelectorAll("*")) {
        if (el.tagName === "CANVAS") { found.push(el) }
        if (el.shadowRoot) { find(el.shadowRoot, found) }
      }
      return found
    }
    b.canvas = find(figure.shadowRoot || figure, [])
    Object.assign(b, { before: hash(b.canvas), after: null, t0: null, t1: null, failed: false, armed: true })
  }
}"""


def time_knob(page, knob, reps, warmup, traffic, settle_ms=300):
    """{"ms": [per repetition], "changed": repetitions whose picture (a screenshot of the figure, taken
    after the page is quiet) differs from the one before, "pictures": distinct screenshots, "failed",
    "sent": websocket messages the page sent, "received_bytes": [per repetition]}.
    Canvas hashes only detect the change: they differ between equal-looking paints, screenshots don't."""
    import hashlib

    page.evaluate(WATCH_JS)
    figure = page.locator(".bk-Figure").nth(knob.figure)
    target = page.get_by_role("slider").nth(knob.focus) if knob.focus is not None else None
    shot = lambda: hashlib.sha256(figure.screenshot()).hexdigest()
    times, seen, changed, failed, sent, received = [], set(), 0, 0, 0, []
    last = shot()
    for rep in range(warmup + reps):
        page.evaluate("figure => window.__bench.arm(figure)", figure.element_handle())
        sent_before, received_before = len(traffic.sent), len(traffic.received)
        key = knob.keys[rep % len(knob.keys)]
        if target is not None:
            target.press(key)
        else:
            page.keyboard.press(key)
        page.wait_for_function("() => window.__bench.t1 !== null || window.__bench.failed", timeout=30_000)
        result = page.evaluate("() => ({ms: window.__bench.t1 - window.__bench.t0, failed: window.__bench.failed})")
        page.wait_for_timeout(settle_ms)              # let the rest of the update (URL, text) arrive
        now = shot()
        if rep >= warmup:
            sent += len(traffic.sent) - sent_before
            received.append(traffic.received_bytes(received_before))
            failed += result["failed"]
            changed += now != last
            seen.add(now)
            if not result["failed"]:
                times.append(result["ms"])
        last = now
    return {"ms": times, "changed": changed, "pictures": len(seen), "failed": failed, "sent": sent,
            "received_bytes": received}


def open_knob_page(chromium, url, knob):
    context = chromium.new_context(viewport={"width": 1400, "height": 1000}, locale="en-US")
    page = context.new_page()
    traffic = SocketTraffic(page)
    page.goto(url + knob.path)
    page.locator('nav a[aria-current="page"]').wait_for(timeout=60_000)
    page.locator(".bk-Figure").nth(knob.figure).wait_for(timeout=60_000)
    wait_until_quiet(page, traffic)                    # first render and the page's own first patches
    return context, page, traffic


def measure_knob(chromium, url, knob, reps, warmup=3):
    context, page, traffic = open_knob_page(chromium, url, knob)
    try:
        return time_knob(page, knob, reps, warmup, traffic)
    finally:
        context.close()


def browser_part(knobs, reps, log):
    from lineare.app.devtools import browser, running_server

    results = {}
    with running_server() as url, browser() as chromium:
        for knob in knobs:
            measured = measure_knob(chromium, url, knob, reps)
            results[knob.name] = {"path": knob.path, "reps": reps, "target_ms": knob.target_ms,
                                  "silent": knob.silent, **measured,
                                  **({"knob_ms": summary(measured["ms"])} if measured["ms"] else {})}
            log(f"{knob.name}: " + (f"p50 {results[knob.name]['knob_ms']['p50']:.0f} ms, "
                                    f"p95 {results[knob.name]['knob_ms']['p95']:.0f} ms" if measured["ms"]
                                    else "no change seen"))
    return {"knobs": results}


# ---------------------------------------------------------------- targets and output

def check_targets(server, browser):
    """[{name, target, value, pass}]: pass is None where nothing was measured."""
    checks = [{"name": f"run {variant}", "target": f"run ≤ {RUN_TARGET_BYTES / 2 ** 20:g} MB on the wire",
               "value": r["deflated"], "pass": r["deflated"] <= RUN_TARGET_BYTES}
              for variant, r in (server or {}).items()]
    for name, r in ((browser or {}).get("knobs") or {}).items():
        p95 = r["knob_ms"]["p95"] if "knob_ms" in r else None
        ok = None if p95 is None else p95 <= r["target_ms"] and (r["sent"] == 0 or not r["silent"])
        what = "step → picture, nothing sent" if r["silent"] else "knob → picture"
        checks.append({"name": f"knob {name}", "target": f"{what}: p95 ≤ {r['target_ms']:g} ms", "value": p95,
                       "pass": ok})
    return checks


def mark(ok):
    return {True: "PASS", False: "MISS", None: "n/a"}[ok]


def print_report(report):
    m, cfg = report["machine"], report["config"]
    print(f"Lineare app benchmark: {m['cpus']} CPUs, load average {m['load_before']} at the start, "
          f"{m['threads']} torch thread, Panel {m['panel']}, Bokeh {m['bokeh']}")
    checks = {c["name"]: c for c in report["targets"]}
    if report["server"]:
        print(f"\n1. Server, one run sent to the browser: {cfg['tokens']} tokens, H={cfg['heads']}, "
              f"d_k=d_v={cfg['d']} (ms; MB of the PATCH-DOC message, and deflated as on the wire)")
        print(f"{'variant':<16}{'engine':>8}{'frames':>8}{'pictures':>10}{'message':>9}{'run':>8}{'MB':>7}"
              f"{'wire MB':>9}{'target':>9}  result")
        for variant, r in report["server"].items():
            print(f"{variant:<16}{r['engine_ms']:>8.0f}{r['frames_ms']:>8.0f}{r['pictures_ms']:>10.0f}"
                  f"{r['message_ms']:>9.0f}{r['run_ms']:>8.0f}{r['bytes'] / 2 ** 20:>7.2f}"
                  f"{r['deflated'] / 2 ** 20:>9.2f}"
                  f"{'≤ 1':>9}  {mark(checks['run ' + variant]['pass'])}")
    if report["browser"] is not None:
        print(f"\n2. Browser, press → picture painted ({cfg['reps']} repetitions after 3 warm-up; ms), messages the "
              "page sent and kB it received per press")
        print(f"{'press':<36}{'p50':>7}{'p95':>7}{'max':>7}{'sent':>6}{'kB in':>8}{'changed':>9}{'pics':>6}"
              f"{'target':>8}  result")
        for name, r in report["browser"]["knobs"].items():
            s = r.get("knob_ms")
            numbers = f"{s['p50']:>7.0f}{s['p95']:>7.0f}{s['max']:>7.0f}" if s else f"{'—':>7}" * 3
            kb = np.median(r["received_bytes"]) / 1024 if r["received_bytes"] else 0.0
            print(f"{name:<36}{numbers}{r['sent'] / r['reps']:>6.0f}{kb:>8.1f}{r['changed']:>5}/{r['reps']:<3}"
                  f"{r['pictures']:>6}"
                  f"{'≤ %g' % r['target_ms']:>8}  {mark(checks['knob ' + name]['pass'])}")


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m lineare.bench.app", description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.add_argument("--quick", action="store_true", help="few frames and repetitions (a smoke test)")
    parser.add_argument("--reps", type=int, help="timed repetitions per knob (default 30; quick 3)")
    parser.add_argument("--variants", type=lambda text: tuple(text.split(",")),
                        help="comma-separated (default: every fixed-state variant; quick: gated_deltanet,gla)")
    parser.add_argument("--knobs", type=lambda text: tuple(text.split(",")),
                        help="comma-separated words; time only the knobs whose name contains one (e.g. memory)")
    parser.add_argument("--no-browser", action="store_true", help="the server part only")
    parser.add_argument("--no-server", action="store_true", help="the browser part only")
    args = parser.parse_args(argv)
    args.reps = args.reps or (3 if args.quick else 30)
    args.variants = args.variants or (("gated_deltanet", "gla") if args.quick else FIXED_STATE)
    unknown = [v for v in args.variants if v not in FIXED_STATE]
    if unknown:
        parser.error(f"unknown or not fixed-state variant {', '.join(unknown)}; choose from {', '.join(FIXED_STATE)}")
    if args.reps < 1:
        parser.error("reps must be positive")
    return args


def main(argv=None):
    args = parse_args(argv)
    log = lambda line: print(f"[bench/app] {line}", file=sys.stderr, flush=True)
    load = os.getloadavg()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)                     # as the app's server does its steps: 2 shared cores
    try:
        server = None if args.no_server else server_part(args.variants, log)
    finally:
        torch.set_num_threads(threads)
    knobs = [k for k in KNOBS if not args.knobs or any(word in k.name for word in args.knobs)]
    browser = None if args.no_browser else browser_part(knobs, args.reps, log)
    import bokeh
    report = {
        "machine": {"cpus": os.cpu_count(), "threads": 1, "load_before": [round(x, 2) for x in load],
                    "load_after": [round(x, 2) for x in os.getloadavg()], "panel": pn.__version__,
                    "bokeh": bokeh.__version__, "torch": torch.__version__, "platform": platform.platform()},
        "config": {"heads": HEADS, "d": D, "tokens": TOKENS, "reps": args.reps,
                   "variants": list(args.variants), "knobs": [asdict(k) for k in knobs]},
        "server": server,
        "browser": browser,
        "targets": check_targets(server, browser),
    }
    if args.json:
        print(json.dumps(report, indent=1, ensure_ascii=False))
    else:
        print_report(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
