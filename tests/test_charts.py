"""lineare.charts: HoloViews views of the engine's records and sweeps hold the engine's own numbers."""
import re

import numpy as np
import pytest
import torch

import holoviews as hv
from lineare.engine import capacity, stepping
from lineare import charts


@pytest.fixture(scope="module")
def delta_run():
    torch.manual_seed(0)
    T, H, d_k, d_v = 6, 2, 4, 3
    q, k = torch.randn(1, T, H, d_k), torch.nn.functional.normalize(torch.randn(1, T, H, d_k), dim=-1)
    v, beta = torch.randn(1, T, H, d_v), torch.rand(1, T, H)
    _o, _state, records = stepping.run("deltanet", q, k, v, beta=beta)
    return records


def test_the_holomap_has_one_frame_per_token_and_head_equal_to_the_records_state(delta_run):
    states = charts.states(delta_run)
    assert isinstance(states, hv.HoloMap) and states.kdims == ["token", "layer", "head"]
    assert sorted(states.keys()) == [(t, 0, h) for t in range(6) for h in range(2)]
    for (t, _layer, h), image in states.items():
        assert isinstance(image, hv.Image)
        assert np.array_equal(image.dimension_values(2, flat=False), delta_run[t].state[0, h])   # [d_v, d_k]
    largest = float(np.abs(np.stack([r.state for r in delta_run])).max())      # one colour range for the run
    assert {image.opts.get().kwargs["clim"] for image in states.values()} == {(-largest, largest)}


def test_nested_records_give_a_layer_key_and_softmax_is_refused(delta_run):
    assert sorted(charts.states([delta_run, delta_run[:2]]).keys())[-1] == (5, 0, 1)
    assert (1, 1, 0) in charts.states([delta_run, delta_run[:2]])
    q = torch.randn(1, 3, 1, 4)
    _o, _s, softmax = stepping.run("softmax", q, q, q)
    with pytest.raises(ValueError, match="no fixed-size state"):
        charts.states(softmax)


def test_gates_and_corrections_are_the_records_numbers_keyed_by_token(delta_run):
    curves = {curve.label: curve for curve in charts.gates(delta_run)}
    assert set(curves) == {"β, head 1", "β, head 2"}
    assert np.array_equal(curves["β, head 2"].dimension_values("token"), np.arange(6))
    assert np.allclose(curves["β, head 2"].dimension_values(1), [r.beta[0, 1] for r in delta_run])
    errors = {curve.label: curve for curve in charts.corrections(delta_run)}
    expected = [np.linalg.norm(r.target[0, 0] - r.prediction[0, 0]) for r in delta_run]
    assert np.allclose(errors["‖v − S k‖ (error), head 1"].dimension_values(1), expected)


def test_sweeps_are_the_capacity_experiments_numbers():
    rows = capacity.capacity("delta", d_k=8, pairs=[4, 8, 16])
    layout = charts.capacity_curve(rows)
    errors = {c.label: c for c in layout[0]}
    assert np.allclose(errors["this memory's read-out"].dimension_values(1), [r["error"] for r in rows])
    assert np.allclose(layout[1].dimension_values(1), [r["accuracy"] for r in rows])
    heat = charts.capacity_map("delta", d_ks=[4, 8], pairs=[4, 8, 16])
    assert isinstance(heat, hv.HeatMap)
    cells = {(a, b): c for a, b, c in zip(*(heat.dimension_values(i) for i in range(3)))}
    assert cells[8, 16] == rows[2]["accuracy"] and len(cells) == 6
    gated = charts.recall_map("gated-delta", d_k=8, pairs=6, alphas=[0.5, 1.0], betas=[0.5, 1.0])
    assert isinstance(gated, hv.HeatMap) and len(gated) == 4
    kept_all = gated.data[(gated.data["α"] == 1.0) & (gated.data["β"] == 1.0)]["accuracy"].iloc[0]
    assert kept_all == capacity.capacity("delta", d_k=8, pairs=[6])[0]["accuracy"]    # α = 1: the delta rule
    assert isinstance(charts.recall_map("delta", d_k=8, pairs=6, betas=[0.1, 1.0]), hv.Curve)


def test_a_saved_holomap_is_one_html_file_with_its_slider_and_bokeh_inline(delta_run, tmp_path):
    path = charts.save(charts.states(delta_run[:3]), tmp_path / "state.html")
    text = path.read_text()
    assert "cdn.bokeh.org" not in text and "Bokeh" in text                     # the JavaScript is in the file
    assert not re.findall(r"https?://[^\"' ]+\.css", text)                     # and every stylesheet
    assert "DiscreteSlider" in text or "Slider" in text


def test_a_per_channel_decay_is_drawn_as_its_mean_over_the_key_channels_per_head():
    """GLA's decay is one number per key channel ([B, H, d_k] in each record): one curve per head, each token's
    point the mean of that head's d_k channels, read here straight from the records."""
    torch.manual_seed(1)
    T, H, d_k, d_v = 5, 2, 4, 3
    q, k, v = torch.randn(1, T, H, d_k), torch.randn(1, T, H, d_k), torch.randn(1, T, H, d_v)
    g = -torch.rand(1, T, H, d_k) * torch.tensor([0.1, 0.5, 1.0, 3.0])               # a different decay per channel
    _o, _state, records = stepping.run("gla", q, k, v, g=g)
    assert records[0].decay.shape == (1, H, d_k)
    curves = {curve.label: curve for curve in charts.gates(records)}
    assert set(curves) == {f"decay (channel mean), head {h + 1}" for h in range(H)}
    for h in range(H):
        expected = [sum(float(r.decay[0, h, c]) for c in range(d_k)) / d_k for r in records]
        assert np.allclose(curves[f"decay (channel mean), head {h + 1}"].dimension_values(1), expected)
        assert np.allclose(expected, np.exp(g[0, :, h].numpy()).mean(-1))                  # the records' decay is e^g
