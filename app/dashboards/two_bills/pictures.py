"""Two bills, what both parts of the page draw with: the bills as HTML, and the two charts that change
only when a knob moves (HoloViews): the session's measurements, and the calculator's memory against
context length."""
import html

import holoviews as hv
import numpy as np
import panel as pn

from app.components.charts import knob_chart
from app.components.curves import BLUE, GREY, VERMILLION
from app.dashboards.two_bills.model import STATE_VARIANTS, byte_unit
from app.i18n import _
from app.variants import REGISTRY

STATUS_CSS = """
:host { width: 100%; }
.status { font-size: 17px; color: #243b53; }
.step { font-size: 15px; color: #52606d; margin-bottom: 6px; }
.bills { display: flex; flex-wrap: wrap; gap: 12px; margin: 6px 0; }
.bill { border-radius: 10px; padding: 8px 14px; min-width: 260px; background: #fbfcfe; border: 2px solid #d9e2ec; }
.bill .what { font-size: 15px; color: #52606d; }
.bill .amount { font-size: 28px; font-weight: 700; }
.bill .how { font-size: 14px; color: #52606d; }
.bill.cache { border-color: #d55e00; } .bill.cache .amount { color: #a04000; }
.bill.state { border-color: #0072b2; border-style: dashed; } .bill.state .amount { color: #005282; }
.bill .mine { display: inline-block; font-size: 13px; font-weight: 700; color: white; background: #1d4f7a;
              border-radius: 4px; padding: 1px 6px; margin-left: 6px; }
.note { font-size: 15px; color: #52606d; margin: 4px 0; }
.limit { font-size: 15px; color: #3e2c00; background: #fff8e1; padding: 4px 10px; border-radius: 4px; }
table { border-collapse: collapse; font-size: 15px; margin-top: 6px; }
th, td { text-align: left; padding: 4px 10px; border-bottom: 1px solid #e4e7eb; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.current { background: #fff3c4; }
.source { color: #7b8794; font-size: 13px; }
"""


def bill_html(kind, what, amount, how, badge=""):
    """One bill: what is kept, how much, and how it is made up (every piece escaped)."""
    mark = f'<span class="mine">{html.escape(badge)}</span>' if badge else ""
    return (f'<div class="bill {kind}"><div class="what">{html.escape(what)}{mark}</div>'
            f'<div class="amount">{html.escape(amount)}</div><div class="how">{html.escape(how)}</div></div>')


def status_pane(**params):
    return pn.pane.HTML(stylesheets=[STATUS_CSS], sizing_mode="stretch_width", **params)


class HistoryChart:
    """The session's runs: median time per token against tokens in memory, one point per run, for the
    current number and size of heads; a line through the typical time at each context."""

    def __init__(self, store, language):
        self.store = store
        self.softmax = _("softmax")
        self.state = {v: _("state ({model})").format(model=_(REGISTRY[v].label)) for v in STATE_VARIANTS}
        self.chart = hv.DynamicMap(self._draw, streams=[hv.streams.Params(store, ["history"])]).opts(
            *knob_chart(_("Your measurements: time against context"), _("tokens in memory"),
                        _("milliseconds per token (median)"), language=language),
            hv.opts.Curve("Softmax", color=VERMILLION, line_width=2, alpha=0.6),
            hv.opts.Scatter("Softmax", color=VERMILLION, size=11, alpha=0.9),
            hv.opts.Curve("State", color=BLUE, line_dash="dashed", line_width=2, alpha=0.6),
            hv.opts.Scatter("State", color=BLUE, marker="square", size=11, alpha=0.9))

    def _draw(self, history):
        store = self.store
        points = sorted((held, soft, state) for heads, dim, held, soft, state in history
                        if (heads, dim) == (store.heads, store.dim))
        held = [p[0] for p in points]
        positions = sorted(set(held))
        top = max([value for p in points for value in p[1:]] + [0.1])
        x = hv.Dimension("held", range=(0, max(held + [1024]) * 1.08))
        y = hv.Dimension("ms", range=(0, 1.2 * top))
        overlay = []
        for group, label, values in (("Softmax", self.softmax, [p[1] for p in points]),
                                     ("State", self.state[store.result.variant], [p[2] for p in points])):
            typical = [float(np.median([v for h, v in zip(held, values) if h == at])) for at in positions]
            overlay += [hv.Curve((positions, typical), x, y, group=group, label=label),
                        hv.Scatter((held, values), x, y, group=group, label=label)]
        return hv.Overlay(overlay)


class MemoryChart:
    """The calculator's two bills (and the model's weights) against context length."""

    def __init__(self, store, language):
        self.labels = {"cache": _("KV cache (softmax)"), "state": _("fixed state"),
                       "weights": _("weights of the model")}
        self.y_label = _("memory ({unit})")
        self.chart = hv.DynamicMap(self._draw, streams=[hv.streams.Params(store, ["memory"])]).opts(
            *knob_chart(_("Memory against context length"), _("context length (tokens)"), None,
                        language=language, legend_columns=2),
            hv.opts.Curve("Cache", color=VERMILLION, line_width=4),
            hv.opts.Curve("State", color=BLUE, line_dash="dashed", line_width=4),
            hv.opts.Curve("Weights", color=GREY, line_dash="dotdash", line_width=2))

    def _draw(self, memory):
        n, cache, state, weights = memory
        top = max(cache, state, weights or 0)
        size, symbol = byte_unit(top)
        x = hv.Dimension("context", range=(0, n))
        y = hv.Dimension("memory", label=self.y_label.format(unit=symbol), range=(0, 1.1 * top / size))
        return (hv.Curve(([0, n], [0, cache / size]), x, y, group="Cache", label=self.labels["cache"])
                * hv.Curve(([0, n], [state / size] * 2), x, y, group="State", label=self.labels["state"])
                * hv.Curve(([0, n], [weights / size] * 2) if weights else ([], []), x, y, group="Weights",
                           label=self.labels["weights"]))
