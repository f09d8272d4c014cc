"""The architectures page's view: what tells the models apart (forgetting curves and eigenvalues), the
skeleton filled in for one model, then one card per model with its words and links to the other
dashboards. It draws an ArchitecturesStore."""
import functools
import html
from urllib.parse import urlencode

import panel as pn

from lineare.app.components.later import Later, SectionPart
from lineare.app.components.style import CARD_STYLE, LAMP_CSS, LIT_CARD_STYLE
from lineare.app.components.text import TEXT_CSS, Explanation, inline_html, point_box
from lineare.app.dashboards.architectures.model import (ARCHITECTURES, D, TEXTS, ArchitecturesStore, card_alpha,
                                                knob_setting)
from lineare.app.dashboards.architectures.pictures import EigenPicture, ForgettingPicture
from lineare.app.dashboards.base import DashboardView, heading, title
from lineare.app.i18n import N_, _, current_language, format_number
from lineare.app.urlstate import serialize
from lineare.app.variants import COLUMNS_FORMULA, COLUMNS_PLAIN, FAMILIES, GATE_NAMES, REGISTRY, label, running_name

# the cards' height by column width in each language (the two levels between them; Italian's words are longer: one
# height for both left a phone's page 350 px short in Italian), held by their marker until they are made
# (app/components/later.py); the last width is a 1920-px projector's column
CARDS_HEIGHT = {"en": {372: 5199, 750: 5121, 996: 3055, 1550: 2548},
                "it": {372: 5761, 750: 5607, 996: 3393, 1550: 2682}}
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
:host { font-size: calc(16px * var(--lineare-scale, 1)); line-height: 1.4; color: #1f2933; width: 100%; }
.family { display: inline-block; font-weight: 600; color: #1d4f7a; background: #e6eef6;
          border-radius: 10px; padding: 1px 9px; }
.paper { color: #52606d; margin-left: 6px; }
dl { margin: 6px 0 4px 0; }
dt { font-weight: 600; color: #52606d; margin-top: 4px; }
dd { margin: 0 0 0 10px; }
p { margin: 6px 0 0 0; }
.knob { color: #3e4c59; border-left: 4px solid #9fb3c8; padding-left: 8px; }
.knob.near { border-left-color: #f0b429; }
math { font-size: 1.05em; }
"""
LINKS_CSS = """
:host { font-size: calc(16px * var(--lineare-scale, 1)); width: 100%; }
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
    if exact and record.knob_note:
        knob += " " + _(record.knob_note)
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
                         "models below differ mostly in these choices; what else sets one apart is on its card."),
            superiore=_(r"One skeleton for the whole family: a state $S_t \in \mathbb{R}^{d_v \times d_k}$, "
                        r"updated at every token by $$S_t = S_{t-1} A_t + W_t, \qquad o_t = S_t q_t$$ where "
                        r"$A_t \in \mathbb{R}^{d_k \times d_k}$ is the **transition** (it right-multiplies the "
                        r"old state), $W_t$ the **write** (almost always $v_t k_t^\top$, the outer product of value "
                        r"and key) and $o_t$ the **read-out** with the query $q_t$. Choosing $A_t$ and $W_t$ "
                        r"chooses most of the model (some also read out or write a little differently: their "
                        r"cards say how): $A_t = I$ only accumulates, a diagonal $A_t$ fades the past, and "
                        r"$A_t = I - \beta_t k_t k_t^\top$ corrects what is stored under $k_t$ (the delta rule)."))
        self.lamp = pn.pane.HTML(stylesheets=[LAMP_CSS], sizing_mode="stretch_width", margin=(6, 10))
        self.rule = Explanation(session)
        self.point = Explanation(
            session,
            elementare=_("**What tells the models apart most is how they forget.** «What is left of a pair»: how much "
                         "of a pair stored at one word is still there later. Linear attention keeps all of it; "
                         "every other model loses it at its own pace. «What each direction keeps per token»: the "
                         "numbers each model multiplies its summary by at every word, one for each direction a label "
                         "can point in: 1 keeps, between 0 and 1 fades, 0 erases, below 0 flips the sign."),
            superiore=_(r"**What tells the models apart most is the transition.** «What is left of a pair»: the share "
                        r"$k_0^\top A_1 \cdots A_n k_0$ of a pair written at token 0 that is left $n$ tokens "
                        r"later. «Eigenvalues of the transition»: the eigenvalues of $A_t$ in "
                        r"$S_t = S_{t-1} A_t + W_t$: 1 keeps a direction, $0 < \lambda < 1$ fades it, 0 erases it, "
                        r"$\lambda < 0$ flips its sign."))
        language = current_language()
        self.forgetting = ForgettingPicture(language)
        self.eigen = EigenPicture()
        self.pictures_help = Explanation(
            session,
            elementare=_("Both pictures come from the engine, with a summary of {columns} columns. In «What is left "
                         "of a pair», a pair is written at word 0; every later word writes a pair of its own under a "
                         "random label, and the curve follows what is left of the first pair (the average over "
                         "{texts} texts). The fading models lose it at the pace of their gate, set here by the page: "
                         "RetNet keeps {gamma} of the summary at every word, Mamba-2 {alpha} (a trained Mamba-2 "
                         "chooses that amount word by word, from what it reads). DeltaNet loses it only where a new "
                         "label overlaps the old one, a little at each word. Linear attention keeps it whole, but it "
                         "also keeps everything else piled on top of it (see «Where memory fails»). RWKV-6's line "
                         "lies on GLA's: the same transition. In «What each direction keeps per token», DeltaNet "
                         "keeps every direction (1) except the label it is writing, which it erases (0); with a step "
                         "twice as large (hollow diamonds) it would flip its sign (−1).").format(
                columns=D, texts=TEXTS, gamma=format_number(round(card_alpha("retnet"), 2), 2),
                alpha=format_number(card_alpha("mamba2"), 1)),
            superiore=_(r"Read off the engine: $A_t$ is one step of each model's recurrent form from $S_{t-1} = I$ "
                        r"with a zero value, gates from make_gates at the cards' values ($\gamma = 1 - 2^{-5}$; "
                        r"Mamba-2 $\alpha = 0.8$; GLA, RWKV-6, RWKV-7 $w_i = 0.7^{s_i}$; mLSTM $f = 0.9$; Gated "
                        r"DeltaNet $\alpha = 0.8$; $\beta = 1$), $d_k = {columns}$. «What is left of a pair»: "
                        r"$k_0^\top A_1 \cdots A_n k_0$ for random unit keys $k_0, k_1, \dots$, mean over {texts} "
                        r"sequences: since the recurrence is linear in $S$, it is what the read-out $S_n k_0$ keeps "
                        r"of $v_0$. «Eigenvalues of the transition»: the spectrum of $A_t$ at one token. The delta "
                        r"rule has $1 - \beta_t$ along $k_t$ and 1 on the rest; with $\beta_t \in (0, 2)$ it "
                        r"approaches −1, the negative eigenvalues that let a linear recurrence track state (Grazzi et "
                        r"al. 2025). RWKV-7, $\mathrm{diag}(w_t) - \hat\kappa_t (a_t \odot \hat\kappa_t)^\top$ with "
                        r"$a_t = 1$: one eigenvalue below 0, the others between the $w_i$."
                        ).replace("{columns}", str(D)).replace("{texts}", str(TEXTS)))
        main = lambda figure, margin: pn.Column(pn.pane.Bokeh(figure), margin=margin, css_classes=["main-picture"])
        self.pictures = {"forgetting": main(self.forgetting.figure, (0, 12, 8, 0)),
                         "eigen": main(self.eigen.figure, (0, 0, 8, 0))}
        # one card per model, under the first screen: made when the visitor scrolls near them
        self._cards, self.card_list = {}, Later(self._make_cards, height=CARDS_HEIGHT[current_language()])
        self.store.param.watch(self._draw, "arch")
        session.param.watch(self._draw_words, "level")
        self._draw()

    @property
    def cards(self):
        """The cards, made now if not yet: {variant: its button, text, links and layout}."""
        self.card_list.section()
        return self._cards

    def _make_cards(self):
        self._cards = {variant: self._card(variant) for variant in ARCHITECTURES}
        self._draw_cards()
        return pn.FlexBox(*(card["layout"] for card in self._cards.values()), sizing_mode="stretch_width")

    def _card(self, variant):
        button = pn.widgets.Button(label=label(variant), color="primary", variant="outline",
                                   height=40, sizing_mode="stretch_width",
                                   stylesheets=[":host .bk-btn { font-size: 18px; font-weight: 700; }"])
        button.on_click(lambda _event: setattr(self.store, "arch", variant))
        text = pn.pane.HTML(stylesheets=[TEXT_CSS, CARD_CSS], sizing_mode="stretch_width", margin=(4, 6))
        links = pn.pane.HTML(stylesheets=[LINKS_CSS], sizing_mode="stretch_width", margin=(0, 6))
        layout = pn.Column(button, text, links, width=370, margin=(0, 12, 12, 0), styles=dict(CARD_STYLE))
        return {"button": button, "text": text, "links": links, "layout": layout}

    def parts(self):
        curve = lambda variant: [self.forgetting.lines[variant], self.forgetting.marks[variant],
                                 self.forgetting.picture.items[variant]]
        others = lambda *shown: [x for v in ARCHITECTURES if v not in shown for x in curve(v)]
        correcting = [v for v in ARCHITECTURES if REGISTRY[v].corrects]
        return {"pictures_help": [self.pictures_help], "forgetting": [self.pictures["forgetting"]],
                "forgetting.figure": [self.forgetting.figure], "eigen": [self.pictures["eigen"]],
                "forgetting.all_but_linear": others("linear"),
                "forgetting.correcting": [x for v in correcting for x in curve(v)],
                "forgetting.rwkv6": curve("rwkv6"),
                "eigen.correcting": self.eigen.drawn["correcting"], "eigen.fading": self.eigen.drawn["fading"],
                "cards.rwkv6": SectionPart(self.card_list, lambda _list: [self._cards["rwkv6"]["text"]])}

    def controls(self):
        select = pn.widgets.Select.from_param(self.store.param.arch, name=_("Model in the skeleton"),
                                              options={label(v): v for v in ARCHITECTURES},
                                              sizing_mode="stretch_width")
        return [select]

    def __panel__(self):
        pictures = pn.FlexBox(*self.pictures.values(), sizing_mode="stretch_width")
        return pn.Column(
            title(_("Architectures")), point_box(self.point), pictures, self.pictures_help,
            self.intro, self.lamp, self.rule,
            heading(_("One card per model")), self.card_list,
            sizing_mode="stretch_width")

    def _draw(self, *_events):
        arch = self.store.arch
        name = html.escape(running_name(arch))
        with pn.io.hold():
            text = html.escape(_("The skeleton, filled in for {model}")).format(model=f"<b>{name}</b>")
            self.lamp.object = f'<div class="lamp" role="status">{text}</div>'
            record = REGISTRY[arch]
            self.rule.elementare = _(record.rule)
            self.rule.superiore = (f"{_(record.rule)} ({record.papers})\n\n{record.formula}"
                                   f"\n\n{_(record.left_out)}")      # what our tiny version leaves out
            self.forgetting.light(arch)
            self.eigen.light(arch)
            self.eigen.set_level(self.session.level == "superiore")
            self._draw_cards()

    def _draw_words(self, *_events):
        with pn.io.hold():
            self.eigen.set_level(self.session.level == "superiore")
            self._draw_cards()

    def _draw_cards(self):
        """The cards, once made: the lit model's, and every card's words at the page's level."""
        arch, superiore = self.store.arch, self.session.level == "superiore"
        language, level = self.session.language, self.session.level
        for variant, card in self._cards.items():
            lit = variant == arch
            card["button"].variant = "solid" if lit else "outline"
            card["layout"].styles = dict(LIT_CARD_STYLE if lit else CARD_STYLE)
            card["text"].object = card_html(variant, superiore)
            card["links"].object = links_html(variant, language, level)


build = ArchitecturesView.build
