"""Two bills, what both parts of the page draw with: the bills as HTML, and the two charts that change
only when a knob moves: the session's measurements, and the calculator's memory against context length."""
import html

import numpy as np
import panel as pn
from bokeh.models import CDSView, ColumnDataSource, Label, Legend, LegendItem, Range1d, Span, Title

from lineare.app.components.curves import BLUE, GREY, VERMILLION, CurvesPicture
from lineare.app.components.plots import (LABEL_SIZE, TEXT_TAG, TICK_SIZE, frame_filter, new_figure, number_format,
                                          set_frame, style_figure)
from lineare.app.dashboards.two_bills.model import byte_unit, format_power, multiply_adds, work_crossing
from lineare.app.i18n import _
from lineare.app.variants import running_name

STATUS_CSS = """
:host { width: 100%; --body: calc(16px * var(--lineare-scale, 1)); }   /* the smallest type: 16 px, more presenting */
.status { font-size: calc(17px * var(--lineare-scale, 1)); color: #243b53; }
.step { font-size: var(--body); color: #52606d; margin-bottom: 6px; }
.bills { display: flex; flex-wrap: wrap; gap: 12px; margin: 6px 0; }
.bill { border-radius: 10px; padding: 8px 14px; min-width: 260px; background: #fbfcfe; border: 2px solid #d9e2ec; }
.bill .what { font-size: var(--body); color: #52606d; }
.bill .amount { font-size: 28px; font-weight: 700; }
.bill .how { font-size: var(--body); color: #52606d; }
.bill.cache { border-color: #d55e00; } .bill.cache .amount { color: #a04000; }
.bill.state { border-color: #0072b2; border-style: dashed; } .bill.state .amount { color: #005282; }
.bill .mine { display: inline-block; font-size: var(--body); font-weight: 700; color: white; background: #1d4f7a;
              border-radius: 4px; padding: 1px 6px; margin-left: 6px; }
.note { font-size: var(--body); color: #52606d; margin: 4px 0; }
.limit { font-size: var(--body); color: #3e2c00; background: #fff8e1; padding: 4px 10px; border-radius: 4px; }
table { border-collapse: collapse; font-size: var(--body); margin-top: 6px; }
th, td { text-align: left; padding: 4px 10px; border-bottom: 1px solid #e4e7eb; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td:first-child { white-space: nowrap; }                   /* a model's name on one line: Llama-2-7B */
tr.current { background: #fff3c4; }
td.num .past { display: block; white-space: normal; min-width: 7em; color: #8d5a00; }   /* past the model's context */
.source { color: #616e7c; font-size: var(--body); }
"""


def bill_html(kind, what, amount, how, badge=""):
    """One bill: what is kept, how much, and how it is made up (every piece escaped)."""
    mark = f'<span class="mine">{html.escape(badge)}</span>' if badge else ""
    return (f'<div class="bill {kind}"><div class="what">{html.escape(what)}{mark}</div>'
            f'<div class="amount">{html.escape(amount)}</div><div class="how">{html.escape(how)}</div></div>')


def status_pane(*stylesheets, **params):
    return pn.pane.HTML(stylesheets=[STATUS_CSS, *stylesheets], sizing_mode="stretch_width", **params)


class HistoryChart:
    """The session's runs: median time per token against tokens in memory, one point per run, for the
    current number and size of heads; a line through the typical time at each context."""

    def __init__(self, store, language):
        self.store = store
        self.picture = CurvesPicture(_("Your measurements: time against context"), _("tokens in memory"),
                                     _("milliseconds per token (median)"), language=language, width=470,
                                     height=380)
        self.picture.line("softmax_line", color=VERMILLION, width=2, alpha=0.85)
        self.picture.dots("softmax", color=VERMILLION, size=11, alpha=0.9)
        self.picture.line("state_line", color=BLUE, dash="dashed", width=2, alpha=0.85)
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
            model = running_name(store.result.variant)
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


def crossing_mark(fig, dimension):
    """A dashed line across `fig` and its words, where one bill overtakes the other (`show_crossing`)."""
    span = Span(location=0, dimension=dimension, line_color="#52606d", line_dash="dashed", line_width=2)
    words = Label(x=0, y=0, y_offset=4, text="", text_font_size=TICK_SIZE, text_color="#243b53",
                  background_fill_color="white", background_fill_alpha=0.85)
    fig.add_layout(span)
    fig.add_layout(words)
    return span, words


def show_crossing(mark, at, text, x, y, width, hang=False):
    """Move the mark to `at` with its words beside (x, y), in data units, on the side of x where the
    picture (`width` wide along x) has room; `hang`: the words hang under y (near the top of the frame,
    two lines standing on y ran into the title)."""
    span, words = mark
    span.location = at
    right = x > 0.5 * width
    words.update(x=x, y=y, text=two_lines(text), text_align="right" if right else "left",
                 x_offset=-6 if right else 6, text_baseline="top" if hang else "bottom", y_offset=-4 if hang else 4)


def two_lines(text):
    """A note broken at the space nearest its middle: on one line, half a picture's width did not hold it
    ("la cache è più gra…" cut at the picture's edge)."""
    spaces = [i for i, c in enumerate(text) if c == " "]
    if len(text) < 24 or not spaces:
        return text
    middle = min(spaces, key=lambda i: abs(i - len(text) / 2))
    return text[:middle] + "\n" + text[middle + 1:]


class WorkPicture:
    """The work bill as areas: one row per token read (from the top down), as wide as the multiply-adds
    one layer spends on it. Softmax's row grows with the tokens in memory, so its rows make a triangle,
    the causal half of the n × n table of comparisons (twice the text, four times the area); the state's
    rows are all alike, a strip. The prompt's rows are drawn at once; the Player reveals one generated
    row per frame, and the subtitle adds up the work so far."""

    def __init__(self, language, width=470, height=390):
        self.figure = style_figure(new_figure(title=_("The work bill: multiply-adds per token"), width=width,
                                          height=height, x_range=Range1d(0, 1), y_range=Range1d(1, 0)),
                                   _("multiply-adds to read this token (one layer)"), _("tokens read"))
        for axis in (self.figure.xaxis, self.figure.yaxis):
            axis.formatter = number_format(language, decimals=0)
        self.figure.xaxis.ticker.desired_num_ticks = 4              # long numbers: fewer of them
        self.subtitle = Title(text="", text_font_size=LABEL_SIZE, text_font_style="normal", syncable=False)
        self.figure.add_layout(self.subtitle, "above")
        self.sources, self.filters, renderers = {}, {}, {}
        look = {"softmax": dict(fill_color=VERMILLION, line_color=VERMILLION, line_width=2),
                "state": dict(fill_color=BLUE, line_color=BLUE, line_width=2, line_dash="dashed",
                              hatch_pattern="/", hatch_color=BLUE, hatch_alpha=0.35)}
        shade = {"prompt": 0.18, "run": 0.4}                  # the prompt's rows paler than the generated ones
        for kind in ("softmax", "state"):
            for part in ("prompt", "run"):
                name = f"{kind}_{part}"
                self.sources[name] = ColumnDataSource({"xs": [], "ys": []}, syncable=part == "prompt")
                view = {}
                if part == "run":                  # one polygon per frame: the rows read up to that token
                    self.filters[name] = frame_filter()
                    view = {"view": CDSView(filter=self.filters[name])}
                renderers[name] = self.figure.patches("xs", "ys", source=self.sources[name], level="overlay",
                                                      fill_alpha=shade[part], **look[kind], **view)
        self.legend = Legend(items=[LegendItem(label=_("softmax"), renderers=[renderers["softmax_run"]]),
                                    LegendItem(label="", renderers=[renderers["state_run"]])],
                             orientation="horizontal", label_text_font_size=LABEL_SIZE, border_line_alpha=0,
                             padding=4, spacing=14)
        self.figure.add_layout(self.legend, "below")
        self.mark = crossing_mark(self.figure, "width")

    def show_run(self, result, model, t):
        """The bill of a run (a two_bills.model.Generation), the Player at frame t."""
        H, d = result.heads, result.dim
        softmax, state = multiply_adds(result.held, H, d, d)                  # [T], one number
        c, N = result.context, int(result.held[-1])
        at = work_crossing(d, d)                      # always in the picture, below the run if it is shorter
        wide = float(max(softmax[-1], state, multiply_adds([at], H, d, d)[0][0])) * 1.06
        self.figure.x_range.update(start=0, end=wide)
        self.figure.y_range.update(start=max(N, at) * 1.02, end=0)
        top = float(multiply_adds([c], H, d, d)[0][0])
        self.sources["softmax_prompt"].data = {"xs": [[0, top, 0]], "ys": [[0, c, c]]} if c else {"xs": [], "ys": []}
        self.sources["state_prompt"].data = {"xs": [[0, state, state, 0]], "ys": [[0, 0, c, c]]} if c else \
            {"xs": [], "ys": []}
        held = [int(h) for h in result.held]
        self.sources["softmax_run"].data = {"xs": [[0, top, float(w), 0] for w in softmax],
                                            "ys": [[c, c, h, h] for h in held]}
        self.sources["state_run"].data = {"xs": [[0, state, state, 0]] * len(held), "ys": [[c, c, h, h] for h in held]}
        T = len(held)
        t = min(t, T - 1)
        for name in ("softmax_run", "state_run"):
            set_frame(self.filters[name], 1, t)
        self.legend.items[1].label = {"value": _("state ({model})").format(model=model)}
        # the work so far, prompt included: Σ softmax rows, and one state row per token
        prompt = float(multiply_adds(np.arange(1, c + 1), H, d, d)[0].sum())
        totals = [(prompt + float(softmax[:i + 1].sum()), state * held[i]) for i in range(T)]
        texts = [_("So far: softmax {softmax}, state {state}").format(
            softmax=format_power(a), state=format_power(b)) for a, b in totals]
        self.subtitle.update(text=texts[t], tags=[TEXT_TAG, texts])
        show_crossing(self.mark, at, _("from token {n} softmax does more per token").format(n=at),
                      x=wide, y=at, width=wide, hang=at < 0.5 * max(N, at))       # the top half: under the line
