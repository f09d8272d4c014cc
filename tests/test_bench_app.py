"""`python -m lineare.bench.app --quick --no-browser --json` runs the server-side part and reports every number.

Checks the structure only: timings depend on the machine and are never asserted.
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from lineare.bench import app as bench_app

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("engine_ms", "frames_ms", "pictures_ms", "message_ms", "run_ms")


def test_server_part_quick_json(capsys):
    run = subprocess.run([sys.executable, "-m", "lineare.bench.app", "--quick", "--no-browser", "--json"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert (report["config"]["heads"], report["config"]["d"], report["config"]["tokens"]) == (4, 64, 64)
    assert report["browser"] is None
    assert set(report["server"]) == {"gated_deltanet", "gla"}
    for variant, result in report["server"].items():
        assert all(result[part] > 0 for part in PARTS), variant
        assert result["run_ms"] >= result["engine_ms"] + result["pictures_ms"]
        # the 4 states travel as 8-bit colours (64 frames of 64 × 64 each) and deflate to less
        assert 4 * 64 * 64 * 64 < result["bytes"] < 4 * 64 * 64 * 64 * 4 and result["deflated"] < result["bytes"]
    assert [c["name"] for c in report["targets"]] == ["run gated_deltanet", "run gla"]
    assert all(c["pass"] in (True, False) and c["value"] > 0 for c in report["targets"])

    capsys.readouterr()
    bench_app.print_report(report)                          # the table, from the same numbers
    table = capsys.readouterr().out
    assert "wire MB" in table and "gated_deltanet" in table and ("PASS" in table or "MISS" in table)


def test_arguments():
    args = bench_app.parse_args(["--quick"])
    assert args.reps == 3 and not args.no_browser
    assert bench_app.parse_args([]).variants == bench_app.FIXED_STATE
    with pytest.raises(SystemExit):
        bench_app.parse_args(["--variants", "softmax"])     # no fixed-size state to draw
    assert bench_app.KNOBS and all(k.path.startswith("/") for k in bench_app.KNOBS)
    assert {k.target_ms for k in bench_app.KNOBS if k.silent} == {100}
