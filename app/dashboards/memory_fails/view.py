"""Where memory fails, the view: arranges the pictures and the texts, and draws the store into them."""
import html

import numpy as np
import panel as pn

from lineare.app.components.controls import example_input
from lineare.app.components.later import Later, SectionPart, in_section
from lineare.app.components.plots import RowsPicture
from lineare.app.components.text import Explanation, point_box
from lineare.app.dashboards.base import DashboardView, heading, title
from lineare.app.dashboards.memory_fails.details import ForensicsSection, MapSection
from lineare.app.dashboards.memory_fails.model import (ACCURACY_EXAMPLES, D_KS, KEY_NAMES, RULE_CHOICES, RULES, TASKS,
                                               MemoryStore, decomposition, intruders, max_pairs, tied_with)
from lineare.app.dashboards.memory_fails.pictures import CapacityCharts, QueriesPicture, TrainedPicture, WeightsPicture
from lineare.app.i18n import _, current_language, format_number
from lineare.app.urlstate import read_query
from lineare.app.variants import REGISTRY
from lineare.engine import tasks
from lineare.engine.ops import VARIANTS

# the heights of the sections below the first screen by the column's width (a phone's 372 px, a tablet's 750, a
# projector's 996 with the sidebar open), held by their markers until they are made
FORENSICS_HEIGHT = {372: 2558, 750: 2105, 996: 1159}
MAP_HEIGHT = {372: 907, 750: 713, 996: 639}
QUERY_HEIGHT = {372: 1410, 750: 1325, 996: 1310}
TRAINED_HEIGHT = {372: 2850, 750: 1505, 996: 1430}
DETAIL_CSS = """
:host { font-size: 18px; color: #1f2933; }
.ok { color: #0072b2; font-weight: 700; } .bad { color: #a04000; font-weight: 700; }   /* 4.5:1 and more on white */
.muted { color: #52606d; font-size: 16px; }
"""


class MemoryView(DashboardView):
    """Draws a MemoryStore; owns the pictures, none of the data."""

    Store = MemoryStore
    slug = "memory-fails"

    @classmethod
    def open_store(cls, session, args):
        """The session's store from untrusted URL args; what had to change becomes notices.

        N, the query and the names that change are checked twice: against their declared bounds, then against
        what the other settings allow (orthogonal keys: N ≤ d_k; query ≤ N; changes ≤ d_k); one notice per
        value says what is used.
        """
        fixed = {name: key for name, key in MemoryStore.URL.items() if name not in MemoryStore.SIZED}
        values, notices = read_query(MemoryStore, fixed, args)
        sized, sized_notices = {}, {}
        for name in MemoryStore.SIZED:
            value, sized_notices[name] = read_query(MemoryStore, {name: MemoryStore.URL[name]}, args)
            sized.update(value)
        store = session.store(cls.slug, lambda: MemoryStore(**values, **sized))
        for name, asked in sized.items():
            if getattr(store, name) != asked:
                sized_notices[name] = [_("The link asks for a larger {key} than these settings allow: {used} is "
                                         "used.").format(key=MemoryStore.URL[name], used=getattr(store, name))]
        session.add_notices("url", notices + [n for name in MemoryStore.SIZED for n in sized_notices[name]])
        return store

    def __init__(self, **params):
        super().__init__(**params)
        store, session = self.store, self.session
        self.intro = Explanation(
            session,
            elementare=_("A summary of fixed size can keep only so many pairs apart. Here pairs (a label and "
                         "its information, like a name and its number) are written one after another into the "
                         "summary of one head, and then every label is asked back as a question. Up to a point "
                         "the answers come back clean; past it, the pairs start to blur into each other and "
                         "answers go wrong. Find where, and see which pairs spoiled an answer."),
            superiore=_("$N$ pairs $(k_i, v_i)$, unit keys in $\\mathbb{R}^{d_k}$, are written into one state "
                        "with the sum rule $S \\leftarrow S + v k^\\top$, the delta rule "
                        "$S \\leftarrow S (I - k k^\\top) + v k^\\top$ ($\\beta = 1$) or the gated delta rule "
                        "(also $\\alpha = 0.99$ per write), then every key is read back, $o_i = S k_i$ "
                        "(Schlag, Irie & Schmidhuber 2021)."))
        # 1. the curve
        self.charts = CapacityCharts(current_language())
        self.point_text = Explanation(session, sizing_mode="stretch_width")
        self.point = point_box(self.point_text)
        self.curve_text = Explanation(session, sizing_mode="stretch_width")   # 1220 px overflowed at 1366
        self.chart_columns = {name: pn.Column(pn.pane.Bokeh(chart.figure), css_classes=["main-picture"], margin=(0, 4))
                              for name, chart in (("errors", self.charts.errors), ("accuracy", self.charts.accuracy))}

        store.param.watch(self._draw_curve, ["curve"])
        # 2. query by query and 3. the trained models, under the first screen: made when the visitor scrolls
        # near them, their pictures with them (five of the page's figures)
        self.lower = [Later(lambda: QuerySection(store, session), height=QUERY_HEIGHT),
                      Later(lambda: TrainedSection(store, session), height=TRAINED_HEIGHT)]
        # 4. one trained answer taken apart, and 5. the map over d_k × N: computed on workers once the page
        # has loaded (they would slow its first build down), and whenever their settings change after that;
        # their pictures are made when the visitor scrolls near them (a third of the page's models)
        self.details = [Later(lambda: ForensicsSection(store, session), height=FORENSICS_HEIGHT),
                        Later(lambda: MapSection(store, session), height=MAP_HEIGHT)]
        pn.state.onload(store.open_details)
        self._draw_curve()

    queries, weights, readout_parts, detail = (in_section(0, name)
                                               for name in ("queries", "weights", "parts", "detail"))
    trained, trained_status = (in_section(1, name) for name in ("trained", "trained_status"))

    @property
    def forensics(self):
        return self.details[0].section()

    @property
    def capacity_map(self):
        return self.details[1].section()

    def parts(self):
        errors, accuracy = self.charts.errors, self.charts.accuracy
        series = lambda picture, key, *names: [*(picture.renderers[n] for n in (key, *names)), picture.items[key]]
        return {"point": [self.point_text], "curve_text": [self.curve_text],
                "errors": [self.chart_columns["errors"]], "errors.figure": [errors.figure],
                "errors.bound": series(errors, "bound"), "errors.best": series(errors, "best"),
                "errors.error": series(errors, "error", "error_dots"),
                "markers.dk": [marker for marker, _chosen in self.charts.markers],
                "accuracy": [self.chart_columns["accuracy"]], "accuracy.figure": [accuracy.figure],
                "accuracy.curve": series(accuracy, "accuracy", "accuracy_dots"),
                "queries.verdicts": SectionPart(self.lower[0], lambda q: [q.detail, *q.queries.figure.renderers])}

    # -- controls

    def controls(self):
        store = self.store
        rule = pn.widgets.Select.from_param(store.param.rule, name=_("Rule"), sizing_mode="stretch_width",
                                            options={_(RULE_CHOICES[r]): r for r in RULES})
        d_k = pn.widgets.Select.from_param(store.param.d_k, name=_("Numbers in a key (d_k)"),
                                           sizing_mode="stretch_width", options={str(d): d for d in D_KS})
        keys = pn.widgets.Select.from_param(store.param.keys, name=_("Keys"), sizing_mode="stretch_width",
                                            options={_(KEY_NAMES[k]): k for k in tasks.KEY_KINDS})
        rewrites = pn.widgets.IntSlider.from_param(store.param.rewrites, name=_("Names that change number"),
                                                   sizing_mode="stretch_width")
        pairs = pn.widgets.IntSlider.from_param(store.param.pairs, name=_("Pairs N, query by query"),
                                                sizing_mode="stretch_width")
        query = pn.widgets.IntInput.from_param(store.param.query, name=_("Query taken apart"),
                                               sizing_mode="stretch_width")
        seed = pn.widgets.IntInput.from_param(store.param.seed, name=_("Random keys (seed)"),
                                              sizing_mode="stretch_width")
        task = pn.widgets.Select.from_param(
            store.param.task, name=_("Trained models: task"), sizing_mode="stretch_width",
            options={_("{length} tokens, {pairs} pairs").format(length=L, pairs=K): name
                     for name, (L, K) in TASKS.items()})
        example = example_input(store, _("Trained models: example"))      # counted from 1, as the status line

        probe = pn.widgets.Select.from_param(store.param.probe, name=_("Trained models: model taken apart"),
                                             sizing_mode="stretch_width",
                                             options={_(REGISTRY[v].short): v for v in VARIANTS})
        probe_query = pn.widgets.IntInput.from_param(store.param.probe_query, name=_("Trained models: its query"),
                                                     start=1, sizing_mode="stretch_width")

        def limits(*_events):
            pairs.end = max_pairs(store.d_k, store.keys)
            rewrites.end = min(store.d_k, store.param.rewrites.bounds[1])
            query.end = store.pairs
            probe_query.end = TASKS[store.task][1]

        store.param.watch(limits, ["d_k", "keys", "pairs", "task"])
        limits()
        return [rule, d_k, keys, rewrites, pairs, query, seed, task, example, probe, probe_query]

    def __panel__(self):
        return pn.Column(
            title(_("Where memory fails")),
            self.intro,
            self.point,
            pn.FlexBox(*self.chart_columns.values(), sizing_mode="stretch_width"),
            self.curve_text,
            heading(_("One query taken apart")),
            self.lower[0],
            heading(_("The trained models, query by query")),
            self.lower[1],
            *self.details,
            sizing_mode="stretch_width")

    # -- drawing

    def _draw_curve(self, *_events):
        # `curve` is set again at every change but the query's, so this also moves the marker of the chosen N
        store, data = self.store, self.store.curve
        with pn.io.hold():
            self.charts.show(data, store.d_k, store.pairs)
        at = int(np.argmin(np.abs(data["pairs"] - store.d_k)))
        twice = int(np.argmin(np.abs(data["pairs"] - 2 * store.d_k)))
        error = lambda i: format_number(round(float(data["error"][i]), 2), 2)
        numbers = {"dk": store.d_k, "e1": error(at), "n2": int(data["pairs"][twice]), "e2": error(twice)}
        if numbers["n2"] == store.d_k:             # the curve stops at d_k (perpendicular keys): one point to name
            elementare = _(
                "With labels of {dk} numbers, this summary's error is {e1} at {dk} pairs, the most pairs tried "
                "here. The dashed line, the best any simple read-out can do, stays at zero up to {dk} pairs and "
                "rises past them: beyond {dk} pairs, no read-out that only weighs and adds up a label's numbers "
                "gives every pair back exactly.")
            superiore = _("$d_k = {dk}$: the rule's error is {e1} at $N = {dk}$, the largest $N$ here. The bound "
                          "$\\tfrac12 \\max(0, 1 - d_k/N)$ on any linear read-out is 0 up to $N = d_k$ and positive "
                          "past it.")
        else:
            elementare = _(
                "With labels of {dk} numbers, this summary's error is {e1} at {dk} pairs and {e2} at {n2} pairs. "
                "The dashed line, the best any simple read-out can do, stays at zero up to {dk} pairs and rises "
                "past them: beyond {dk} pairs, no read-out that only weighs and adds up a label's numbers gives "
                "every pair back exactly.")
            superiore = _(
                "$d_k = {dk}$: the rule's error is {e1} at $N = {dk}$ and {e2} at $N = {n2}$. The bound "
                "$\\tfrac12 \\max(0, 1 - d_k/N)$ on any linear read-out is 0 up to $N = d_k$ and positive past it.")
        self.point_text.elementare = elementare.format(**numbers)
        self.point_text.superiore = superiore.format(**numbers)
        fill = {"dk": store.d_k, "error": format_number(round(float(data["error"][at]), 2), 2),
                "accuracy": format_number(round(100 * float(data["accuracy"][at])), 0)}
        self.curve_text.elementare = _(
            "**«Recall error»**: how far the answers are from the right information (0 is perfect), for more and more "
            "pairs. Here each piece of information is one switch among as many switches as there are pairs: switches "
            "are perpendicular, the easiest to tell apart, but the test is strict, since an answer must give back its "
            "switch exactly. The dashed line is the best that any simple read-out (one that only weighs and adds up "
            "the {dk} numbers of a label) could do: zero until there are as many pairs as a label has numbers ({dk} "
            "here, dotted line), then rising. The solid orange-red line with dots, «this memory's read-out», is what "
            "this summary "
            "really does: with {dk} pairs its error is {error}.").format(**fill) + "\n\n" + _(
            "**«Answers right»**: a gentler test, where each piece of information is a random arrow of {dk} numbers "
            "and an answer counts as right when it is closer to the right arrow than to any other: with {dk} pairs, "
            "{accuracy}% of the answers are right. Labels that get new information (slider) show what the delta rule "
            "is for: it replaces the old information, where the sum piles them up.").format(**fill)
        bound = _(
            "«Recall error»: error $\\tfrac12 \\lVert o_i - e_i \\rVert^2$ with one-hot values (a single 1, every "
            "other number 0), one dimension per write ($d_v = N$, plus the rewrites), mean over queries (the loss of "
            "Schlag et al.), against the bound $\\tfrac12 \\max(0, 1 - d_k/N)$: the least error of any **linear** "
            "read-out from $d_k$-number keys, since a $d_k \\times N$ key matrix has rank at most $d_k$. No rule "
            "beats it ($S k_i$ is linear too). Squares: the least-squares read-out $W k_i$ for these keys, which "
            "reaches the bound; solid orange-red line with dots: the rule's own read-out $S k_i$.")
        rule = {"sum": _("The sum rule stays above the bound through cross-talk: its error is "
                         "$\\tfrac12 \\sum_{j \\ne i} (k_j^\\top k_i)^2 \\approx \\tfrac12 (N-1)/d_k$ for "
                         "random unit keys, even for $N < d_k$."),
                "delta": _("The delta rule leaves $S_t k_t = v_t$ after each write; later writes with keys not "
                           "orthogonal to $k_i$ disturb that pair, so with random keys it too stays above the "
                           "bound."),
                "gated-delta": _("The gated delta rule also shrinks every older pair by $\\alpha = 0.99$ per later "
                                 "write, on top of the disturbance of later keys.")}[store.rule]
        dense = _("«Answers right»: accuracy with dense unit values in $\\mathbb{R}^{d_k}$ ($d_v = d_k$) decoded by "
                  "largest cosine, a different test from «Recall error».")
        measured = _("At N = d_k = {dk}: error {error} with one-hot values; {accuracy}% right with dense "
                     "values.").format(**fill)
        self.curve_text.superiore = " ".join((bound, rule, dense, measured))
        if store.rewrites:
            changes = {"changes": store.rewrites}
            self.curve_text.elementare += "\n\n" + _(
                "With {changes} names that change number, the curves start at {changes} pairs: each change goes to "
                "a different name, so with more pairs the changed names are a smaller share of all.").format(**changes)
            self.curve_text.superiore += " " + _(
                "With $R = {changes}$ rewrites, each of a different key, the curves start at $N = R$: with "
                "perpendicular keys the sum rule reads $v_{{old}} + v_{{new}}$ for a rewritten key, an error of "
                "$\\tfrac12$ on it and $\\tfrac12 R/N$ on average.").format(**changes)


class QuerySection(pn.viewable.Viewer):
    """One query of the chosen N taken apart: every query's verdict, what each stored pair puts into the
    answer, and the read-out split into the right pair's part and the rest."""

    def __init__(self, store, session):
        super().__init__()
        self.store, self.session = store, session
        self.queries = QueriesPicture(self._pick)
        self.weights = WeightsPicture()
        self.parts = RowsPicture(_("The read-out, taken apart"), _("value dimension"),
                                 [_("read-out"), _("right value"), _("from the right pair"),
                                  _("from all the others")], 16, width=450, height=260)
        self.detail = pn.pane.HTML(stylesheets=[DETAIL_CSS], sizing_mode="stretch_width", margin=(4, 10))
        self.detail_text = Explanation(
            session, width=440,
            elementare=_("Each bar is one stored pair. Its height says how much of that pair's information leaks "
                         "into the answer when this label is asked: the right pair (blue, ✓) should be near 1 and "
                         "all the others near 0. The orange-red bar, marked ✗, is the pair whose information came "
                         "out instead of the right one; the striped amber bars are the pairs that pushed the "
                         "answer hardest towards a wrong one. Many small leaks add up, too: that is why a crowded "
                         "summary fails. The strips of «The read-out, taken apart» show what the right pair gives, and "
                         "what all the others add on top."),
            superiore=_("The state is linear in the values: $S = \\sum_i v_i w_i^\\top$, with $w_i = k_i$ for the sum "
                        "rule and $w_i = (A_{i+1} \\cdots A_W)^\\top k_i$ with the later transitions for the delta "
                        "rules. So $o = S q = \\sum_i (w_i^\\top q)\\, v_i$; the bars are the weights $w_i^\\top q$ "
                        "(sum rule: $k_i^\\top q$), measured as the read-out of one-hot values (a single 1, every "
                        "other number 0). The answer is the stored value of largest cosine with $o$; a wrong one "
                        "$v_r$ wins when the cross-talk $\\sum_{i \\ne j} (w_i^\\top q) v_i$ outweighs the right "
                        "term. Striped amber: the writes with the largest push "
                        "$(w_i^\\top q)\\, v_i^\\top (v_r - v_j)$ towards $v_r$."))
        store.param.watch(self._draw_detail, ["run", "query"])
        session.param.watch(self._draw_detail, ["level"])
        self._draw_detail()

    def __panel__(self):
        return pn.Column(
            self.detail,
            pn.FlexBox(pn.Column(pn.pane.Bokeh(self.queries.figure), pn.pane.Bokeh(self.weights.figure)),
                       pn.Column(pn.pane.Bokeh(self.parts.figure), self.detail_text), sizing_mode="stretch_width"),
            sizing_mode="stretch_width", margin=0)

    def _pick(self, query):
        self.store.query = query

    def _draw_detail(self, *_events):
        store, run = self.store, self.store.run
        q = min(store.query, len(run.targets)) - 1
        weights, contributions = decomposition(run, q)
        target, answer = int(run.targets[q]), int(run.answers[q])
        others = np.delete(np.arange(len(weights)), target)
        order = intruders(run, q)
        rows = np.stack([run.readouts[q], run.values[target], contributions[target],
                         contributions[others].sum(0) if len(others) else np.zeros_like(run.readouts[q])])
        with pn.io.hold():
            self.queries.show(run, q + 1)
            self.weights.show(weights, target, answer, order,
                              _("Query {q}: what each stored pair puts into the answer").format(q=q + 1))
            self.parts.set_size(rows.shape[1])
            self.parts.set_limit(float(np.abs(rows).max()))
            self.parts.source.data.update(image=[rows])
            self.detail.object = self._detail_html(run, q, target, answer, weights, order)

    def _detail_html(self, run, q, target, answer, weights, order):
        wrong = int(np.sum(~run.right))
        N = len(run.targets)
        summary = _("Answered wrong: {wrong} of {n}.").format(wrong=wrong, n=N)
        pair = lambda w: _("pair {i}").format(i=w + 1)
        if run.right[q]:
            verdict = '<span class="ok">%s ✓</span>' % html.escape(
                _("Query {q} is answered right.").format(q=q + 1))
        elif tied_with(run, q) is not None:                 # a tie: another number reads back just as close
            verdict = '<span class="bad">%s ✗</span>' % html.escape(
                _("Query {q} is a tie: the numbers of {right_pair} and {other_pair} come back equally close, "
                  "so the answer is a mix, counted as wrong.").format(
                    q=q + 1, right_pair=pair(target), other_pair=pair(tied_with(run, q))))
        else:
            verdict = '<span class="bad">%s ✗</span>' % html.escape(
                _("Query {q} is answered with the number of {wrong_pair} instead of {right_pair}.").format(
                    q=q + 1, wrong_pair=pair(answer), right_pair=pair(target)))
        rewritten = ""
        if target >= N:                                     # a later write of this key
            rewritten = " " + html.escape(_("(This name changed number: the latest one is the right answer.)"))
        polluters = ", ".join(_("{pair} (weight {weight})").format(
            pair=pair(int(w)), weight=format_number(round(float(weights[w]), 2), 2)) for w in order)
        largest = html.escape(_("The pairs that pushed it most towards a wrong number: {pairs}.").format(
            pairs=polluters)) if order else ""
        first = self.store.first_failure()
        hint = ""
        if first is not None and run.right[q]:
            hint = html.escape(_("Query {q} fails: pick it to see why.").format(q=first))
        return (f"<p>{verdict}{rewritten} {largest}</p>"
                f"<p class='muted'>{html.escape(summary)} {hint}</p>")


class TrainedSection(pn.viewable.Viewer):
    """The trained models of the lab on one MQAR example, query by query, and their held-out accuracy."""

    def __init__(self, store, session):
        super().__init__()
        self.store, self.session = store, session
        self.trained = TrainedPicture(ACCURACY_EXAMPLES, self._probe)
        self.trained_status = pn.pane.HTML(stylesheets=[DETAIL_CSS], sizing_mode="stretch_width", margin=(4, 10))
        self.trained_text = Explanation(
            session, sizing_mode="stretch_width",
            elementare=_("The same test on the small trained models of the lab: each one read a sequence of "
                         "label–information pairs (MQAR, “multi-query associative recall”) and then, at every "
                         "question, had to produce the information stored with that label. Each model has its "
                         "own band, one or more rows of squares (as many as fit across), each square a question: "
                         "blue and marked ✓ if right, orange-red and marked ✗ if wrong (past {marked} questions, a "
                         "wrong square is striped instead of marked). The models "
                         "learned on 64-word sequences with up to 16 pairs; longer ones ask them more than they "
                         "practised. Their summaries have room for 64 pairs kept apart, so with 32 pairs a wrong "
                         "answer does not mean the summary is full: the model did not keep its labels apart well "
                         "enough, or forgot, or met a longer text than in training.").format(
                marked=TrainedPicture.MARKED),
            superiore=_("Ten tiny models (2 layers, $d_{\\mathrm{model}} = 64$, one head: the nine with a fixed state "
                        "keep a $64 \\times 64$ state per layer), trained on multi-query associative recall (MQAR) "
                        "with $L = 64$, $K \\in \\{4, 8, 16\\}$ (Zoology, Arora et al. 2023), evaluated on held-out "
                        "examples. Softmax attention keeps every pair in its KV cache; a fixed-size state must hold "
                        "$K$ pairs in $d_k = 64$ dimensions, and the capacity bound on an exact linear read-out binds "
                        "only for $K > d_k = 64$. With $K = 32 < d_k$ a linear read-out could keep every pair apart: "
                        "failures there come from learned keys that are not orthogonal (cross-talk), from decay, and "
                        "from sequences longer and fuller than in training."))
        store.param.watch(self._draw_trained, ["trained"])
        store.param.watch(self._draw_accuracy, ["accuracy"])
        store.param.watch(self._draw_trained_status, ["counting"])
        store.param.watch(self._draw_picked, ["probe", "probe_query"])
        self._draw_trained()
        self._draw_accuracy()

    def __panel__(self):
        return pn.Column(
            self.trained_text, self.trained_status,
            pn.FlexBox(pn.pane.Bokeh(self.trained.grid), pn.pane.Bokeh(self.trained.accuracy),
                       sizing_mode="stretch_width"),
            sizing_mode="stretch_width", margin=0)

    def _probe(self, variant, query):
        self.store.param.update(probe=variant, probe_query=query)

    def _draw_picked(self, *_events):
        self.trained.show_picked(self.store.probe, self.store.probe_query)

    def _draw_trained(self, *_events):
        with pn.io.hold():
            self.trained.show(self.store.trained)
            self._draw_trained_status()
            self._draw_picked()

    def _draw_accuracy(self, *_events):
        self.trained.show_accuracy(self.store.accuracy)

    def _draw_trained_status(self, *_events):
        example, store = self.store.trained, self.store
        length, pairs = TASKS[store.task]
        parts = [_("Example {e}: {length} tokens, {pairs} pairs.").format(e=store.example_number, length=length,
                                                                       pairs=pairs)]
        failed = [_(REGISTRY[v].short) for v in VARIANTS if v in example.predicted and not example.right(v).all()]
        if failed:
            parts.append(_("Models with at least one wrong answer: {names}.").format(names=", ".join(failed)))
        else:
            parts.append(_("Every model answers every query of this example right."))
        if store.counting:
            parts.append(_("Counting over {n} examples…").format(n=ACCURACY_EXAMPLES))
        text = " ".join(html.escape(p) for p in parts)
        if example.missing:
            missing = _("These models could not be loaded: {names}.").format(
                names=", ".join(_(REGISTRY[v].short) for v in example.missing))
            text += f' <span class="bad">{html.escape(missing)}</span>'
        self.trained_status.object = f"<p>{text}</p>"


build = MemoryView.build
