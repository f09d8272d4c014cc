"""The cards of one head of "The state fills up": its pictures, each with its explanation under it.

`HeadPanel.configure` chooses the cards for a variant and the size of a run; `HeadPanel.show_run`
sends every `model.HeadFrame` of the run at once, on the run's fixed colour ranges, and the browser's
player draws them frame by frame. Nothing here computes: the numbers come from the model.
"""
import numpy as np
import panel as pn

from lineare.app import mechanism
from lineare.app.components.later import Later
from lineare.app.components.player import FrameText
from lineare.app.components.plots import BarsPicture, MatrixPicture, RowsPicture, main_picture, rank_one
from lineare.app.components.text import FIT_CSS, Explanation
from lineare.app.dashboards.state_fills_up.texts import ANSWER_CSS
from lineare.app.i18n import N_, _, format_number
from lineare.app.variants import REGISTRY

# trained mode: the card texts that differ from mechanism mode's (the others say the same in both)
TRAINED_PLAIN = {
    "state": N_("The summary of this layer: a grid of {size} × {size} numbers. Every word adds its own "
                "pattern; the grid never grows, it only gets more crowded."),
    "write": N_("What this word adds to the summary: its information pattern spread along its label pattern. "
                "Here every word writes something, questions and fillers too: the model learned how much."),
    "delta": N_("Before writing, the layer reads what its summary already holds under this word's label "
                "(prediction), compares it with the information it wants to store (target) and writes only "
                "the difference (error)."),
    "readout": N_("The layer reads its summary with this word's question pattern. What comes out goes on "
                  "through the rest of the model, which turns it into a guess for the next word."),
}
TRAINED_FORMULA = {
    "state": N_("The state $S_t \\in \\mathbb{R}^{d_v \\times d_k}$ of this layer: its size is fixed by "
                "the model, not by the sequence. Blue negative, red positive, same scale at every step; the "
                "largest 0.1% of the values are drawn at full colour."),
    "attention": N_("The attention weights $a_{t,i} = \\mathrm{softmax}_i(q_t^\\top k_i / \\sqrt{d_k})$ over "
                    "this layer's cache; the read-out is $o_t = \\sum_i a_{t,i} v_i$."),
    "readout": N_("The read-out $o_t$ ($S_t q_t$ for a fixed state; for softmax attention the weighted sum "
                  "of the cached values) is normalized, projected back to the model width and added to the "
                  "residual stream. After the last layer the output head gives the logits, and the "
                  "prediction is their $\\mathrm{argmax}$."),
}


# the whole update ΔS_t = S_t − S_{t-1} of each model, in the papers' notation (S_{t-1} A_t + W_t − S_{t-1}),
# term by term: the card is narrow, so a long one is drawn a term per line (tests/test_every_sentence.py checks
# each against the engine's records)
CHANGE = {
    "linear": (r"v_t k_t^\top",),
    "retnet": (r"(\gamma - 1)\, S_{t-1}", r"+ v_t k_t^\top"),
    "mamba2": (r"(\alpha_t - 1)\, S_{t-1}", r"+ v_t k_t^\top"),
    "gla": (r"S_{t-1} (\mathrm{diag}(\alpha_t) - I)", r"+ v_t k_t^\top"),
    "deltanet": (r"\beta_t (v_t - S_{t-1} k_t)\, k_t^\top",),
    "gated_deltanet": (r"(\alpha_t - 1)\, S_{t-1}", r"+ \beta_t (v_t - \alpha_t S_{t-1} k_t)\, k_t^\top"),
    "rwkv6": (r"S_{t-1} (\mathrm{diag}(w_t) - I)", r"+ v_t k_t^\top"),
    "rwkv7": (r"S_{t-1} (\mathrm{diag}(w_t) - I)", r"- (S_{t-1} \hat\kappa_t)(a_t \odot \hat\kappa_t)^\top",
              r"+ v_t \tilde k_t^\top"),
    "mlstm": (r"(f_t - 1)\, C_{t-1}", r"+ i_t\, v_t k_t^\top"),
}
LINE = 30                                   # characters of LaTeX that fit one line of the card
FIRST_ROW = 3                               # the memory, its whole change and the answer: the first screen
# the second row's height at 1366×768, held by its marker until the visitor scrolls near it: three cards to a
# line, each line about this tall with the explanations under the cards (True) and without (measured)
LINE_HEIGHT, CARDS_PER_LINE = {True: 450, False: 245}, 3


def change_formula(variant):
    """The Superiore text of the "What changes now" card for `variant` (softmax has no such card)."""
    if variant not in CHANGE:
        return ""
    state, terms = ("C" if variant == "mlstm" else "S"), CHANGE[variant]
    lines = [" ".join(terms)] if len(" ".join(terms)) <= LINE else terms
    return (_("The whole update at this token, the transition's part plus the write:") +
            f" $$\\Delta {state}_t = {state}_t - {state}_{{t-1}}$$" +
            "".join(f"$$\\quad {'= ' if i == 0 else ''}{line}$$" for i, line in enumerate(lines)))


class HeadPanel:
    """The pictures of one head, made when first needed, with an explanation under each card.

    Mechanism mode: `HeadPanel(head, session, explain)` (16 × 16). Trained mode: give `name` (e.g.
    "Layer 2") and the checkpoint's d_k, d_v. The first row of cards is made with the page; the second
    (how the change is made) when the visitor scrolls near it (`rest`, a Later section): then it is sent the
    last run, and `player` (the page's) is told, so that the browser draws it at the frame it shows.
    """

    def __init__(self, head, session, explain, *, name=None, d_k=mechanism.D_K, d_v=mechanism.D_V, player=None):
        self.head, self.session, self.explain = head, session, explain
        self.name, self.d_k, self.d_v = name, d_k, d_v
        self.cards, self.pictures, self.explanations = {}, {}, {}
        self.notes_shown = True
        self.variant = None
        self.answer = FrameText(stylesheets=[ANSWER_CSS], margin=(0, 10), width=310)      # mechanism mode
        self.layout = pn.FlexBox(sizing_mode="stretch_width")
        self.player, self.run = player, None        # the last run sent: (frames, limits, t)
        self.second, self.second_row = [], None     # the second row's card names; its FlexBox once made
        self.rest = None                            # the second row's Later, made with the first variant that has one

    def _make(self, name):
        """(picture, plain text, formula text) of one card."""
        d_k, d_v, number = self.d_k, self.d_v, self.head + 1
        if name == "state":
            title = _("Head {n}: memory S").format(n=number) if self.name is None \
                else _("{name}: memory S").format(name=self.name)
            return (MatrixPicture(title, _("key dimension"), _("value dimension"), d_v, d_k, width=320, height=270),
                    _("The summary is a grid of 16 × 16 numbers. Every pair that is stored (a label and its "
                      "information) adds its own pattern; the grid never grows, it only gets more crowded."),
                    _("The state $S_t \\in \\mathbb{R}^{d_v \\times d_k}$, here $16 \\times 16$: its size does "
                      "not depend on the length of the sequence. Colours: blue negative, red positive, same "
                      "scale at every step."))
        if name == "cache":
            title = _("Head {n}: value cache").format(n=number) if self.name is None \
                else _("{name}: value cache").format(name=self.name)
            return (MatrixPicture(title, _("value dimension"), _("position in the sequence"), 1, d_v,
                                  width=320, height=270),
                    _("Softmax attention keeps no summary: it writes every word in its notebook of notes, "
                      "one row each. The notebook grows with every word and nothing is ever freed."),
                    _("The KV cache holds $k_i, v_i$ for every past token $i \\le t$; it grows as $O(t)$. "
                      "Shown: the values $v_i$, one row per token."))
        if name == "change":
            return (MatrixPicture(_("What changes now"), _("key dimension"), _("value dimension"),
                                  d_v, d_k, width=300, height=270),
                    _("Everything this word changes in the summary: what it writes, minus what fades or is "
                      "erased. A question or a pause changes nothing, unless the summary forgets."),
                    change_formula(self.variant))
        if name == "removed":
            return (MatrixPicture(_("What fades or is erased"), _("key dimension"), _("value dimension"),
                                  d_v, d_k, width=300, height=270),
                    _("What the summary loses at this step, before the new write: a forgetting gate fades "
                      "everything a little; the correction erases what was stored under this label."),
                    _("$S_{t-1}(A_t - I)$: the transition's share of the update; for the delta rule "
                      "$-\\beta_t S_{t-1} k_t k_t^\\top$, the old value read along $k_t$ and taken out."))
        if name == "spectrum":
            return (BarsPicture(_("What the memory keeps"), _("direction, smallest first"), _("kept"), d_k,
                                y_range=(-0.05, 1.05), width=320, height=270),
                    _("How much of each direction the summary keeps at this step: 1 keeps it, between 0 and 1 "
                      "fades it, 0 erases it, below 0 flips its sign. The correction acts along this word's label "
                      "only: there the bar drops, to 1 − β for DeltaNet, to α(1 − β) when the summary also fades "
                      "(Gated DeltaNet), and RWKV-7 with its full erasing strength takes it below 0. The "
                      "others stay where the forgetting puts them."),
                    _("The eigenvalues of the transition $A_t$ (smallest first): $\\alpha_t(1 - \\beta_t)$ "
                      "along $k_t$ and $\\alpha_t$ on the directions orthogonal to it ($\\alpha_t = 1$ for "
                      "DeltaNet); RWKV-7: the eigenvalues of "
                      "$\\mathrm{diag}(w_t) - \\hat\\kappa_t (a_t \\odot \\hat\\kappa_t)^\\top$."))
        if name == "write":
            return (MatrixPicture(_("What this token writes"), _("key dimension"), _("value dimension"),
                                  d_v, d_k, width=300, height=270),
                    _("What this word adds to the summary: the pattern of its information (the number) "
                      "spread along the pattern of its label (the name). Words that only ask or wait add "
                      "nothing."),
                    _("The write term $v_t k_t^\\top$ (delta family: $\\beta_t v_t k_t^\\top$), an outer "
                      "product of rank one."))
        if name == "transition":
            return (BarsPicture(_("What each column keeps"), _("key dimension"), _("kept"), d_k,
                                width=300, height=270),
                    _("Before the new write, how much of each column the summary keeps: 1 keeps everything, "
                      "0 forgets it."),
                    _("The decay of the transition, per key channel: $\\alpha_t$ (a scalar gate gives the "
                      "same bar everywhere; linear attention and DeltaNet keep $1$)."))
        if name == "attention":
            return (BarsPicture(_("Where the question looks"), _("position in the sequence"),
                                _("attention weight"), 1, width=300, height=270, color="#b35806"),
                    _("How much the question looks at each note of the notebook. A single tall bar means it "
                      "found its label."),
                    _("The attention weights $a_{{t,i}} = \\mathrm{{softmax}}_i(s\\, q_t^\\top k_i)$ over the cache, "
                      "with the query scale $s = {scale}$ here (unit keys need a sharp softmax; a trained layer "
                      "uses $s = 1/\\sqrt{{d_k}}$); the answer is $o_t = \\sum_i a_{{t,i}} v_i$.").format(
                        scale=format_number(mechanism.SCALE["softmax"], 0)))
        if name == "delta":
            return (RowsPicture(_("Correction"), _("value dimension"),
                                [_("prediction"), _("target"), _("error")], d_v, width=330, height=200),
                    _("Before writing, the model asks its summary what it already holds under this label "
                      "(prediction), compares it with the information to store (target) and writes only the "
                      "difference (error)."),
                    _("The delta rule: $e_t = v_t - S_{t-1} k_t$ and $S_t = S_{t-1} + \\beta_t e_t k_t^\\top$, "
                      "one gradient step on $\\tfrac12 \\lVert S k_t - v_t \\rVert^2$."))
        return (RowsPicture(_("Read-out"), _("value dimension"), [_("answer")], d_v, width=320, height=140),
                _("To answer, the model looks into the summary with the question, the label it is asked "
                  "about. What comes out is compared with every stored number: the closest one is the answer."),
                _("The read-out $o_t$ ($S_t q_t$ for a fixed state; for softmax attention the weighted sum of "
                  "the cached values); the answer is the stored value whose vector has the largest cosine "
                  "with $o_t$ (averaged over heads)."))

    def card(self, name):
        if name not in self.cards:
            picture, plain, formulas = self._make(name)
            if self.name is not None:                      # trained mode words some cards its own way
                plain = _(TRAINED_PLAIN[name]).format(size=self.d_k) if name in TRAINED_PLAIN else plain
                formulas = _(TRAINED_FORMULA[name]) if name in TRAINED_FORMULA else formulas
            main = name in ("state", "cache", "change", "attention", "readout") and self.head == 0
            parts = [main_picture(picture.figure) if main else pn.pane.Bokeh(picture.figure)]
            if name == "readout" and self.name is None:
                parts.append(self.answer)
            width = picture.figure.width + 10
            if self.explain:
                self.explanations[name] = Explanation(self.session, elementare=plain, superiore=formulas,
                                                      width=width - 10, stylesheets=[FIT_CSS],
                                                      shown=self.notes_shown)
                parts.append(self.explanations[name])
            self.pictures[name] = picture
            self.cards[name] = pn.Column(*parts, width=width, margin=(0, 6, 8, 0))
        return self.cards[name]

    def show_notes(self, shown):
        self.notes_shown = shown                    # the cards made later too
        for explanation in self.explanations.values():
            explanation.shown = shown
        self._size_second_row()

    def _size_second_row(self):
        if self.rest is not None:
            lines = -(-len(self.second) // CARDS_PER_LINE)
            self.rest.resize(lines * LINE_HEIGHT[self.explain and self.notes_shown])

    def configure(self, variant, length):
        """Choose the cards for `variant` and size them for a run of `length` tokens."""
        record = REGISTRY[variant]
        self.variant = variant
        if "change" in self.explanations:                 # its formula is the model's own
            self.explanations["change"].superiore = change_formula(variant)
        if record.fixed_state:
            # first row: the memory, its whole change and the answer; then how the change is made
            names = ["state", "change", "readout"]
            if record.corrects:
                names += ["spectrum", "removed", "write", "delta"]
            elif record.forgets:
                names += ["transition", "removed", "write"]
            else:                                     # nothing fades: the change is the write
                names += ["transition"]
        else:
            names = ["cache", "attention", "readout"]
        cards, self.second = [self.card(n) for n in names[:FIRST_ROW]], names[FIRST_ROW:]
        if self.second:
            if self.rest is None:
                self.rest = Later(self._make_second_row, placed=lambda _row: self._redraw_frame())
            self._size_second_row()
            if self.second_row is not None:
                self.second_row.objects = [self.card(n) for n in self.second]
            cards.append(self.rest.__panel__())
        if self.layout.objects != cards:
            self.layout.objects = cards
        if not record.fixed_state:
            self.pictures["cache"].set_rows(length)
            self.pictures["attention"].set_size(length)

    def _make_second_row(self):
        """The second row, made when the visitor scrolls near it: the run already sent goes to its pictures, and
        the player redraws the frame it shows (the server does not know which: the browser steps alone)."""
        self.second_row = pn.FlexBox(*[self.card(n) for n in self.second], sizing_mode="stretch_width", margin=0)
        if self.run is not None:
            self._show_second_row(*self.run)
        return self.second_row

    def _redraw_frame(self):
        if self.run is not None and self.player is not None:
            self.player.new_run(self.player.length)

    def shown(self):
        """The names of the cards on the page (the second row's once it is made)."""
        on_page = [*self.layout.objects, *(self.second_row.objects if self.second_row is not None else [])]
        return {name for name, card in self.cards.items() if card in on_page}

    def show_run(self, frames, limits, t):
        """Every `model.HeadFrame` of a run, on the run's colour ranges (`model.limits_of`); frame t first."""
        self.run = (frames, limits, t)
        p, first = self.pictures, frames[0]
        stack = lambda name: np.stack([getattr(f, name) for f in frames])                  # [T, …]
        if first.cache is not None:
            p["cache"].show_frames(stack("cache"), limits["target"], t)
            p["attention"].show_frames(stack("attention"), t)
        else:
            p["state"].show_frames(stack("state"), limits["state"], t)
            self._show_change(frames, limits["update"], t)
        p["readout"].show_frames(stack("output"), limits["output"], t)
        if self.second_row is not None:
            self._show_second_row(frames, limits, t)

    def _show_change(self, frames, limit, t):
        """The whole change, rebuilt in the browser from the state's frames, the transition (diagonal plus
        rank one) and the write's two factors (carried by the write's picture once it is on the page); sent
        as a picture of its own only if a write is not of rank one."""
        p, stack = self.pictures, lambda name: np.stack([getattr(f, name) for f in frames])
        write = rank_one(stack("write"))
        if write is None:
            p["change"].show_frames(stack("change"), limit, t)
            return
        zeros = np.zeros_like(frames[0].diag)
        a = np.stack([f.low[0] if f.low else zeros for f in frames]) if any(f.low for f in frames) else None
        b = np.stack([f.low[1] if f.low else zeros for f in frames]) if a is not None else None
        p["change"].show_update(p["state"], stack("change"), limit, t, (stack("diag"), a, b),
                                write=p["write"] if "write" in self.shown() else write)

    def _show_second_row(self, frames, limits, t):
        """How the change is made: the write, what fades or is erased (the change's transition without the
        write), what the transition keeps, the correction."""
        p, first, shown = self.pictures, frames[0], self.shown()
        stack = lambda name: np.stack([getattr(f, name) for f in frames])                  # [T, …]
        if first.cache is not None:
            return
        limit = limits["update"]
        if "write" in shown:
            p["write"].show_frames(stack("write"), limit, t)
        if "removed" in shown:
            if rank_one(stack("write")) is None:
                p["removed"].show_frames(stack("removed"), limit, t)
            else:
                p["removed"].show_update(p["state"], stack("removed"), limit, t, None, owner=p["change"])
        betas = ["" if f.beta is None else f"β = {format_number(f.beta, 2)}" for f in frames]
        p["spectrum" if "spectrum" in shown else "transition"].show_frames(stack("kept"), t, subtitles=betas)
        if first.correction is not None:
            p["delta"].show_frames(stack("correction"), limits["delta"], t)
