"""Two bills, what both parts of the page draw with: the bills as HTML, and the two charts that change
only when a knob moves: the session's measurements, and the calculator's memory against context length."""
import html

import numpy as np
import panel as pn

from app.components.curves import BLUE, GREY, VERMILLION, CurvesPicture
from app.dashboards.two_bills.model import byte_unit
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
        self.picture = CurvesPicture(_("Your measurements: time against context"), _("tokens in memory"),
                                     _("milliseconds per token (median)"), language=language)
        self.picture.line("softmax_line", color=VERMILLION, width=2, alpha=0.6)
        self.picture.dots("softmax", color=VERMILLION, size=11, alpha=0.9)
        self.picture.line("state_line", color=BLUE, dash="dashed", width=2, alpha=0.6)
        self.picture.dots("state", color=BLUE, marker="square", size=11, alpha=0.9)
        self.picture.label("softmax", _("softmax"), ["softmax", "softmax_line"])
        self.picture.label("state", "", ["state", "state_line"])
        self.chart = self.picture.figure
        store.param.watch(self.draw, "history")
        self.draw()

    def draw(self, *_events):
        store = self.store
        points = sorted((held, soft, state) for heads, dim, held, soft, state in store.history
                        if (heads, dim) == (store.heads, store.dim))
        held = [p[0] for p in points]
        positions = sorted(set(held))
        for name, values in (("softmax", [p[1] for p in points]), ("state", [p[2] for p in points])):
            typical = [float(np.median([v for h, v in zip(held, values) if h == at])) for at in positions]
            self.picture.show(name, held, values)
            self.picture.show(name + "_line", positions, typical)
        if store.result is not None:
            model = _(REGISTRY[store.result.variant].label)
            self.picture.label("state", _("state ({model})").format(model=model), [])
        top = max([value for p in points for value in p[1:]] + [0.1])
        self.picture.set_ranges(x=(0, max(held + [1024]) * 1.08), y=(0, 1.2 * top))


class MemoryChart:
    """The calculator's two bills (and the model's weights) against context length."""

    def __init__(self, store, language):
        self.store = store
        self.picture = CurvesPicture(_("Memory against context length"), _("context length (tokens)"), "",
                                     language=language, legend_columns=2)
        self.picture.line("cache", color=VERMILLION, width=4)
        self.picture.line("state", color=BLUE, dash="dashed", width=4)
        self.picture.line("weights", color=GREY, dash="dotdash", width=2)
        self.picture.label("cache", _("KV cache (softmax)"), ["cache"])
        self.picture.label("state", _("fixed state"), ["state"])
        self.picture.label("weights", _("weights of the model"), ["weights"])
        self.y_label = _("memory ({unit})")
        self.chart = self.picture.figure
        store.param.watch(self.draw, "memory")
        self.draw()

    def draw(self, *_events):
        n, cache, state, weights = self.store.memory
        top = max(cache, state, weights or 0)
        size, symbol = byte_unit(top)
        self.picture.set_y_label(self.y_label.format(unit=symbol))
        self.picture.set_ranges(x=(0, n), y=(0, 1.1 * top / size))
        self.picture.show("cache", [0, n], [0, cache / size])
        self.picture.show("state", [0, n], [state / size] * 2)
        self.picture.show("weights", *(([0, n], [weights / size] * 2) if weights else ([], [])))
