"""Two bills, the calculator's view: a model's shape in, its two bills out, the chart of memory
against context length and every preset in a table."""
import html

import panel as pn
import param

from lineare.app.components.controls import sidebar_label
from lineare.app.components.text import FIT_CSS, SCROLL_BOX_CSS, Explanation, scroll_box
from lineare.app.dashboards.base import heading
from lineare.app.dashboards.two_bills.calculator import CUSTOM, DTYPES, PRESETS, CalculatorStore
from lineare.app.dashboards.two_bills.model import format_bytes, format_power, significant
from lineare.app.dashboards.two_bills.pictures import MemoryChart, bill_html, status_pane
from lineare.app.i18n import _, current_language, format_number
from lineare.app.urlstate import write_query


class CalculatorView(pn.viewable.Viewer):
    """Draws a CalculatorStore: its inputs, the two bills, memory against context, and every preset."""

    store = param.ClassSelector(class_=CalculatorStore)
    session = param.Parameter()

    def __init__(self, **params):
        super().__init__(**params)
        store, session = self.store, self.session
        language = current_language()
        options = {model.name: key for key, model in PRESETS.items()}
        options[_("Custom")] = CUSTOM
        number = lambda parameter, name: pn.widgets.IntInput.from_param(parameter, name=name, width=150)
        # the context: a slider over powers of two for quick jumps, and a box for any exact number
        notches = {format_number(2 ** e): 2 ** e for e in range(10, 21)}
        quick = pn.widgets.DiscreteSlider(label=_("Quick choice"), options=notches,
                                          value=_notch(store.context), width=320)
        quick.param.watch(lambda e: setattr(store, "context", e.new), "value_throttled")
        store.param.watch(lambda e: setattr(quick, "value", _notch(e.new)), "context")
        self.inputs = pn.Column(
            pn.widgets.Select.from_param(store.param.preset, name=_("Model"), options=options, width=320),
            pn.Row(number(store.param.layers, _("Layers")), number(store.param.heads, _("Heads"))),
            pn.Row(number(store.param.kv_heads, _("KV heads")), number(store.param.d_k, _("Key size d_k"))),
            pn.Row(number(store.param.d_v, _("Value size d_v"))),
            pn.widgets.IntInput.from_param(store.param.context, name=_("Context length (tokens)"), width=310,
                                           step=1024),
            quick,
            sidebar_label(_("Number format")),
            pn.widgets.RadioButtonGroup.from_param(
                store.param.dtype, name=_("Number format"), options={k: k for k in DTYPES}, color="primary",
                variant="outline", width=320),
            width=340)
        self.results = status_pane(margin=(4, 10))
        # the model's weights against its cache, a pane of its own: lesson card 4 asks that comparison, and
        # holds this line back until the student has chosen (app/dashboards/two_bills/lesson.py)
        self.weights = status_pane(margin=(0, 10))
        self.chart = MemoryChart(store, language)
        self.table = status_pane(SCROLL_BOX_CSS, margin=(4, 10))
        self.explanation = Explanation(
            session, stylesheets=[FIT_CSS],           # its displayed formula fits the column, presenting too
            elementare=_("A real model pays the same two bills in every layer and every head. Pick a model or "
                         "type its numbers: the notebook (KV cache) grows with the length of the text, the summary "
                         "(state) does not. "
                         "«Number format» sets the size of each stored number: 4 bytes in fp32, 2 in bf16 and "
                         "fp16, 1 in int8. To read a long prompt, softmax attention also compares every word "
                         "with every one before it: for 100,000 words that is about 5 billion comparisons in "
                         "each head of each layer."),
            superiore=_("$$\\text{KV cache} = 2\\,L\\,H_{kv}\\,d\\,n\\,b \\qquad \\text{fixed state} = L\\,H\\,d_k\\,"
                        "d_v\\,b$$ with $L$ layers, $H$ heads, $H_{kv}$ key-value heads (grouped-query attention: "
                        "$H_{kv} < H$), head size $d$ ($d_k + d_v$ in place of $2d$ when they differ), $n$ tokens "
                        "and $b$ bytes per number. Reading a prompt takes $n(n+1)/2$ query-key scores per head "
                        "and layer with the causal mask (about $n^2/2$; for $n = 10^5$, $5 \\cdot 10^9$), each a "
                        "dot product of length $d_k$, and as many weighted values of length $d_v$: "
                        "$\\tfrac12 n(n+1)(d_k + d_v)$ multiply-adds, $O(n^2 d)$. A fixed state costs "
                        "$2\\,n\\,d_k d_v$ (a write $v_t k_t^\\top$ and a read $S_t q_t$ per token), $O(n d^2)$."))
        self.note = status_pane(margin=(0, 10))
        store.param.watch(self._draw, list(CalculatorStore.URL))
        write_query(store, CalculatorStore.URL)
        self._draw()

    def __panel__(self):
        return pn.Column(
            heading(_("The bill for real models")),
            pn.FlexBox(self.inputs, pn.Column(self.results, self.weights, self.note, min_width=480, max_width=860,
                                              sizing_mode="stretch_width"), sizing_mode="stretch_width"),
            pn.FlexBox(pn.pane.Bokeh(self.chart.chart, margin=(0, 12, 12, 0)),
                       pn.Column(pn.Spacer(height=30), self.explanation, width=580), sizing_mode="stretch_width"),
            self.table, sizing_mode="stretch_width")

    def _draw(self, *_events):
        store = self.store
        with pn.io.hold():
            self.results.object = self._results()
            self.weights.object = self._weights()
            model = store.model
            if model is None:
                self.note.object = ""
            else:
                source = _("Source: {source}").format(source=model.source)
                self.note.object = (f'<p class="note">{html.escape(_(model.note))}</p>'
                                    f'<p class="source">{html.escape(source)}</p>')
            self.table.object = self._table()

    def _results(self):
        store = self.store
        model, n = store.model, store.context
        b = store.bytes_per_number
        badge = "" if model is None else _("what {model} keeps").format(model=model.name)
        mine = lambda kind: badge if model is not None and model.kind == kind else ""
        if store.key_heads != store.kv_heads:             # shared keys (Mamba-2's B): fewer keys than values
            cache_how = _("{per} per token: {layers} layers × ({keys} × {dk} + {kv} × {dv}) numbers × {b} B, "
                          "the keys shared by the heads").format(
                per=format_bytes(store.kv_cache_bytes(1)), layers=store.layers, keys=store.key_heads,
                kv=store.kv_heads, dk=store.d_k, dv=store.d_v, b=b)
        else:
            cache_how = _("{per} per token: {layers} layers × {kv} KV heads × ({dk} + {dv}) numbers × {b} B").format(
                per=format_bytes(store.kv_cache_bytes(1)), layers=store.layers, kv=store.kv_heads, dk=store.d_k,
                dv=store.d_v, b=b)
        state_how = _("at any length: {layers} layers × {heads} heads × {dk} × {dv} numbers × {b} B").format(
            layers=store.layers, heads=store.heads, dk=store.d_k, dv=store.d_v, b=b)
        # the bill that is not the preset's own is that of the other kind of model, with the same shape
        cache_what = _("KV cache of a softmax model of this shape, at {n} tokens") \
            if model is not None and model.kind == "state" else _("KV cache at {n} tokens")
        state_what = _("A fixed-state model of this shape keeps") \
            if model is None or model.kind == "softmax" else _("Fixed state")
        bills = (bill_html("cache", cache_what.format(n=format_number(n)),
                           format_bytes(store.kv_cache_bytes()), cache_how, mine("softmax"))
                 + bill_html("state", state_what, format_bytes(store.state_bytes()), state_how, mine("state")))
        lines = []
        ratio = store.kv_cache_bytes() / store.state_bytes()
        crossing = store.crossing()
        if ratio >= 1:
            lines.append(_("At {n} tokens the cache is {ratio} times the state; it is bigger from token "
                           "{crossing} on.").format(n=format_number(n), ratio=significant(ratio),
                                                    crossing=format_number(crossing)))
        else:
            lines.append(_("At {n} tokens the cache is still smaller than the state; it becomes bigger from token "
                           "{crossing} on.").format(n=format_number(n), crossing=format_number(crossing)))
        softmax, state = store.multiply_adds()
        work = _("Reading a prompt of {n} tokens, in each head of each layer: softmax attention does {softmax} "
                 "multiply-adds (each token scores itself and every token before it, and adds up their values), a "
                 "fixed-state model of this shape {state} (one write and one read of its state per token). In the "
                 "whole model: {softmax_all} against {state_all}.").format(
            n=format_number(n), softmax=format_power(softmax), state=format_power(state),
            softmax_all=format_power(store.whole_model(softmax)), state_all=format_power(store.whole_model(state)))
        if softmax >= state:
            work += " " + _("Softmax does {ratio} times as many.").format(ratio=significant(softmax / state))
        else:
            work += " " + _("At this length the state costs more: {ratio} times as many.").format(
                ratio=significant(state / softmax))
        lines.append(work)
        text = "".join(f"<p>{html.escape(line)}</p>" for line in lines)
        if store.past_context():
            text = f'<p class="limit">{html.escape(past_context_line(model))}</p>' + text
        return f'<div class="status"><div class="bills">{bills}</div>{text}</div>'

    def _weights(self):
        store, model = self.store, self.store.model
        if model is None:
            return ""
        line = _("The weights of {model} take {bytes} ({params} billion parameters × {b} B); the cache alone "
                 "outgrows them from about {tokens} tokens.").format(
            model=model.name, bytes=format_bytes(store.weight_bytes()),
            params=format_number(model.parameters / 1e9, 2), b=store.bytes_per_number,
            tokens=format_number(store.weights_crossing()))
        return f'<div class="status"><p>{html.escape(line)}</p></div>'

    def _table(self):
        store = self.store
        b, n = store.bytes_per_number, store.context
        rows = []
        for key, model in PRESETS.items():
            keeps = (model.layers * model.kv_heads * (model.d_k + model.d_v) * n * b if model.kind == "softmax"
                     else model.layers * model.heads * model.d_k * model.d_v * b)
            what = _("KV cache") if model.kind == "softmax" else _("fixed state")
            heads = (_("{heads} heads ({kv} KV)").format(heads=model.heads, kv=model.kv_heads)
                     if model.kv_heads != model.heads else _("{heads} heads").format(heads=model.heads))
            shape = _("{layers} layers × {heads}, d_k = {dk}, d_v = {dv}").format(
                layers=model.layers, heads=heads, dk=model.d_k, dv=model.d_v)
            current = ' class="current"' if key == store.preset else ""
            past = ('<span class="past">%s</span>' % html.escape(past_context_mark(model))
                    if model.kind == "softmax" and store.past_context(model) else "")
            rows.append(f"<tr{current}><td><b>{html.escape(model.name)}</b></td><td>{html.escape(what)}</td>"
                        f'<td class="num">{html.escape(format_bytes(keeps))}{past}</td>'
                        f'<td class="num">{html.escape(format_bytes(model.parameters * b))}</td>'
                        f'<td class="wrap">{html.escape(shape)}</td>'
                        f'<td class="source wrap">{html.escape(model.source)}</td></tr>')
        header = (_("Model"), _("Keeps while generating"),
                  _("at {n} tokens ({dtype})").format(n=format_number(n), dtype=store.dtype), _("Weights"),
                  _("Shape"), _("Source"))
        head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
        table = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        return scroll_box(table, _("Every model's bill"), fits=62)


def past_context_mark(model):
    """Under a row's amount, when the context is longer than the model reads."""
    if model.window:
        return _("past its window of {tokens} tokens").format(tokens=format_number(model.context))
    return _("past its context of {tokens} tokens").format(tokens=format_number(model.context))


def past_context_line(model):
    """Above the bills, when the context is longer than the preset reads."""
    if model.window:
        return _("{model} looks back only {tokens} tokens (a sliding window): at this length it keeps the last "
                 "{tokens}, and these bills are those of its shape without the window.").format(
            model=model.name, tokens=format_number(model.context))
    return _("{model} was made to read up to {tokens} tokens: at this length these bills are the formula's "
             "numbers for its shape, not something the model can use.").format(
        model=model.name, tokens=format_number(model.context))


def _notch(context):
    """The power of two on the quick slider at or below `context` (1,024 … 1,048,576)."""
    return 2 ** min(max(int(context).bit_length() - 1, 10), 20)
