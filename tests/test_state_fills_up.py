"""The model of "The state fills up" with no server: it imports without Panel, and the numbers of
each head's pictures (`head_frame`) are the engine's records, read the way the captions say."""
import subprocess
import sys

import numpy as np
import pytest

from app import mechanism
from app.dashboards.state_fills_up.model import StateStore, head_frame, limits_of
from app.variants import REGISTRY


def test_the_model_imports_without_panel():
    code = ("import sys; import app.dashboards.state_fills_up.model; "
            "assert 'panel' not in sys.modules and 'bokeh' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("variant", [v for v in REGISTRY if REGISTRY[v].fixed_state])
def test_a_head_frame_is_the_records_own(variant):
    store = StateStore(variant=variant, heads=2, preset="overwrite")
    records = store.result.records
    for head in range(2):
        for t in (0, 2, len(records) - 1):
            frame, record = head_frame(variant, records, head, t), records[t]
            np.testing.assert_array_equal(frame.state, record.state[0, head])
            np.testing.assert_array_equal(frame.write, record.write[0, head])
            np.testing.assert_array_equal(frame.output, record.output[0, head][None, :])
            assert frame.kept.shape == (mechanism.D_K,) and frame.cache is None
            assert np.all(frame.kept < 1) if REGISTRY[variant].forgets else np.all(frame.kept == 1)
            assert (frame.correction is not None) == REGISTRY[variant].corrects
            assert (frame.beta is not None) == REGISTRY[variant].corrects


@pytest.mark.parametrize("beta", [1.0, 0.4])
def test_rwkv7_beta_is_the_knob(beta):
    # RWKV-7 has no β of its own in the record: a = −κ̂, b = β κ̂, so −a·b gives the knob back on a write
    store = StateStore(variant="rwkv7", beta=beta)
    writes = [t for t, token in enumerate(store.result.tokens) if token.kind == "write"]
    assert all(head_frame("rwkv7", store.result.records, 0, t).beta == pytest.approx(beta) for t in writes)


def test_softmax_frames_show_the_cache_so_far():
    store = StateStore(variant="softmax")
    records = store.result.records
    frame = head_frame("softmax", records, 0, 3)
    assert frame.state is None and frame.correction is None
    assert frame.cache.shape == (len(records), mechanism.D_V)
    np.testing.assert_array_equal(frame.cache[:4], [r.target[0, 0] for r in records[:4]])
    assert np.isnan(frame.cache[4:]).all()
    assert frame.attention[:4].sum() == pytest.approx(1) and not frame.attention[4:].any()


def test_colour_ranges_are_fixed_per_run():
    store = StateStore(variant="deltanet")
    peak = max(np.abs(r.state).max() for r in store.result.records)
    assert store.limits == limits_of(store.result.records) and store.limits["state"] == pytest.approx(peak)
    store.variant = "gla"
    assert store.limits == limits_of(store.result.records)
