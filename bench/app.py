"""The app's speed: server time per animation frame, and knob → picture time in a real browser.

    .venv/bin/python -m bench.app [--json] [--frames N] [--reps N] [--quick] [--variants gla,...]
                                  [--knobs state,memory] [--no-browser] [--no-server]

1. Server, per animation frame, for a 64×64 state with 4 heads (d_k = d_v = 64), torch on 1 thread:
   - step: one `engine.stepping.step` of one layer (the state is carried from frame to frame;
     inputs and gates from `bench.engine.make_inputs`, in a trained layer's ranges);
   - pictures: what the state dashboard's `HeadPanel.draw` updates for every head (the state S and
     the write v kᵀ as 64×64 `MatrixPicture`s, the transition's bars and β subtitle, the delta
     correction for the delta family, the read-out) plus the step strip, inside `pn.io.hold()` on a
     real Bokeh Document that Panel treats as a connected session's;
   - patch: turning the frame's document events into the PATCH-DOC message the server sends
     (`Protocol().create("PATCH-DOC", events)` as Panel's `write_events` does, then its header,
     metadata and content JSON and its binary buffers as bytes, as `dispatch_tornado` writes them).
     Only the websocket write itself is left out.
   Every variant with a fixed-size state (softmax draws a growing KV cache instead), `--frames`
   frames each after a warm-up; p50/p95 of each part and of their sum.
2. Browser: `python -m app` (app.devtools.running_server) and headless Chromium. For each entry of
   KNOBS: open the page, then per repetition press the knob's key and time it. A capture-phase
   keydown listener on `window` (the first page code to see the key) takes t0 = performance.now()
   and starts polling the target picture: at every animation frame it hashes the pixels of the
   figure's canvas (FNV-1a over getImageData); at the first frame whose hash differs from the one
   taken before the key, the new picture is on the canvas and is painted at the end of that frame,
   so a setTimeout(0) queued from there (it runs after the paint) takes t1. knob → picture = t1 − t0.
   Checked outside the timed window: after each repetition the page is left to settle and the
   figure is screenshotted; "changed" counts repetitions whose screenshot differs from the previous
   one (should be all), and as the keys alternate (→ then ←) the picture flips between two states,
   so "pictures" (distinct screenshots) should be 2: a real change, the same each time. (The canvas
   hash is only the detector: Chromium's canvas pixels differ slightly between equal-looking paints.)

A table goes to stdout (with --json one JSON object); progress goes to stderr. Targets (the issue,
on this machine): frame p95 ≤ 25 ms for every variant; knob → picture p95 ≤ 200 ms, per knob and
over all knobs.
"""
import argparse
import contextlib
import json
import os
import platform
import sys
import threading
import time
from dataclasses import asdict, dataclass

import numpy as np
import panel as pn
import torch
from bokeh.document import Document
from bokeh.document.events import DocumentPatchedEvent
from bokeh.protocol import Protocol
from panel.io.state import set_curdoc

from app.components.plots import BarsPicture, MatrixPicture, RowsPicture
from bench import engine as engine_bench
from engine.ops import VARIANTS
from engine.ops.recurrent import gates_at
from engine.stepping import DELTA_RULE, init_state, step

HEADS, D = 4, 64
FRAME_TARGET_MS = 25.0
KNOB_TARGET_MS = 200.0
FIXED_STATE = tuple(v for v in VARIANTS if v != "softmax")


@dataclass(frozen=True)
class Knob:
    """A control to time: open `path`, focus the `focus`-th slider (None: the page), press `keys` in
    turn, and watch the `figure`-th Bokeh figure of the page (0 = the first)."""
    name: str
    path: str
    figure: int
    keys: tuple = ("ArrowRight", "ArrowLeft")
    focus: int | None = None


KNOBS = [
    # the player's → / ← keys: Head 1's memory S between step 1 and step 2 (both write a pair)
    Knob("state: step → / ←", "/state?lang=en&variant=gated_deltanet&heads=2", figure=0),
    # the α slider by keyboard (±0.01), with a per-token gate so that α acts: the memory S after the sequence
    Knob("transition: α slider ← / →", "/transition?lang=en&gate=scalar", figure=1,
         keys=("ArrowLeft", "ArrowRight"), focus=0),
    # the trained DeltaNet checkpoint on an MQAR example: layer 1's 64×64 memory S (both layers shown)
    Knob("state, trained: step → / ←", "/state?lang=en&mode=trained&variant=deltanet", figure=0),
    # a chart that changes only when a knob moves: the capacity curve, by the rewrites slider
    Knob("memory: rewrites slider → / ←", "/memory-fails?lang=en&dk=16", figure=0, focus=0),
]


# ---------------------------------------------------------------- 1. server side

class FramePictures:
    """The state dashboard's per-frame pictures (as `HeadPanel.draw`), sized for d_k = d_v = 64."""

    def __init__(self, variant, heads, d):
        self.variant, self.d = variant, d
        self.heads = []
        for _h in range(heads):
            pictures = {"state": MatrixPicture("S", "key", "value", d, d, width=380, height=350),
                        "write": MatrixPicture("write", "key", "value", d, d, width=330, height=310),
                        "transition": BarsPicture("kept", "key", "kept", d, width=340, height=310),
                        "readout": RowsPicture("read-out", "value", ["answer"], d, width=360, height=150)}
            if variant in DELTA_RULE:
                pictures["delta"] = RowsPicture("correction", "value", ["prediction", "target", "error"], d,
                                                width=360, height=230)
            self.heads.append(pictures)
        self.strip = pn.pane.HTML("")
        self.layout = pn.Column(self.strip, *[pn.Row(*[pn.pane.Bokeh(p.figure) for p in head.values()])
                                              for head in self.heads])

    def set_limits(self, record):
        """Colour ranges, fixed once per run (the view takes the run's peaks; here: this record's ×2)."""
        for h, p in enumerate(self.heads):
            p["state"].set_limit(2 * np.abs(record.state[0, h]).max())
            p["write"].set_limit(2 * np.abs(record.write[0, h]).max())
            p["readout"].set_limit(2 * np.abs(record.output[0, h]).max())
            if "delta" in p:
                p["delta"].set_limit(2 * np.abs(record.target[0, h]).max())

    def draw(self, record, t, length):
        self.strip.object = step_strip(t, length)
        for h, p in enumerate(self.heads):
            p["state"].show(record.state[0, h])
            p["write"].show(record.write[0, h])
            kept = np.ones(self.d) if record.decay is None else \
                np.broadcast_to(np.asarray(record.decay[0, h], dtype=float), (self.d,))
            p["transition"].show(kept)
            beta = record.beta[0, h] if record.beta is not None else \
                (-record.a[0, h] @ record.b[0, h] if record.a is not None else None)
            p["transition"].subtitle.text = "" if beta is None else f"β = {float(beta):.2f}"
            if "delta" in p:
                p["delta"].show(np.stack([record.prediction[0, h], record.target[0, h], record.error[0, h]]))
            p["readout"].show(record.output[0, h][None, :])


def step_strip(t, length):
    """A stand-in for the token strip: one box per token, the current one marked."""
    boxes = "".join(f'<div class="tok {"current" if i == t else "past" if i < t else "future"}">{i}</div>'
                    for i in range(length))
    return f'<div>Step {t + 1} of {length}</div><div class="strip">{boxes}</div>'


@contextlib.contextmanager
def served(doc):
    """Let Panel treat `doc` as a connected session's document on this thread (as `panel serve` does
    once the browser has connected), so `pn.io.hold()` releases the frame's events through
    `doc.unhold()` to the document's listeners instead of dropping them for a later full render."""
    with set_curdoc(doc):
        pn.state._thread_id = threading.get_ident()
        pn.state._connected[doc] = True
        yield


def wire_bytes(message):
    """Everything the server writes to the websocket for one message (as Panel's dispatch_tornado)."""
    parts = [message.header_json, message.metadata_json, message.content_json]
    for buffer in message.buffers:
        parts += [json.dumps(buffer.ref), buffer.to_bytes()]
    return sum(len(part) for part in parts)


def measure_frames(variant, frames, warmup, heads=HEADS, d=D):
    """{"step_ms", "pictures_ms", "patch_ms", "frame_ms": [per frame], "bytes": per frame (median)}."""
    cfg = engine_bench.Config(heads=heads, d_k=d, d_v=d)
    length = warmup + frames
    q, k, v, gates = engine_bench.make_inputs(variant, length, cfg)
    state = init_state(variant, heads=heads, d_k=d, d_v=d)
    doc, pictures, protocol = Document(), FramePictures(variant, heads, d), Protocol()
    events = []
    doc.add_root(pictures.layout.get_root(doc))
    doc.on_change(lambda event: events.append(event) if isinstance(event, DocumentPatchedEvent) else None)
    times = {"step_ms": [], "pictures_ms": [], "patch_ms": [], "frame_ms": []}
    sizes = []
    with served(doc):
        for t in range(length):
            events.clear()
            t0 = time.perf_counter()
            _o, state, record = step(variant, state, q[:, t], k[:, t], v[:, t], **gates_at(variant, gates, t))
            t1 = time.perf_counter()
            with pn.io.hold(doc):
                if t == warmup - 1 or t == 0:
                    pictures.set_limits(record)
                pictures.draw(record, t, length)
            t2 = time.perf_counter()
            size = wire_bytes(protocol.create("PATCH-DOC", list(events)))
            t3 = time.perf_counter()
            if t >= warmup:
                for name, ms in zip(times, (t1 - t0, t2 - t1, t3 - t2, t3 - t0)):
                    times[name].append(1000 * ms)
                sizes.append(size)
    pn.state._connected.pop(doc, None)
    return {**times, "bytes": int(np.median(sizes))}


def summary(values):
    values = np.asarray(values, dtype=float)
    return {"p50": float(np.percentile(values, 50)), "p95": float(np.percentile(values, 95)),
            "max": float(values.max()), "n": int(values.size)}


def server_part(variants, frames, warmup, log):
    results = {}
    for variant in variants:
        times = measure_frames(variant, frames, warmup)
        results[variant] = {name: summary(times[name]) for name in ("step_ms", "pictures_ms", "patch_ms", "frame_ms")}
        results[variant]["bytes"] = times["bytes"]
        log(f"{variant}: frame p50 {results[variant]['frame_ms']['p50']:.2f} ms, "
            f"p95 {results[variant]['frame_ms']['p95']:.2f} ms")
    return results


# ---------------------------------------------------------------- 2. browser side

WATCH_JS = """() => {
  if (window.__bench) { return }
  const hash = (canvas) => {
    const pixels = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data
    const words = new Uint32Array(pixels.buffer)
    let h = 2166136261
    for (let i = 0; i < words.length; i++) { h = Math.imul(h ^ words[i], 16777619) }
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
    const find = (root) => {
      for (const el of root.querySelectorAll("*")) {
        if (el.tagName === "CANVAS") { return el }
        const inner = el.shadowRoot && find(el.shadowRoot)
        if (inner) { return inner }
      }
      return null
    }
    b.canvas = find(figure.shadowRoot || figure)
    Object.assign(b, { before: hash(b.canvas), after: null, t0: null, t1: null, failed: false, armed: true })
  }
}"""


def time_knob(page, knob, reps, warmup, settle_ms=300):
    """{"ms": [per repetition], "changed": repetitions whose picture (a screenshot of the figure, taken
    after the page is quiet) differs from the one before, "pictures": distinct screenshots, "failed"}.
    Canvas hashes only detect the change: they differ between equal-looking paints, screenshots don't."""
    import hashlib

    page.evaluate(WATCH_JS)
    figure = page.locator(".bk-Figure").nth(knob.figure)
    target = page.get_by_role("slider").nth(knob.focus) if knob.focus is not None else None
    shot = lambda: hashlib.sha256(figure.screenshot()).hexdigest()
    times, seen, changed, failed = [], set(), 0, 0
    last = shot()
    for rep in range(warmup + reps):
        page.evaluate("figure => window.__bench.arm(figure)", figure.element_handle())
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
            failed += result["failed"]
            changed += now != last
            seen.add(now)
            if not result["failed"]:
                times.append(result["ms"])
        last = now
    return {"ms": times, "changed": changed, "pictures": len(seen), "failed": failed}


def open_knob_page(chromium, url, knob):
    context = chromium.new_context(viewport={"width": 1400, "height": 1000}, locale="en-US")
    page = context.new_page()
    page.goto(url + knob.path)
    page.locator('nav a[aria-current="page"]').wait_for(timeout=60_000)
    page.locator(".bk-Figure").nth(knob.figure).wait_for(timeout=60_000)
    page.wait_for_timeout(1500)                       # first render and the session's first patches
    return context, page


def measure_knob(chromium, url, knob, reps, warmup=3):
    context, page = open_knob_page(chromium, url, knob)
    try:
        return time_knob(page, knob, reps, warmup)
    finally:
        context.close()


def browser_part(knobs, reps, log):
    from app.devtools import browser, running_server

    results, everything = {}, []
    with running_server() as url, browser() as chromium:
        for knob in knobs:
            measured = measure_knob(chromium, url, knob, reps)
            everything += measured["ms"]
            results[knob.name] = {"path": knob.path, "reps": reps, **measured,
                                  **({"knob_ms": summary(measured["ms"])} if measured["ms"] else {})}
            log(f"{knob.name}: " + (f"p50 {results[knob.name]['knob_ms']['p50']:.0f} ms, "
                                    f"p95 {results[knob.name]['knob_ms']['p95']:.0f} ms" if measured["ms"]
                                    else "no change seen"))
    overall = summary(everything) if everything else None
    return {"knobs": results, "overall_ms": overall}


# ---------------------------------------------------------------- targets and output

def check_targets(server, browser):
    """[{name, target, value_ms, pass}]: pass is None where nothing was measured."""
    checks = [{"name": f"frame {variant}", "target": f"frame p95 ≤ {FRAME_TARGET_MS:g} ms",
               "value_ms": r["frame_ms"]["p95"], "pass": r["frame_ms"]["p95"] <= FRAME_TARGET_MS}
              for variant, r in (server or {}).items()]
    if browser is not None:
        for name, r in browser["knobs"].items():
            p95 = r["knob_ms"]["p95"] if "knob_ms" in r else None
            ok = None if p95 is None else p95 <= KNOB_TARGET_MS
            checks.append({"name": f"knob {name}", "target": f"knob → picture p95 ≤ {KNOB_TARGET_MS:g} ms",
                           "value_ms": p95, "pass": ok})
        overall = browser["overall_ms"]
        checks.append({"name": "knob overall", "target": f"knob → picture p95 ≤ {KNOB_TARGET_MS:g} ms",
                       "value_ms": overall and overall["p95"],
                       "pass": None if overall is None else overall["p95"] <= KNOB_TARGET_MS})
    return checks


def mark(ok):
    return {True: "PASS", False: "MISS", None: "n/a"}[ok]


def print_report(report):
    m, cfg = report["machine"], report["config"]
    print(f"Lineare app benchmark: {m['cpus']} CPUs, load average {m['load_before']} at the start, "
          f"{m['threads']} torch thread, Panel {m['panel']}, Bokeh {m['bokeh']}")
    checks = {c["name"]: c for c in report["targets"]}
    if report["server"]:
        print(f"\n1. Server, one animation frame: engine step + pictures in pn.io.hold() + PATCH-DOC message "
              f"(H={cfg['heads']}, d_k=d_v={cfg['d']}; {cfg['frames']} frames after {cfg['warmup']}; ms)")
        print(f"{'variant':<16}{'step p50':>10}{'pictures p50':>14}{'patch p50':>11}{'frame p50':>11}"
              f"{'frame p95':>11}{'KB/frame':>10}{'target':>10}  result")
        for variant, r in report["server"].items():
            print(f"{variant:<16}{r['step_ms']['p50']:>10.2f}{r['pictures_ms']['p50']:>14.2f}"
                  f"{r['patch_ms']['p50']:>11.2f}{r['frame_ms']['p50']:>11.2f}{r['frame_ms']['p95']:>11.2f}"
                  f"{r['bytes'] / 1024:>10.0f}{'≤ %g' % FRAME_TARGET_MS:>10}  {mark(checks['frame ' + variant]['pass'])}")
    if report["browser"] is not None:
        print(f"\n2. Browser, knob → updated picture painted ({cfg['reps']} repetitions after 3 warm-up; ms)")
        print(f"{'knob':<32}{'p50':>8}{'p95':>8}{'max':>8}{'changed':>9}{'pictures':>10}{'target':>10}  result")
        rows = [(name, r.get("knob_ms"), f"{r['changed']}/{r['reps']}", r["pictures"], checks["knob " + name]["pass"])
                for name, r in report["browser"]["knobs"].items()]
        rows.append(("all knobs", report["browser"]["overall_ms"], "", "", checks["knob overall"]["pass"]))
        for name, s, changed, pictures, ok in rows:
            numbers = f"{s['p50']:>8.0f}{s['p95']:>8.0f}{s['max']:>8.0f}" if s else f"{'—':>8}" * 3
            print(f"{name:<32}{numbers}{changed:>9}{pictures:>10}{'≤ %g' % KNOB_TARGET_MS:>10}  {mark(ok)}")


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m bench.app", description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.add_argument("--quick", action="store_true", help="few frames and repetitions (a smoke test)")
    parser.add_argument("--frames", type=int, help="timed frames per variant (default 300; quick 20)")
    parser.add_argument("--reps", type=int, help="timed repetitions per knob (default 30; quick 3)")
    parser.add_argument("--variants", type=lambda text: tuple(text.split(",")),
                        help="comma-separated (default: every fixed-state variant; quick: gated_deltanet,gla)")
    parser.add_argument("--knobs", type=lambda text: tuple(text.split(",")),
                        help="comma-separated words; time only the knobs whose name contains one (e.g. memory)")
    parser.add_argument("--no-browser", action="store_true", help="the server part only")
    parser.add_argument("--no-server", action="store_true", help="the browser part only")
    args = parser.parse_args(argv)
    args.frames = args.frames or (20 if args.quick else 300)
    args.reps = args.reps or (3 if args.quick else 30)
    args.variants = args.variants or (("gated_deltanet", "gla") if args.quick else FIXED_STATE)
    unknown = [v for v in args.variants if v not in FIXED_STATE]
    if unknown:
        parser.error(f"unknown or not fixed-state variant {', '.join(unknown)}; choose from {', '.join(FIXED_STATE)}")
    if min(args.frames, args.reps) < 1:
        parser.error("frames and reps must be positive")
    return args


def main(argv=None):
    args = parse_args(argv)
    log = lambda line: print(f"[bench/app] {line}", file=sys.stderr, flush=True)
    warmup = 3 if args.quick else 20
    load = os.getloadavg()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)                     # as the app's server does its steps: 2 shared cores
    try:
        server = None if args.no_server else server_part(args.variants, args.frames, warmup, log)
    finally:
        torch.set_num_threads(threads)
    knobs = [k for k in KNOBS if not args.knobs or any(word in k.name for word in args.knobs)]
    browser = None if args.no_browser else browser_part(knobs, args.reps, log)
    import bokeh
    report = {
        "machine": {"cpus": os.cpu_count(), "threads": 1, "load_before": [round(x, 2) for x in load],
                    "load_after": [round(x, 2) for x in os.getloadavg()], "panel": pn.__version__,
                    "bokeh": bokeh.__version__, "torch": torch.__version__, "platform": platform.platform()},
        "config": {"heads": HEADS, "d": D, "frames": args.frames, "warmup": warmup, "reps": args.reps,
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
