"""engine.capacity: the training-free capacity experiment (Schlag, Irie & Schmidhuber 2021)."""
import json

import pytest
import torch

from lineare.engine import __main__ as cli
from lineare.engine.capacity import bound, capacity, main, write_and_read
from lineare.engine.tasks import capacity_data

D = 16


def test_bound_closed_form():
    assert bound(10, 64) == 0.0 and bound(64, 64) == 0.0
    assert bound(80, 64) == pytest.approx(0.10)
    assert bound(120, 64) == pytest.approx(0.2333, abs=1e-4)                # ½(1 − 64/120), Schlag et al. 2021


@pytest.mark.parametrize("form", ["chunked", "recurrent"])
def test_sum_rule_exact_with_orthogonal_keys_up_to_d_k(form):
    rows = capacity("sum", d_k=D, pairs=[1, 4, D], keys="orthogonal", form=form)
    for r in rows:
        assert r["error"] < 1e-20 and r["accuracy"] == 1.0 and r["bound"] == 0.0


def test_sum_rule_degrades_past_d_k():
    rows = capacity("sum", d_k=D, pairs=[D // 2, 2 * D, 4 * D], keys="random", trials=2)
    errors = [r["error"] for r in rows]
    assert errors == sorted(errors) and errors[-1] > errors[0] + 0.5
    for r in rows:
        assert r["error"] >= r["bound"] - 1e-12                               # no read-out beats the bound
        assert r["best"] == pytest.approx(r["bound"], abs=1e-9)               # least squares attains it
    # the plain read-out's cross-talk: ½·Σ_{j≠i} (k_i·k_j)² ≈ ½(N − 1)/d_k for random unit keys
    assert rows[1]["error"] == pytest.approx(0.5 * (2 * D - 1) / D, rel=0.25)


def test_trials_draw_different_keys_and_the_rows_are_their_mean():
    """Trial t draws its keys with seed + t: the sum rule's error, ½ Σ_{j≠i} (k_i·k_j)² averaged over the
    pairs, computed here from each trial's own keys, differs from trial to trial and the row is the mean."""
    N, trials, seed = 2 * D, 3, 5
    errors = []
    for t in range(trials):
        K = capacity_data(num_pairs=N, d_k=D, keys="random", seed=seed + t).keys
        errors.append(float(0.5 * ((K @ K.T - torch.eye(N, dtype=K.dtype)) ** 2).sum(1).mean()))
    assert len(set(errors)) == trials
    row = capacity("sum", d_k=D, pairs=[N], keys="random", seed=seed, trials=trials)[0]
    assert row["error"] == pytest.approx(sum(errors) / trials, rel=1e-9)
    assert capacity("sum", d_k=D, pairs=[N], keys="random", seed=seed + 1)[0]["error"] == pytest.approx(errors[1])


def test_delta_rule_degrades_past_d_k():
    rows = capacity("delta", d_k=D, pairs=[D // 2, 4 * D], keys="random", trials=2)
    assert rows[0]["accuracy"] > rows[1]["accuracy"] and rows[1]["accuracy"] < 0.8
    assert rows[1]["error"] > rows[0]["error"]


def test_delta_rule_keeps_the_latest_value_and_sum_rule_does_not():
    common = dict(d_k=D, pairs=[D], keys="orthogonal", repeat=6)
    delta = capacity("delta", **common)[0]
    gated = capacity("gated-delta", **common)[0]
    summed = capacity("sum", **common)[0]
    assert delta["accuracy"] == 1.0 and delta["error"] < 1e-20
    assert gated["accuracy"] == 1.0
    assert summed["accuracy"] == pytest.approx(1 - 6 / D)                  # the 6 rewritten keys fail
    assert summed["error"] == pytest.approx(0.5 * 6 / D)                   # each reads e_old + e_new


def test_forms_agree():
    data = capacity_data(num_pairs=40, d_k=D, keys="correlated", repeat=5, seed=2)
    for rule in ("sum", "delta", "gated-delta"):
        outs = [write_and_read(rule, data.keys, data.values, data.queries, form=f, chunk_size=8)[0]
                for f in ("recurrent", "chunked", "parallel")]
        for o in outs[1:]:
            assert torch.allclose(o, outs[0], atol=1e-10)


def test_cli_json(capsys):
    argv = ["capacity", "--rule", "delta", "--d-k", "8", "--pairs", "4,8,12", "--keys", "random",
            "--repeat", "2", "--seed", "3", "--trials", "2", "--json"]
    assert cli.main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rule"] == "delta" and out["variant"] == "deltanet" and out["d_k"] == 8
    assert [r["pairs"] for r in out["results"]] == [4, 8, 12]
    assert out["results"][2]["bound"] == pytest.approx(0.5 * (1 - 8 / 12))
    assert set(out["results"][0]) == {"pairs", "error", "bound", "best", "accuracy"}


def test_cli_table(capsys):
    assert main(["--rule", "sum", "--d-k", "8", "--pairs", "8,16", "--keys", "orthogonal"]) == 2
    assert "orthogonal" in capsys.readouterr().err
    assert main(["--rule", "gated-delta", "--d-k", "8", "--pairs", "8,16"]) == 0
    out = capsys.readouterr().out
    assert "bound" in out and "accuracy" in out and len(out.splitlines()) >= 4


@pytest.mark.parametrize("argv", [
    ["--rule", "hebb", "--d-k", "8", "--pairs", "4"],
    ["--rule", "sum", "--d-k", "0", "--pairs", "4"],
    ["--rule", "sum", "--d-k", "8", "--pairs", "4,x"],
    ["--rule", "sum", "--d-k", "8", "--pairs", "0"],
    ["--rule", "sum", "--d-k", "8", "--pairs", "4", "--keys", "gaussian"],
    ["--rule", "sum", "--d-k", "8", "--pairs", "4", "--repeat", "-1"],
    ["--rule", "sum", "--d-k", "8", "--pairs", "4", "--trials", "0"],
    ["--rule", "sum", "--d-k", "1", "--pairs", "4", "--keys", "correlated"],
    ["--rule", "sum", "--d-k", "8", "--pairs", "5000"],
    ["--d-k", "8", "--pairs", "4"],
])
def test_cli_bad_arguments(argv, capsys):
    assert main(argv) == 2
    assert "error" in capsys.readouterr().err


def test_more_rewrites_than_keys():
    rows = capacity("delta", d_k=8, pairs=[3], keys="orthogonal", repeat=10)
    assert rows[0]["accuracy"] == 1.0 and rows[0]["error"] < 1e-20


@pytest.mark.parametrize("kwargs, message", [
    (dict(rule="hebb"), "unknown rule"),
    (dict(form="sideways"), "unknown form"),
    (dict(trials=0), "trials"),
    (dict(pairs=[]), "empty"),
    (dict(pairs=[9], keys="orthogonal"), "orthogonal"),
])
def test_api_bad_arguments(kwargs, message):
    args = dict(rule="sum", d_k=8, pairs=[4]) | kwargs
    with pytest.raises(ValueError, match=message):
        capacity(args.pop("rule"), **args)
