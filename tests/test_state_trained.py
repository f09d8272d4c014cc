"""Trained mode of "The state fills up": the store's records against the model run directly, the URL,
the checkpoint cache, and what the view shows when a checkpoint is missing or damaged."""
import shutil
import threading

import numpy as np
import pytest
import torch

from lineare.app import checkpoints
from lineare.app.dashboards.state_fills_up.model import MECHANISM_PAIRS, TRAINED_QUANTILE, StateStore, token_label
from lineare.app.dashboards.state_fills_up.texts import failure_message
from lineare.app.dashboards.state_fills_up.view import StateView, read_store_query
from lineare.app.i18n import language
from lineare.app.components.plots import nice_limit, quantize
from lineare.app.session import Session
from lineare.app.urlstate import serialize
from lineare.engine import checkpoint, tasks
from lineare.engine.evaluate import evaluate

CHECKPOINTS = checkpoints.FOLDER


def args(**values):
    return {k: [str(v).encode()] for k, v in values.items()}


def direct(variant, pairs, example):
    """The same example through the checkpoint, loaded and stepped here without the app."""
    model, _sidecar = checkpoint.load(CHECKPOINTS / f"{variant}.safetensors")
    inputs, targets = tasks.mqar(vocab_size=256, seq_len=64, num_pairs=pairs, num_examples=1, seed=example)
    cache, logits, records = None, [], []
    for t in range(inputs.shape[1]):
        step_logits, cache, layer_records = model.step(inputs[:, t], cache)
        logits.append(step_logits[0])
        records.append(layer_records)
    return model, inputs, targets, torch.stack(logits), records


@pytest.mark.parametrize("variant", ["deltanet", "gla", "softmax"])
def test_records_are_the_models_own(variant):
    store = StateStore(mode="trained", variant=variant, pairs=8, example=5)
    run = store.trained
    model, inputs, targets, logits, records = direct(variant, 8, 5)
    assert np.array_equal(run.inputs, inputs[0].numpy()) and np.array_equal(run.targets, targets[0].numpy())
    assert len(run.layers) == model.config.n_layers == 2 and all(len(layer) == 64 for layer in run.layers)
    np.testing.assert_allclose(run.logits, logits.numpy(), rtol=0, atol=1e-6)
    with torch.no_grad():
        parallel = model(inputs)[0].numpy()                                     # chunked form, [T, V]
    np.testing.assert_allclose(run.logits, parallel, rtol=0, atol=1e-3)
    for l in range(2):
        for t in (0, 17, 63):
            mine, theirs = run.layers[l][t], records[t][l]
            if variant == "softmax":
                np.testing.assert_allclose(mine.extras["attention"], theirs.extras["attention"], atol=1e-7)
            else:
                np.testing.assert_allclose(mine.state, theirs.state, atol=1e-7)
                np.testing.assert_allclose(mine.write, theirs.write, atol=1e-7)
            np.testing.assert_allclose(mine.output, theirs.output, atol=1e-7)


def test_predictions_and_marks_match_the_evaluation():
    # linear attention with 16 pairs, example 1: the engine's evaluation finds 3 wrong answers
    store = StateStore(mode="trained", variant="linear", pairs=16, example=1)
    run = store.trained
    model, inputs, targets, _logits, _records = direct("linear", 16, 1)
    queries = evaluate(model, inputs, targets)["queries"][0]
    asked = [t for t in range(64) if run.asked(t)]
    assert asked == queries["positions"] and len(asked) == 16
    correct = [bool(run.predictions[t] == run.targets[t]) for t in asked]
    assert correct == queries["correct"] and not all(correct)

    view = StateView(store=store, session=Session())
    strip = view.strip.html                      # drawn once; the browser hides the marks of tokens not reached
    assert strip.count("✓") == sum(correct) and strip.count("✗") == len(correct) - sum(correct)
    assert strip.count('class="tok') == 64 and strip.count(" ask ") + strip.count(' ask"') == 16
    assert [f'data-step="{i}"' in strip for i in (0, 63)] == [True, True]
    predictions = view.prediction.frames                           # one text per token
    assert len(predictions) == 64 and f"{sum(correct)} of 16" in predictions[63]
    first = asked[0]
    assert "Nothing is asked" in predictions[first - 1]
    expected = token_label(int(run.targets[first]), 256)
    assert expected in predictions[first] and view.player.length == 64


def test_the_view_draws_the_layer_it_is_asked_for():
    store = StateStore(mode="trained", variant="deltanet", pairs=8, example=2, layer="2")
    view = StateView(store=store, session=Session())
    assert [l for l, _panel in view.shown_panels] == [1]
    picture = view.shown_panels[0][1].pictures["state"]
    states = np.abs([r.state for r in store.trained.layers[1]])                 # fixed over the run
    limit = np.percentile(states, TRAINED_QUANTILE)
    assert picture.scale.high == pytest.approx(nice_limit(limit))       # rounded up to a round number
    assert limit <= picture.scale.high <= 1.25 * limit < states.max()    # a few outliers saturate
    frames = picture.run_codes()                         # the run: each frame's change, added up as the browser does
    assert len(frames) == 64
    np.testing.assert_array_equal(frames[20], quantize(store.trained.layers[1][20].state[0, 0], picture.scale.high))
    panel = view.shown_panels[0][1]
    assert set(panel.cards) == {"state", "change", "readout"}        # the second row: when scrolled to
    panel.rest.section()
    assert {"state", "change", "spectrum", "removed", "write", "delta", "readout"} <= set(panel.cards)
    store.layer = "both"
    assert [l for l, _panel in view.shown_panels] == [0, 1]
    frames = picture.run_codes()
    np.testing.assert_array_equal(frames[21], quantize(store.trained.layers[1][21].state[0, 0], picture.scale.high))


def test_explanations_show_under_the_first_panel_only():
    store = StateStore(mode="trained", variant="deltanet", pairs=8, example=2, layer="both")
    view = StateView(store=store, session=Session())
    first, second = [panel for _l, panel in view.shown_panels]

    def shown(panel):
        return {name: explanation.__panel__().visible for name, explanation in panel.explanations.items()}
    assert set(shown(first)) == {"state", "change", "readout"} and all(shown(first).values())
    assert set(shown(second)) == {"state", "change", "readout"} and not any(shown(second).values())
    second.rest.section()                             # the second row, made later, follows its panel's notes
    first.rest.section()
    assert len(shown(second)) == len(shown(first)) == 7
    assert not any(shown(second).values()) and all(shown(first).values())
    store.layer = "2"                                 # the second layer alone: its panel is now the first
    assert [panel for _l, panel in view.shown_panels] == [second] and all(shown(second).values())


def test_mechanism_knobs_hide_in_trained_mode():
    store = StateStore(mode="trained", variant="gated_deltanet")
    view = StateView(store=store, session=Session())
    controls = view.controls()
    names = {getattr(c, "name", None): c.visible for c in controls}
    hidden = [names[n] for n in ("Forget α (1 keeps everything)", "Correct β (1 replaces fully)",
                                 "Random vectors (seed)", "Heads", "Sequence")]
    assert hidden == [False] * 5 and names["Layer"] and names["Pairs"] and names["Example number"]
    store.mode = "mechanism"
    names = {getattr(c, "name", None): c.visible for c in controls}
    assert names["Forget α (1 keeps everything)"] and names["Correct β (1 replaces fully)"] and not names["Layer"]
    assert view.mechanism_area.visible and not view.trained_area.visible


def test_url_round_trip():
    values, notices = read_store_query(args(mode="trained", variant="rwkv7", layer="2", pairs=12, example=77))
    assert notices == [] and values == {"mode": "trained", "variant": "rwkv7", "layer": "2", "pairs": 12,
                                        "example": 77}
    store = StateStore(**values)
    url = {key: [serialize(getattr(store, name)).encode()] for name, key in StateStore.URL.items()}
    again, notices = read_store_query(url)
    assert notices == [] and {name: again[name] for name in values} == values
    assert store.trained.key == ("rwkv7", 12, 77)


def test_malformed_url_values_give_defaults_and_notices():
    with language("en"):
        values, notices = read_store_query(args(mode="zzz", layer="9", pairs=999))
        assert values["mode"] == "mechanism" and values["layer"] == "both"
        assert values["pairs"] == MECHANISM_PAIRS                      # mechanism mode keeps to 8 pairs
        assert len(notices) == 3 and "“mode”" in notices[0] and "“layer”" in notices[1]
        assert "1 to 8" in notices[2]
        values, notices = read_store_query(args(mode="trained", pairs=999, example=-4))
    assert values["pairs"] == 16 and values["example"] == 0 and len(notices) == 2
    assert "1 to 16" in notices[1]
    # the example as the page counts it, from 1 (the URL's value counts from 0)
    assert notices[0] == ("The link's “example=-4” asks for example -3, but the examples go from 1 to 10,000: "
                          "example 1 is shown.")
    with language("it"):
        _values, notices = read_store_query(args(mode="trained", example=12000))
    assert notices == ["Il link, con «example=12000», chiede l'esempio 12.001, ma gli esempi vanno da 1 a 10.000: "
                       "viene mostrato l'esempio 10.000."]
    store = StateStore(mode="trained", pairs=16)
    store.mode = "mechanism"                                        # back to mechanism: clamped there too
    assert store.pairs == MECHANISM_PAIRS and store.result is not None


def test_a_missing_checkpoint_gives_a_notice(monkeypatch, tmp_path):
    monkeypatch.setattr(checkpoints, "FOLDER", tmp_path)
    with pytest.raises(FileNotFoundError, match="deltanet.safetensors"):
        checkpoints.load_model("deltanet")
    store = StateStore(mode="trained", variant="deltanet", pairs=8)
    assert store.trained is None and store.failure == ("missing", "deltanet.safetensors")
    assert store.length() == 1
    session = Session(language="en")
    view = StateView(store=store, session=session)
    assert view.strip.html == "" and view.strip.frames == [""] and view.trained_area.objects == []
    with language("it"):
        message = failure_message(store.failure)
    assert "deltanet.safetensors" in message and "manca" in message
    assert [m for source, m in session.notices if source == "checkpoint"] == [failure_message(store.failure)]
    store.mode = "mechanism"                                         # the notice goes with the mode
    assert [m for source, m in session.notices if source == "checkpoint"] == []


def test_a_damaged_checkpoint_gives_a_notice(monkeypatch, tmp_path):
    for name in ("deltanet.safetensors", "deltanet.json", "MANIFEST.json"):
        shutil.copy(CHECKPOINTS / name, tmp_path / name)
    weights = bytearray((tmp_path / "deltanet.safetensors").read_bytes())
    weights[-1] ^= 0xFF
    (tmp_path / "deltanet.safetensors").write_bytes(bytes(weights))
    monkeypatch.setattr(checkpoints, "FOLDER", tmp_path)
    with pytest.raises(ValueError, match="checksum"):
        checkpoints.load_model("deltanet")
    store = StateStore(mode="trained", variant="deltanet")
    assert store.trained is None and store.failure == ("invalid", "deltanet.safetensors")
    with pytest.raises(ValueError, match="no checkpoint"):
        checkpoints.load_model("nope")


def test_checkpoints_load_once_per_process(monkeypatch, tmp_path):
    for name in ("gla.safetensors", "gla.json", "MANIFEST.json"):
        shutil.copy(CHECKPOINTS / name, tmp_path / name)
    monkeypatch.setattr(checkpoints, "FOLDER", tmp_path)
    calls, real = [], checkpoint.load
    monkeypatch.setattr(checkpoint, "load", lambda path: calls.append(path) or real(path))
    got = []
    threads = [threading.Thread(target=lambda: got.append(checkpoints.load_model("gla"))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1 and all(g is got[0] for g in got)
    assert checkpoints.load_model("gla") is got[0] and len(calls) == 1
