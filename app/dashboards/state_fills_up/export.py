"""The state fills up, exported (app/export): each step's heat maps and bars as the page draws
them, the token strip, the captions; the tokens and every picture as tables.
"""
import numpy as np

from lineare.app.components.plots import nice_limit
from lineare.app.export.pages import PageExport, plain, strip_from_html
from lineare.app.export.scene import Bars, Heat, Scene, Table
from lineare.app.i18n import N_, _, format_number
from lineare.app.variants import REGISTRY


class StatePage(PageExport):
    slug, package, title_msgid = "state", "state_fills_up", "The state fills up"
    TABLES = {"steps": N_("Tokens, answers and memory"), "pictures": N_("Every picture at every step")}
    animated = True

    def length(self):
        return self.store.length()

    def title(self):
        return f"{_(self.title_msgid)} · {_(REGISTRY[self.store.variant].label)}"

    def explanation(self):
        record = REGISTRY[self.store.variant]
        if self.session.level == "superiore":
            return f"**{_(record.label)}** ({record.papers}). {_(record.rule)}\n\n{record.formula}"
        return f"**{_(record.label)}.** {_(record.rule)}"

    def _runs(self):
        """[(name or None, records, limits, head)] of every head on the page, and the run's variant."""
        store = self.store
        if store.mode == "trained":
            run = store.trained
            if run is None:
                return [], store.variant
            config = run.sidecar["config"]
            layers = [l for l in range(config["n_layers"]) if store.layer in ("both", str(l + 1))] or [0]
            shown = []
            for l in layers:
                for h in range(config["n_heads"]):
                    name = _("Layer {n}").format(n=l + 1) if config["n_heads"] == 1 else \
                        _("Layer {n}, head {h}").format(n=l + 1, h=h + 1)
                    shown.append((name, run.layers[l], run.limits[l], h))
            return shown, run.variant
        result = store.result
        return [(None, result.records, store.limits, h) for h in range(store.heads)], result.variant

    def scene(self, t):
        from lineare.app.dashboards.state_fills_up.model import head_frame

        store = self.store
        shown, variant = self._runs()
        panels = []
        for i, (name, records, limits, head) in enumerate(shown):
            frame = head_frame(variant, records, head, t)
            panels += _head_panels(frame, limits, head, name, full=(i == 0))
        strip, caption = None, []
        from lineare.app.dashboards.state_fills_up import texts
        if store.mode == "trained":
            run = store.trained
            if run is None:
                caption = [texts.failure_message(store.failure)] if store.failure else []
            else:
                strip = strip_from_html(texts.trained_strip(run), t)
                caption = plain(texts.trained_memory_line(run, t)) + plain(texts.prediction_html(run, t))
        else:
            result = store.result
            strip = strip_from_html(texts.token_strip(result), t)
            caption = plain(texts.memory_line(result, t)) + plain(texts.readout_html(result, t))
        return Scene(self.title(), panels, strip=strip, caption=caption, step=self.step(t), footer=self.footer())

    def table_pictures(self):
        from lineare.app.dashboards.state_fills_up.model import head_frame

        shown, variant = self._runs()
        rows, ranges = [], {}
        for name, records, limits, head in shown:
            where = name or _("Head {n}").format(n=head + 1)
            ranges.update({f"{where} {key}": nice_limit(value) for key, value in limits.items()})
            for t in range(self.length()):
                frame = head_frame(variant, records, head, t)
                for picture, values in _frame_arrays(frame).items():
                    for (r, c), value in np.ndenumerate(np.atleast_2d(values)):
                        rows.append([t + 1, where, picture, r, c, value])
        return Table("pictures", _(self.TABLES["pictures"]), ["step", "head", "picture", "row", "col", "value"], rows,
                     notes=[_("value: the engine's numbers (float32), no unit. state, write: the memory S_t and "
                              "what the token writes [d_v × d_k]; kept: the share of each key column kept; "
                              "correction: prediction, target, error [3 × d_v]; output: the read-out o_t; cache: "
                              "the cached values v_i (empty after t); attention: the weights over the cache."),
                            _("Colour range of each picture (the run's fixed ± limit): {ranges}").format(
                                ranges=", ".join(f"{k} {format_number(v)}" for k, v in ranges.items()))])

    def table_steps(self):
        strip = self.scene(0).strip
        rows = [] if strip is None else [
            [t + 1, strip.tokens[t], strip.marks[t], strip.moods[t], " ".join(self.captions(t))]
            for t in range(self.length())]
        return Table("steps", _(self.TABLES["steps"]), ["step", "token", "answer", "result", "caption"], rows,
                     notes=[_("answer: the answer under a question; result: ok (right) or bad (wrong); caption: "
                              "the page's lines for that step.")])

    def captions(self, t):
        from lineare.app.dashboards.state_fills_up import texts

        store = self.store
        if store.mode == "trained":
            run = store.trained
            if run is None:
                return []
            return plain(texts.trained_memory_line(run, t)) + plain(texts.prediction_html(run, t))
        return plain(texts.memory_line(store.result, t)) + plain(texts.answer_html(store.result, t))


def _frame_arrays(frame):
    """A model.HeadFrame's pictures by name (those the variant has)."""
    names = ("state", "write", "kept", "correction", "output", "cache", "attention")
    return {n: getattr(frame, n) for n in names if getattr(frame, n) is not None}


def _head_panels(frame, limits, head, name, full):
    """The cards of one head, as the page draws them (`full`: every card; else its memory only)."""
    titles = {("head", "cache"): _("Head {n}: value cache"), ("head", "state"): _("Head {n}: memory S"),
              ("name", "cache"): _("{name}: value cache"), ("name", "state"): _("{name}: memory S")}
    owner = lambda what: titles["head" if name is None else "name", what].format(n=head + 1, name=name)
    key_dim, value_dim = _("key dimension"), _("value dimension")
    if frame.cache is not None:                     # softmax: a cache that grows, and where the question looks
        panels = [Heat(owner("cache"), frame.cache, nice_limit(limits["target"]), value_dim,
                       _("position in the sequence"))]
        if full:
            panels.append(Bars(_("Where the question looks"), frame.attention, (0, 1.05),
                               _("position in the sequence"), _("attention weight"), color="#b35806"))
    else:
        panels = [Heat(owner("state"), frame.state, nice_limit(limits["state"]), key_dim, value_dim)]
        if full:
            beta = "" if frame.beta is None else f"β = {format_number(frame.beta, 2)}"
            panels += [Heat(_("What this token writes"), frame.write, nice_limit(limits["write"]), key_dim, value_dim),
                       Bars(_("What each column keeps"), frame.kept, (0, 1.05), key_dim, _("kept"), subtitle=beta)]
    if full and frame.correction is not None:
        panels.append(Heat(_("Correction"), frame.correction, nice_limit(limits["delta"]), value_dim,
                           row_labels=[_("prediction"), _("target"), _("error")]))
    if full:
        panels.append(Heat(_("Read-out"), frame.output, nice_limit(limits["output"]), value_dim,
                           row_labels=[_("answer")]))
    return panels


Export = StatePage
