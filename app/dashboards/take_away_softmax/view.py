"""The page "Take away the softmax": draws a SoftmaxStore, computes nothing.

The sentence's run (eight frames: the table with row t framed, the state S_t or the notebook after word
t, a caption with o_t both ways) goes to the browser once per attention; the player plays it there.
The cost picture and its counts follow the length and d controls on the server (a few numbers).
"""
import numpy as np
import panel as pn

from lineare.app.components.controls import sidebar_label
from lineare.app.components.player import FrameText, Player
from lineare.app.components.plots import main_picture
from lineare.app.components.text import Explanation, point_box
from lineare.app.dashboards.base import DashboardView, title
from lineare.app.dashboards.take_away_softmax.model import DIMS, SENTENCE, WORDS, SoftmaxStore, cost_curves
from lineare.app.dashboards.take_away_softmax.pictures import CellsPicture, CostPicture
from lineare.app.dashboards.take_away_softmax.texts import (CAPTION_CSS, COST_HELP, MEMORY_HELP, POINT, STRIP_CSS,
                                                            TABLE_HELP, TRADE_OFF, captions, counts_text, token_strip)
from lineare.app.i18n import _, format_number, format_numbers

VEIL = 0.22                 # opacity of the rows the recurrent form never needs


def sentence_words():
    """The sentence in the page's language, WORDS words (a translation with another count is cut or padded)."""
    words = _(SENTENCE).split()[:WORDS]
    return words + ["…"] * (WORDS - len(words))


def percent_labels(weights):
    """The table's cells as whole percentages ("" for the masked future)."""
    return np.where(np.isnan(weights), "", np.char.mod("%d", np.rint(np.nan_to_num(weights) * 100)))


def number_labels(values):
    """Cells with one decimal in the page's number format ("" for an empty cell)."""
    rounded = np.round(values, 1) + 0.0                                             # −0.04 → 0.0, not −0.0
    written = np.array([text.replace("-", "−") for text in format_numbers(rounded.ravel(), 1)], dtype=object)
    return np.where(np.isnan(rounded), "", written.reshape(rounded.shape))


class SoftmaxView(DashboardView):
    """Draws a SoftmaxStore: the sentence, its table, the state or the notebook, the cost."""

    Store = SoftmaxStore
    slug = "softmax"

    def __init__(self, **params):
        super().__init__(**params)
        store, session = self.store, self.session
        self.words = sentence_words()
        self.player, notices = Player.from_query(pn.state.session_args, length=WORDS)
        if self.player.value > WORDS - 1:
            notices.append(_("The link asked for step {t}, but this sentence has {n} words: the last one is "
                             "shown.").format(t=self.player.value + 1, n=WORDS))
        session.add_notices("url", notices)

        self.point = Explanation(session)
        self.switch = pn.widgets.RadioButtonGroup.from_param(
            store.param.attention, name=_("Attention"), options={_("Softmax"): "softmax", _("φ = elu + 1"): "linear"},
            color="primary", variant="outline", width=260, height=44, margin=(6, 10),
            stylesheets=[":host { font-size: 16px; }"])
        self.strip = FrameText(stylesheets=[STRIP_CSS], sizing_mode="stretch_width", margin=(10, 10, 4, 10))
        self.caption = FrameText(stylesheets=[CAPTION_CSS], sizing_mode="stretch_width", margin=(0, 10, 4, 10))
        # three in a row on a projector's column (996 px), cells wide enough for a 16-px "100" and "−0.6"
        self.table = CellsPicture("", _("word looked at"), "", width=340, height=300)
        self.memory = CellsPicture("", "", "", width=310, height=300, split=True)
        self.cost = CostPicture(_("Work for T words"), _("length T (words)"), _("multiply-adds"),
                                width=320, height=300)
        self.table_help = Explanation(session, elementare=_(TABLE_HELP["elementare"]),
                                      superiore=_(TABLE_HELP["superiore"]), width=330, margin=(0, 5))
        self.memory_help = Explanation(session, width=280, margin=(0, 5))
        self.counts = Explanation(session, width=310, margin=(0, 5), css_classes=["counts"])
        self.cost_help = Explanation(session, elementare=_(COST_HELP["elementare"]),
                                     superiore=_(COST_HELP["superiore"]))
        self.trade_off = point_box(Explanation(session, elementare=_(TRADE_OFF["elementare"]),
                                               superiore=_(TRADE_OFF["superiore"])))
        self.trade_off.css_classes = ["trade-off"]
        card = lambda picture, *below, width: pn.Column(main_picture(picture.figure), *below, width=width,
                                                        margin=(0, 8, 8, 0))
        self.cards = {"table": card(self.table, self.table_help, width=340),
                      "memory": card(self.memory, self.memory_help, width=310),
                      "cost": card(self.cost, self.counts, width=320)}

        store.param.watch(self._send_run, "run")
        store.param.watch(self._draw_cost, "counts")
        session.param.watch(self._send_captions, "level")
        session.param.watch(self._draw_cost, "level")
        self._send_run()
        self._draw_cost()

    def controls(self):
        store = self.store
        length = pn.widgets.DiscreteSlider.from_param(store.param.length, name=_("Length of the text T (words)"),
                                                      sizing_mode="stretch_width")
        dim = pn.widgets.RadioButtonGroup.from_param(store.param.dim, name=_("Numbers per label d"),
                                                     options={str(d): d for d in DIMS},
                                                     color="primary", variant="outline",
                                                     sizing_mode="stretch_width")
        return [length, sidebar_label(_("Numbers per label d")), dim]

    def parts(self):
        return {"point": [self.point], "caption": [self.caption], "player": [self.player],
                "table": [self.cards["table"]], "table.cells": self.table.drawn, "memory": [self.cards["memory"]],
                "memory_help": [self.memory_help], "cost": [self.cards["cost"]], "cost.figure": [self.cost.figure],
                "cost.table": self.cost.drawn["parallel"], "counts": [self.counts], "cost_help": [self.cost_help],
                "trade_off": [self.trade_off]}

    def __panel__(self):
        # the trade-off beside the pictures on a wide screen, under them on a projector
        after = pn.Column(self.trade_off, self.cost_help, sizing_mode="stretch_width", margin=0,
                          styles={"flex": "1 1 330px"})
        cards = pn.FlexBox(*self.cards.values(), after, sizing_mode="stretch_width")
        return pn.Column(title(_("Take away the softmax")), point_box(self.point),
                         pn.Row(self.switch, self.strip, sizing_mode="stretch_width", styles={"flex-wrap": "wrap"}),
                         self.player, self.caption,
                         cards, sizing_mode="stretch_width")

    # -- drawing

    def _send_run(self, *_events):
        """Every frame of the sentence's run to the browser, then a new run for the player."""
        run, T = self.store.run, WORDS
        t = self.player.frame()
        linear = run.kind == "linear"
        with pn.io.hold():
            self.point.elementare = _(POINT[run.kind, "elementare"])
            self.point.superiore = _(POINT[run.kind, "superiore"])
            self.memory_help.elementare = _(MEMORY_HELP[run.kind, "elementare"])
            self.memory_help.superiore = _(MEMORY_HELP[run.kind, "superiore"])
            self.strip.show([""] * T, html=token_strip(self.words), t=t)
            self._send_table(run, t, linear)
            if linear:
                self._send_state(run, t)
            else:
                self._send_notebook(run, t)
            self._send_captions()
            self.player.new_run(T)

    def _send_table(self, run, t, linear):
        T = WORDS
        frames = np.broadcast_to(run.weights, (T, T, T))                             # [frame, row, col]
        rows = np.arange(T)[None, :, None]
        current = rows == np.arange(T)[:, None, None]                                # row t of frame t
        shown = np.where(current, 1.0, VEIL) if linear else np.ones((T, T, T))
        self.table.figure.title.text = _("Table: never built") if linear else _("Attention table (%)")
        self.table.set_grid(T, T, [str(i + 1) for i in range(T)], self.words)
        self.table.show_frames(frames, 1.0, t, labels=np.broadcast_to(percent_labels(run.weights), (T, T, T)),
                               shown=shown, framed=[(f, f + 1, 0, f + 1) for f in range(T)])

    def _send_state(self, run, t):
        d = run.q.shape[1]
        frames = np.concatenate([run.states, run.sums[:, None, :]], axis=1)         # [T, d_v + 1, d_k]: S over zᵀ
        self.memory.figure.title.text = _("Summary: S and z")
        self.memory.figure.xaxis.axis_label = _("label (key)")
        self.memory.figure.yaxis.axis_label = _("information (value)")
        self.memory.set_grid(d + 1, d, [str(j + 1) for j in range(d)], [str(i + 1) for i in range(d)] + ["z"],
                             split_row=d)
        self.memory.show_frames(frames, np.abs(frames).max(), t, labels=[number_labels(f) for f in frames],
                                framed=[(np.nan,) * 4] * WORDS)

    def _send_notebook(self, run, t):
        T, d = WORDS, run.q.shape[1]
        notes = np.concatenate([run.k, run.v], axis=1)                               # [T, 2d]: k_i | v_i
        frames = np.where(np.arange(T)[None, :, None] <= np.arange(T)[:, None, None], notes[None], np.nan)
        self.memory.figure.title.text = _("Notebook (KV cache)")
        self.memory.figure.xaxis.axis_label = _("label | information")
        self.memory.figure.yaxis.axis_label = _("word")
        self.memory.set_grid(T, 2 * d, [str(j + 1) for j in range(d)] * 2, [str(i + 1) for i in range(T)],
                             split_col=d)
        self.memory.show_frames(frames, np.abs(notes).max(), t, labels=[number_labels(f) for f in frames],
                                framed=[(f, f + 1, 0, 2 * d) for f in range(T)])

    def _send_captions(self, *_events):
        superiore = self.session.level == "superiore"
        self.caption.show(captions(self.store.run, self.words, superiore), t=self.player.frame())

    def _draw_cost(self, *_events):
        store = self.store
        with pn.io.hold():
            superiore = self.session.level == "superiore"
            names = {"parallel": _("(QKᵀ)V: {count}") if superiore else _("table: {count}"),
                     "recurrent": _("Q(KᵀV): {count}") if superiore else _("summary: {count}")}
            self.cost.show(cost_curves(store.dim), store.length,
                           {form: names[form].format(count=format_number(store.counts[form])) for form in names})
            self.counts.elementare = counts_text(store.length, store.dim, store.counts, superiore=False)
            self.counts.superiore = counts_text(store.length, store.dim, store.counts, superiore=True)


build = SoftmaxView.build
