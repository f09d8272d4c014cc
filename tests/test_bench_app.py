"""`python -m bench.app --quick --no-browser --json` runs the server-side part and reports every number.

Checks the structure only: timings depend on the machine and are never asserted.
"""
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("step_ms", "pictures_ms", "patch_ms", "frame_ms")
from bench import app as bench_app


def test_server_part_quick_json(capsys):
    run = subprocess.run([sys.executable, "-m", "bench.app", "--quick", "--no-browser", "--json", "--frames", "5"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["config"]["heads"] == 4 and report["config"]["d"] == 64
    assert report["browser"] is None
    assert set(report["server"]) == {"gated_deltanet", "gla"}
    for variant, result in report["server"].items():
        for part in PARTS:
            stats = result[part]
            assert stats["n"] == 5, (variant, part)
            assert all(math.isfinite(stats[k]) and stats[k] > 0 for k in ("p50", "p95", "max")), (variant, part)
            assert stats["p50"] <= stats["p95"] <= stats["max"]
        assert result["frame_ms"]["p50"] >= result["step_ms"]["p50"]
        assert result["bytes"] > 2 * 4 * 64 * 64 * 8          # at least S and the write of 4 heads, float64
    assert [c["name"] for c in report["targets"]] == ["frame gated_deltanet", "frame gla"]
    assert all(c["pass"] in (True, False) and c["value_ms"] > 0 for c in report["targets"])

    capsys.readouterr()
    bench_app.print_report(report)                          # the table, from the same numbers
    table = capsys.readouterr().out
    assert "frame p95" in table and "gated_deltanet" in table and ("PASS" in table or "MISS" in table)


def test_arguments():
    args = bench_app.parse_args(["--quick"])
    assert (args.frames, args.reps) == (20, 3) and not args.no_browser
    assert bench_app.parse_args([]).variants == bench_app.FIXED_STATE
    with pytest.raises(SystemExit):
        bench_app.parse_args(["--variants", "softmax"])     # no fixed-size state to draw
    assert bench_app.KNOBS and all(k.path.startswith("/") for k in bench_app.KNOBS)
