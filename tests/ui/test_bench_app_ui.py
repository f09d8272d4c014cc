"""`python -m bench.app`'s browser part, 3 repetitions of one knob, on the UI tests' server and Chromium.

Checks that the detector sees a real change, not how fast: timings are never asserted.
"""
import math

from bench import app as bench_app


def test_knob_to_picture_sees_the_picture_change(chromium, server):
    knob = bench_app.KNOBS[0]                              # /state: the player's → and ← keys
    measured = bench_app.measure_knob(chromium, server, knob, reps=3, warmup=1)
    assert measured["failed"] == 0
    assert len(measured["ms"]) == 3 and all(math.isfinite(ms) and ms > 0 for ms in measured["ms"])
    assert measured["changed"] == 3 and measured["pictures"] == 2     # flips between two real pictures
