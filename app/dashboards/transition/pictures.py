"""The knob page's pictures besides the heat maps: what each answer matches, the answers, the unified table."""
import functools
import html

import numpy as np
from bokeh.models import ColorBar, ColumnDataSource, FixedTicker, HoverTool, LinearColorMapper, Range1d

from lineare.app.components.plots import PALETTE, TICK_SIZE, all_labels, number_format, new_figure, style_figure
from lineare.app.components.text import SCROLL_BOX_CSS, inline_html, scroll_box
from lineare.app.i18n import _, current_language, ngettext
from lineare.app.variants import COLUMNS_FORMULA, COLUMNS_PLAIN, REGISTRY, label


class RecallPicture:
    """Questions × stored values: the cosine of each question's read-out with each stored value.

    The right answer's cell is framed, the memory's answer (the largest cosine) carries a dot; a tie, a dot in
    each tied cell.
    """

    def __init__(self, title, x_label, y_label, *, width=490, height=260):
        self.mapper = LinearColorMapper(palette=PALETTE, low=-1, high=1)          # cosines: fixed range
        self.source = ColumnDataSource({"image": [np.zeros((1, 1))]})
        self.right = ColumnDataSource({"x": [], "y": []})
        self.chosen = ColumnDataSource({"x": [], "y": []})
        self.figure = style_figure(new_figure(title=title, width=width, height=height, x_range=Range1d(0, 1),
                                          y_range=Range1d(1, 0)), x_label, y_label)
        self.image = self.figure.image(image="image", x=0, y=0, dw=1, dh=1, source=self.source,
                                       color_mapper=self.mapper)
        self.figure.rect(x="x", y="y", width=0.92, height=0.92, source=self.right, fill_alpha=0,
                         line_color="#102a43", line_width=3)
        self.dots = self.figure.scatter(x="x", y="y", source=self.chosen, size=11, marker="circle",
                            fill_color="white", line_color="#102a43", line_width=2)
        self.figure.add_layout(ColorBar(color_mapper=self.mapper, major_label_text_font_size=TICK_SIZE, width=14,
                                        ticker=FixedTicker(ticks=[-1, -0.5, 0, 0.5, 1]), formatter=number_format()),
                               "right")
        self.figure.add_tools(HoverTool(tooltips=[("cos", "@image{0.00}")], renderers=[self.image]))
        self.figure.xaxis.ticker = self.x_ticks = FixedTicker(ticks=[])    # one tick per cell, relabelled
        self.figure.yaxis.ticker = self.y_ticks = FixedTicker(ticks=[])
        for axis in (self.figure.xaxis, self.figure.yaxis):     # the questions and the numbers: every one drawn
            axis.major_label_policy = all_labels()

    def show(self, recall):
        questions, candidates = recall.questions, recall.candidates
        rows, cols = max(len(questions), 1), max(len(candidates), 1)
        grid = np.array([q.cosines for q in questions]) if questions else np.zeros((1, cols))    # [rows, cols]
        fig = self.figure
        fig.x_range.update(start=0, end=cols)
        fig.y_range.update(start=rows, end=0)
        self.image.glyph.update(dw=cols, dh=rows)
        self.x_ticks.ticks = [c + 0.5 for c in range(cols)]
        fig.xaxis.major_label_overrides = {c + 0.5: str(v) for c, v in enumerate(candidates)}
        self.y_ticks.ticks = [r + 0.5 for r in range(rows)]
        fig.yaxis.major_label_overrides = {r + 0.5: q.token.text for r, q in enumerate(questions)}
        crowded = cols > 12                   # many stored numbers: upright, those that would touch left out
        fig.xaxis.major_label_orientation = 1.5708 if crowded else 0
        self.source.data.update(image=[grid])
        where = lambda pairs: {"x": [c + 0.5 for c, _r in pairs], "y": [r + 0.5 for _c, r in pairs]}
        self.right.data.update(where([(candidates.index(q.expected), r) for r, q in enumerate(questions)
                                      if q.expected in candidates]))
        self.chosen.data.update(where([(candidates.index(value), r) for r, q in enumerate(questions)
                                       for value in (q.tied or ([q.answer] if q.answer is not None else []))]))


ANSWERS_CSS = """
:host { font-size: 17px; }
table { border-collapse: collapse; }
td { padding: 2px 8px 2px 0; }
.ok { color: #1a7f37; font-weight: 700; } .bad { color: #b42318; font-weight: 700; }
.muted { color: #616e7c; font-size: 16px; }
.score { font-size: 20px; font-weight: 700; color: #102a43; margin-bottom: 4px; }
"""


def answers_html(recall, compact=False):
    """The score, then one line per question: asked name, the memory's answer, ✓ or ✗, near ties."""
    total = len(recall.questions)
    score = ngettext("{right} of {total} answers right", "{right} of {total} answers right",
                     recall.correct).format(right=recall.correct, total=total)
    rows = []
    for q in recall.questions:
        if q.expected is None:
            verdict = '<span class="bad">%s</span>' % html.escape(_("never stored"))
        elif q.right:
            verdict = f'<span class="ok">{html.escape(q.answer)} ✓</span>'
        elif q.tied:
            verdict = '<span class="bad">%s ✗</span> <span class="muted">%s</span>' % (
                html.escape(_("tie: {values}").format(values=" / ".join(q.tied))),
                html.escape(_("right: {value}").format(value=q.expected)))
        elif q.answer is None:
            verdict = '<span class="bad">%s ✗</span>' % html.escape(_("nothing left in memory"))
        else:
            verdict = '<span class="bad">%s ✗</span> <span class="muted">%s</span>' % (
                html.escape(q.answer), html.escape(_("right: {value}").format(value=q.expected)))
        note = ""
        if not compact and len(q.cosines) > 1 and not q.tied:
            order = np.argsort(q.cosines)[::-1]
            best, second = q.cosines[order[0]], q.cosines[order[1]]
            if best - second < 0.15:
                note = html.escape(_("nearly a tie with {value}").format(value=recall.candidates[order[1]]))
            else:
                note = html.escape(_("match {percent}%").format(percent=round(100 * best)))
        rows.append(f"<tr><td>{html.escape(q.token.text)}</td><td>{verdict}</td>"
                    f'<td class="muted">{note}</td></tr>')
    return f'<div class="score">{html.escape(score)}</div><table>{"".join(rows)}</table>'


TABLE_CSS = """
:host { width: 100%; }
table { border-collapse: separate; border-spacing: 0; width: 100%; font-size: calc(16px * var(--lineare-scale, 1));
        line-height: 1.35;
        color: #1f2933; table-layout: fixed; }
td, th { overflow-wrap: anywhere; }            /* a projector is 1366 px wide: the table wraps, never scrolls */
th { text-align: left; background: #1d4f7a; color: white; padding: 6px 8px; font-weight: 600; }
th:first-child { border-top-left-radius: 6px; } th:last-child { border-top-right-radius: 6px; }
td { padding: 5px 8px; border-bottom: 1px solid #d9e2ec; vertical-align: top; }
td p { margin: 0; }
td.name { font-weight: 700; }
td.name .paper { display: block; font-weight: normal; color: #52606d; }
tr.lit td { background: #ffe8a3; }
tr.lit td.name { box-shadow: inset 6px 0 0 #f0b429; }
tr.near td { background: #f2f6fa; }
tr.near td.name { box-shadow: inset 6px 0 0 #9fb3c8; }
.mark { font-weight: 600; color: #8d5a00; }
tr.near .mark { color: #52606d; }
math { font-size: 1em; }
/* below a projector's column the five columns' formulas would run over each other: the table keeps the width they
   need and scrolls in its own box, a named region the keyboard can scroll */
@media (max-width: 1100px) { table.wide { min-width: 960px; } }
""" + SCROLL_BOX_CSS


def table_html(found, superiore):
    """The unified table, one row per registry record, with the knob's row lit (the two nearest marked
    when the knob is between them)."""
    return _table_html(found, superiore, current_language())


@functools.lru_cache(maxsize=64)          # the formulas take ~30 ms to convert; a knob turn should not
def _table_html(found, superiore, _language):
    columns = COLUMNS_FORMULA if superiore else COLUMNS_PLAIN
    head = "".join(f"<th>{inline_html(_(c))}</th>" for c in columns)
    rows = []
    for variant, record in REGISTRY.items():
        cells = record.table_formula if superiore else record.table
        name = html.escape(label(variant))
        if superiore:
            name += f'<span class="paper">{html.escape(record.papers)}</span>'
        kind, mark = "", ""
        if variant in found.exact:
            kind, mark = "lit", _("← the knobs are here")
        elif variant in found.between:
            kind, mark = "near", _("← near")
        elif variant in found.close:
            kind, mark = "near", _("← close to the knobs")
        if mark:
            name += f' <span class="mark">{html.escape(mark)}</span>'
        body = "".join(f"<td>{inline_html(_(c))}</td>" for c in cells)      # formulas alone are not in the catalog
        rows.append(f'<tr class="{kind}" data-variant="{variant}"><td class="name">{name}</td>{body}</tr>')
    # model, transition, write, read-out, gates: the gates' formulas are the longest (a projector is narrow); the
    # models' names whole, never broken in the middle («Attenzion|e» at 11 %), the writes' short formulas narrower
    shares = (14, 20, 14, 24, 28) if len(columns) == 5 else (100 / len(columns),) * len(columns)
    widths = "".join(f'<col style="width: {share}%">' for share in shares)
    wide = ' class="wide"' if len(columns) == 5 else ""
    table = (f"<table{wide}><colgroup>{widths}</colgroup><thead><tr>{head}</tr></thead>"
             f"<tbody>{''.join(rows)}</tbody></table>")
    # 960 px under a 1,100 px window: "scroll sideways" under a column narrower than that (ems of 17 px)
    return scroll_box(table, _("The family in one table"), fits=56.5 if wide else 0, one_line=False)
