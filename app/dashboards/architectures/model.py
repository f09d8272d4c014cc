"""Dashboard "Architectures" (DESIGN §2.6, §6.6): named models as settings of one skeleton.

Every model keeps a state S (d_v × d_k) and per token does S_t = S_{t-1} A_t + W_t, o_t = S_t q_t.
One card per architecture says what its transition A_t and write W_t are (the words and formulas
of the unified table in transition.py), what is special about it, where it sits on the transition
knob, and shows A_t for one token as a heat map, with links that open dashboards 2 and 3 on it.

The heat maps are read off the engine, not written out by hand: one step of the model's own
recurrent step (engine.stepping.step) from S_{t-1} = I gives S_t = A_t + W_t, and the record's
write W_t is subtracted. mLSTM keeps its state divided by e^{m_t} (its stabilizer), so its picture
is rescaled by that factor. The inputs are one fixed token with illustrative gates, the same for
every visitor, so the pictures are computed once per process.

`ArchitecturesStore` holds the one control (which model is filled into the skeleton, `arch=`);
`ArchitecturesView` only draws.
"""
import functools
import html
from urllib.parse import urlencode

import numpy as np
import panel as pn
import param
import torch

from app.components.plots import MatrixPicture
from app.components.text import TEXT_CSS, Explanation, to_html
from app.dashboards import Page
from app.dashboards.state_fills_up import PAPERS, RULE_FORMULA, RULE_PLAIN
from app.dashboards.transition import (COLUMNS_FORMULA, COLUMNS_PLAIN, GATE_NAMES, KNOB_OF, LAMP_CSS, PAGE_CSS,
                                       TABLE_FORMULA, TABLE_PLAIN, model_name)
from app.i18n import N_, _, current_language, format_number
from app.urlstate import read_query, serialize, write_query
from engine.ops.states import MLSTMState
from engine.stepping import step

SLUG = "architectures"
D = 8                                   # d_k = d_v of the pictures: small enough to read every cell

# the teaching order of DESIGN §2.3: accumulate, fade the past, correct what is written
ARCHITECTURES = ("linear", "retnet", "mamba2", "gla", "rwkv6", "mlstm", "deltanet", "gated_deltanet", "rwkv7")
FAMILY = {"linear": N_("starting point: only adds"),
          **dict.fromkeys(("retnet", "mamba2", "gla", "rwkv6", "mlstm"), N_("fades the past")),
          **dict.fromkeys(("deltanet", "gated_deltanet", "rwkv7"), N_("corrects what is stored"))}

# illustrative gates of the pictures (and α of the knob links): what each model keeps per token
RETNET_GAMMA = 1 - 2 ** -5              # γ_h = 1 − 2^(−5−h) of the first head
ALPHA = {"linear": 1.0, "retnet": RETNET_GAMMA, "mamba2": 0.8, "gla": 0.7, "rwkv6": 0.7, "mlstm": 0.9,
         "deltanet": 1.0, "gated_deltanet": 0.8, "rwkv7": 0.7}
SPREAD = torch.linspace(0.25, 1.75, D, dtype=torch.float64)   # per channel: w_i = α^{s_i}, as the knob spreads
KEY = torch.tensor([0, 0.48, 0, 0.6, 0, 0, 0.64, 0], dtype=torch.float64)     # a unit key on dimensions 1, 3, 6
VALUE = torch.tensor([0.5, -0.5, 0.5, 0, 0, 0.5, 0, 0], dtype=torch.float64)

# models the knob does not reach exactly: the nearest knob setting, and what it lacks
NEAREST = {"rwkv6": ("channel", 0.0), "mlstm": ("scalar", 0.0)}
NOT_ON_KNOB = {
    "rwkv6": N_("Not exactly on the knob: its transition is GLA's (gate “{gate}”, β = {beta}), but the knob "
                "reads after writing and has no bonus u. The link opens that nearest setting."),
    "mlstm": N_("Not exactly on the knob: its forget gate is one number per token, like Mamba-2's (gate "
                "“{gate}”, β = {beta}), but the knob has no input gate and no normalizer. The link opens that "
                "nearest setting."),
}
ON_KNOB = N_("On the transition knob: gate “{gate}”, β = {beta}.")

SPECIAL_PLAIN = {
    "linear": N_("The starting point: it only adds. Nothing ever fades or is removed, so once there are more "
                 "pairs than the memory has columns, they start to blur into each other."),
    "retnet": N_("The fading rate is fixed in advance, one per head, and never depends on the text: some heads "
                 "forget quickly, others slowly."),
    "mamba2": N_("Each token chooses how much to forget, one amount for the whole memory. The answer also gets a "
                 "shortcut: a copy of the input added straight to the output."),
    "gla": N_("Each column of the memory fades at its own speed, chosen by the token: some columns keep a long "
              "memory, others a short one."),
    "rwkv6": N_("It fades like GLA, but it answers before writing the current pair, and then adds that pair to "
                "the answer with a bonus weight of its own."),
    "mlstm": N_("Besides the forget gate it has an input gate that says how strongly to write, and it divides the "
                "answer by a running total of what was written, so answers do not grow with the number of writes."),
    "deltanet": N_("Before writing, it asks the memory what it already holds under this name and writes only the "
                   "difference: a new number replaces the old one instead of mixing with it."),
    "gated_deltanet": N_("DeltaNet's correction plus Mamba-2's fading: it can replace a single number and also "
                         "clear out the whole memory when the text moves on."),
    "rwkv7": N_("Fading per column like RWKV-6, plus a correction like DeltaNet's, with its own erasing strength "
                "for each column."),
}
SPECIAL_FORMULA = {
    "linear": N_(r"With $A_t = I$ the state is a plain running sum, $S_t = \sum_{i \le t} v_i k_i^\top$; the "
                 r"original also divides the read-out by $z_t^\top q_t$, with $z_t = \sum_{i \le t} k_i$."),
    "retnet": N_(r"$\gamma_h = 1 - 2^{-5-h}$ is fixed per head $h$, not computed from the token; the picture "
                 r"shows head 0, $\gamma = 1 - 2^{-5} \approx 0.97$. The parallel form uses the decay mask "
                 r"$D_{ts} = \gamma^{t-s}$."),
    "mamba2": N_(r"$\alpha_t = \exp(\Delta_t A_h)$ with a step $\Delta_t$ computed from the token; the write uses "
                 r"$B_t$ as key, $C_t$ as query and $\Delta_t x_t$ as value, and the read-out adds the skip "
                 r"$D x_t$. Here $\alpha_t = 0.8$."),
    "gla": N_(r"$\alpha_t \in (0,1)^{d_k}$ from a low-rank projection of the token. Here "
              r"$\alpha_{t,i} = 0.7^{s_i}$ with $s_i$ from 0.25 to 1.75, as on the knob."),
    "rwkv6": N_(r"$o_t = (S_{t-1} + v_t (u \odot k_t)^\top)\, q_t$: the read-out uses $S_{t-1}$, and the current "
                r"token enters only through the bonus $u \in \mathbb{R}^{d_k}$. Here $w_{t,i} = 0.7^{s_i}$."),
    "mlstm": N_(r"The input gate $i_t = \exp(\tilde\imath_t)$ can exceed 1, so the state is stored divided by "
                r"$e^{m_t}$, a running maximum; the normalizer $n_t = f_t n_{t-1} + i_t k_t$ divides the "
                r"read-out. Here $f_t = 0.9$, $i_t = 1$."),
    "deltanet": N_(r"$S_t = S_{t-1} + \beta_t (v_t - S_{t-1} k_t)\, k_t^\top$: one gradient step of size "
                   r"$\beta_t$ on $\tfrac12 \lVert S k_t - v_t \rVert^2$. With $\beta_t = 1$ (here) the "
                   r"transition removes the direction $k_t$."),
    "gated_deltanet": N_(r"The gradient step of DeltaNet with weight decay $\alpha_t$, the online-regression "
                         r"view of the family. Here $\alpha_t = 0.8$, $\beta_t = 1$."),
    "rwkv7": N_(r"Diagonal plus rank one, the general form of the delta rule: $a_t = -\hat\kappa_t$ and "
                r"$b_t = \hat\kappa_t \odot \eta_t$, with $\eta_t$ the in-context learning rate. Here "
                r"$w_{t,i} = 0.7^{s_i}$, $\eta_t = 1$, $\hat\kappa_t = k_t$."),
}


# ---------------------------------------------------------------------- the engine's transitions

def card_gates(variant):
    """One token's gates for engine.stepping.step (B = H = 1): the illustrative setting of each model."""
    log_alpha = float(np.log(ALPHA[variant]))
    scalar = torch.full((1, 1), log_alpha, dtype=torch.float64)                     # [B, H]
    channel = (SPREAD * log_alpha).view(1, 1, D)                                    # [B, H, d_k]
    one = torch.ones(1, 1, dtype=torch.float64)
    key = KEY.view(1, 1, D)
    return {
        "linear": {},
        "retnet": {"g": torch.tensor([log_alpha], dtype=torch.float64)},            # [H]: fixed per head
        "mamba2": {"g": scalar},
        "gla": {"g": channel},
        "rwkv6": {"g": channel, "u": torch.ones(1, D, dtype=torch.float64)},
        "mlstm": {"f": torch.logit(torch.tensor([[ALPHA["mlstm"]]], dtype=torch.float64)),
                  "i": torch.zeros(1, 1, dtype=torch.float64)},
        "deltanet": {"beta": one},
        "gated_deltanet": {"g": scalar, "beta": one},
        "rwkv7": {"g": channel, "a": -key, "b": key * 1.0},                          # a = −κ̂, b = κ̂ ⊙ η, η = 1
    }[variant]


@functools.lru_cache(maxsize=None)
def transition_step(variant):
    """(A_t [d_k, d_k], StepRecord) of one token, read off the engine's step from S_{t-1} = I."""
    identity = torch.eye(D, dtype=torch.float64).view(1, 1, D, D)
    state = identity
    if variant == "mlstm":
        state = MLSTMState(identity, torch.zeros(1, 1, D, dtype=torch.float64), torch.zeros(1, 1, dtype=torch.float64))
    key, value = KEY.view(1, 1, D), VALUE.view(1, 1, D)
    _o, after, record = step(variant, state, key, key, value, scale=1.0, **card_gates(variant))
    S = (after.C if variant == "mlstm" else after)[0, 0].numpy()
    transition = S - record.write[0, 0]                 # S_t = I A_t + W_t
    if variant == "mlstm":                              # the true state is the stored one times e^{m_t}
        transition = transition * np.exp(record.extras["m"][0, 0])
    return transition, record


def transition_matrix(variant):
    return transition_step(variant)[0]


# ------------------------------------------------------------------------------ the links

def knob_setting(variant):
    """(gate, α, β, exact): where the model sits on the transition knob, or its nearest setting."""
    exact = variant in KNOB_OF
    gate, beta = KNOB_OF[variant] if exact else NEAREST[variant]
    alpha = ALPHA[variant] if gate != "none" else 1.0
    return gate, alpha, beta, exact


def state_link(variant, language, level):
    """Dashboard 2 on this model."""
    return "./state?" + urlencode({"variant": variant, "lang": language, "level": level})


def knob_link(variant, language, level):
    """Dashboard 3 with the knobs on this model (the nearest setting for RWKV-6 and mLSTM)."""
    gate, alpha, beta, _exact = knob_setting(variant)
    query = {"gate": gate, "alpha": serialize(float(alpha)), "beta": serialize(float(beta))}
    if gate == "none":                      # α has nothing to act on: the knob page keeps its own default
        del query["alpha"]
    return "./transition?" + urlencode({**query, "lang": language, "level": level})


# ------------------------------------------------------------------------------ the store

class ArchitecturesStore(param.Parameterized):
    """The one input of the page: which model is filled into the skeleton at the top."""

    arch = param.Selector(default="linear", objects=list(ARCHITECTURES))    # the highlighted model (no doc:
                                                                            # it would show untranslated)

    URL = {"arch": "arch"}


def build(session):
    values, notices = read_query(ArchitecturesStore, ArchitecturesStore.URL, pn.state.session_args)
    store = session.store(SLUG, lambda: ArchitecturesStore(**values))
    session.add_notices("url", notices)
    view = ArchitecturesView(store=store, session=session)
    write_query(store, ArchitecturesStore.URL)
    return Page(main=view, controls=view.controls())


# ------------------------------------------------------------------------------ the words

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
CARD_STYLE = {"border": "1px solid #d9e2ec", "border-radius": "8px", "padding": "6px", "background": "white"}
LIT_STYLE = {**CARD_STYLE, "border": "3px solid #f0b429", "background": "#fffbea"}


def formula_html(text):
    """Our own text with $…$ formulas (never user input) as inline HTML, without the paragraph."""
    converted = to_html(text)
    return converted[3:-4] if converted.startswith("<p>") and converted.count("<p>") == 1 else converted


def card_html(variant, superiore):
    return _card_html(variant, superiore, current_language())


@functools.lru_cache(maxsize=64)            # converting the formulas costs tens of ms; a level switch should not
def _card_html(variant, superiore, _language):
    columns = COLUMNS_FORMULA if superiore else COLUMNS_PLAIN
    cells = TABLE_FORMULA[variant] if superiore else TABLE_PLAIN[variant]
    head = '<span class="family">%s</span>' % html.escape(_(FAMILY[variant]))
    if superiore:
        head += f'<span class="paper">{html.escape(PAPERS[variant])}</span>'
    rows = "".join(f"<dt>{formula_html(_(columns[c]))}</dt><dd>{formula_html(_(cells[c - 1]))}</dd>"
                   for c in (1, 2, 3))      # transition, write, read-out (the gate column is for the knob page)
    special = _(SPECIAL_FORMULA[variant]) if superiore else _(SPECIAL_PLAIN[variant])
    label = html.escape(_("What is special:"))
    special = f"<p><b>{label}</b> {formula_html(special)}</p>"
    gate, _alpha, beta, exact = knob_setting(variant)
    words = dict(gate=_(GATE_NAMES[gate]), beta=format_number(round(beta, 2)))
    knob = _(ON_KNOB).format(**words) if exact else _(NOT_ON_KNOB[variant]).format(**words)
    kind = "knob" if exact else "knob near"
    return f'<div>{head}</div><dl>{rows}</dl>{special}<p class="{kind}">{html.escape(knob)}</p>'


def links_html(variant, language, level):
    state = html.escape(state_link(variant, language, level))
    knob = html.escape(knob_link(variant, language, level))
    state_text = html.escape(_("Open in “The state fills up”"))
    knob_text = html.escape(_("Open on the transition knob") if variant in KNOB_OF
                            else _("Open the nearest knob setting"))
    return (f'<a href="{state}" data-link="state">{state_text} →</a>'
            f'<a href="{knob}" data-link="knob">{knob_text} →</a>')


# ------------------------------------------------------------------------------ the view

class ArchitecturesView(pn.viewable.Viewer):
    """The skeleton at the top, filled in for the highlighted model; one card per model below."""

    store = param.ClassSelector(class_=ArchitecturesStore)
    session = param.Parameter()

    def __init__(self, **params):
        super().__init__(**params)
        session = self.session
        self.intro = Explanation(
            session,
            elementare=_("Every model on this page keeps a **memory** of fixed size: a grid of numbers that never "
                         "grows, however long the text. Each piece of text (a **token**) brings a name to file "
                         "things under (the **key**), a number to store under it (the **value**) and, when "
                         "something is asked, the name to look up (the **query**). At every token the model makes "
                         "two moves. First the **transition**: it transforms the old memory, keeping it, fading "
                         "it, or erasing what it held under the name. Then the **write**: it adds the new pair. To "
                         "answer, it looks into the memory with the query (the **read-out**). The models below "
                         "differ only in these choices."),
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
        button = pn.widgets.Button(name=model_name(variant), button_type="primary", button_style="outline",
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
                                              options={model_name(v): v for v in ARCHITECTURES},
                                              sizing_mode="stretch_width")
        return [select]

    def __panel__(self):
        title = html.escape(_("Architectures"))
        heading = lambda text: pn.pane.HTML(f"<h2>{html.escape(text)}</h2>", stylesheets=[PAGE_CSS],
                                            margin=(0, 10), sizing_mode="stretch_width")
        return pn.Column(
            pn.pane.HTML(f"<h1>{title}</h1>", stylesheets=[PAGE_CSS], margin=(0, 10)),
            self.intro, self.lamp, self.rule,
            heading(_("One card per model")), self.pictures_help,
            pn.FlexBox(*(card["layout"] for card in self.cards.values()), sizing_mode="stretch_width"),
            sizing_mode="stretch_width")

    def _draw(self, *_events):
        arch = self.store.arch
        name = html.escape(model_name(arch))
        with pn.io.hold():
            text = html.escape(_("The skeleton, filled in for {model}")).format(model=f"<b>{name}</b>")
            self.lamp.object = f'<div class="lamp" role="status">{text}</div>'
            self.rule.elementare = _(RULE_PLAIN[arch])
            self.rule.superiore = f"{_(RULE_PLAIN[arch])} ({PAPERS[arch]})\n\n{RULE_FORMULA[arch]}"
            for variant, card in self.cards.items():
                lit = variant == arch
                card["button"].button_style = "solid" if lit else "outline"
                card["layout"].styles = dict(LIT_STYLE if lit else CARD_STYLE)
            self._draw_words()

    def _draw_words(self, *_events):
        superiore = self.session.level == "superiore"
        language, level = self.session.language, self.session.level
        with pn.io.hold():
            for variant, card in self.cards.items():
                card["text"].object = card_html(variant, superiore)
                card["links"].object = links_html(variant, language, level)
