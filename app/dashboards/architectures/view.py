"""The architectures page's view: the skeleton filled in for one model, then one card per model with its
transition, its words and links to the other dashboards. It draws an ArchitecturesStore."""
import functools
import html
from urllib.parse import urlencode

import panel as pn

from app.components.plots import MatrixPicture
from app.components.style import CARD_STYLE, LAMP_CSS, LIT_CARD_STYLE
from app.components.text import TEXT_CSS, Explanation, inline_html
from app.dashboards.architectures.model import (ARCHITECTURES, D, ArchitecturesStore, knob_setting,
                                                transition_matrix)
from app.dashboards.base import DashboardView, heading, title
from app.i18n import N_, _, current_language, format_number
from app.urlstate import serialize
from app.variants import COLUMNS_FORMULA, COLUMNS_PLAIN, FAMILIES, GATE_NAMES, REGISTRY, label

ON_KNOB = N_("On the transition knob: gate “{gate}”, β = {beta}.")


def state_link(variant, language, level):
    """“The state fills up” on this model."""
    return "./state?" + urlencode({"variant": variant, "lang": language, "level": level})


def knob_link(variant, language, level):
    """“The transition knob” set on this model (the nearest setting for RWKV-6 and mLSTM)."""
    gate, alpha, beta, _exact = knob_setting(variant)
    query = {"gate": gate, "alpha": serialize(float(alpha)), "beta": serialize(float(beta))}
    if gate == "none":                      # α has nothing to act on: the knob page keeps its own default
        del query["alpha"]
    return "./transition?" + urlencode({**query, "lang": language, "level": level})


CARD_CSS = """
:host { font-size: 16px; line-height: 1.4; color: #1f2933; width: 100%; }
.family { display: inline-block; font-size: 13px; font-weight: 600; color: #1d4f7a; background: #e6eef6;
          border-radius: 10px; padding: 1px 9px; }
.paper { font-size: 13px; color: #52606d; margin-left: 6px; }
dl { margin: 6px 0 4px 0; }
dt { font-size: 13px; font-weight: 600; color: #52606d; margin-top: 4px; }
dd { margin: 0 0 0 10px; }
p { margin: 6px 0 0 0; }
.knob { font-size: 15px; color: #3e4c59; border-left: 4px solid #9fb3c8; padding-left: 8px; }
.knob.near { border-left-color: #f0b429; }
math { font-size: 1.05em; }
"""
LINKS_CSS = """
:host { font-size: 15px; width: 100%; }
a { display: block; color: #1d4f7a; font-weight: 600; padding: 3px 0; }
"""


def card_html(variant, superiore):
    return _card_html(variant, superiore, current_language())


@functools.lru_cache(maxsize=64)            # converting the formulas costs tens of ms; a level switch should not
def _card_html(variant, superiore, _language):
    record = REGISTRY[variant]
    columns = COLUMNS_FORMULA if superiore else COLUMNS_PLAIN
    cells = record.table_formula if superiore else record.table
    head = '<span class="family">%s</span>' % html.escape(_(FAMILIES[record.family]))
    if superiore:
        head += f'<span class="paper">{html.escape(record.papers)}</span>'
    rows = "".join(f"<dt>{inline_html(_(columns[c]))}</dt><dd>{inline_html(_(cells[c - 1]))}</dd>"
                   for c in (1, 2, 3))      # transition, write, read-out (the gate column is for the knob page)
    special = _(record.special_formula) if superiore else _(record.special)
    what = html.escape(_("What is special:"))
    special = f"<p><b>{what}</b> {inline_html(special)}</p>"
    gate, _alpha, beta, exact = knob_setting(variant)
    words = dict(gate=_(GATE_NAMES[gate]), beta=format_number(round(beta, 2)))
    knob = _(ON_KNOB if exact else record.off_knob).format(**words)
    kind = "knob" if exact else "knob near"
    return f'<div>{head}</div><dl>{rows}</dl>{special}<p class="{kind}">{html.escape(knob)}</p>'


def links_html(variant, language, level):
    state = html.escape(state_link(variant, language, level))
    knob = html.escape(knob_link(variant, language, level))
    state_text = html.escape(_("Open in “The state fills up”"))
    knob_text = html.escape(_("Open on the transition knob") if REGISTRY[variant].knob
                            else _("Open the nearest knob setting"))
    return (f'<a href="{state}" data-link="state">{state_text} →</a>'
            f'<a href="{knob}" data-link="knob">{knob_text} →</a>')


class ArchitecturesView(DashboardView):
    """The skeleton at the top, filled in for the highlighted model; one card per model below."""

    Store = ArchitecturesStore
    slug = "architectures"

    def __init__(self, **params):
        super().__init__(**params)
        session = self.session
        self.intro = Explanation(
            session,
            elementare=_("Every model on this page keeps a **summary** (state) of fixed size: a grid of numbers "
                         "that never grows, however long the text. As in «Two bills», each **word** (token) brings "
                         "a **label** (key) to file things under, a piece of **information** (value) to store "
                         "under it and, when something is asked, a **question** (query). At every word the model "
                         "makes two moves. First the **transition**: it transforms the old summary, keeping it, "
                         "fading it, or erasing what it held under the label. Then the **write**: it adds the new "
                         "pair. To answer, it looks into the summary with the question (the **read-out**). The "
                         "models below differ only in these choices."),
            superiore=_(r"One skeleton for the whole family: a state $S_t \in \mathbb{R}^{d_v \times d_k}$, "
                        r"updated at every token by $$S_t = S_{t-1} A_t + W_t, \qquad o_t = S_t q_t$$ where "
                        r"$A_t \in \mathbb{R}^{d_k \times d_k}$ is the **transition** (it right-multiplies the "
                        r"old state), $W_t$ the **write** (almost always $v_t k_t^\top$, the outer product of value "
                        r"and key) and $o_t$ the **read-out** with the query $q_t$. Choosing $A_t$ and $W_t$ "
                        r"chooses the model: $A_t = I$ only accumulates, a diagonal $A_t$ fades the past, and "
                        r"$A_t = I - \beta_t k_t k_t^\top$ corrects what is stored under $k_t$ (the delta rule)."))
        self.lamp = pn.pane.HTML(stylesheets=[LAMP_CSS], sizing_mode="stretch_width", margin=(6, 10))
        self.rule = Explanation(session)
        self.pictures_help = Explanation(
            session,
            elementare=_("Under each model, its transition for one token, as a grid of numbers: the old memory is "
                         "multiplied by it before the new pair is added. A red diagonal keeps the memory; a paler "
                         "one fades it; a pattern away from the diagonal erases what was stored under the name "
                         "of this token. The colours mean the same numbers in every picture."),
            superiore=_(r"Each picture is $A_t \in \mathbb{R}^{d_k \times d_k}$, $d_k = 8$, at one token with "
                        r"illustrative gates and a unit key $k_t$ on dimensions 1, 3 and 6. It is read off the "
                        r"engine: one step of the model's own recurrent form from $S_{t-1} = I$ gives "
                        r"$S_t = A_t + W_t$, and the recorded write $W_t$ is subtracted (mLSTM: times its "
                        r"stabilizer $e^{m_t}$). Colour range $[-1, 1]$ for all."))
        self.cards = {variant: self._card(variant) for variant in ARCHITECTURES}
        self.store.param.watch(self._draw, "arch")
        session.param.watch(self._draw_words, "level")
        self._draw()

    def _card(self, variant):
        button = pn.widgets.Button(name=label(variant), button_type="primary", button_style="outline",
                                   height=40, sizing_mode="stretch_width",
                                   stylesheets=[".bk-btn { font-size: 18px; font-weight: 700; }"])
        button.on_click(lambda _event: setattr(self.store, "arch", variant))
        picture = MatrixPicture(_("Transition at one token"), _("to key dimension"), _("from key dimension"),
                                D, D, width=330, height=290, value_label=_("value"))
        picture.set_limit(1.0)                        # the same scale on every card
        picture.show(transition_matrix(variant))
        text = pn.pane.HTML(stylesheets=[TEXT_CSS, CARD_CSS], sizing_mode="stretch_width", margin=(4, 6))
        links = pn.pane.HTML(stylesheets=[LINKS_CSS], sizing_mode="stretch_width", margin=(0, 6))
        # the picture right under the name, so the pictures of a row line up for comparison
        layout = pn.Column(button, pn.pane.Bokeh(picture.figure), text, links, width=370,
                           margin=(0, 12, 12, 0), styles=dict(CARD_STYLE))
        return {"button": button, "text": text, "links": links, "layout": layout, "picture": picture}

    def controls(self):
        select = pn.widgets.Select.from_param(self.store.param.arch, name=_("Model in the skeleton"),
                                              options={label(v): v for v in ARCHITECTURES},
                                              sizing_mode="stretch_width")
        return [select]

    def __panel__(self):
        return pn.Column(
            title(_("Architectures")),
            self.intro, self.lamp, self.rule,
            heading(_("One card per model")), self.pictures_help,
            pn.FlexBox(*(card["layout"] for card in self.cards.values()), sizing_mode="stretch_width"),
            sizing_mode="stretch_width")

    def _draw(self, *_events):
        arch = self.store.arch
        name = html.escape(label(arch))
        with pn.io.hold():
            text = html.escape(_("The skeleton, filled in for {model}")).format(model=f"<b>{name}</b>")
            self.lamp.object = f'<div class="lamp" role="status">{text}</div>'
            record = REGISTRY[arch]
            self.rule.elementare = _(record.rule)
            self.rule.superiore = (f"{_(record.rule)} ({record.papers})\n\n{record.formula}"
                                   f"\n\n{_(record.left_out)}")      # what our tiny version leaves out
            for variant, card in self.cards.items():
                lit = variant == arch
                card["button"].button_style = "solid" if lit else "outline"
                card["layout"].styles = dict(LIT_CARD_STYLE if lit else CARD_STYLE)
            self._draw_words()

    def _draw_words(self, *_events):
        superiore = self.session.level == "superiore"
        language, level = self.session.language, self.session.level
        with pn.io.hold():
            for variant, card in self.cards.items():
                card["text"].object = card_html(variant, superiore)
                card["links"].object = links_html(variant, language, level)


build = ArchitecturesView.build
