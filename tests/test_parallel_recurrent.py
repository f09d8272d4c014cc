"""Dashboard "Parallel = recurrent" without a browser: its numbers against the engine and closed forms."""
import math
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from lineare.app import work
from lineare.app.dashboards.parallel_recurrent import model as pr
from lineare.app.dashboards.parallel_recurrent.model import (FIXED_STATE, FormsStore, compare, fit_slope, make_inputs,
                                                     mask_of, measure_costs, relative_rms)
from lineare.app.dashboards.parallel_recurrent.pictures import scientific
from lineare.app.i18n import language
from lineare.app.urlstate import read_query
from lineare.app.variants import REGISTRY
from lineare.engine.ops import FORMS, forward


def args(**values):
    return {k: [v.encode()] for k, v in values.items()}


# ------------------------------------------------------------------------- the comparison

@pytest.mark.parametrize("variant", FIXED_STATE)
def test_the_three_forms_agree_and_the_errors_are_the_engines(variant):
    T, C = 40, 16                                             # T is not a multiple of the chunk size
    comparison = compare(variant, T, C, seed=3, alpha=0.8)
    q, k, v, gates = make_inputs(variant, T, 3, 0.8, torch.float64)
    with torch.inference_mode():
        o = {form: forward(variant, q, k, v, form=form, chunk_size=C, **gates)[0][0, :, 0].numpy()
             for form in pr.FORMS}
    for a, b in pr.PAIRS:
        largest, relative = comparison.errors["float64", (a, b)]
        assert largest == pytest.approx(np.abs(o[a] - o[b]).max(), rel=1e-6, abs=1e-18)
        assert relative == pytest.approx(relative_rms(o[b], o[a]), rel=1e-6, abs=1e-18)
        assert relative <= 1e-10                              # the engine's float64 promise
        assert comparison.errors["float32", (a, b)][1] <= 1e-5
    assert comparison.outputs["recurrent"].shape == (T, pr.D)
    assert comparison.outputs["recurrent"].dtype == np.float32
    assert comparison.peak == pytest.approx(max(np.abs(x).max() for x in comparison.outputs.values()))


def test_relative_rms_closed_form():
    assert relative_rms([1.0, 2.0], [1.0, 1.0]) == pytest.approx(math.sqrt(0.5))
    assert relative_rms([3.0, 4.0], [3.0, 4.0]) == 0.0


def test_float32_and_float64_see_the_same_input():
    q32, k32, v32, g32 = make_inputs("gla", 20, 7, 0.9, torch.float32)
    q64, k64, v64, g64 = make_inputs("gla", 20, 7, 0.9, torch.float64)
    assert torch.equal(q32, q64.float()) and torch.equal(v32, v64.float())
    assert torch.allclose(g32["g"].double(), g64["g"], atol=1e-7)
    q, k, _v, _g = make_inputs("deltanet", 20, 7, 1.0)
    assert torch.allclose(k.norm(dim=-1), torch.ones(1, 20, 1, dtype=torch.float64))    # L2-normalized
    assert not torch.equal(make_inputs("gla", 20, 8, 0.9)[0], q64)                       # the seed matters


# ------------------------------------------------------------------------------ the mask

def powers(base, T):
    t, j = np.arange(T)[:, None], np.arange(T)[None, :]
    return np.where(j <= t, base ** np.maximum(t - j, 0).astype(float), np.nan)


def test_mask_closed_forms():
    T = 12
    same = lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6, equal_nan=True)   # gates are float32
    for variant, alpha in (("retnet", 0.97), ("mamba2", 0.8), ("gated_deltanet", 0.6)):
        _q, _k, _v, gates = make_inputs(variant, T, 0, alpha)
        same(mask_of(variant, gates, T), powers(alpha, T))                   # L_tj = α^(t−j)
    for variant in ("linear", "deltanet"):
        _q, _k, _v, gates = make_inputs(variant, T, 0, 1.0)
        same(mask_of(variant, gates, T), powers(1.0, T))                     # the causal mask
    spread = np.linspace(0.25, 1.75, pr.D)                                    # make_gates' per-channel spread
    for channel in (0, 9, 15):
        _q, _k, _v, gates = make_inputs("gla", T, 0, 0.9)
        same(mask_of("gla", gates, T, channel), powers(0.9 ** spread[channel], T))
    _q, _k, _v, gates = make_inputs("mlstm", T, 0, 0.95)
    same(mask_of("mlstm", gates, T), powers(0.95, T))                         # σ(logit α) = α


def test_rwkv6_mask_reads_before_writing():
    T = 10
    _q, _k, _v, gates = make_inputs("rwkv6", T, 0, 0.9)
    mask = mask_of("rwkv6", gates, T, channel=4)
    w = 0.9 ** np.linspace(0.25, 1.75, pr.D)[4]
    t, j = np.arange(T)[:, None], np.arange(T)[None, :]
    expected = np.where(j < t, w ** np.maximum(t - 1 - j, 0).astype(float), np.nan)
    np.fill_diagonal(expected, float(gates["u"][0, 4]))                       # the bonus of the current token
    np.testing.assert_allclose(mask, expected, rtol=1e-6, equal_nan=True)


@pytest.mark.parametrize("variant", ["linear", "retnet", "mamba2"])
def test_the_mask_is_what_the_parallel_form_computes(variant):
    """o = (Q Kᵀ ⊙ L) V, with q scaled by d_k^-½, for the variants with one decay per token."""
    T = 30
    q, k, v, gates = make_inputs(variant, T, 5, REGISTRY[variant].alpha)
    L = np.nan_to_num(mask_of(variant, gates, T), nan=0.0)
    Q, K, V = (x[0, :, 0].numpy() for x in (q, k, v))
    expected = ((Q * pr.D ** -0.5) @ K.T * L) @ V
    o, _state = forward(variant, q, k, v, form="parallel", **gates)
    np.testing.assert_allclose(o[0, :, 0].numpy(), expected, rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------------------ the cost

def test_fit_slope_of_power_laws():
    assert fit_slope([(T, 3e-6 * T ** 2) for T in (16, 64, 256, 1024)]) == pytest.approx(2.0)
    assert fit_slope([(T, 1e-5 * T) for T in (256, 512, 1024)]) == pytest.approx(1.0)
    assert fit_slope([(T, 1e-5 * T) for T in (32, 64, 128)]) is None          # too short to say
    assert fit_slope([(T, 1e-5 * T) for T in (32, 64, 128)], shortest=0) == pytest.approx(1.0)
    # only the longest lengths count: a flat start (fixed overheads) does not bend the slope
    flat_then_linear = [(16, 1e-3), (32, 1e-3), (64, 1e-3), (512, 0.01), (1024, 0.02), (2048, 0.04)]
    assert fit_slope(flat_then_linear) == pytest.approx(1.0)
    assert fit_slope([(16, 1e-3)]) is None and fit_slope([]) is None


def test_measure_costs_is_bounded_and_follows_its_limits():
    lengths, limits = (8, 16, 32, 64, 128), {"recurrent": 32, "parallel": 64, "chunked": 128}
    threads = torch.get_num_threads()
    started = time.perf_counter()
    curve = measure_costs("gla", 8, budget_s=0.3, lengths=lengths, max_length=limits)
    assert time.perf_counter() - started < 3.0
    assert torch.get_num_threads() == threads                 # the worker's one-thread setting is undone
    assert not curve.busy and (curve.variant, curve.chunk_size) == ("gla", 8)
    for form, points in curve.times.items():
        Ts = [T for T, _s in points]
        assert Ts and Ts == sorted(Ts) and Ts[0] == 8 and max(Ts) <= limits[form]
        assert [T for T, _s in curve.wall[form]] == Ts
        assert all(s > 0 for _T, s in points) and all(s > 0 for _T, s in curve.wall[form])
        assert curve.slopes[form] == fit_slope(points)
    assert curve.complete == all(max(T for T, _s in curve.times[f]) == limits[f] for f in pr.FORMS)


# ----------------------------------------------------------------------------- the store

def fake_curve(variant, chunk_size, **options):
    return pr.CostCurve(variant, chunk_size, times={f: [(256, 1e-3), (512, 2e-3)] for f in pr.FORMS},
                        wall={f: [(256, 2e-3), (512, 4e-3)] for f in pr.FORMS},
                        slopes={f: 1.0 for f in pr.FORMS}, complete=True)


def test_store_caches_curves_per_variant_and_chunk(monkeypatch):
    calls = []

    def fake(variant, chunk_size, **options):
        calls.append((variant, chunk_size))
        return fake_curve(variant, chunk_size)

    monkeypatch.setattr(pr, "measure_costs", fake)
    store = FormsStore(length=16)
    assert store.curve is None and not store.cost
    store.measure()                                                          # no server: at once
    first = store.curve
    assert first is not None and store.cost and not store.measuring
    store.measure()
    assert store.curve is first and calls == [("retnet", 16)]               # cached
    store.cost = False                                                       # (no measuring on a new setting)
    store.chunk_size = 32
    assert store.curve is None                                               # not measured for 32 yet
    store.measure()
    store.alpha = 0.5                                                        # the cost does not depend on α
    assert store.curve is store.curves["retnet", 32] and len(calls) == 2
    store.chunk_size = 16
    assert store.curve is first                                              # back from the cache
    store.measure(force=True)
    assert len(calls) == 3 and store.curve is not first
    store.variant = "gla"                                                    # measured once: every new setting is
    assert calls[-1] == ("gla", 16) and store.curve is store.curves["gla", 16]   # measured at once
    busy = pr.CostCurve("gla", 16, busy=True)
    store.keep_curve(busy)
    assert store.curve is busy and store.curves["gla", 16] is not busy      # shown, never cached


class ServedDocument:
    """Stands for a served session's document: `app.work` hands results over through its next tick,
    which the test runs by hand."""
    session_context = "a session"

    def __init__(self):
        self.ticks = []

    def add_next_tick_callback(self, callback):
        self.ticks.append(callback)

    def next_tick(self, timeout=30):
        deadline = time.monotonic() + timeout
        while not self.ticks:
            assert time.monotonic() < deadline, "the worker never handed its result back"
            time.sleep(0.01)
        self.ticks.pop(0)()


@pytest.fixture
def served(monkeypatch):
    document = ServedDocument()
    monkeypatch.setattr(work, "current_document", lambda: document)
    return document


def test_the_store_measures_on_the_worker_thread_and_turns_visitors_away_when_the_queue_is_full(
        monkeypatch, served):
    threads = []

    def fake(variant, chunk_size, **options):
        threads.append(threading.current_thread().name)
        return fake_curve(variant, chunk_size)

    monkeypatch.setattr(pr, "measure_costs", fake)
    store = FormsStore(length=16)
    store.measure()
    assert store.measuring and store.curve is None                           # not on this thread
    store.measure()                                                          # a second press while measuring
    served.next_tick()
    assert len(threads) == 1 and threads[0].startswith("lineare-measure")
    assert threads[0] != threading.current_thread().name
    assert not store.measuring and store.curve is store.curves["retnet", 16] and store.cost
    assert served.ticks == []

    store.measure()                                                          # cached: nothing to wait for
    assert not store.measuring and len(threads) == 1
    store.cost = False
    store.chunk_size = 8
    monkeypatch.setattr(pr.MEASURER, "waiting", pr.MEASURER.max_waiting)     # three others are waiting already
    store.measure()
    assert len(threads) == 1 and store.curve.busy and not store.measuring
    assert ("retnet", 8) not in store.curves                                 # shown, never cached


def test_settings_changed_while_measuring_are_measured_next(monkeypatch, served):
    monkeypatch.setattr(pr, "measure_costs", fake_curve)
    store = FormsStore(length=16)
    store.measure()
    store.chunk_size = 32                                                    # while 16 is being measured
    while ("retnet", 16) not in store.curves:                                # (the comparison comes back too)
        served.next_tick()
    assert store.curve is None and store.measuring
    while ("retnet", 32) not in store.curves:
        served.next_tick()
    assert store.curve is store.curves["retnet", 32] and not store.measuring


def test_one_measurement_at_a_time_in_the_process(monkeypatch, served):
    running, overlaps = [], []

    def fake(variant, chunk_size, **options):
        running.append(variant)
        overlaps.append(len(running))
        time.sleep(0.05)
        running.remove(variant)
        return fake_curve(variant, chunk_size)

    monkeypatch.setattr(pr, "measure_costs", fake)
    stores = [FormsStore(variant=v, length=16) for v in ("linear", "retnet", "gla")]   # three sessions
    documents = [ServedDocument() for _store in stores]
    for store, document in zip(stores, documents):
        monkeypatch.setattr(work, "current_document", lambda document=document: document)
        store.measure()
    for document in documents:
        document.next_tick()
    assert overlaps == [1, 1, 1] and all(store.curve is not None for store in stores)


def test_store_recomputes_and_resets_the_gate_for_a_new_model():
    store = FormsStore(variant="gla", length=24, chunk_size=8, alpha=0.5, seed=2)
    assert store.comparison.variant == "gla" and store.comparison.length == 24
    assert store.mask.shape == (24, 24) and store.alpha == 0.5
    store.variant = "mamba2"
    assert store.alpha == REGISTRY["mamba2"].alpha and store.comparison.variant == "mamba2"
    before = store.mask
    store.length = 40
    assert store.mask.shape == (40, 40) and store.comparison.outputs["chunked"].shape == (40, pr.D)
    store.variant, store.length = "gla", 40
    first = store.mask.copy()
    store.channel = 15                                                       # a faster channel: darker mask
    assert np.nanmean(store.mask) < np.nanmean(first) and before is not store.mask


def test_url_values_are_cleaned_with_notices():
    with language("en"):
        values, notices = read_query(FormsStore, FormsStore.URL, args(
            variant="softmax", T="9999", chunk="7", alpha="abc", channel="-4", seed="x", cost="maybe"))
    assert values == {"variant": "retnet", "length": 256, "chunk_size": 16, "alpha": FormsStore.param.alpha.default,
                      "channel": 0, "seed": 0, "cost": False}
    assert len(notices) == 7 and all(isinstance(n, str) and n for n in notices)
    values, notices = read_query(FormsStore, FormsStore.URL, args(variant="rwkv7", T="100", chunk="32", cost="true"))
    assert notices == [] and values == {"variant": "rwkv7", "length": 100, "chunk_size": 32, "cost": True}


def test_scientific_numbers_follow_the_language():
    with language("en"):
        assert scientific(2.5e-7) == "2.5 · 10⁻⁷"
        assert scientific(9.96e-7) == "1.0 · 10⁻⁶"
        assert scientific(0.0) == "0"
    with language("it"):
        assert scientific(3.4e-16) == "3,4 · 10⁻¹⁶"


def test_measuring_in_a_thread_leaves_other_threads_alone():
    seen = []
    threads = torch.get_num_threads()
    worker = threading.Thread(target=lambda: seen.append(measure_costs("linear", 8, budget_s=0.05, lengths=(8,))))
    worker.start()
    worker.join(timeout=30)
    assert seen and not seen[0].busy and seen[0].times["chunked"]
    assert torch.get_num_threads() == threads


def test_the_view_draws_what_the_store_measured(monkeypatch, served):
    from lineare.app.dashboards.parallel_recurrent.view import FormsView
    from lineare.app.session import Session

    monkeypatch.setattr(pr, "measure_costs", fake_curve)
    with language("en"):
        view = FormsView(store=FormsStore(length=16), session=Session())
        assert "Not measured yet for RetNet, chunks of 16." in view.status.object
        view.store.measure()
        assert "Measuring RetNet, chunks of 16…" in view.status.object and view.measure_button.disabled
        served.next_tick()
        assert "Measured for RetNet, chunks of 16." in view.status.object
        assert view.measure_button.label == "Measure again" and not view.measure_button.disabled
        assert list(view.cost_picture.sources["parallel"].data["ms"]) == [1.0, 2.0]
        assert list(view.cost_picture.sources["parallel"].data["wall"]) == [2.0, 4.0]
        assert view.cost_picture.items["parallel"].label.value == "parallel: slope 1.00"
        view.store.cost = False                                  # (no automatic measuring on the change)
        view.store.chunk_size = 8
        monkeypatch.setattr(pr.MEASURER, "waiting", pr.MEASURER.max_waiting)
        view.store.measure()
        assert "busy" in view.status.object and view.measure_button.label == "Measure"
        assert all(list(source.data["T"]) == [] for source in view.cost_picture.sources.values())


def test_the_model_imports_without_panel_or_bokeh():
    code = ("import sys; import app.dashboards.parallel_recurrent.model; "
            "assert 'panel' not in sys.modules and 'bokeh' not in sys.modules, 'the model imports Panel or Bokeh'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_per_channel_decays_need_the_per_channel_parallel_form():
    """o = (QKᵀ ⊙ L)V holds for a scalar decay; with one decay per key channel (GLA) the mask moves inside
    the dot product, o_t = Σ_j (Σ_i q_ti k_ji e^{G_ti − G_ji}) v_j, as the Superiore text writes it."""
    from lineare.app.dashboards.parallel_recurrent.view import FormsView
    from lineare.app.session import Session

    q, k, v, gates = make_inputs("gla", 12, seed=3, alpha=0.6)
    o = forward("gla", q, k, v, form="recurrent", scale=1.0, **gates)[0][0, :, 0].numpy()
    Q, K, V = (x[0, :, 0].numpy() for x in (q, k, v))
    G = np.cumsum(gates["g"][0, :, 0].numpy(), axis=0)                              # [T, d_k]
    causal = np.tril(np.ones((12, 12)))
    per_channel = np.einsum("ti,ji,tji->tj", Q, K, np.exp(G[:, None, :] - G[None, :, :])) * causal
    np.testing.assert_allclose(per_channel @ V, o, atol=1e-10)
    for channel in range(G.shape[1]):                  # no single mask L of the scalar form gives it
        mask = np.exp(G[:, None, channel] - G[None, :, channel]) * causal
        assert not np.allclose(((Q @ K.T) * mask) @ V, o, atol=1e-3)
    with language("en"):
        view = FormsView(store=FormsStore(length=16, cost=False), session=Session())
    assert r"q_{t,i}\, k_{j,i}\, e^{G_{t,i} - G_{j,i}}" in view.intro.superiore
    assert "GLA, RWKV" in view.intro.elementare


def test_the_outputs_text_states_the_difference_measured_here():
    from lineare.app.dashboards.parallel_recurrent.view import FormsView
    from lineare.app.session import Session

    with language("en"):
        view = FormsView(store=FormsStore(length=16, cost=False), session=Session())
    errors = view.store.comparison.errors
    for dtype in ("float32", "float64"):
        worst = max(errors[dtype, pair][1] for pair in pr.PAIRS)
        assert f"{scientific(worst)} in {dtype}" in view.outputs_text.superiore
    assert "fla" not in view.outputs_text.superiore and "SSD" not in view.outputs_text.superiore


# ------------------------------------------------------------------------------ the order and the count

def test_each_form_answers_in_its_own_order():
    assert list(pr.answered("recurrent", 10, 4)) == list(range(1, 11))               # one token per step
    assert list(pr.answered("chunked", 10, 4)) == [4, 8, 10] + [10] * 7               # a block per step
    assert list(pr.answered("parallel", 10, 4)) == [10] * 10                          # all in one step
    assert [pr.steps_needed(form, 10, 4) for form in ("recurrent", "chunked", "parallel")] == [10, 3, 1]
    with pytest.raises(ValueError, match="unknown form"):
        pr.answered("sideways", 10, 4)


def test_the_page_opens_with_three_different_fills():
    """At the opening step the three strips are filled to three different lengths, the parallel one whole."""
    store = FormsStore()
    T, C = store.length, store.chunk_size
    step = pr.opening_step(T, C)
    filled = [pr.answered(form, T, C)[step] for form in ("recurrent", "chunked", "parallel")]
    assert filled[0] < filled[1] < filled[2] == T
    assert pr.opening_step(8, 64) == 0                                                # one block: the first step


@pytest.mark.parametrize("variant", FIXED_STATE)
def test_the_count_is_of_the_engines_matrix_products(variant):
    """counted_work against PyTorch's FLOP counter on engine.ops.forward (2 FLOPs a multiply-add). The
    counter sees matrix products only, so the count is at least what it sees and at most 2.5 times it
    (the write of the recurrent form and some state reads are entry by entry); and it grows as the
    forms do: T² for the parallel form, T for the others."""
    for T in (64, 128):
        q, k, v, gates = make_inputs(variant, T, 0, REGISTRY[variant].alpha, torch.float32)
        for form in FORMS:
            with FlopCounterMode(display=False) as counter:
                forward(variant, q, k, v, form=form, chunk_size=16, **gates)
            seen = counter.get_total_flops() / 2
            assert seen <= pr.counted_work(variant, form, T, 16) <= 2.5 * seen, (form, T)
    lengths = np.array([1024.0, 2048.0])
    for form, slope in (("recurrent", 1), ("chunked", 1), ("parallel", 2)):
        counts = pr.counted_work(variant, form, lengths, 16)
        assert math.log2(counts[1] / counts[0]) == pytest.approx(slope, abs=0.02)
