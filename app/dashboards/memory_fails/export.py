"""Where memory fails, exported (app/export): the recall-error and accuracy curves as one picture;
the curve, the queries, the trained models and the accuracy map as tables.
"""
import numpy as np

from lineare.app.components.curves import BLUE, VERMILLION
from lineare.app.export.pages import PageExport
from lineare.app.export.scene import Curves, Scene, Series, Table
from lineare.app.i18n import N_, _, format_number


class MemoryFailsPage(PageExport):
    slug, package, title_msgid = "memory-fails", "memory_fails", "Where memory fails"
    TABLES = {"curve": N_("Recall error"), "queries": N_("Every query"),
              "query_parts": N_("One query: what each stored pair puts in"),
              "trained": N_("The trained models, query by query"), "held_out": N_("Right, over held-out examples"),
              "forensics": N_("One trained answer taken apart"), "map": N_("Answers right, for every d_k")}

    def scene(self, t):
        from lineare.app.components.curves import ORANGE
        from lineare.app.dashboards.memory_fails.model import RULE_NAMES

        store, curve = self.store, self.store.curve
        N, top = curve["pairs"], float(curve["pairs"].max())
        errors = Curves(_("Recall error"), [
            Series(_("the best of any linear read-out (one-hot values)"), N, curve["bound"], "#1f2933", dash=True),
            Series(_("the best read-out of these keys"), N, curve["best"], BLUE, kind="dots", size=9, marker="square"),
            Series(_("this memory's read-out"), N, curve["error"], VERMILLION),
            Series("", N, curve["error"], VERMILLION, kind="dots")],
            (0, top * 1.03), (0, max(1.0, float(curve["error"].max()) * 1.08)),
            _("number of stored pairs N"), _("error per query"))
        accuracy = Curves(_("Answers right"), [
            Series(_("answers right (closest stored value)"), N, curve["accuracy"], ORANGE),
            Series("", N, curve["accuracy"], ORANGE, kind="dots", size=9)],
            (0, top * 1.03), (0, 1.05), _("number of stored pairs N"), "")
        caption = [f"{_(RULE_NAMES[store.rule])} · d_k = {store.d_k}"]
        return Scene(self.title(), [errors, accuracy], caption=caption, footer=self.footer())

    def table_curve(self):
        curve = self.store.curve
        names = ["pairs", "error", "best", "accuracy", "bound"]
        return Table("curve", _(self.TABLES["curve"]), names, np.column_stack([curve[n] for n in names]).tolist(),
                     notes=[_("error: ½‖read-out − one-hot value‖² per query, no unit; best: the same for the "
                              "least-squares read-out of the same keys; bound: ½·max(0, 1 − d_k/N); accuracy: "
                              "the share of queries whose nearest stored value is right (dense values). Each "
                              "point is the mean of two draws of the keys.")])

    def table_queries(self):
        run = self.store.run
        rows = [[i + 1, int(run.targets[i]) + 1, int(run.answers[i]) + 1, bool(run.right[i])]
                for i in range(len(run.targets))]
        return Table("queries", _(self.TABLES["queries"]), ["query", "right_write", "answered_write", "right"], rows,
                     notes=[_("{pairs} pairs: each key read back; writes are numbered from 1.").format(
                         pairs=self.store.pairs)])

    def table_query_parts(self):
        from lineare.app.dashboards.memory_fails.model import decomposition

        run, q = self.store.run, self.store.query - 1
        weights, _contributions = decomposition(run, q)
        rows = [[i + 1, float(w), i == run.targets[q], i == run.answers[q]] for i, w in enumerate(weights)]
        return Table("query_parts", _(self.TABLES["query_parts"]), ["write", "weight", "right_pair", "answered"], rows,
                     notes=[_("Query {q}: the read-out is the sum of weight × value over the writes (the bars of "
                              "the page).").format(q=q + 1)])

    def table_trained(self):
        example = self.store.trained
        rows = [[variant, i + 1, int(example.tokens[position]), int(want), int(got), bool(want == got)]
                for variant, predicted in example.predicted.items()
                for i, (position, want, got) in enumerate(zip(example.positions, example.expected, predicted))]
        return Table("trained", _(self.TABLES["trained"]), ["model", "query", "key_id", "right_value_id",
                                                             "answered_value_id", "right"], rows,
                     notes=[_("Example {e} of the task {task}; ids are the tokens' numbers.").format(
                         e=self.store.example_number, task=self.store.task)])

    def table_held_out(self):
        from lineare.app.dashboards.memory_fails.model import ACCURACY_EXAMPLES

        accuracy = self.store.accuracy
        return Table("held_out", _(self.TABLES["held_out"]), ["model", "share_right"],
                     [[variant, float(share)] for variant, share in accuracy.items()],
                     notes=[_("Share of the queries answered right over {n} held-out examples (empty until "
                              "counted).").format(n=ACCURACY_EXAMPLES)])

    def table_forensics(self):
        from lineare.app.dashboards.memory_fails.model import query_forensics

        store = self.store              # the page's answer (cached: computed once for the page and the file)
        found = query_forensics(store.probe, store.task, store.example, store.probe_query)
        rows = []
        for layer, parts in enumerate(found.layers):
            for i, (share, size, kept, similarity) in enumerate(zip(parts.share, parts.size, parts.kept,
                                                                    parts.similarity)):
                rows.append([layer + 1, i, int(found.tokens[i]), i in found.right, float(share), float(size),
                             float(kept), float(similarity)])
        verdicts = ", ".join(f"{layer + 1}: {v.kind}" for layer, v in enumerate(found.verdicts))
        return Table("forensics", _(self.TABLES["forensics"]),
                     ["layer", "position", "token_id", "right_pair", "share", "size", "let_through", "key_similarity"],
                     rows, notes=[_("{model}, query {q} at position {at}: right value {right}, answered {answer}; "
                                    "verdict per layer: {verdicts}.").format(
                                        model=found.variant, q=found.query, at=found.position, right=found.expected,
                                        answer=found.answer, verdicts=verdicts),
                                  _("share: the write's term along the layer's read-out, c·o/|o|² (the shares add "
                                    "up to 1); size: |c|; let_through: the share of the query the later transitions "
                                    "let through (mLSTM: the forget gates' product; softmax: 1); key_similarity: "
                                    "cosine of the write's key and the query.")])

    def table_map(self):
        from lineare.app.dashboards.memory_fails.model import accuracy_map

        store = self.store              # the page's map (cached: computed once for the page and the file)
        found = accuracy_map(*(getattr(store, name) for name in store.MAP_SETTINGS))
        rows = [[store.rule, int(d_k), int(N), float(right)]
                for d_k, pairs, accuracy in zip(found["d_k"], found["pairs"], found["accuracy"])
                for N, right in zip(pairs, accuracy)]
        return Table("map", _(self.TABLES["map"]), ["rule", "d_k", "pairs", "accuracy"], rows,
                     notes=[_("accuracy: the share of queries whose nearest stored value (cosine) is right, dense "
                              "values, mean of two draws of the keys; α = {alpha} (gated delta rule), β = {beta} "
                              "(delta rules).").format(alpha=format_number(store.alpha),
                                                       beta=format_number(store.beta))])


Export = MemoryFailsPage
