"""`python -m lineare.bench.app`'s browser part, 3 repetitions of two presses, on the UI tests' server and Chromium.

Checks that the detector sees a real change and counts the traffic, not how fast: timings are never asserted.
"""
import math

from lineare.bench import app as bench_app


def knob(name):
    return next(k for k in bench_app.KNOBS if k.name == name)


def test_a_step_changes_the_picture_and_sends_nothing(chromium, server):
    measured = bench_app.measure_knob(chromium, server, knob("state: step → / ←"), reps=3, warmup=1)
    assert measured["failed"] == 0
    assert len(measured["ms"]) == 3 and all(math.isfinite(ms) and ms > 0 for ms in measured["ms"])
    assert measured["changed"] == 3 and measured["pictures"] == 2     # flips between two real pictures
    assert measured["sent"] == 0 and measured["received_bytes"] == [0, 0, 0]


def test_a_knob_that_changes_the_run_brings_new_frames(chromium, server):
    measured = bench_app.measure_knob(chromium, server, knob("state, 4 heads: α slider → new run"), reps=3, warmup=1)
    assert measured["failed"] == 0 and measured["changed"] == 3
    assert measured["sent"] >= 3 and all(received > 10_000 for received in measured["received_bytes"])
