"""Where memory fails (app/dashboards/memory_fails/): its numbers against independent loops and the engine."""
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from lineare.app import checkpoints
from lineare.app.dashboards.memory_fails import model as mf
from lineare.app.dashboards.memory_fails.model import MemoryStore
from lineare.app.i18n import language
from lineare.app.session import Session
from lineare.engine import tasks
from lineare.engine.capacity import bound


def reference_weights(rule, keys, queries):
    """The state written with one-hot values by a plain float64 loop, read with every query: [N, W]."""
    W, d_k = keys.shape
    S = np.zeros((W, d_k))
    for w, k in enumerate(keys):
        if rule != "sum":
            S = S - np.outer(S @ k, k)                         # β = 1: erase what S says about k
        if rule == "gated-delta":
            S = 0.99 * S
        S = S + np.outer(np.eye(W)[w], k)
    return queries @ S.T


@pytest.mark.parametrize("rule", mf.RULES)
@pytest.mark.parametrize("keys", ["random", "correlated"])
def test_weights_and_read_out_against_a_plain_loop(rule, keys):
    run = mf.recall(rule, 16, keys, 29, 5, 3)                  # past d_k, with rewrites: every rule differs
    data = tasks.capacity_data(num_pairs=29, d_k=16, keys=keys, repeat=5, seed=3)
    expected = reference_weights(rule, data.keys.numpy(), data.queries.numpy())
    np.testing.assert_allclose(run.weights, expected, atol=1e-11)
    # the decomposition is exact: the read-out with dense values is Σ_i weight_i v_i
    for q in (0, 11, 28):
        weights, contributions = mf.decomposition(run, q)
        np.testing.assert_allclose(contributions.sum(0), run.readouts[q], atol=1e-11)
    # the answer is the stored value of largest cosine with the read-out
    cosines = run.readouts @ run.values.T / np.linalg.norm(run.readouts, axis=1, keepdims=True)
    np.testing.assert_array_equal(run.answers, cosines.argmax(1))
    np.testing.assert_array_equal(run.targets, data.targets.numpy())
    assert (run.key_of[:29] == np.arange(29)).all()


def test_sum_rule_weights_are_key_overlaps():
    run = mf.recall("sum", 8, "random", 20, 0, 1)
    data = tasks.capacity_data(num_pairs=20, d_k=8, keys="random", seed=1)
    gram = (data.queries @ data.keys.T).numpy()
    np.testing.assert_allclose(run.weights, gram, atol=1e-12)
    assert np.allclose(np.diag(run.weights), 1.0)


def test_orthogonal_keys_recall_everything_and_the_curve_meets_the_bound():
    run = mf.recall("sum", 16, "orthogonal", 16, 0, 0)
    assert run.right.all()
    np.testing.assert_allclose(run.readouts, run.values, atol=1e-12)
    curve = mf.curve("sum", 16, "orthogonal", 0, 0)
    assert curve["pairs"][-1] == 16
    np.testing.assert_allclose(curve["error"], 0.0, atol=1e-20)
    np.testing.assert_allclose(curve["accuracy"], 1.0)


@pytest.mark.parametrize("rule", mf.RULES)
def test_curve_bound_best_and_a_failing_memory(rule):
    curve = mf.curve(rule, 16, "random", 0, 0)
    N = curve["pairs"]
    assert N[0] == 1 and N[-1] == mf.MAX_PAIRS * 16 and 16 in N
    np.testing.assert_allclose(curve["bound"], [bound(int(n), 16) for n in N])
    # the least-squares read-out of these keys reaches the closed-form bound (keys in general position)
    np.testing.assert_allclose(curve["best"], curve["bound"], atol=1e-9)
    assert (curve["error"] >= curve["bound"] - 1e-12).all()
    assert curve["accuracy"][0] == 1.0 and curve["accuracy"][-1] < 0.6    # one pair is easy, 64 are not


def test_delta_rule_recalls_the_latest_number_where_the_sum_mixes():
    for rule, least in (("delta", 1.0), ("sum", 0.0)):
        run = mf.recall(rule, 32, "orthogonal", 8, 8, 0)           # 8 names, each written again
        rewritten = run.targets >= 8
        assert rewritten.all()
        if rule == "delta":
            assert run.right.all()
        else:    # the sum holds old + new: the weights of the old and the new write are both 1
            np.testing.assert_allclose(run.weights[np.arange(8), np.arange(8)], 1.0, atol=1e-12)
            np.testing.assert_allclose(run.weights[np.arange(8), run.targets], 1.0, atol=1e-12)


@pytest.mark.parametrize("keys", ["orthogonal", "random"])
def test_each_rewrite_changes_a_different_name_so_the_curve_starts_at_the_rewrites(keys):
    """R names get a new number, each a different one: the curve's points have N ≥ R (with fewer names the R
    rewrites would pile onto them, the error falling from 4 at N = 1 and the share right zig-zagging). With
    perpendicular keys the sum rule reads v_old + v_new for each changed name, a tie (a miss) and an error of ½
    on it: at every point the error is ½·R/N and the share right (N − R)/N, computed here; the delta rule
    replaces, every answer right."""
    R, d_k = 8, 16
    summed, corrected = mf.curve("sum", d_k, keys, R, 0), mf.curve("delta", d_k, keys, R, 0)
    N = summed["pairs"]
    assert N.min() == R and d_k in N and (np.diff(N) > 0).all()
    if keys == "orthogonal":
        np.testing.assert_allclose(summed["error"], 0.5 * R / N, atol=1e-9)
        np.testing.assert_allclose(summed["accuracy"], (N - R) / N, atol=1e-9)
        np.testing.assert_allclose(corrected["error"], 0.0, atol=1e-9)
        assert (corrected["accuracy"] == 1).all()
    for pairs in (3, 8, 16):                                     # the run itself: R changes, at most one a name
        run = mf.recall("sum", d_k, keys, pairs, R, 0)
        changed = run.targets[run.targets >= pairs]
        assert len(changed) == min(R, pairs) == len(set(run.key_of[changed]))
    assert mf.map_pairs(d_k, keys, R)[0] == R and d_k in mf.map_pairs(d_k, keys, R)


def test_intruders_push_towards_the_wrong_answer():
    run = mf.recall("sum", 16, "random", 24, 0, 0)
    wrong = np.flatnonzero(~run.right)
    assert len(wrong) > 0
    q = int(wrong[0])
    found = mf.intruders(run, q)
    target, rival = run.targets[q], run.answers[q]
    weights, contributions = mf.decomposition(run, q)
    harm = contributions @ (run.values[rival] - run.values[target])
    assert found and target not in found and all(harm[i] > 0 for i in found)
    assert harm[found[0]] == max(harm[i] for i in range(len(harm)) if i != target)


def open_store(session, args):
    """The store MemoryView.build opens from a link, and the notices it gave."""
    from lineare.app.dashboards.memory_fails.view import MemoryView

    store = MemoryView.open_store(session, args)
    return store, [message for source, message in session.notices if source == "url"]


def test_url_values_are_checked_and_fitted():
    args = lambda **values: {k: [v.encode()] for k, v in values.items()}
    with language("en"):
        store, notices = open_store(Session(), args(
            rule="<b>x</b>", dk="13", keys="orthogonal", pairs="999", query="-5", task="huge", example="abc"))
        assert (store.rule, store.d_k, store.task, store.example) == ("sum", 16, "128-32", 0)
        assert (store.pairs, store.query) == (16, 1)           # orthogonal keys: at most d_k of them
        assert len(notices) == 6                                # one per bad value
        assert "The link asks for a larger pairs than these settings allow: 16 is used." in notices
        assert not any("999" in n for n in notices)             # replaced by the notice of what is used
        # the example as the page counts it, from 1
        assert "The link's “example=abc” is not an example number: example 1 is shown." in notices
    with language("it"):
        store, notices = open_store(Session(), args(example="-3"))
    assert store.example == 0 and notices == [
        "Il link, con «example=-3», chiede l'esempio -2, ma gli esempi vanno da 1 a 10.000: viene mostrato "
        "l'esempio 1."]
    with language("en"):
        store, notices = open_store(Session(), args(dk="8", pairs="20", query="30"))
    assert (store.pairs, store.query) == (20, 20)
    assert notices == ["The link asks for a larger query than these settings allow: 20 is used."]
    with language("en"):
        store, notices = open_store(Session(), args(dk="8", rewrites="20"))      # at most d_k names change
    assert store.rewrites == 8 and notices == [
        "The link asks for a larger rewrites than these settings allow: 8 is used."]
    session = Session()
    store, notices = open_store(session, args(dk="64", pairs="200", query="150", rewrites="3"))
    assert notices == [] and (store.d_k, store.pairs, store.query, store.rewrites) == (64, 200, 150, 3)
    assert session.stores["memory-fails"] is store


def test_store_follows_its_settings():
    store = MemoryStore(d_k=8, pairs=30, query=25)
    first = store.run
    seen = []                                                 # what widgets and the URL are told
    store.param.watch(lambda *events: seen.extend((e.name, e.new) for e in events), ["pairs", "query"])
    store.keys = "orthogonal"                                 # at most 8 pairs now
    assert (store.pairs, store.query) == (8, 8) and len(store.run.targets) == 8
    assert sorted(seen) == [("pairs", 8), ("query", 8)]
    store.query = 30                                          # typed beyond N: lowered again, and said
    assert store.query == 8 and ("query", 8) == seen[-2]      # (with a server, on the next tick: last)
    store.param.update(keys="random", rule="delta", pairs=20)
    assert store.run is mf.recall("delta", 8, "random", 20, 0, 0) and store.run is not first
    assert store.curve["pairs"][-1] == 32


def test_view_draws_a_picked_query():
    from lineare.app.dashboards.memory_fails.pictures import RIGHT, WRONG
    from lineare.app.dashboards.memory_fails.view import MemoryView
    from tests.colour_cues import told_by_colour_alone

    session = Session()
    store = MemoryStore(d_k=16, pairs=24)
    session.stores[MemoryView.slug] = store
    with language("en"):
        view = MemoryView(store=store, session=session)
        wrong = store.first_failure()
        view.queries.picked("indices", [], [wrong - 1])        # a tap on the bar of that query
        assert store.query == wrong
        assert f"Query {wrong} is answered with the number of pair" in view.detail.object
        assert "<script" not in view.detail.object
        colours = view.weights.source.data["color"]
        assert colours[store.run.targets[wrong - 1]] == RIGHT
        assert colours[store.run.answers[wrong - 1]] == WRONG
        # and told without the colours: ✓ over the right pair's bar, ✗ over the pair that answered instead
        marks = {mark: list(source.data["x"]) for mark, source in view.weights.marks.items()}
        assert marks == {"✓": [store.run.targets[wrong - 1] + 1], "✗": [store.run.answers[wrong - 1] + 1]}
        assert not told_by_colour_alone(view.weights.figure) and not told_by_colour_alone(view.queries.figure)
        right = next(q for q in range(1, 25) if q != wrong and store.run.right[q - 1])
        view.queries.picked("indices", [], [right - 1])
        assert list(view.weights.marks["✗"].data["x"]) == [] and len(view.weights.marks["✓"].data["x"]) == 1
        image = view.readout_parts.source.data["image"][0]
        np.testing.assert_allclose(image[2] + image[3], image[0], atol=1e-12)   # right part + rest = read-out


def test_the_trained_example_counts_from_one_on_the_page_and_from_zero_in_the_link():
    """A student reads «Example 1» for the first example: the input and the status line count from 1, the
    store (and so the URL, and the links already shared) from 0."""
    from lineare.app.dashboards.memory_fails.view import MemoryView

    session = Session()
    store = MemoryStore()
    with language("en"):
        view = MemoryView(store=store, session=session)
        example = next(w for w in view.controls() if w.name == "Trained models: example")
        assert (store.example, example.value, example.start) == (0, 1, 1)
        assert "Example 1: 128 tokens, 32 pairs." in view.trained_status.object
        example.value = 3                                      # typed by the student
        assert store.example == 2 and "Example 3:" in view.trained_status.object
        store.example = 6                                      # from a link
        assert example.value == 7 and "Example 7:" in view.trained_status.object


@pytest.mark.parametrize("lang", ["it", "en"])
def test_the_held_out_bars_write_percentages_as_the_texts_do(lang):
    """76%, as every sentence of the catalogs writes a percentage (no space), in the page's number format."""
    from lineare.app.dashboards.memory_fails.pictures import TrainedPicture

    with language(lang):
        picture = TrainedPicture(mf.ACCURACY_EXAMPLES, lambda *_args: None)
        picture.show_accuracy({"softmax": 0.755, "linear": 0.0625})
    assert sorted(picture.bars.data["label"]) == ["6%", "76%"]


@pytest.mark.parametrize("queries", [8, 64])
def test_the_trained_squares_say_right_and_wrong_without_their_colours(queries):
    """Up to 40 questions each square carries its ✓ or ✗; past them a wrong square is striped (and a right one
    plain): either way right and wrong differ by more than blue and orange-red."""
    from lineare.app.dashboards.memory_fails.pictures import RIGHT, WRONG_INK, TrainedPicture
    from tests.colour_cues import told_by_colour_alone

    expected = np.arange(queries) + 128
    predicted = {v: np.where(np.arange(queries) % (i + 2) == 0, 0, expected) for i, v in enumerate(("gla", "linear"))}
    example = SimpleNamespace(positions=np.arange(queries), expected=expected, predicted=predicted,
                              tokens=np.arange(queries) + 1)
    with language("en"):
        picture = TrainedPicture(mf.ACCURACY_EXAMPLES, lambda *_args: None)
        picture.show(example)
    cells = picture.cells.data
    assert set(cells["color"]) == {RIGHT, WRONG_INK}
    marks = {colour: {(mark, hatch) for mark, hatch, c in zip(cells["mark"], cells["hatch"], cells["color"])
                      if c == colour} for colour in (RIGHT, WRONG_INK)}
    assert marks == ({RIGHT: {("✓", " ")}, WRONG_INK: {("✗", " ")}} if queries <= picture.MARKED else
                     {RIGHT: {("", " ")}, WRONG_INK: {("", "/")}})
    assert not told_by_colour_alone(picture.grid)


def test_capacity_charts_draw_the_store():
    """The curves hold the store's curve, the markers its d_k and its chosen N, and follow them."""
    from lineare.app.dashboards.memory_fails.view import MemoryView

    session = Session()
    store = MemoryStore(d_k=16, pairs=24, rule="delta")
    with language("en"):
        charts = MemoryView(store=store, session=session).charts
        store.param.update(d_k=8, pairs=20)
    np.testing.assert_array_equal(charts.errors.sources["error"].data["y"], store.curve["error"])
    np.testing.assert_array_equal(charts.errors.sources["bound"].data["y"], store.curve["bound"])
    np.testing.assert_array_equal(charts.accuracy.sources["accuracy"].data["x"], store.curve["pairs"])
    assert [(d_k.location, chosen.location) for d_k, chosen in charts.markers] == [(8, 20), (8, 20)]
    assert charts.errors.figure.x_range.end == pytest.approx(32 * 1.03)
    store.pairs = 12                                          # the chosen N moves with the slider
    assert [chosen.location for _d_k, chosen in charts.markers] == [12, 12]


def test_the_model_imports_without_panel_or_bokeh():
    code = ("import sys; import app.dashboards.memory_fails.model; "
            "assert 'panel' not in sys.modules and 'bokeh' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_held_out_accuracy_is_counted_once_and_follows_the_task():
    store = MemoryStore(task="64-8")
    assert store.accuracy == mf.HELD_OUT.get("64-8") and not store.counting
    assert set(store.accuracy) == set(mf.VARIANTS)
    store.task = "64-16"
    assert store.accuracy is mf.HELD_OUT.get("64-16") and not store.counting
    assert MemoryStore(task="64-16").accuracy is store.accuracy      # shared, not counted again


def test_trained_models_query_by_query():
    example = mf.trained_example("64-16", 3)
    inputs, targets = tasks.mqar(vocab_size=256, seq_len=64, num_pairs=16, num_examples=1,
                                 seed=mf.EXAMPLE_SEED + 3)
    positions = torch.nonzero(targets[0] != tasks.IGNORE).flatten()
    assert len(positions) == 16 and example.missing == {}
    np.testing.assert_array_equal(example.expected, targets[0, positions].numpy())
    for variant in ("deltanet", "softmax", "linear"):
        model, _sidecar = checkpoints.load_model(variant)
        with torch.no_grad():
            expected = model(inputs)[0, positions].argmax(-1).numpy()
        np.testing.assert_array_equal(example.predicted[variant], expected)
    assert example.right("softmax").mean() >= 0.9          # trained at this size: it recalls


def test_trained_accuracy_matches_a_direct_count():
    accuracy = mf.trained_accuracy("64-8")
    inputs, targets = mf.example_inputs("64-8", mf.ACCURACY_EXAMPLES, mf.ACCURACY_SEED)
    model, _sidecar = checkpoints.load_model("gla")
    with torch.no_grad():
        predicted = model(inputs).argmax(-1)
    scored = targets != tasks.IGNORE
    assert accuracy["gla"] == pytest.approx(float((predicted[scored] == targets[scored]).double().mean()))
    assert set(accuracy) == set(mf.VARIANTS)


def test_a_missing_checkpoint_is_reported(monkeypatch, tmp_path):
    monkeypatch.setattr(checkpoints, "FOLDER", tmp_path)
    monkeypatch.setattr(checkpoints, "_loaded", {})
    mf.trained_example.cache_clear()
    try:
        example = mf.trained_example("64-8", 0)
        assert set(example.missing) == set(mf.VARIANTS) and example.predicted == {}
        assert "no checkpoint" in example.missing["gla"]
    finally:
        mf.trained_example.cache_clear()


@pytest.mark.parametrize("rule", mf.RULES)
def test_the_curve_text_keeps_its_two_tests_apart_and_its_estimate_to_the_sum_rule(rule):
    """The error (one-hot values) and the accuracy (dense values) are two measurements, each worded as such,
    with the store's numbers at N = d_k; the bound is a linear read-out's; ≈(N−1)/d_k only for the sum rule."""
    from lineare.app.dashboards.memory_fails.view import MemoryView
    from lineare.app.i18n import format_number

    session = Session()
    store = MemoryStore(d_k=16, rule=rule)
    with language("en"):
        view = MemoryView(store=store, session=session)
        legend = [item.label.value for item in view.charts.errors.figure.legend[0].items]
    at = list(store.curve["pairs"]).index(16)
    error = format_number(round(float(store.curve["error"][at]), 2), 2)
    accuracy = format_number(round(100 * float(store.curve["accuracy"][at])), 0)
    plain, formulas = view.curve_text.elementare, view.curve_text.superiore
    assert f"with 16 pairs its error is {error}." in plain
    assert f"with 16 pairs, {accuracy}% of the answers are right" in plain
    assert f"error {error} with one-hot values; {accuracy}% right with dense values" in formulas
    assert "**linear** read-out" in formulas and any("linear read-out" in label for label in legend)
    assert ("(N-1)/d_k" in formulas) == (rule == "sum")


def test_a_new_seed_is_computed_off_the_event_loop(monkeypatch):
    """On a server, a new seed's curve and run go to the CURVES worker (seconds for d_k = 64, which
    stopped every other session's knobs); the store takes them when they come back."""
    asked = []
    worker = SimpleNamespace(submit=lambda compute, done, on_error: asked.append((compute, done)))
    monkeypatch.setattr(mf, "CURVES", worker)
    store = mf.MemoryStore(d_k=8, pairs=4)
    before = store.curve
    store.seed = 3
    assert len(asked) == 1 and store.curve is before                       # nothing computed on the loop
    compute, done = asked[0]
    done(compute())
    assert store.curve is mf.curve("sum", 8, "random", 0, 3) and store.run is mf.recall("sum", 8, "random", 4, 0, 3)
