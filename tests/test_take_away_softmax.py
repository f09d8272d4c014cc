"""Take away the softmax (app/dashboards/take_away_softmax/) without a browser: the sentence's numbers
against a direct float64 computation, the table's o_t against the state's, the counts against torch's own
count of the two matrix products, the URL rules and what the view sends to the browser."""
import re
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from lineare.app.dashboards import DASHBOARDS
from lineare.app.dashboards.take_away_softmax.model import (D, DIMS, LENGTHS, SENTENCE, WORDS, SoftmaxStore, attend,
                                                    cost_curves, multiply_adds, sentence_vectors)
from lineare.app.i18n import _, language
from lineare.app.session import Session
from lineare.app.urlstate import read_query


def direct(kind):
    """o_t and the weights written out one position at a time, in float64, with torch's elu for φ."""
    q, k, v = (torch.tensor(x) for x in sentence_vectors())
    T, d = q.shape
    phi = lambda x: F.elu(x) + 1
    weights, outputs = np.full((T, T), np.nan), np.zeros((T, d))
    for t in range(T):
        if kind == "softmax":
            scores = torch.stack([torch.exp(q[t] @ k[i] / d ** 0.5) for i in range(t + 1)])
        else:
            scores = torch.stack([phi(q[t]) @ phi(k[i]) for i in range(t + 1)])
        shares = scores / scores.sum()
        weights[t, :t + 1] = shares.numpy()
        outputs[t] = sum(shares[i] * v[i] for i in range(t + 1)).numpy()
    return weights, outputs


# ----------------------------------------------------------------------- the sentence's numbers

@pytest.mark.parametrize("kind", ["softmax", "linear"])
def test_the_table_matches_a_direct_computation(kind):
    run = attend(kind)
    weights, outputs = direct(kind)
    assert run.weights.shape == (WORDS, WORDS) and run.q.shape == (WORDS, D)
    assert np.array_equal(np.isnan(run.weights), ~np.tri(WORDS, dtype=bool))       # the future is masked
    np.testing.assert_allclose(run.weights, weights, rtol=0, atol=1e-14)
    np.testing.assert_allclose(np.nansum(run.weights, axis=1), 1.0, rtol=0, atol=1e-14)
    np.testing.assert_allclose(run.outputs, outputs, rtol=0, atol=1e-13)


def test_the_state_gives_the_tables_answers_to_float_precision():
    run = attend("linear")
    phi_q, phi_k = (F.elu(torch.tensor(x)) + 1 for x in (run.q, run.k))
    v = torch.tensor(run.v)
    for t in range(WORDS):
        S = sum(torch.outer(v[i], phi_k[i]) for i in range(t + 1))                   # [d_v, d_k]
        z = phi_k[:t + 1].sum(0)
        np.testing.assert_allclose(run.states[t], S.numpy(), rtol=0, atol=1e-13)
        np.testing.assert_allclose(run.sums[t], z.numpy(), rtol=0, atol=1e-13)
        np.testing.assert_allclose(run.recurrent[t], (S @ phi_q[t] / (z @ phi_q[t])).numpy(), rtol=0, atol=1e-13)
        assert run.gap(t) <= 1e-14                                                   # table = state
    assert run.states.shape == (WORDS, D, D)                                         # d × d at every step


def test_softmax_has_no_state_and_the_feature_map_flattens_the_rows():
    softmax, linear = attend("softmax"), attend("linear")
    assert softmax.states is None and softmax.recurrent is None
    # the same q, k, v; the feature map's rows are flatter, as the page says: more entropy, a smaller top share
    entropy = lambda run: np.mean([-np.nansum(row * np.log(row)) for row in run.weights[1:]])
    top = lambda run: np.nanmax(run.weights[1:], axis=1).mean()
    assert np.all(np.nan_to_num(linear.weights, nan=1) > 0)
    assert entropy(linear) > entropy(softmax) and top(linear) < top(softmax)
    with pytest.raises(ValueError, match="cosine"):
        attend("cosine")


# ----------------------------------------------------------------------- the counts

@pytest.mark.parametrize("T,d", [(8, 4), (16, 64), (96, 32), (64, 64)])
def test_the_counts_are_the_multiply_adds_of_the_two_products(T, d):
    Q, K, V = torch.randn(3, T, d)
    counts = {}
    for form, product in (("parallel", lambda: (Q @ K.T) @ V), ("recurrent", lambda: Q @ (K.T @ V))):
        with FlopCounterMode(display=False) as counter:
            product()
        counts[form] = counter.get_total_flops() // 2                      # torch counts a multiply-add as 2
    assert multiply_adds(T, d) == counts


def test_the_cost_curves_cross_at_t_equal_d():
    for d in DIMS:
        curves = cost_curves(d)
        assert len(curves["parallel"]) == len(curves["recurrent"]) == len(LENGTHS)
        for T, parallel, recurrent in zip(LENGTHS, curves["parallel"], curves["recurrent"]):
            assert parallel * d == recurrent * T                             # the ratio is T / d
            assert (parallel < recurrent) == (T < d)


# ----------------------------------------------------------------------- the store and its URL

def test_the_store_follows_its_controls():
    store = SoftmaxStore()
    assert store.run.kind == "softmax" and store.counts == multiply_adds(1024, 64)
    store.attention = "linear"
    assert store.run.kind == "linear" and store.run.recurrent is not None
    store.param.update(length=4096, dim=128)
    assert store.counts == {"parallel": 2 * 4096 ** 2 * 128, "recurrent": 2 * 4096 * 128 ** 2}


def test_bad_url_values_become_notices():
    raw = {"attention": [b"cosine"], "T": [b"100"], "d": [b"<b>7</b>"]}
    with language("en"):
        values, notices = read_query(SoftmaxStore, SoftmaxStore.URL, raw)
    assert values == {"attention": "softmax", "length": 1024, "dim": 64}
    assert len(notices) == 3 and all("is not valid here" in n for n in notices)
    values, notices = read_query(SoftmaxStore, SoftmaxStore.URL, {"attention": [b"linear"], "T": [b"4096"]})
    assert values == {"attention": "linear", "length": 4096} and notices == []


@pytest.mark.parametrize("lang", ["it", "en"])
def test_the_sentence_has_eight_words_in_both_languages(lang):
    with language(lang):
        words = _(SENTENCE).split()
    assert len(words) == WORDS and (lang == "en") == (words[0] == "Yesterday")


def test_the_model_imports_without_panel():
    code = ("import sys; import app.dashboards.take_away_softmax.model; "
            "assert 'panel' not in sys.modules and 'bokeh' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


# ----------------------------------------------------------------------- what the view sends

def view(lang, **values):
    from lineare.app.dashboards.take_away_softmax.view import SoftmaxView

    with language(lang):
        return SoftmaxView(store=SoftmaxStore(**values), session=Session(language=lang))


def frame(source, cells, t, column):
    return np.asarray(source.data[column][t * cells:(t + 1) * cells])


def test_the_run_holds_every_frame_the_model_computed():
    page = view("en", attention="linear")
    run = page.store.run
    cells = (D + 1) * D                                                     # S over zᵀ
    assert len(page.memory.cells.data["value"]) == WORDS * cells
    for t in range(WORDS):
        shown = frame(page.memory.cells, cells, t, "value").reshape(D + 1, D)
        assert np.array_equal(shown[:D], run.states[t]) and np.array_equal(shown[D], run.sums[t])
        alpha = frame(page.table.cells, WORDS * WORDS, t, "alpha").reshape(WORDS, WORDS)
        assert np.all(alpha[t] == 1) and np.all(np.delete(alpha, t, axis=0) < 1)     # row t alone, lit
    assert page.player.length == WORDS and page.caption.frames and len(page.caption.frames) == WORDS
    with language("en"):
        page.store.attention = "softmax"                                     # the notebook: a row per word
    notes = frame(page.memory.cells, WORDS * 2 * D, 2, "value").reshape(WORDS, 2 * D)
    assert np.array_equal(notes[:3], np.hstack([run.k, run.v])[:3]) and np.isnan(notes[3:]).all()


@pytest.mark.parametrize("lang", ["it", "en"])
def test_each_caption_shows_the_same_numbers_both_ways(lang):
    page = view(lang, attention="linear")
    for t, caption in enumerate(page.caption.frames):
        table, state = re.findall(r'<span class="vec">\((.*?)\)</span>', caption)
        assert table == state and len(table.split()) == D, caption
        assert f"{t + 1}" in caption


def test_the_counts_follow_the_length_and_the_level():
    page = view("it")
    before = page.counts._pane.object
    with language("it"):
        page.store.length = 4096
    after = page.counts._pane.object
    assert after != before and "4.096 parole" in after and "64 volte meno" in after
    with language("it"):
        page.session.level = "superiore"
        page.store.length = 8
    formulas = page.counts._pane.object
    assert "<math" in formulas and "8 volte di più" in formulas
    assert [item.label.value for item in page.cost.items.values()] == ["(QKᵀ)V: 8.192", "Q(KᵀV): 65.536"]


@pytest.mark.parametrize("lang", ["it", "en"])
def test_the_first_page_of_the_chapter_names_its_words(lang):
    """The lesson comes first, and its Elementare point names label (key), information (value), question
    (query), notebook of notes (KV cache) and summary (state) before any other page uses them."""
    assert DASHBOARDS[0].slug == "softmax"
    plain = view(lang).point.elementare
    terms = {"it": ("**etichetta** (chiave)", "**informazione** (valore)", "**domanda** (query)",
                    "**archivio di appunti** (cache KV)", "**riassunto** (stato)"),
             "en": ("**label** (key)", "**information** (value)", "**question** (query)",
                    "**notebook of notes** (KV cache)", "**summary** (state)")}[lang]
    assert all(term in plain for term in terms), plain


@pytest.mark.parametrize("lang", ["it", "en"])
def test_the_landing_page_starts_with_the_lesson(lang):
    from lineare.app.dashboards.home import build as build_home

    with language(lang):
        top = build_home(Session(language=lang, level="elementare")).main.objects[0].object
    start = re.search(r'<p class="start">(.*?)</p>', top).group(1)
    assert f'href="./softmax?lang={lang}&amp;level=elementare">{"Togli" if lang == "it" else "Take away"}' in start


def _luminance(hex_colour):
    channels = [int(hex_colour.lstrip("#")[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def test_the_veiled_never_built_cells_stay_readable_and_look_veiled():
    from lineare.app.dashboards.take_away_softmax.pictures import CellsPicture
    from lineare.app.dashboards.take_away_softmax.view import VEIL

    picture = CellsPicture("t", "x", "y", width=300, height=300)
    values = np.array([[[0.9, 0.2], [0.05, 1.0]]])                   # dark and pale cells
    shown = np.array([[[1.0, 1.0], [VEIL, VEIL]]])                   # the second row veiled
    picture.show_frames(values, 1.0, 0, labels=[[["90", "20"], ["5", "100"]]], shown=shown)
    data, named = picture.cells.data, {"white": "#ffffff"}
    assert picture.text.text_alpha == 1.0                            # the number itself is never faded
    for i in range(4):
        fill, alpha = data["fill"][i], data["alpha"][i]
        # the cell's colour as seen: its fill at its opacity over the white page
        seen = "#" + "".join(f"{round(alpha * int(fill[k:k + 2], 16) + (1 - alpha) * 255):02x}" for k in (1, 3, 5))
        ink = named.get(data["ink"][i], data["ink"][i])
        high, low = sorted((_luminance(seen), _luminance(ink)), reverse=True)
        assert (high + 0.05) / (low + 0.05) >= 4.5, (i, fill, alpha, ink)
        assert data["style"][i] == ("italic" if alpha < 1 else "normal")
