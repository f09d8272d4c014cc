"""Dashboard "Two bills" without a browser: the generation store against the engine, the calculator
against closed forms and published shapes, the URL rules and the number formats."""
import math
import re
import subprocess
import sys

import numpy as np
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from lineare.app.dashboards.two_bills import model as two_bills
from lineare.app.dashboards.two_bills.calculator import CUSTOM, PRESETS, CalculatorStore
from lineare.app.dashboards.two_bills.model import (GenerationStore, affordable_tokens, format_bytes, format_power,
                                            layer_gates, multiply_adds, prefill, random_tokens, rolling_median,
                                            work_crossing)
from lineare.app.i18n import language
from lineare.app.urlstate import read_query
from lineare.engine.ops import forward
from lineare.engine.ops.recurrent import STEPS, gates_at
from lineare.engine.ops.states import KVCache, state_bytes


def args(**values):
    return {k: [str(v).encode()] for k, v in values.items()}


# ------------------------------------------------------------------------------ generation

def test_the_cache_grows_by_one_key_and_value_per_token_and_the_state_does_not():
    store = GenerationStore(tokens=32, heads=2, dim=16, context=0)
    result = store.result
    H, d, b = 2, 16, 4
    assert result.tokens == 32 and list(result.held) == list(range(1, 33))
    # closed form: t keys and t values of H heads of size d, 4 bytes each
    assert list(result.kv_cache_bytes) == [2 * t * H * d * b for t in result.held]
    assert result.bytes_per_token == 2 * H * d * b
    assert set(result.state_bytes) == {H * d * d * b}                # a d_v × d_k matrix per head, flat
    assert result.crossing == d // 2 + 1                              # equal at t = d/2, bigger after
    assert np.all(np.isfinite(result.softmax_ms)) and np.all(result.softmax_ms > 0)
    assert np.all(np.isfinite(result.state_ms)) and np.all(result.state_ms > 0)
    assert len(store.history) == 1 and store.history[0][:2] == (2, 16)


def test_the_bytes_are_the_engines():
    """The record's numbers are what the engine's state_bytes says of the cache and the state."""
    store = GenerationStore(tokens=16, heads=1, dim=16, variant="mamba2", context=512)
    result = store.result
    cache = KVCache(torch.zeros(1, 512 + 16, 1, 16), torch.zeros(1, 512 + 16, 1, 16))
    assert result.kv_cache_bytes[-1] == state_bytes(cache)
    assert result.state_bytes[0] == state_bytes(torch.zeros(1, 1, 16, 16))
    assert result.held[0] == 513 and result.kv_cache_bytes[0] == 513 * 2 * 16 * 4
    assert result.crossing == 16 * 16 // (2 * 16) + 1                 # counted with the pre-filled tokens


@pytest.mark.parametrize("variant", two_bills.STATE_VARIANTS)
def test_the_prefill_reads_the_same_tokens_into_both_layers(variant):
    """In pieces or in one go, the state after the pre-fill is the engine's recurrent result on the cache's tokens."""
    context, heads, dim = 300, 2, 8
    cache, state = prefill(variant, context, heads, dim, torch.Generator().manual_seed(5), piece=128)
    q, k, v = random_tokens(torch.Generator().manual_seed(5), context, heads, dim)
    assert torch.equal(cache.k, k) and torch.equal(cache.v, v)
    _o, expected = forward(variant, q, k, v, form="recurrent", **layer_gates(variant, heads, dim, context))
    assert torch.allclose(state, expected, rtol=1e-4, atol=1e-5)


def test_retnet_uses_its_fixed_per_head_decays_and_mamba2_one_fixed_decay():
    g = layer_gates("retnet", 3, 8, 10)["g"]
    assert torch.allclose(g.exp(), torch.tensor([1 - 2 ** -5, 1 - 2 ** -6, 1 - 2 ** -7]))
    g = layer_gates("mamba2", 3, 8, 10)["g"]
    assert g.shape == (1, 10, 3) and torch.allclose(g.exp(), torch.tensor(two_bills.MAMBA2_DECAY))
    assert layer_gates("linear", 3, 8, 10) == {}


def test_work_per_run_is_bounded():
    assert affordable_tokens(64, 0, 4, 64) == 64
    for context in two_bills.CONTEXTS:
        for heads in two_bills.HEAD_CHOICES:
            for dim in two_bills.DIM_CHOICES:
                tokens = affordable_tokens(128, context, heads, dim)
                work = heads * 2 * dim * (tokens * context + tokens * (tokens + 1) // 2)
                assert two_bills.MIN_TOKENS <= tokens <= 128
                assert work <= two_bills.WORK_BUDGET or tokens == two_bills.MIN_TOKENS
    biggest = max(two_bills.CONTEXTS)
    assert affordable_tokens(128, biggest, 4, 64) == two_bills.MIN_TOKENS


def test_a_limited_run_says_so(monkeypatch):
    monkeypatch.setattr(two_bills, "WORK_BUDGET", 2 * 2 * 16 * 512 * 10)      # about 10 tokens
    store = GenerationStore(tokens=64, heads=2, dim=16, context=512)
    assert store.result.requested == 64 and two_bills.MIN_TOKENS <= store.result.tokens < 64


def test_the_page_opens_where_the_cache_already_leads():
    """Its lesson on the first screen: with the default settings the cache is bigger than the state
    from the first generated token, and the crossing (marked on the picture) lies inside the run."""
    result = GenerationStore().result
    assert result.context > 0 and result.kv_cache_bytes[0] > result.state_bytes[0]
    assert 1 <= result.crossing <= result.held[0]
    assert multiply_adds(result.held[:1], result.heads, result.dim, result.dim)[0][0] > \
        multiply_adds(result.held[:1], result.heads, result.dim, result.dim)[1]      # and does more work


@pytest.mark.parametrize("variant", ["softmax", *two_bills.STATE_VARIANTS])
def test_the_work_bill_counts_the_engines_multiply_adds(variant):
    """multiply_adds against PyTorch's FLOP counter on the engine's own step (2 FLOPs a multiply-add). It
    counts matrix products only: softmax's scores and weighted values are two, all of its work; a state
    step's read S q is one, and its write, v kᵀ added to S entry by entry (d_k d_v multiply-adds per
    head), and a decay (multiplications only) are elementwise, unseen by the counter."""
    heads, dim, context = 2, 16, 40
    generator = torch.Generator().manual_seed(1)
    cache, state = prefill("linear" if variant == "softmax" else variant, context, heads, dim, generator)
    q, k, v = random_tokens(generator, 1, heads, dim)
    gates = {} if variant == "softmax" else gates_at(variant, layer_gates(variant, heads, dim, 1), 0)
    with FlopCounterMode(display=False) as counter:
        STEPS[variant](cache if variant == "softmax" else state, q[:, 0], k[:, 0], v[:, 0], **gates)
    softmax, fixed = multiply_adds([context + 1], heads, dim, dim)
    seen = softmax[0] if variant == "softmax" else fixed - heads * dim * dim                 # less the write
    assert counter.get_total_flops() == 2 * seen


def test_twice_the_text_four_times_the_work():
    heads, d_k, d_v = 4, 64, 32
    for n in (100, 1000):
        softmax, state = multiply_adds(np.arange(1, n + 1), heads, d_k, d_v)
        double_softmax, _state = multiply_adds(np.arange(1, 2 * n + 1), heads, d_k, d_v)
        assert double_softmax.sum() / softmax.sum() == pytest.approx(4, rel=0.01)        # a triangle
        assert softmax.sum() == heads * n * (n + 1) // 2 * (d_k + d_v)                    # the calculator's count
    # the crossing: the first token whose softmax row is wider than the state's
    for d_k, d_v in ((64, 64), (64, 32), (16, 16)):
        at = work_crossing(d_k, d_v)
        softmax, state = multiply_adds([at - 1, at], 1, d_k, d_v)
        assert softmax[0] <= state < softmax[1]


def test_each_step_is_timed_several_times_and_the_shortest_kept(monkeypatch):
    """A step is a pure function of the state before it: running it again changes nothing but the clock."""
    calls = []
    real_step = two_bills.step
    monkeypatch.setattr(two_bills, "step", lambda *a, **k: calls.append(a[0]) or real_step(*a, **k))
    result = two_bills.generate("linear", 0, 8, 1, 16, seed=3, repeats=3)
    once = two_bills.generate("linear", 0, 8, 1, 16, seed=3, repeats=1)
    assert calls.count("softmax") == 1 + 3 * 8 + 1 + 8              # a warm-up step each, then every step
    np.testing.assert_array_equal(result.kv_cache_bytes, once.kv_cache_bytes)
    assert two_bills.generate("linear", 32768, 128, 4, 64, seed=0).tokens == two_bills.MIN_TOKENS


def test_at_the_opening_the_softmax_step_is_measurably_slower():
    """The difference on the time plot is real: with 1,024 tokens already in memory (4 heads of 64) the
    softmax step reads and copies 2 MB of cache, the state step 64 kB of state; the shortest of three
    runs keeps the load of a shared machine out of it. (Timing: generous bounds.)"""
    result = two_bills.generate("linear", 1024, 32, 4, 64, seed=0)
    assert np.median(result.softmax_ms) > 1.5 * np.median(result.state_ms)


def test_rolling_median():
    values = [5, 1, 9, 3, 7, 2]
    assert list(rolling_median(values, window=3)) == [5, 3, 5, 3, 7, 3]
    assert list(rolling_median(values, window=1)) == values


def test_rolling_median_is_the_median_of_the_last_values_at_every_length():
    rng = np.random.default_rng(3)
    for n in (0, 1, 5, 8, 9, 10, 33):                       # shorter than the window, equal, longer
        values = rng.exponential(size=n)
        plain = [float(np.median(values[max(0, i - 8):i + 1])) for i in range(n)]
        assert rolling_median(values, window=9).tolist() == plain


def test_measuring_again_adds_a_point():
    store = GenerationStore(tokens=16, heads=1, dim=16)
    store.param.trigger("measure")
    assert len(store.history) == 2 and not store.measuring


def test_settings_changed_during_a_run_are_measured_next(monkeypatch):
    """With a server the run is on a worker thread: a change while it runs is measured after it, and the
    page shows the run of the latest settings (the one out of date only adds its point)."""
    store = GenerationStore(tokens=16, heads=1, dim=16)
    finish = []
    monkeypatch.setattr(two_bills.MEASURER, "submit", lambda compute, on_done, on_error: finish.append(
        lambda: on_done(compute())) or True)
    store.heads = 2
    assert store.measuring and store.result.heads == 1
    store.dim = 32                                        # while heads=2 is measured
    assert len(finish) == 1
    finish.pop()()                                        # heads=2 done: out of date, dim=32 goes next
    assert store.result.heads == 1 and len(store.history) == 2 and store.measuring
    finish.pop()()
    assert (store.result.heads, store.result.dim) == (2, 32) and len(store.history) == 3
    assert not store.measuring and finish == []


def test_the_calculator_chart_data_changes_once_per_change():
    store = CalculatorStore(preset="llama2_7b", context=4096)
    seen = []
    store.param.watch(lambda event: seen.append(event.new), "memory")
    store.heads = 4                                       # kv_heads follows, the preset becomes custom
    # Llama-2-7B with 4 query and KV heads of 128, fp16: 2·32·4·128·4,096·2 bytes of cache, 32·4·128·128·2 of state
    assert seen == [(4096, 2 * 32 * 4 * 128 * 4096 * 2, 32 * 4 * 128 * 128 * 2, None)]
    assert store.kv_heads == 4 and store.preset == CUSTOM


@pytest.mark.parametrize("module", ["model", "calculator"])
def test_the_models_import_without_panel_or_bokeh(module):
    code = (f"import sys; import app.dashboards.two_bills.{module}; "
            "assert 'panel' not in sys.modules and 'bokeh' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_page_draws_both_stores():
    """The view with no server: the first run's bills, the calculator's chart frame and the history chart."""
    from bokeh.document import Document

    from lineare.app.dashboards.two_bills.view import TwoBillsView
    from lineare.app.i18n import language
    from lineare.app.session import Session

    session = Session()
    store = GenerationStore(tokens=16, heads=2, dim=16)
    with language("en"):
        view = TwoBillsView(store=store, session=session)
        view.__panel__().get_root(Document())              # every picture renders
        statuses = view.generation.status.frames                     # one per generated token
        assert len(statuses) == 16 and all("KV cache (softmax)" in text for text in statuses)
        assert "against linear attention:" in view.generation.setup.object     # a name inside a sentence
        memory = view.calculator.chart.picture
        assert memory.sources["cache"].data["y"][-1] == pytest.approx(
            2 * 32 * 8 * 128 * 131_072 * 2 / 1e9)              # 131,072 tokens of Llama-3.1-8B (bf16): in GB
        assert memory.figure.yaxis[0].axis_label == "memory (GB)"
        history = view.generation.history.picture
        assert history.items["state"].label.value == "state (linear attention)"
        assert len(history.sources["state"].data["x"]) == 1


def test_the_bills_show_the_bytes_in_the_readers_units_and_numbers():
    """The figures a visitor reads, from closed forms: 512 tokens pre-filled, then token t holds 512 + t keys
    and values of 2 heads × 16 numbers × 4 bytes (256 B a token): 131 kB at the first, 135 kB at the 16th;
    the state 2 × 16 × 16 × 4 = 2,048 B. Decimal units, three digits, the language's decimal mark."""
    from bokeh.document import Document

    from lineare.app.dashboards.two_bills.calculator_view import CalculatorView
    from lineare.app.dashboards.two_bills.view import TwoBillsView
    from lineare.app.session import Session

    store = GenerationStore(tokens=16, heads=2, dim=16, context=512)
    for lang, state, weights in (("en", "2.05 kB", "16.1 GB"), ("it", "2,05 kB", "16,1 GB")):
        with language(lang):
            view = TwoBillsView(store=store, session=Session())
            view.__panel__().get_root(Document())
            frames = view.generation.status.frames
            llama = CalculatorView(store=CalculatorStore(preset="llama3_8b", context=131_072), session=Session())
            calculator, weights_line = llama.results.object, llama.weights.object
        for t, frame in enumerate(frames, start=1):
            cache_shown, state_shown = re.findall(r'class="amount">([^<]*)<', frame)
            assert cache_shown == f"{round((512 + t) * 256 / 1000)} kB" and state_shown == state, frame
            assert "256 B" in frame
        # Llama-3.1-8B in bf16: 2·32·8·128·131,072·2 B of cache, 32·32·128·128·2 B of a state of its shape
        cache, fixed = 2 * 32 * 8 * 128 * 131_072 * 2, 32 * 32 * 128 * 128 * 2
        assert (cache, fixed) == (17_179_869_184, 33_554_432)
        amounts = re.findall(r'class="amount">([^<]*)<', calculator)
        mark = "," if lang == "it" else "."
        assert amounts == [f"17{mark}2 GB", f"33{mark}6 MB"], amounts
        assert "131 kB" in calculator and weights in weights_line        # per token; 8.03e9 parameters × 2 B


# ------------------------------------------------------------------------------ calculator

def preset(name, **extra):
    return CalculatorStore(preset=name, **extra)


def test_kv_cache_of_real_models():
    # 2 · layers · kv_heads · head_dim · context · bytes
    assert preset("llama2_7b", context=4096, dtype="bf16").kv_cache_bytes() == 2 * 32 * 32 * 128 * 4096 * 2 \
        == 2 ** 31                                                      # 2 GiB
    assert preset("llama3_8b", context=8192, dtype="bf16").kv_cache_bytes() == 2 ** 30   # GQA: 8 KV heads
    assert preset("mistral_7b", context=8192, dtype="fp32").kv_cache_bytes() == 2 ** 31
    llama2 = preset("llama2_7b", context=100_000, dtype="fp16")
    assert llama2.kv_cache_bytes() / 1e9 == pytest.approx(52.4, abs=0.05)


def test_the_work_bill_counts_multiply_adds_on_both_sides():
    """Softmax: token t scores t keys and weighs t values; a fixed state: one write v kᵀ and one read S q."""
    store = preset("llama3_8b", context=7)
    store.d_v = 5                                                           # d_k ≠ d_v: both counted
    softmax, state = store.multiply_adds()
    assert softmax == sum(t * (128 + 5) for t in range(1, 8))               # a loop over the causal rows
    assert state == 7 * (128 * 5 + 5 * 128)                                 # write: d_v·d_k, read: d_v·d_k
    assert store.whole_model(state) == state * 32 * 32                      # every query head of every layer
    llama3 = preset("llama3_8b", context=131_072)
    softmax, state = llama3.multiply_adds()
    assert softmax / state == pytest.approx(131_073 / 256)                  # (n + 1)(d_k + d_v) / 4 d_k d_v
    from lineare.app.dashboards.two_bills.calculator_view import CalculatorView
    from lineare.app.session import Session

    with language("en"):
        text = CalculatorView(store=llama3, session=Session()).results.object
    assert text.count("multiply-adds") == 1 and "comparisons" not in text and "state updates" not in text
    assert format_power(softmax) in text and format_power(state) in text
    assert "A fixed-state model of this shape keeps" in text                # not Llama-3.1-8B's own bill


# the most tokens each softmax preset reads, from its config.json: max_position_embeddings (Llama-2: 4,096;
# Llama-3.1: 131,072), and Mistral-7B v0.1's sliding_window (4,096: its cache keeps the last 4,096 tokens)
CONTEXTS = {"llama2_7b": (4096, False), "llama3_8b": (131_072, False), "mistral_7b": (4096, True)}


def test_the_calculator_marks_what_lies_past_a_models_context():
    """The default preset is Llama-3.1-8B (131,072 tokens; Llama-3-8B reads 8,192); «Every model's bill» marks
    each softmax row whose context is shorter than the length asked, and only those, and the bills say so for
    the preset's own; a fixed state has no such limit here."""
    from lineare.app.dashboards.two_bills.calculator_view import CalculatorView
    from lineare.app.session import Session

    assert CalculatorStore().preset == "llama3_8b" and PRESETS["llama3_8b"].name == "Llama-3.1-8B"
    assert {key: (m.context, m.window) for key, m in PRESETS.items() if m.kind == "softmax"} == CONTEXTS
    assert all(m.context is None for m in PRESETS.values() if m.kind == "state")
    for n in (2048, 4096, 4097, 8192, 131_072, 131_073):
        for key in ("llama3_8b", "llama2_7b"):
            with language("en"):
                view = CalculatorView(store=CalculatorStore(preset=key, context=n), session=Session())
            rows = dict(re.findall(r'<tr(?: class="current")?><td><b>([^<]*)</b></td>(.*?)</tr>', view.table.object))
            assert set(rows) == {m.name for m in PRESETS.values()}
            for model in PRESETS.values():
                past = model.context is not None and n > model.context
                assert ('class="past"' in rows[model.name]) == past, (n, model.name)
                if past:
                    assert f"{model.context:,} tokens" in rows[model.name]
            own = PRESETS[key]
            assert ('class="limit"' in view.results.object) == (n > own.context), (n, key)
    with language("en"):
        window = CalculatorView(store=CalculatorStore(preset="mistral_7b", context=8192), session=Session())
    assert "sliding window" in window.results.object and "keeps the last 4,096" in window.results.object
    assert "past its window of 4,096 tokens" in window.table.object


def test_a_softmax_model_of_mamba2s_shape_shares_its_keys():
    """Mamba-2-2.7B's 80 heads share one B and one C (ngroups = 1): the softmax model of its shape caches one key
    of 128 and 80 values of 64 per token and layer, 64 · (128 + 80 · 64) · 2 B = 671,744 B in bf16 (not the
    1,966,080 B of 80 keys), and its cache outgrows its state where that count says."""
    store = preset("mamba2_2_7b", dtype="bf16", context=1)
    assert store.kv_cache_bytes() == 64 * (1 * 128 + 80 * 64) * 2 == 671_744
    assert store.kv_cache_bytes(store.crossing() - 1) <= store.state_bytes() < store.kv_cache_bytes(store.crossing())
    assert preset("retnet_6_7b", context=1).kv_cache_bytes() == 32 * 16 * (256 + 512) * 2      # a key per head
    store.heads = 40                                                    # its own shape no more: one key per head
    assert store.preset == CUSTOM and store.kv_cache_bytes() == 64 * store.kv_heads * (128 + 64) * 2


def test_fixed_states_of_real_models():
    # layers · heads · d_k · d_v · bytes
    assert preset("retnet_6_7b", dtype="fp16").state_bytes() == 32 * 16 * 256 * 512 * 2 == 134_217_728
    assert preset("mamba2_2_7b", dtype="fp16").state_bytes() == 64 * 80 * 128 * 64 * 2 == 83_886_080
    # the state does not depend on the context
    assert preset("retnet_6_7b", context=1).state_bytes() == preset("retnet_6_7b", context=10 ** 6).state_bytes()
    # RetNet-6.7B's weights in fp16: the ≈ 13.4 GB under the paper's ≈ 14 GB
    assert preset("retnet_6_7b", dtype="fp16").weight_bytes() / 1e9 == pytest.approx(13.4)


def test_crossings():
    llama2 = preset("llama2_7b")
    # H d² = 2 H d t  →  t = d/2 = 64: bigger from token 65
    assert llama2.crossing() == 65
    assert llama2.kv_cache_bytes(64) == llama2.state_bytes() < llama2.kv_cache_bytes(65)
    weights = llama2.weight_bytes()
    n = llama2.weights_crossing()
    assert llama2.kv_cache_bytes(n - 1) < weights <= llama2.kv_cache_bytes(n)
    assert CalculatorStore(preset=CUSTOM).weights_crossing() is None


def test_presets_fill_in_and_edits_make_a_custom_shape():
    store = CalculatorStore()
    assert store.preset == "llama3_8b" and store.shape() == PRESETS["llama3_8b"].shape()
    store.preset = "mamba2_2_7b"
    assert store.shape() == PRESETS["mamba2_2_7b"].shape()
    store.layers = 48
    assert store.preset == CUSTOM and store.layers == 48 and store.weight_bytes() is None
    store.preset = "llama2_7b"
    assert store.shape() == PRESETS["llama2_7b"].shape()
    store.heads = 4                                              # fewer query heads than KV heads: clamped
    assert store.kv_heads == 4 and store.preset == CUSTOM


def test_a_link_with_a_preset_and_other_numbers_keeps_the_numbers():
    values, notices = read_query(CalculatorStore, CalculatorStore.URL, args(preset="llama2_7b", kvheads=8, n=1000))
    store = CalculatorStore(**values)
    assert notices == [] and store.preset == CUSTOM and store.kv_heads == 8 and store.layers == 32
    values, _ = read_query(CalculatorStore, CalculatorStore.URL, args(preset="retnet_6_7b", qheads=16, dv=512))
    assert CalculatorStore(**values).preset == "retnet_6_7b"


def test_url_values_are_cleaned_with_notices():
    with language("en"):
        values, notices = read_query(GenerationStore, GenerationStore.URL, args(
            variant="softmax", context=5000, tokens=1e9, heads=3, dim="abc", seed=-4))
    assert values == {"variant": "linear", "context": 512, "tokens": 64, "heads": 4, "dim": 64, "seed": 0}
    assert len(notices) == 6
    with language("it"):
        values, notices = read_query(CalculatorStore, CalculatorStore.URL, args(
            preset="gpt5", n=10 ** 9, dtype="fp64", layers="<b>", qheads=0))
    assert values["preset"] == "llama3_8b" and values["context"] == 1_048_576 and values["dtype"] == "bf16"
    assert values["layers"] == 32 and values["heads"] == 1
    assert len(notices) == 5 and all("non è valido" in n or "fuori" in n for n in notices)


# ------------------------------------------------------------------------------ formats

def test_numbers_are_written_per_language():
    with language("en"):
        assert format_bytes(17_179_869_184) == "17.2 GB"
        assert format_bytes(65_536) == "65.5 kB"
        assert format_bytes(134_217_728) == "134 MB"
        assert format_bytes(512) == "512 B"
        assert format_power(10 ** 10) == "10¹⁰"
        assert format_power(1.7592e13) == "1.8 × 10¹³"
        assert format_power(123_456) == "123,456"
    with language("it"):
        assert format_bytes(17_179_869_184) == "17,2 GB"
        assert format_bytes(2048) == "2,05 kB"
        assert format_power(9.96e9) == "10¹⁰"
        assert format_power(123_456) == "123.456"


def test_every_preset_states_its_source():
    for model in PRESETS.values():
        assert model.source and model.note and model.kind in ("softmax", "state")
        assert model.kv_heads <= model.heads and math.isfinite(model.parameters)


def test_pages_opened_together_share_their_opening_run_and_measure_again_anew(monkeypatch):
    """A class opening the page at once: one run measured per process and settings, not one each."""
    monkeypatch.setattr(two_bills, "_openings", {})
    first, second = GenerationStore(tokens=16, heads=1, dim=16), GenerationStore(tokens=16, heads=1, dim=16)
    assert second.result is first.result
    assert GenerationStore(tokens=16, heads=2, dim=16).result is not first.result      # other settings
    second.param.trigger("measure")                                                     # always a new run
    assert second.result is not first.result and len(second.history) == 2
    monkeypatch.setattr(two_bills, "OPENING_AGE_S", 0.0)                                # too old: measured anew
    assert GenerationStore(tokens=16, heads=1, dim=16).result is not first.result
