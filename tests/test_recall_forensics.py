"""Where memory fails, the trained answers taken apart (forensics.py) and the accuracy map over d_k × N:
against the engine's own records, independent closed forms and loops, and the page's capacity curve."""
import io
import re

import numpy as np
import pandas as pd
import pytest

from lineare.app.dashboards.memory_fails import model as mf
from lineare.app.dashboards.memory_fails.forensics import LayerParts, read_out_parts, take_apart, verdict
from lineare.app.dashboards.memory_fails.model import MemoryStore
from lineare.app.i18n import language
from lineare.app.session import Session
from lineare.engine import tasks
from lineare.engine.capacity import write_and_read

TASK, EXAMPLE = "64-8", 0                    # the shortest task: 64 tokens, 8 queries


def queries_of(targets):
    return np.flatnonzero(targets != tasks.IGNORE)


@pytest.mark.parametrize("variant", ["retnet", "mamba2", "gla", "deltanet", "gated_deltanet", "rwkv6", "rwkv7",
                                     "mlstm", "linear", "softmax"])
def test_the_parts_add_up_to_the_read_out_the_engine_recorded(variant):
    tokens, targets, _logits, layers = mf.stepped(variant, TASK, EXAMPLE)
    for records in layers:
        for t in [*queries_of(targets)[[0, -1]], 5]:                 # two queries, and an early token
            parts = read_out_parts(records, int(t))
            output = records[t].output[0, 0]
            assert parts.contributions.shape == (t + 1, len(output))
            scale = np.abs(output).max()
            np.testing.assert_allclose(parts.contributions.sum(0), output, atol=2e-5 * scale, rtol=0)
            np.testing.assert_allclose(parts.share.sum(), 1.0, atol=1e-4)
            keys = np.stack([r.key[0, 0] for r in records[:t + 1]])
            q = records[t].query[0, 0]
            cosines = keys @ q / np.linalg.norm(keys, axis=1) / np.linalg.norm(q)
            np.testing.assert_allclose(parts.similarity, cosines, atol=1e-5)


def test_the_parts_of_a_delta_rule_against_a_float64_loop_of_its_own():
    """DeltaNet rebuilt from q, k, v and β alone: S_t = S_{t-1} − β (S_{t-1} k − v) kᵀ, o_t = S_t q_t; the
    term of write i is β_i v_i (k_iᵀ x_i) with x_i the query carried back through (I − β_j k_j k_jᵀ), j > i."""
    _tokens, targets, _logits, layers = mf.stepped("deltanet", TASK, EXAMPLE)
    records = layers[1]
    t = int(queries_of(targets)[2])
    k = [r.key[0, 0].astype(np.float64) for r in records[:t + 1]]
    v = [r.target[0, 0].astype(np.float64) for r in records[:t + 1]]
    beta = [float(r.beta[0, 0]) for r in records[:t + 1]]
    q = records[t].query[0, 0].astype(np.float64)
    S = np.zeros((len(v[0]), len(k[0])))
    for i in range(t + 1):
        S = S - beta[i] * np.outer(S @ k[i] - v[i], k[i])
    terms, x = [], q.copy()
    for i in range(t, -1, -1):
        terms.append(beta[i] * v[i] * (k[i] @ x))
        x = x - beta[i] * k[i] * (k[i] @ x)
    parts = read_out_parts(records, t)
    np.testing.assert_allclose(parts.contributions, np.array(terms[::-1]), atol=1e-4 * np.abs(S @ q).max())
    np.testing.assert_allclose(parts.contributions.sum(0), S @ q, atol=1e-4 * np.abs(S @ q).max())


def test_what_is_let_through_in_closed_form():
    """RetNet keeps γ per step: γ^(t−i) of the query reaches write i; Mamba-2 the product of its α_j;
    mLSTM the product of its forget gates σ(f̃_j); softmax forgets nothing."""
    _tokens, targets, _logits, layers = mf.stepped("retnet", TASK, EXAMPLE)
    t = int(queries_of(targets)[0])
    gamma = 1 - 2.0 ** -5                                            # head 0: γ = 1 − 2^(−5)
    parts = read_out_parts(layers[0], t)
    np.testing.assert_allclose(parts.kept, gamma ** (t - np.arange(t + 1)), rtol=1e-5)
    for variant in ("mamba2", "mlstm"):
        _tokens, targets, _logits, layers = mf.stepped(variant, TASK, EXAMPLE)
        records = layers[1]
        t = int(queries_of(targets)[0])
        decay = np.array([float(r.decay[0, 0]) for r in records[:t + 1]])
        expected = np.array([decay[i + 1:].prod() for i in range(t + 1)])
        np.testing.assert_allclose(read_out_parts(records, t).kept, expected, rtol=1e-5)
    _tokens, targets, _logits, layers = mf.stepped("softmax", TASK, EXAMPLE)
    t = int(queries_of(targets)[0])
    parts = read_out_parts(layers[0], t)
    assert (parts.kept == 1).all()
    weights = layers[0][t].extras["attention"][0, 0]
    np.testing.assert_allclose(parts.contributions[3], weights[3] * layers[0][3].target[0, 0], rtol=1e-6)


def parts_of(share, kept, similarity):
    """LayerParts whose shares are `share` (contributions along one direction, read-out their sum)."""
    share = np.asarray(share, dtype=float)
    contributions = share[:, None] * np.array([[1.0, 0.0]])
    return LayerParts(contributions, np.asarray(kept, dtype=float), np.asarray(similarity, dtype=float),
                      contributions.sum(0))


def test_the_verdict_follows_the_numbers():
    right = [1, 2]
    faded = verdict(parts_of([0.3, 0.05, 0.05, 0.3, 0.3], [0.1, 0.1, 0.2, 0.9, 1.0], [0.1] * 5), right)
    assert faded.kind == "faded" and faded.right_kept == pytest.approx(0.2)
    crosstalk = verdict(parts_of([0.3, 0.1, 0.1, 0.3, 0.2], [0.5, 0.6, 0.7, 0.9, 1.0], [0.8, 0.9, 0.9, 0.7, 0.6]),
                        right)
    assert crosstalk.kind == "crosstalk" and crosstalk.others[:3] == [0, 3, 4]
    assert crosstalk.others_share == pytest.approx(0.8) and crosstalk.right_share == pytest.approx(0.2)
    dissimilar = verdict(parts_of([0.3, 0.1, 0.1, 0.3, 0.2], [0.5, 0.6, 0.7, 0.9, 1.0], [0.1, 0.9, 0.9, 0.2, 0.1]),
                         right)
    assert dissimilar.kind == "spread"
    carried = verdict(parts_of([0.1, 0.5, 0.2, 0.1, 0.1], [0.5, 0.6, 0.7, 0.9, 1.0], [0.9] * 5), right)
    assert carried.kind == "right" and carried.right_share == pytest.approx(0.7)


def test_a_query_taken_apart_names_its_pair_and_the_model_s_answer():
    example = mf.trained_example(TASK, EXAMPLE)
    for variant in ("gated_deltanet", "softmax"):
        for query in (1, 8):
            found = mf.query_forensics(variant, TASK, EXAMPLE, query)
            t = found.position
            assert t == example.positions[query - 1] and found.expected == example.expected[query - 1]
            key, value = found.right
            assert found.tokens[key] == found.tokens[t] and key < 2 * 8 and value == key + 1
            assert found.tokens[value] == found.expected              # the value written right after the key
            assert found.answer == example.predicted[variant][query - 1]   # stepping answers as the grid
            assert len(found.layers) == len(found.verdicts) == 2
    # the same numbers straight from the pieces
    tokens, targets, logits, layers = mf.stepped("gated_deltanet", TASK, EXAMPLE)
    again = take_apart("gated_deltanet", tokens, targets, logits, layers, 8)
    np.testing.assert_array_equal(again.layers[0].contributions, mf.query_forensics(
        "gated_deltanet", TASK, EXAMPLE, 8).layers[0].contributions)


def test_the_store_opens_on_the_first_wrong_answer_and_follows_a_click():
    assert mf.trained_example(TASK, EXAMPLE).right("linear").all()
    assert (MemoryStore(task=TASK).probe, MemoryStore(task=TASK).probe_query) == ("linear", 1)   # none wrong
    store = MemoryStore(task="128-32")
    example = store.trained
    first = next(v for v in mf.VARIANTS if not example.right(v).all())
    assert store.probe == first and store.probe_query == int(np.flatnonzero(~example.right(first))[0]) + 1
    assert store.forensics is None                            # nothing computed until a page shows it
    store.open_details()
    assert store.forensics is mf.query_forensics(first, "128-32", EXAMPLE, store.probe_query)
    store.param.update(probe="softmax", probe_query=3)
    assert (store.forensics.variant, store.forensics.query) == ("softmax", 3) and not store.probing
    store.task = "64-16"                                      # a new task: its own first wrong answer
    assert store.forensics.query <= 16 and (store.forensics.variant, store.forensics.query) == (
        store.probe, store.probe_query)


def test_query_zero_means_the_first_wrong_answer_and_a_missing_checkpoint_is_said(monkeypatch, tmp_path):
    from lineare.app import checkpoints

    store = MemoryStore(task="128-32")
    store.open_details()
    first = (store.probe, store.probe_query)
    store.param.update(probe="softmax", probe_query=2)
    store.probe_query = 0
    assert (store.probe, store.probe_query) == first and store.forensics.query == first[1]
    monkeypatch.setattr(checkpoints, "FOLDER", tmp_path)
    monkeypatch.setattr(checkpoints, "_loaded", {})
    for cached in (mf.stepped, mf.query_forensics):
        cached.cache_clear()
    try:
        store.param.update(probe="gla", probe_query=3)
        assert store.forensics is None and "no checkpoint" in store.probe_failure and not store.probing
    finally:
        for cached in (mf.stepped, mf.query_forensics):
            cached.cache_clear()


def test_url_values_of_the_new_settings_are_checked():
    from lineare.app.dashboards.memory_fails.view import MemoryView

    session = Session()
    args = {"probe": [b"<b>gpt</b>"], "probe_query": [b"40"], "task": [b"64-8"], "alpha": [b"7"], "beta": [b"abc"]}
    with language("en"):
        store = MemoryView.open_store(session, args)
    assert store.probe == mf.VARIANTS[0] and store.probe_query == 8 and store.alpha == 1.0 and store.beta == mf.BETA
    notices = " ".join(message for _source, message in session.notices)
    assert "“probe” the value “<b>gpt</b>”" in notices and "probe_query" in notices
    assert "outside the range 0.5 to 1" in notices and "“beta” the value “abc”" in notices


def test_the_view_draws_the_answer_taken_apart_and_the_map():
    from lineare.app.dashboards.memory_fails.details import percent, token_name
    from lineare.app.dashboards.memory_fails.view import MemoryView
    from tests.colour_cues import told_by_colour_alone

    session = Session()
    store = MemoryStore(task=TASK)
    session.stores[MemoryView.slug] = store
    with language("en"):
        view = MemoryView(store=store, session=session)
        names = view.trained.cells.data["variant"]
        cell = next(i for i, (v, x) in enumerate(zip(names, view.trained.cells.data["x"]))
                    if v == "gla" and x == 5)
        view.trained.clicked("indices", [], [cell])           # a tap on GLA's fifth answer
        found = store.forensics
        assert (found.variant, found.query) == ("gla", 5) == (store.probe, store.probe_query)
        assert view.trained.picked.data["x"] == [5]
        bars = view.forensics.pictures[1].bars.data
        np.testing.assert_array_equal(bars["top"], found.layers[1].share)
        np.testing.assert_array_equal(bars["kept"], found.layers[1].kept)
        assert "GLA, query 5" in view.forensics.status.object
        verdict = dict(faded='faded', crosstalk='cross-talk', right='neither', spread='neither')[found.verdicts[0].kind]
        assert f"Layer 1: {verdict}" in view.forensics.verdicts[0].elementare
        # told without colours: ✓ over the asked pair's bars, the largest others striped; the grid's squares ✓ / ✗
        for picture in view.forensics.pictures:
            marks = picture.asked.data["x"]                  # one ✓ over a key and its value, right after it
            assert 1 <= len(marks) <= len(found.right)
            assert all(any(abs(x - i) <= 0.5 for x in marks) for i in found.right)
            assert not told_by_colour_alone(picture.parts)
        others = set(found.verdicts[1].others) - set(found.right)
        assert others and {bars["hatch"][i] for i in others} == {"/"}
        assert not told_by_colour_alone(view.trained.grid)
        header, *rows = table_cells(view.forensics.tables[0].object)
        assert header == ["write", "share", "size", "let through", "similarity"]
        assert token_name(0) == "·" and token_name(17) == "k17" and token_name(203) == "v203"
        right = found.right + found.verdicts[0].others
        assert [row[0] for row in rows] == [f"{i} ({token_name(int(found.tokens[i]))})" for i in right]
        assert [row[1] for row in rows] == [percent(found.layers[0].share[i]) + "%" for i in right]
        assert [row[3] for row in rows] == [percent(found.layers[0].kept[i]) + "%" for i in right]
        assert (percent(0.123), percent(0.004), percent(-0.00004), percent(0)) == ("12", "0.4", "-0.004", "0")
        cells = view.capacity_map.picture.cells.data
        assert cells["accuracy"] == [float(a) for row in store.capacity_map["accuracy"] for a in row]
        assert view.capacity_map.alpha.disabled and view.capacity_map.beta.disabled     # the sum rule
        store.rule = "gated-delta"
        assert not view.capacity_map.alpha.disabled
        before = list(cells["accuracy"])
        store.alpha = 0.9
        assert view.capacity_map.picture.cells.data["accuracy"] != before


def table_cells(markup):
    """The cells of our HTML table, row by row (header first)."""
    return [re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row) for row in re.findall(r"<tr[^>]*>(.*?)</tr>", markup)]


# ------------------------------------------------------------------------------- the map

def plain_loop(rule, keys, values, alpha, beta):
    """The state of the capacity experiment in float64, one write at a time."""
    S = np.zeros((values.shape[1], keys.shape[1]))
    for k, v in zip(keys, values):
        if rule == "gated-delta":
            S = alpha * S
        if rule == "sum":
            S = S + np.outer(v, k)
        else:
            S = S + beta * np.outer(v - S @ k, k)
    return S


@pytest.mark.parametrize("rule,alpha,beta", [("sum", None, None), ("delta", None, 0.5), ("gated-delta", 0.8, 0.7)])
def test_write_and_read_takes_alpha_and_beta(rule, alpha, beta):
    data = tasks.capacity_data(num_pairs=20, d_k=8, keys="random", seed=4)
    values = mf.dense_values(20, 8, 4)
    readouts, S = write_and_read(rule, data.keys, values, data.queries, alpha=alpha, beta=beta)
    expected = plain_loop(rule, data.keys.numpy(), values.numpy(), alpha, beta)
    np.testing.assert_allclose(S.numpy(), expected, atol=1e-12)
    with pytest.raises(ValueError, match="no decay alpha"):
        write_and_read("delta", data.keys, values, data.queries, alpha=0.9)
    with pytest.raises(ValueError, match="no step size beta"):
        write_and_read("sum", data.keys, values, data.queries, beta=0.5)


@pytest.mark.parametrize("rule", mf.RULES)
def test_a_row_of_the_map_lies_on_the_page_s_curve(rule):
    """At the curve's own gates (β = 1, α = 0.99) the map's row d_k is the right chart's accuracy."""
    for d_k in (8, 16):
        pairs, accuracy = mf.map_row(rule, d_k, "random", 2, 0, mf.ALPHA, mf.BETA)
        curve = mf.curve(rule, d_k, "random", 2, 0)
        assert set(pairs) <= set(curve["pairs"]) and d_k in pairs and pairs[-1] == curve["pairs"][-1]
        at = [list(curve["pairs"]).index(N) for N in pairs]
        np.testing.assert_array_equal(accuracy, curve["accuracy"][at])


def test_alpha_and_beta_move_the_map_of_their_rules_only():
    base = mf.map_row("gated-delta", 16, "random", 0, 0, mf.ALPHA, mf.BETA)[1]
    forgetful = mf.map_row("gated-delta", 16, "random", 0, 0, 0.8, mf.BETA)[1]
    assert forgetful[-1] < base[-1] and forgetful.mean() < base.mean()          # forgetting loses pairs
    assert (mf.map_row("delta", 8, "random", 0, 0, 0.6, 0.4)[1] != mf.map_row("delta", 8, "random", 0, 0, 0.99,
                                                                               1.0)[1]).any()
    assert mf.accuracy_map("sum", "orthogonal", 0, 0, 0.6, 0.3) is mf.accuracy_map("sum", "orthogonal", 0, 0, 0.9, 1.0)
    found = mf.accuracy_map("sum", "orthogonal", 0, 0, 0.9, 1.0)
    assert found["d_k"] == list(mf.D_KS) and [p[-1] for p in found["pairs"]] == list(mf.D_KS)
    assert all((row == 1.0).all() for row in found["accuracy"])                 # perpendicular keys never mix


# ------------------------------------------------------------------------------- CSV

def test_the_page_exports_the_answer_taken_apart_and_the_map():
    from lineare.app.export import make_file, open_page

    page, notices = open_page(f"/memory-fails?task={TASK}&probe=rwkv6&probe_query=4&rule=delta&beta=0.5"
                              "&keys=orthogonal&lang=en")
    assert notices == []

    def read(name):
        return pd.read_csv(io.BytesIO(make_file(page, "csv", table=name).data), comment="#")

    found = mf.query_forensics("rwkv6", TASK, EXAMPLE, 4)
    table = read("forensics")
    for layer, parts in enumerate(found.layers):
        rows = table[table.layer == layer + 1]
        assert rows.position.tolist() == list(range(found.position + 1))
        for column, numbers in (("share", parts.share), ("size", parts.size), ("let_through", parts.kept),
                                ("key_similarity", parts.similarity)):
            assert np.array_equal(rows[column].to_numpy(), numbers), column
        assert rows[rows.right_pair].position.tolist() == found.right
    assert table.token_id.tolist()[:found.position + 1] == found.tokens[:found.position + 1].tolist()
    capacity = read("map")
    expected = mf.accuracy_map("delta", "orthogonal", 0, 0, mf.ALPHA, 0.5)
    for d_k, pairs, accuracy in zip(expected["d_k"], expected["pairs"], expected["accuracy"]):
        rows = capacity[capacity.d_k == d_k]
        assert rows.pairs.tolist() == pairs.tolist() and np.array_equal(rows.accuracy.to_numpy(), accuracy)
    trained = read("trained")
    assert len(trained) == 8 * len(page.store.trained.predicted)
    assert trained[trained.model == "rwkv6"].right.tolist() == page.store.trained.right("rwkv6").tolist()
    parts = read("query_parts")
    np.testing.assert_array_equal(parts.weight.to_numpy(), page.store.run.weights[page.store.query - 1])
