"""The model of "The state fills up" with no server: it imports without Panel, and the numbers of
each head's pictures (`head_frame`) are the engine's records, read the way the captions say."""
import html
import inspect
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lineare.app import mechanism
from lineare.app.dashboards.state_fills_up.model import StateStore, head_frame
from lineare.app.variants import REGISTRY

ROOT = Path(__file__).resolve().parents[1]


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
            before = records[t - 1].state[0, head] if t else 0
            np.testing.assert_allclose(frame.change, record.state[0, head] - before, atol=1e-12)
            np.testing.assert_allclose(frame.removed + frame.write, frame.change, atol=1e-12)
            if REGISTRY[variant].corrects:          # the transition's eigenvalues, smallest first
                assert np.all(np.diff(frame.kept) >= 0) and np.all(frame.kept <= 1 + 1e-9)
            else:
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
    """Each picture's colour range is the largest |value| it shows over the whole run: the state, the write,
    the read-out, and the update pictures (the whole change S_t − S_{t−1} and its transition part share one)."""
    store = StateStore(variant="deltanet")
    for variant in ("deltanet", "gla"):
        store.variant = variant
        records = store.result.records
        states = [np.zeros_like(records[0].state)] + [r.state for r in records]
        change = [after - before for before, after in zip(states, states[1:])]
        write = max(np.abs(r.write).max() for r in records)
        removed = max(np.abs(c - r.write).max() for c, r in zip(change, records))
        expected = {"state": max(np.abs(r.state).max() for r in records), "write": write,
                    "output": max(np.abs(r.output).max() for r in records),
                    "update": max(write, removed, max(np.abs(c).max() for c in change))}
        assert {name: store.limits[name] for name in expected} == pytest.approx(expected, rel=1e-12), variant


@pytest.mark.parametrize("variant,beta", [("deltanet", 0.6), ("gated_deltanet", 0.6), ("deltanet", 1.0)])
def test_the_correction_erases_along_the_key_only(variant, beta):
    # a write with a unit key: one direction kept α(1 − β), every other kept α; nothing asked: all α
    store = StateStore(variant=variant, beta=beta, alpha=0.8, preset="overwrite")
    records, tokens = store.result.records, store.result.tokens
    alpha = 0.8 if REGISTRY[variant].forgets else 1.0
    for t, token in enumerate(tokens):
        kept = head_frame(variant, records, 0, t).kept
        if token.kind == "write":
            np.testing.assert_allclose(kept, [alpha * (1 - beta)] + [alpha] * (mechanism.D_K - 1), atol=1e-9)
        else:
            np.testing.assert_allclose(kept, alpha, atol=1e-9)


def test_perpendicular_keys_give_each_name_a_column_until_they_run_out():
    store = StateStore(variant="linear", preset="crowd")            # 24 names for 16 columns
    result = store.result
    assert store.keys == "perpendicular" and result.columns["Anna"] == 0 and result.columns["Zeno"] == 2
    answers = {token.key: answer for token, answer in zip(result.tokens, result.answers) if token.kind == "ask"}
    # names 17–24 share the columns of names 1–8, and the sum rule reads back both numbers of a shared
    # column added up, exactly as close to each (a tie, no answer); a column of its own reads back its number
    shared = [name for name, column in result.columns.items() if list(result.columns.values()).count(column) > 1]
    assert len(shared) == 16
    for name, answer in answers.items():
        if name in shared:
            assert answer.similarity < 0.95 and answer.value is None and len(answer.tied) == 2, name
            assert answer.expected in answer.tied and not answer.right, name
        else:
            assert answer.right and answer.similarity > 0.999, name
    alone = StateStore(variant="linear", preset="phonebook").result
    assert all(a.right for a, tok in zip(alone.answers, alone.tokens) if tok.kind == "ask")
    random = StateStore(variant="linear", preset="crowd", keys="random").result
    assert random.columns is None


@pytest.mark.parametrize("preset", ["overwrite", "crowd"])
def test_a_tie_is_decoded_as_a_tie_whatever_the_number_of_heads(preset):
    """The sum rule reads a column that holds two numbers back as v_a + v_b, exactly as close to each: a tie,
    whichever a float32 rounding favours. With 1, 2 and 4 heads (each with its own value vectors) the strip
    marks the same questions, with the same words, and the lesson counts the same answers right; each tie is
    a column shared by two numbers, computed directly in NumPy."""
    from lineare.app.dashboards.state_fills_up.lesson import CARDS, _all_right
    from lineare.app.dashboards.state_fills_up.texts import answer_html, token_strip
    from lineare.app.i18n import language

    marks, counts, readouts = {}, {}, {}
    for heads in (1, 2, 4):
        store = StateStore(variant="linear", preset=preset, keys="perpendicular", heads=heads)
        result = store.result
        with language("en"):
            marks[heads] = re.findall(r'<span class="answer">(.*?)</span></div>', token_strip(result))
            readouts[heads] = [re.sub(r"\(match \d+%", "(match", answer_html(result, t))
                               for t, token in enumerate(result.tokens) if token.kind == "ask"]
        counts[heads] = _all_right(store)
        assert CARDS[3].correct(store) == 1
    assert marks[1] == marks[2] == marks[4] and counts[1] == counts[2] == counts[4]
    assert readouts[1] == readouts[2] == readouts[4]
    # which questions tie: a name whose column holds two different numbers at the time it is asked
    tokens = mechanism.parse(mechanism.PRESETS[preset])[0]
    columns, held, expected = {}, {}, []
    for token in tokens:
        if token.key is not None:
            columns.setdefault(token.key, len(columns) % mechanism.D_K)
        if token.kind == "write":
            held.setdefault(columns[token.key], []).append(token.value)
        elif token.kind == "ask":
            numbers = held[columns[token.key]]
            expected.append(f"tie: {' / '.join(sorted(numbers))} ✗" if len(set(numbers)) > 1 else f"{numbers[0]} ✓")
    shown = [re.sub(r"<[^>]+>", "", mark) for mark in marks[1] if mark]
    assert shown == expected
    assert counts[1] == (sum(mark.endswith("✓") for mark in expected), len(expected))


def test_step_captions_follow_the_tokens():
    from lineare.app.dashboards.state_fills_up.texts import column_gauge, step_caption

    store = StateStore(variant="deltanet", preset="crowd")
    result = store.result
    zeno = [t.key for t in result.tokens].index("Zeno")
    assert "Zeno" in step_caption(result, zeno) and "Carla" in step_caption(result, zeno)   # column 3 taken
    assert "free: 0 of 16" in column_gauge(result, zeno) and 'class="col shared"' in column_gauge(result, zeno)
    assert "free: 16 of 16" not in column_gauge(result, 0) and "free: 15 of 16" in column_gauge(result, 0)
    ask = next(t for t, token in enumerate(result.tokens) if token.kind == "ask")
    answer = result.answers[ask]
    assert str(answer.value) in step_caption(result, ask) and result.tokens[ask].key in step_caption(result, ask)


@pytest.mark.parametrize("variant", ["deltanet", "softmax", "mlstm"])
def test_the_code_shown_is_the_engines_own_step(variant):
    from lineare.app.dashboards.state_fills_up.view import NOTEBOOK_URL, code_html
    from lineare.engine.ops import recurrent

    shown = code_html(variant)
    assert "engine/ops/recurrent.py:" in shown and "<details>" in shown
    text = re.sub(r"<[^>]+>", "", shown)                      # the highlighted source, as text
    assert html.unescape(text).count(f"def step_{variant}(") == 1
    assert inspect.getsource(recurrent.STEPS[variant]).splitlines()[1].strip() in html.unescape(text)
    assert NOTEBOOK_URL.endswith(".ipynb") and (ROOT / "notebooks" / NOTEBOOK_URL.rsplit("/", 1)[1]).exists()


@pytest.mark.parametrize("variant", [v for v in REGISTRY if REGISTRY[v].fixed_state])
def test_the_browser_rebuilds_the_change_from_the_state_and_the_transition(variant):
    # what app/components/player.py computes at each frame: S_{t-1}(diag + a bᵀ − I) (+ the write u wᵀ)
    from lineare.app.components.plots import rank_one

    store = StateStore(variant=variant, heads=2, preset="overwrite", alpha=0.7, beta=0.6)
    records = store.result.records
    for head in range(2):
        frames = [head_frame(variant, records, head, t) for t in range(len(records))]
        u, w = rank_one(np.stack([f.write for f in frames]))
        before = np.zeros_like(frames[0].state)
        for t, frame in enumerate(frames):
            A = np.diag(frame.diag) + (np.outer(*frame.low) if frame.low else 0)
            removed = before @ (A - np.eye(len(frame.diag)))
            np.testing.assert_allclose(removed, frame.removed, atol=1e-6)
            np.testing.assert_allclose(removed + np.outer(u[t], w[t]), frame.change, atol=1e-6)
            before = frame.state


def test_visitors_with_the_same_settings_share_one_run_and_its_texts():
    tokens = tuple(mechanism.parse(mechanism.PRESETS["crowd"])[0])
    first = mechanism.shared_run("deltanet", tokens, heads=2, beta=0.45, keys="perpendicular")
    again = mechanism.shared_run("deltanet", tokens, heads=2, beta=0.45, keys="perpendicular")
    other = mechanism.shared_run("deltanet", tokens, heads=2, beta=0.5, keys="perpendicular")
    fresh = mechanism.run_sequence("deltanet", list(tokens), heads=2, beta=0.45, keys="perpendicular")
    assert again is first and other is not first
    for shared, own in zip(first.records, fresh.records):
        np.testing.assert_array_equal(shared.state, own.state)
    made = []
    assert first.derived("texts", lambda: made.append(1) or ["a"]) == ["a"]
    assert first.derived("texts", lambda: made.append(1) or ["b"]) == ["a"] and made == [1]
    assert other.derived("texts", lambda: ["c"]) == ["c"]


def test_packed_columns_come_back_to_within_a_65534th_of_their_largest_number():
    from lineare.app.components.plots import packed
    rng = np.random.default_rng(3)
    columns = {"u": rng.normal(size=(7, 16)) * 3, "w": rng.uniform(-1e-3, 1e-3, size=(7, 16)), "a": np.zeros(0),
               "diag": np.zeros(5)}
    data = packed(columns)
    assert data["packed"] == [["u", "w", "a", "diag"]]
    for name, scale in zip(data["packed"][0], data["scales"][0]):
        codes = data[name][0]
        assert codes.dtype == np.int16
        values = columns[name].ravel()
        np.testing.assert_allclose(codes * scale, values, rtol=0, atol=np.abs(values).max(initial=0) / 65534 + 1e-300)


def test_the_knobs_run_the_model_when_released_and_a_drag_moves_only_their_label():
    """A drag sends `value` at every step crossed, a release (or a key press) `value_throttled`: only the
    latter starts a run. A store changed elsewhere (a lesson card, a link) moves the slider."""
    import param

    from lineare.app.dashboards.state_fills_up.view import StateView
    from lineare.app.i18n import language
    from lineare.app.session import Session

    store = StateStore(variant="gated_deltanet", source="mqar")
    with language("en"):
        controls = {getattr(c, "name", None): c for c in StateView(store=store, session=Session()).controls()}
    for name, param_name, moved in (("Forget α (1 keeps everything)", "alpha", 0.5),
                                    ("Correct β (1 replaces fully)", "beta", 0.35), ("Pairs", "pairs", 7)):
        slider, run = controls[name], store.result
        slider.value = moved                                      # dragging over it
        assert getattr(store, param_name) != moved and store.result is run, name
        with param.edit_constant(slider):                         # released there (the browser's message)
            slider.value_throttled = moved
        assert getattr(store, param_name) == moved and store.result is not run, name
    store.alpha = 0.8
    assert controls["Forget α (1 keeps everything)"].value == 0.8


@pytest.mark.parametrize("mode", ["mechanism", "trained"])
def test_the_example_counts_from_one_on_the_page_and_from_zero_in_the_link(mode):
    """A student reads «Example number 1» for the first example: the input counts from 1, the store (and so
    the URL, and the links already shared, and the example's seed) from 0."""
    from lineare.app.dashboards.state_fills_up.view import StateView
    from lineare.app.i18n import language
    from lineare.app.session import Session

    store = StateStore(mode=mode, variant="deltanet", source="mqar", pairs=8)
    with language("en"):
        controls = {getattr(c, "name", None): c for c in StateView(store=store, session=Session()).controls()}
    example = controls["Example number"]
    assert (store.example, example.value, example.start) == (0, 1, 1)
    example.value = 3                                          # typed by the student
    assert store.example == 2
    store.example = 6                                          # from a link or a lesson card
    assert example.value == 7


@pytest.mark.parametrize("lang, words", [("en", "multi-query associative recall"),
                                         ("it", "richiamo associativo con più domande")])
def test_the_mqar_button_is_explained_under_it_in_plain_words(lang, words):
    """The Sequence button says only «MQAR» (it must fit a phone): the line under it spells the acronym out
    and says what the sequence is, while the buttons show; in trained mode both are hidden."""
    from lineare.app.dashboards.state_fills_up.view import StateView
    from lineare.app.i18n import language
    from lineare.app.session import Session

    store = StateStore(variant="deltanet")
    with language(lang):
        controls = StateView(store=store, session=Session()).controls()
    source = next(c for c in controls if "mqar" in getattr(c, "options", {}).values())
    assert [k for k, v in source.options.items() if v == "mqar"] == ["MQAR"]
    after = controls[controls.index(source) + 1]
    note = html.unescape(re.sub("<[^>]+>", "", getattr(after, "object", "") or ""))
    assert note.startswith(f"MQAR ({words})") and after.visible
    store.mode = "trained"
    assert not after.visible and not source.visible
