"""The engine's records and sweeps as HoloViews objects, for a notebook (the app's pages draw with Bokeh directly).

    from lineare.engine import stepping
    from lineare import charts
    o, state, records = stepping.run("deltanet", q, k, v, beta=beta)    # q, k, v [1, T, H, ·]
    charts.states(records)                    # hv.HoloMap of hv.Image: S_t, one frame per (token, layer, head)
    charts.gates(records)                     # the transition's decay and the delta rule's β, per token
    charts.corrections(records)               # ‖v_t − S_{t−1} k_t‖: what the delta rule corrects, per token
    charts.capacity_curve(engine.capacity.capacity("delta", d_k=16, pairs=[4, 8, 16, 32]))
    charts.capacity_map("delta", d_ks=[8, 16, 32], pairs=[4, 8, 16, 32, 64])      # accuracy over (d_k, N)
    charts.recall_map("gated-delta", d_k=16, pairs=24, alphas=[…], betas=[…])       # accuracy over (α, β)
    charts.save(charts.states(records), "state.html")      # one HTML file with its slider, no server

`records` is what `engine.stepping.run` returns (one layer: records[t]) or what `app.checkpoints.step_through`
returns (records[layer][t]). Every picture shows batch element `batch` (default 0). Importing this module
loads HoloViews' Bokeh backend; in a notebook call `hv.extension("bokeh")` (or `pn.extension()`) first.
"""
import numpy as np
import torch

import holoviews as hv
import holoviews.plotting.bokeh  # noqa: F401  (the backend the options below are for)

from lineare.engine.capacity import capacity, measure, write_and_read
from lineare.engine.tasks import capacity_data

COLOURS = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000", "#f0e442")


def _layers(records):
    """records[layer][t], whichever of the two shapes was given."""
    if not records:
        raise ValueError("no records: step through at least one token")
    return [list(records)] if not isinstance(records[0], (list, tuple)) else [list(r) for r in records]


def _limit(values):
    """A symmetric colour range for a whole run, so that a colour means the same number in every frame."""
    largest = max((float(np.abs(v).max()) for v in values if v is not None and v.size), default=0.0)
    return largest or 1.0


def states(records, batch=0):
    """The state S_t after every token as an hv.HoloMap of hv.Image, keyed by (token, layer, head).

    The image of a frame is the record's `state[batch, head]` [d_v, d_k], row 0 (value dimension 0) at the
    top, on one colour range for the whole run; a softmax record has no state (its KV cache grows instead)."""
    layers = _layers(records)
    if layers[0][0].state is None:
        raise ValueError(f"{layers[0][0].variant} keeps no fixed-size state (its records carry a KV cache size)")
    limit = _limit([r.state[batch] for layer in layers for r in layer])
    frames = {}
    for l, layer in enumerate(layers):
        for t, record in enumerate(layer):
            for h, S in enumerate(record.state[batch]):                           # [d_v, d_k]
                d_v, d_k = S.shape
                frames[t, l, h] = hv.Image((np.arange(d_k), np.arange(d_v), S), ["key dimension", "value dimension"],
                                           "S").opts(cmap="RdBu_r", clim=(-limit, limit), colorbar=True,
                                                     invert_yaxis=True, width=420, height=360, tools=["hover"],
                                                     title=f"{record.variant}: state S_t")
    return hv.HoloMap(frames, kdims=["token", "layer", "head"])


def _per_token(layers, batch, read, label):
    """An hv.Overlay of one hv.Curve per (layer, head): read(record) [H] at every token."""
    curves = []
    for l, layer in enumerate(layers):
        values = np.stack([read(record)[batch] for record in layer])              # [T, H]
        for h in range(values.shape[1]):
            name = f"{label}, head {h + 1}" + (f", layer {l + 1}" if len(layers) > 1 else "")
            curves.append(hv.Curve((np.arange(len(layer)), values[:, h]), "token", label, label=name).opts(
                color=COLOURS[len(curves) % len(COLOURS)], width=520, height=280, tools=["hover"]))
    return curves


def gates(records, batch=0):
    """The gates of every token as curves keyed by token: the transition's decay (a per-channel decay: its
    mean over the key channels) and the delta rule's step size β, one curve per layer and head."""
    layers = _layers(records)
    first = layers[0][0]
    curves = []
    if first.decay is not None:
        mean = (lambda r: r.decay.mean(-1)) if first.decay.ndim == 3 else (lambda r: r.decay)
        curves += _per_token(layers, batch, mean, "decay" if first.decay.ndim == 2 else "decay (channel mean)")
    if first.beta is not None:
        curves += _per_token(layers, batch, lambda r: r.beta, "β")
    if not curves:
        raise ValueError(f"{first.variant} has no gates: nothing decays and every write counts fully")
    return hv.Overlay(curves).opts(legend_position="right", title=f"{first.variant}: gates per token")


def corrections(records, batch=0):
    """What the memory already said about each key and how far off it was, keyed by token: ‖S_{t−1} k_t‖
    (the prediction) and ‖v_t − S_{t−1} k_t‖ (the error the delta rule corrects, scaled by β)."""
    layers = _layers(records)
    first = layers[0][0]
    if first.error is None:
        raise ValueError(f"{first.variant} records no prediction error")
    curves = _per_token(layers, batch, lambda r: np.linalg.norm(r.prediction, axis=-1), "‖S k‖ (prediction)")
    curves += _per_token(layers, batch, lambda r: np.linalg.norm(r.error, axis=-1), "‖v − S k‖ (error)")
    return hv.Overlay(curves).opts(legend_position="right", title=f"{first.variant}: the memory's error per token")


def capacity_curve(rows):
    """Rows of `engine.capacity.capacity` as curves over N: recall error, the best read-out of the same keys,
    the bound ½·max(0, 1 − d_k/N), and the share answered right."""
    N = np.array([row["pairs"] for row in rows])
    look = dict(width=460, height=320, tools=["hover"])
    errors = hv.Overlay([
        hv.Curve((N, [row[name] for row in rows]), "N", "error per query", label=label).opts(color=colour, **look)
        for name, label, colour in (("error", "this memory's read-out", "#d55e00"),
                                    ("best", "the best read-out of these keys", "#0072b2"),
                                    ("bound", "the best of any linear read-out", "#1f2933"))])
    right = hv.Curve((N, [row["accuracy"] for row in rows]), "N", "accuracy").opts(color="#e69f00", **look)
    return (errors.opts(title="Recall error") + right.opts(title="Answers right")).cols(2)


def capacity_map(rule, *, d_ks, pairs, keys="random", seed=0, trials=1):
    """The share of answers right over (d_k, N), as an hv.HeatMap (`engine.capacity.capacity` per d_k)."""
    cells = [(d_k, row["pairs"], row["accuracy"])
             for d_k in d_ks for row in capacity(rule, d_k=d_k, pairs=pairs, keys=keys, seed=seed, trials=trials)]
    return hv.HeatMap(cells, ["d_k", "N"], "accuracy").opts(
        cmap="viridis", clim=(0, 1), colorbar=True, width=460, height=360, tools=["hover"],
        title=f"{rule}: answers right over (d_k, N)")


def recall_map(rule, *, d_k, pairs, alphas=None, betas=None, keys="random", repeat=0, seed=0):
    """The share of answers right of one memory (d_k, N pairs) as its gates change: an hv.HeatMap over (α, β)
    when both are given (gated delta rule), else an hv.Curve over the one given (α: the share kept per write,
    β: the step size of every write)."""
    if alphas is None and betas is None:
        raise ValueError("give alphas, betas or both")
    data = capacity_data(num_pairs=pairs, d_k=d_k, keys=keys, repeat=repeat, seed=seed, dtype=torch.float64)

    def right(alpha, beta):
        readouts, _S = write_and_read(rule, data.keys, data.values, data.queries, alpha=alpha, beta=beta)
        return measure(readouts, data.targets, data.queries)[2]

    look = dict(width=460, height=340, tools=["hover"], title=f"{rule}, d_k = {d_k}, N = {pairs}")
    if alphas is not None and betas is not None:
        cells = [(a, b, right(a, b)) for a in alphas for b in betas]
        return hv.HeatMap(cells, ["α", "β"], "accuracy").opts(cmap="viridis", clim=(0, 1), colorbar=True, **look)
    name, values = ("α", alphas) if alphas is not None else ("β", betas)
    accuracy = [right(v, None) if name == "α" else right(None, v) for v in values]
    return hv.Curve((list(values), accuracy), name, "accuracy").opts(ylim=(0, 1.05), **look)


def save(chart, path):
    """`chart` as one HTML file that opens with no server and asks nothing of the network: Bokeh's and Panel's
    JavaScript inline, Panel's stylesheets inline (as a notebook run with `pn.extension(inline=True)` gets
    them; hv.save links them from Panel's CDN), every frame of a HoloMap embedded behind its slider."""
    import panel as pn
    from bokeh.document import Document
    from bokeh.models import UIElement
    from bokeh.resources import INLINE
    from panel.io.embed import embed_state
    from panel.io.notebook import patch_inline_stylesheets
    from panel.io.save import save as save_document

    pane = pn.panel(chart)
    document = Document()
    with pn.config.set(embed=True):
        root = pane.get_root(document)
        embed_state(pane, root, document, progress=False)          # every frame, behind the slider
    for model in document.select({"type": UIElement}):
        patch_inline_stylesheets(model)                            # a CDN stylesheet → its text, from Panel's dist
    save_document(document, str(path), resources=INLINE)
    return path


__all__ = ["states", "gates", "corrections", "capacity_curve", "capacity_map", "recall_map", "save"]
