"""Where memory fails, the two sections under the trained grid: one trained answer taken apart layer by
layer (`ForensicsSection`), and the accuracy over d_k × N with α and β (`MapSection`). Each draws its part
of the store (model.MemoryStore) and computes nothing."""
import html

import numpy as np
import panel as pn

from lineare.app.components.plots import number_format
from lineare.app.components.text import SCROLL_BOX_CSS, Explanation, scroll_box
from lineare.app.dashboards.base import heading
from lineare.app.dashboards.memory_fails.forensics import FADED, SIMILAR
from lineare.app.dashboards.memory_fails.model import KEY_NAMES, RULE_NAMES
from lineare.app.dashboards.memory_fails.pictures import AccuracyMap, WritesPicture
from lineare.app.i18n import _, current_language, format_number
from lineare.app.variants import REGISTRY

TABLE_CSS = """
:host { font-size: 16px; color: #1f2933; }
table { border-collapse: collapse; margin-top: 4px; }
th, td { padding: 2px 8px; text-align: right; border-bottom: 1px solid #e4e7eb; }
th { font-weight: 600; color: #52606d; vertical-align: bottom; }
td:first-child, th:first-child { text-align: left; white-space: nowrap; }
tr.right td { color: #0072b2; font-weight: 700; }
.ok { color: #0072b2; font-weight: 700; } .bad { color: #a04000; font-weight: 700; }   /* 4.5:1 and more on white */
.muted { color: #52606d; }
"""


def significant(x, digits=3):
    """x with `digits` significant digits, in the page's number format (0,0123 · 334 · 16.800)."""
    x = float(x)
    decimals = max(0, digits - 1 - int(np.floor(np.log10(abs(x))))) if x != 0 else 0
    return format_number(round(x, decimals), decimals)


def percent(x):
    """100·x as the page writes a percentage: whole numbers, one significant digit under 1 (0.4, not 0)."""
    x = 100 * float(x)
    return significant(x, 1) if 0 < abs(x) < 0.5 else format_number(round(x), 0)


def token_name(token, vocab=256):
    """k17 for a key id, v203 for a value id, · for the filler (as the state page writes them)."""
    return "·" if token == 0 else (f"k{token}" if token < vocab // 2 else f"v{token}")


class ForensicsSection(pn.viewable.Viewer):
    """A click on the trained grid: that answer's read-out, layer by layer, split into its writes."""

    def __init__(self, store, session):
        super().__init__()
        self.store, self.session = store, session
        self.intro = Explanation(
            session,
            elementare=_("Click a square of the grid (an orange-red one, marked ✗, is a wrong answer) to see where "
                         "that answer came from. In each layer the summary is only a sum of what every earlier "
                         "word wrote into it, so the answer to a question splits exactly into one part per word. The "
                         "bars show each part; the pair that was asked is blue and marked ✓: its label and, right "
                         "after it, its information; the largest other parts are striped amber. Below, the blue line "
                         "says how much of the question still reaches each word through the later forgetting (the "
                         "dotted lines mark the asked pair), and the amber dots how similar each word's label is to "
                         "the question. A wrong answer has two usual causes: the right pair has faded (the line is "
                         "low there), or other words with similar labels speak louder (amber dots high, tall bars "
                         "elsewhere)."),
            superiore=_("A fixed-state layer updates $S_t = S_{t-1} A_t + W_t$, so its read-out is "
                        "$o_t = S_t q_t = \\sum_{i \\le t} W_i (A_{i+1} \\cdots A_t)\\, q_t$: one exact term $c_i$ per "
                        "earlier write, computed from the engine's records (their sum is the recorded read-out to "
                        "float precision). Bars: the share $c_i^\\top o_t / \\lVert o_t \\rVert^2$ (the shares add "
                        "up to 1). Line: $\\lVert (A_{i+1} \\cdots A_t)\\, q_t \\rVert / \\lVert q_t \\rVert$, what "
                        "the later transitions let through; dots: $\\cos(k_i, q_t)$. Blue, marked ✓ (dotted lines "
                        "below): the asked key's position and its value's (the short convolution lets the value's "
                        "write see the key before it); striped amber: the largest other terms, those in the table. "
                        "Softmax: $c_i = a_i v_i$, nothing fades. RWKV-6 reads $S_{t-1}$ and adds "
                        "$((u \\odot k_t)^\\top q_t)\\, v_t$. mLSTM: its stabilized $C_t$ splits exactly (its "
                        "transition is the stabilized forget gate times $I$, and one normalizer divides every "
                        "term); its line is the "
                        "forget gates' own product $\\prod_{j > i} \\sigma(\\tilde f_j)$.") + " " + _(
                        "Fading: the transitions let less than {faded}% through to the right pair. Cross-talk: the "
                        "three largest other terms, with keys of mean cosine at least {similar} to the query, give "
                        "more than the pair.").format(faded=round(100 * FADED), similar=format_number(SIMILAR, 1)))
        self.status = pn.pane.HTML(stylesheets=[TABLE_CSS], sizing_mode="stretch_width", margin=(4, 10))
        self.pictures = [WritesPicture(n, current_language()) for n in (1, 2)]
        self.verdicts = [Explanation(session, width=470) for _n in (1, 2)]
        self.tables = [pn.pane.HTML(stylesheets=[TABLE_CSS, SCROLL_BOX_CSS], width=470, margin=(0, 10))
                       for _n in (1, 2)]
        store.param.watch(self._draw, ["forensics", "probing", "probe_failure"])
        self._draw()

    def __panel__(self):
        columns = [pn.Column(pn.pane.Bokeh(picture.parts), pn.pane.Bokeh(picture.why.figure),
                             pn.pane.HTML(picture.legend_html, stylesheets=[TABLE_CSS], margin=(0, 10, 6, 60)),
                             verdict, table, css_classes=["forensics-layer"])
                   for picture, verdict, table in zip(self.pictures, self.verdicts, self.tables)]
        return pn.Column(heading(_("One trained answer taken apart")), self.intro, self.status, pn.FlexBox(*columns),
                         sizing_mode="stretch_width")

    def _draw(self, *_events):
        store, found = self.store, self.store.forensics
        if store.probe_failure:
            self.status.object = '<p class="bad">%s</p>' % html.escape(
                _("This model could not be taken apart: {error}").format(error=store.probe_failure))
            return
        if found is None or store.probing:              # the pictures keep the last answer until then
            self.status.object = '<p class="muted">%s</p>' % html.escape(_("Taking the answer apart…"))
            return
        self.status.object = self._status_html(found)
        with pn.io.hold():
            for layer, (picture, verdict, table) in enumerate(zip(self.pictures, self.verdicts, self.tables)):
                parts, judged = found.layers[layer], found.verdicts[layer]
                tokens = [token_name(int(x)) for x in found.tokens]
                picture.show(parts, judged, found.right, np.array(tokens))
                verdict.elementare, verdict.superiore = verdict_texts(layer + 1, judged, tokens)
                table.object = table_html(parts, judged, found.right, tokens, layer + 1)

    def _status_html(self, found):
        fill = {"model": _(REGISTRY[found.variant].short), "q": found.query, "key": token_name(int(found.tokens[
            found.position])), "at": found.position, "right": token_name(found.expected),
            "answer": token_name(found.answer)}
        if found.answer == found.expected:
            text = _("{model}, query {q}: the label {key} (position {at}) gets its information {right} back.")
            mark = '<span class="ok">✓</span>'
        else:
            text = _("{model}, query {q}: the label {key} (position {at}) should get {right}; the model answered "
                     "{answer}.")
            mark = '<span class="bad">✗</span>'
        return f"<p>{html.escape(text.format(**fill))} {mark}</p>"


def verdict_texts(layer, judged, tokens):
    """(elementare, superiore): what one layer's numbers say, in one sentence each."""
    fill = {"n": layer, "share": percent(judged.right_share), "kept": percent(judged.right_kept),
            "others": percent(judged.others_share), "similarity": format_number(round(judged.others_similarity, 2), 2),
            "positions": ", ".join(f"{i} ({tokens[i]})" for i in judged.others[:3])}
    plain = {
        "faded": _("**Layer {n}: faded.** Only {kept}% of the question still reaches the right pair through the later "
                   "forgetting, so that pair gives just {share}% of this layer's answer."),
        "crosstalk": _("**Layer {n}: cross-talk.** The words at positions {positions}, whose labels look like the "
                       "question ({similarity} similar on average), give {others}% of this layer's answer; the right "
                       "pair gives {share}%."),
        "right": _("**Layer {n}: neither.** The right pair gives the largest part of this layer's answer "
                   "({share}%), and {kept}% of the question reaches it."),
        "spread": _("**Layer {n}: neither.** {kept}% of the question still reaches the right pair, but it gives only "
                    "{share}% of the answer: the three largest other words, with labels unlike the question, give "
                    "{others}%."),
    }[judged.kind]
    formulas = {
        "faded": _("**Layer {n}: fading.** The transitions let through at most {kept}% of $q_t$ to the right pair, "
                   "whose terms give {share}% of $o_t$."),
        "crosstalk": _("**Layer {n}: cross-talk.** The writes at {positions}, with keys of mean cosine {similarity} to "
                       "$q_t$, give {others}% of $o_t$; the right pair {share}%."),
        "right": _("**Layer {n}: neither.** The right pair's terms are the largest share of $o_t$ ({share}%), with "
                   "{kept}% of $q_t$ let through."),
        "spread": _("**Layer {n}: neither.** The right pair gets {kept}% of $q_t$ through but gives {share}% of $o_t$; "
                    "the three largest other terms, keys of mean cosine {similarity}, give {others}%."),
    }[judged.kind]
    return plain.format(**fill), formulas.format(**fill)


def table_html(parts, judged, right, tokens, layer):
    """Layer `layer`'s table of the right pair's writes and the largest others: the write (position and token),
    share, size, let through, similarity; in a box that scrolls sideways on a phone."""
    header = [_("write"), _("share"), _("size"), _("let through"), _("similarity")]
    share, size = parts.share, parts.size
    rows = []
    for i in [*right, *judged.others]:
        cells = [f"{i} ({tokens[i]})", percent(share[i]) + "%", significant(size[i]), percent(parts.kept[i]) + "%",
                 format_number(round(float(parts.similarity[i]), 2), 2)]
        rows.append('<tr class="%s">%s</tr>' % ("right" if i in right else "other",
                                                "".join(f"<td>{html.escape(text)}</td>" for text in cells)))
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    return scroll_box(table, _("Layer {n}: the largest parts of the answer").format(n=layer), fits=28)


class MapSection(pn.viewable.Viewer):
    """Answers right over d_k × N for the page's rule, with the delta rules' β and the gated rule's α."""

    def __init__(self, store, session):
        super().__init__()
        self.store, self.session = store, session
        self.intro = Explanation(
            session,
            elementare=_("The same test as «Answers right» at the top, for labels of 8, 16, 32 and 64 numbers at "
                         "once. Each square says how many answers come back right (blue: all, red: none) for that "
                         "many pairs, counted as pairs per number of a label: the dashed line is where there are as "
                         "many pairs as numbers. With the sliders, let the summary forget a little at every new pair "
                         "(α, gated delta rule) or correct only part of the old information (β, delta rules), and "
                         "see where the blue ends."),
            superiore=_("Accuracy with dense unit values decoded by largest cosine («Answers right» above), for $d_k "
                        "\\in \\{8, 16, 32, 64\\}$ and every other $N$ of the page's grid, mean of two draws of the "
                        "keys; columns at $N / d_k$, so on every row the bound is 0 up to one line, $N = d_k$ "
                        "(dashed). $\\beta$ is the delta rules' step, $S \\leftarrow S (I - \\beta k k^\\top) + "
                        "\\beta v k^\\top$; $\\alpha$ the gated delta rule's decay per write. The curves above keep "
                        "$\\beta = 1$ and $\\alpha = 0.99$: at those values row $d_k$ of the map lies on the curve "
                        "of «Answers right»."))
        # sliders hand their value over on release: every value costs about fifty runs of the experiment
        self.alpha = pn.widgets.FloatSlider(label=_("Forget α (gated delta rule: share kept per pair)"), start=0.5,
                                            end=1.0, step=0.01, value=store.alpha, width=420,
                                            format=number_format(decimals=2, fixed=True))
        self.beta = pn.widgets.FloatSlider(label=_("Correct β (delta rules: step size)"), start=0.1, end=1.0,
                                           step=0.05, value=store.beta, width=420,
                                           format=number_format(decimals=2, fixed=True))
        for widget, name in ((self.alpha, "alpha"), (self.beta, "beta")):
            widget.param.watch(lambda event, name=name: setattr(store, name, event.new), "value_throttled")
            store.param.watch(lambda event, widget=widget: setattr(widget, "value", event.new), name)
        self.status = pn.pane.HTML(stylesheets=[TABLE_CSS], sizing_mode="stretch_width", margin=(4, 10))
        self.picture = AccuracyMap()
        store.param.watch(self._draw, ["capacity_map", "mapping", "d_k", "pairs"])
        store.param.watch(self._sliders, ["rule"])
        self._sliders()
        self._draw()

    def __panel__(self):
        return pn.Column(heading(_("Every key size at once")), self.intro, pn.FlexBox(self.alpha, self.beta),
                         self.status, pn.pane.Bokeh(self.picture.figure), sizing_mode="stretch_width")

    def _sliders(self, *_events):
        self.alpha.disabled = self.store.rule != "gated-delta"
        self.beta.disabled = self.store.rule == "sum"

    def _draw(self, *_events):
        store = self.store
        applies = {"sum": _("The sum rule has neither α nor β."), "delta": _("The delta rule has β, not α."),
                   "gated-delta": _("The gated delta rule has both.")}[store.rule]
        words = [_("{rule}, {keys}.").format(rule=_(RULE_NAMES[store.rule]), keys=_(KEY_NAMES[store.keys]).lower()),
                 applies]
        if store.mapping or store.capacity_map is None:
            words.append(_("Computing the map…"))
        self.status.object = "<p>%s</p>" % html.escape(" ".join(words))
        if store.capacity_map is not None:
            self.picture.show(store.capacity_map, store.d_k, store.pairs)
