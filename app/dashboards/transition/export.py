"""The transition knob, exported (app/export): the transition, the memories and what each answer
matches, as one picture; recall, memory and transition as tables.
"""
import numpy as np

from lineare.app.export.pages import PageExport, long_rows, plain
from lineare.app.export.scene import Heat, Scene, Table
from lineare.app.i18n import N_, _, format_number
from lineare.app.variants import REGISTRY


class TransitionPage(PageExport):
    slug, package, title_msgid = "transition", "transition", "The transition knob"
    TABLES = {"recall": N_("What each answer matches"), "memory": N_("Memory S at the end"),
              "transition": N_("Transition")}

    def _models(self):
        """[(name, memory, limit, recall)]: the knob, then the three small multiples, as the page draws them."""
        store, sequence = self.store, self.store.sequence
        models = [(_("The knob"), store.knob.state, sequence.limit, store.knob.recall)]
        for comparison in store.compared:
            limit = max(float(np.abs(comparison.memory).max()), 1e-6) if comparison.variant == "softmax" \
                else sequence.limit
            models.append((_(REGISTRY[comparison.variant].label), comparison.memory, limit, comparison.recall))
        return models

    def scene(self, t):
        from lineare.app.dashboards.transition.pictures import answers_html

        store, sequence = self.store, self.store.sequence
        recall = store.knob.recall
        token = sequence.tokens[sequence.shown_at].text
        panels = [Heat(_("Transition at {token}").format(token=token), store.knob.transition, 1.0,
                       _("to key dimension"), _("from key dimension"))]
        for i, (name, memory, limit, _recall) in enumerate(self._models()):
            softmax = i > 0 and store.compared[i - 1].variant == "softmax"
            title = (_("{name}: value cache") if softmax else _("{name}: memory S")).format(name=name)
            panels.append(Heat(title, memory, limit, _("value dimension") if softmax else _("key dimension"),
                               _("position in the sequence") if softmax else _("value dimension")))
        panels.insert(2, Heat(_("What each answer matches"), _cosines(recall), 1.0, _("stored number"),
                              row_labels=[q.token.text for q in recall.questions] or [""],
                              col_labels=list(recall.candidates) or None))
        caption = [plain(answers_html(recall))[0], _("Gate: {gate} · α = {alpha} · β = {beta}").format(
            gate=store.gate, alpha=format_number(store.alpha, 2), beta=format_number(store.beta, 2))]
        return Scene(self.title(), panels, caption=caption, footer=self.footer())

    def table_recall(self):
        rows = []
        for name, _memory, _limit, recall in self._models():
            for q in recall.questions:
                rows.append([name, q.position + 1, q.token.text, q.expected, q.answer, q.right,
                             *(float(c) for c in q.cosines)])
        candidates = self.store.knob.recall.candidates
        return Table("recall", _(self.TABLES["recall"]),
                     ["model", "step", "question", "expected", "answer", "right", *(f"cos_{c}" for c in candidates)],
                     rows, notes=[_("cos_…: the cosine of the question's read-out with each stored number "
                                    "(the largest is the answer).")])

    def table_memory(self):
        rows = []
        for name, memory, _limit, _recall in self._models():
            rows = long_rows(rows, [name], memory)
        return Table("memory", _(self.TABLES["memory"]), ["model", "row", "col", "value"], rows,
                     notes=[_("value: the memory after the last token, no unit (softmax: its value cache, one "
                              "row per token).")])

    def table_transition(self):
        sequence = self.store.sequence
        return Table("transition", _(self.TABLES["transition"]), ["row", "col", "value"],
                     long_rows([], [], self.store.knob.transition),
                     notes=[_("Transition at {token}").format(token=sequence.tokens[sequence.shown_at].text)])


def _cosines(recall):
    return np.array([q.cosines for q in recall.questions]) if recall.questions else np.zeros((1, 1))


Export = TransitionPage
