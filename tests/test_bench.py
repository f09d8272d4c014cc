"""`python -m lineare.engine bench --quick --json` runs and reports every case it was asked for.

Checks the structure only: timings depend on the machine and are never asserted.
"""
import contextlib
import io
import json

import pytest

from lineare.bench import engine as bench

VARIANTS = ("linear", "deltanet", "softmax")


def test_quick_json_report():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert bench.main(["--quick", "--json", "--variants", ",".join(VARIANTS)]) == 0
    report = json.loads(out.getvalue())
    cfg = report["config"]
    assert tuple(cfg["variants"]) == VARIANTS and cfg["lengths"] and cfg["contexts"]

    assert set(report["forms"]) == set(VARIANTS)
    for variant in VARIANTS:
        assert set(report["forms"][variant]) == {"parallel", "chunked", "recurrent"}
        for form, by_T in report["forms"][variant].items():
            assert set(by_T) == {str(T) for T in cfg["lengths"]}
            for entry in by_T.values():
                assert (entry["time_s"] is not None and entry["time_s"] > 0) or entry["skipped"], (variant, form)
        assert {str(c) for c in cfg["contexts"]} == set(report["steps"][variant])
        assert all(e["time_s"] > 0 for e in report["steps"][variant].values())

    # FLOP counts, not timings: the delta rule's chunks do more matrix work per token of its loop
    assert set(report["work_ratios"]) == {"linear", "deltanet"}
    assert report["work_ratios"]["deltanet"] > report["work_ratios"]["linear"] > 1
    assert report["matmul"]["best_gflops"] > 0
    assert all(g > 0 for g in report["matmul"]["gflops"].values())
    assert report["chunked_linear"]["gflops"] > 0

    assert report["chunked_linear"]["chunk_size"] in cfg["flops_chunk_sizes"] + [cfg["chunk_size"]]
    assert set(report["decoder"]["variants"]) == {"linear", "deltanet"}                  # fixed states only
    assert all(e["decoder_s"] > 0 and e["floor_s"] > 0 for e in report["decoder"]["variants"].values())
    assert report["softmax_sdpa"]["ratio"] > 0 and report["softmax_sdpa"]["rel_rms"] < 1e-5
    for variant, e in report["peers"]["variants"].items():                            # empty without fla-core
        assert variant in VARIANTS and e["ours_s"] > 0 and e["theirs_s"] > 0 and e["rel_rms"] < 1e-4

    names = {check["name"] for check in report["targets"]}
    expected = {"chunked_vs_recurrent", "chunked_vs_parallel", "step_flat", "chunked_gflops", "decoder_step",
                "softmax_sdpa"}
    assert names == expected | ({"chunked_vs_fla"} if report["peers"]["variants"] else set())
    for check in report["targets"]:
        assert check["pass"] in (True, False, None) and check["target"] and check["values"]


def test_skips_what_would_take_too_long():
    cfg = bench.Config()
    seconds, _ = bench.estimate("linear", "recurrent", 4096, (1024, 20.0), cfg)
    assert seconds == 80.0                                          # linear in T
    seconds, _ = bench.estimate("softmax", "recurrent", 4096, (1024, 5.0), cfg)
    assert seconds == 80.0                                          # quadratic in T
    _, gigabytes = bench.estimate("linear", "parallel", 16384, None, cfg)
    assert gigabytes > cfg.limit_gb                                 # T×T matrices of 16384² floats


@pytest.mark.parametrize("command", [["-m", "lineare.bench.engine"], ["-m", "lineare.engine", "bench"]])
def test_both_commands_run_the_benchmark(command):
    import subprocess
    import sys
    from pathlib import Path
    run = subprocess.run([sys.executable, *command, "--help"], cwd=Path(__file__).resolve().parents[1],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "--quick" in run.stdout, run.stderr
