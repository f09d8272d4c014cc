"""Take away the softmax, exported (app/export): the sentence word by word, as the page's player shows it (the
attention table with row t, the state S_t over z_t or the notebook of keys and values so far), and as tables.
"""
import numpy as np

from lineare.app.export.pages import PageExport, long_rows, plain
from lineare.app.export.scene import Heat, Scene, Strip, Table
from lineare.app.i18n import N_, _
from lineare.app.components.plots import nice_limit


class SoftmaxPage(PageExport):
    slug, package, title_msgid = "softmax", "take_away_softmax", "Take away the softmax"
    TABLES = {"table": N_("The attention table, word by word"),
              "memory": N_("What is kept: the summary S and z, or the notebook"),
              "cost": N_("Work against the length of the text")}
    animated = True

    def _words(self):
        from lineare.app.dashboards.take_away_softmax.view import sentence_words
        return sentence_words()

    def length(self):
        from lineare.app.dashboards.take_away_softmax.model import WORDS
        return WORDS

    def scene(self, t):
        run, words = self.store.run, self._words()
        linear = run.kind == "linear"
        table = np.where(np.arange(run.length)[:, None] == t, run.weights, np.nan) if linear else run.weights
        panels = [Heat(_("Table: never built") if linear else _("Attention table (%)"), 100 * table, 100.0,
                       _("word looked at"), "", row_labels=words, col_labels=[str(i + 1) for i in range(run.length)])]
        memory = self._memory(t)
        limit = nice_limit(np.nanmax(np.abs(self._memory(run.length - 1))))
        d = run.q.shape[1]
        if linear:
            panels.append(Heat(_("Summary: S and z"), memory, limit, _("label (key)"), _("information (value)"),
                               row_labels=[str(i + 1) for i in range(d)] + ["z"],
                               col_labels=[str(j + 1) for j in range(d)]))
        else:
            panels.append(Heat(_("Notebook (KV cache)"), memory, limit, _("label | information"), _("word"),
                               row_labels=words[:t + 1], col_labels=[str(j + 1) for j in range(d)] * 2))
        return Scene(self.title(), panels, strip=Strip(tokens=words, current=t), caption=self.captions(t),
                     step=self.step(t), footer=self.footer())

    def _memory(self, t):
        """What the page's second picture holds after word t: S_t over z_tᵀ, or the rows k_i | v_i for i ≤ t."""
        run = self.store.run
        if run.kind == "linear":
            return np.concatenate([run.states[t], run.sums[t][None, :]])                # [d_v + 1, d_k]
        return np.concatenate([run.k, run.v], axis=1)[:t + 1]                            # [t + 1, 2d]

    def captions(self, t):
        from lineare.app.dashboards.take_away_softmax.texts import captions
        return plain(captions(self.store.run, self._words(), self.session.level == "superiore")[t])

    def explanation(self):
        from lineare.app.dashboards.take_away_softmax.texts import POINT
        return _(POINT[self.store.run.kind, self.session.level])

    def table_table(self):
        run, words = self.store.run, self._words()
        rows = [[t + 1, words[t], i + 1, words[i], float(run.weights[t, i])]
                for t in range(run.length) for i in range(t + 1)]
        return Table("table", _(self.TABLES["table"]), ["word", "text", "looks_at", "looked_at_text", "weight"],
                     rows, notes=[_("weight: the share of word looks_at in the answer of word `word` (each word's "
                                    "weights add up to 1); attention: {kind}.").format(kind=run.kind)])

    def table_memory(self):
        run = self.store.run
        rows = []
        for t in range(run.length):
            rows = long_rows(rows, [t + 1], self._memory(t))
        what = (_("row 1 to d: S_t (value × key), the last row: z_t") if run.kind == "linear"
                else _("one row per word so far: its key k_i, then its value v_i"))
        return Table("memory", _(self.TABLES["memory"]), ["word", "row", "column", "value"], rows,
                     notes=[_("After each word: {what}.").format(what=what)])

    def table_cost(self):
        from lineare.app.dashboards.take_away_softmax.model import LENGTHS, multiply_adds

        d = self.store.dim
        rows = [[T, d, multiply_adds(T, d)["parallel"], multiply_adds(T, d)["recurrent"]] for T in LENGTHS]
        return Table("cost", _(self.TABLES["cost"]),
                     ["length_T", "d", "multiply_adds_table_QKt_V", "multiply_adds_summary_Q_KtV"], rows,
                     notes=[_("Multiply-adds of one head over the whole text: (QKᵀ)V = 2·T²·d, Q(KᵀV) = 2·T·d².")])


Export = SoftmaxPage
