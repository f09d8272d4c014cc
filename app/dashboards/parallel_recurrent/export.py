"""Parallel = recurrent, exported (app/export): the three forms' outputs and their difference as one
picture; outputs, errors, the decay mask and the measured cost as tables.
"""
import numpy as np

from lineare.app.export.pages import PageExport, long_rows
from lineare.app.export.scene import Heat, Scene, Table
from lineare.app.i18n import N_, _
from lineare.app.variants import REGISTRY


class ParallelRecurrentPage(PageExport):
    slug, package, title_msgid = "parallel-recurrent", "parallel_recurrent", "Parallel = recurrent"
    TABLES = {"outputs": N_("The three outputs"), "errors": N_("How far apart the three answers are"),
              "mask": N_("Decay mask L of the parallel form"), "cost": N_("Measured cost of the three forms")}

    def scene(self, t):
        comparison = self.store.comparison
        titles = {"recurrent": _("Recurrent: token by token"), "parallel": _("Parallel: all at once"),
                  "chunked": _("Chunked: blocks of {size}").format(size=comparison.chunk_size)}
        panels = [Heat(titles[form], output.T, comparison.peak, _("position in the sequence"), _("channel"))
                  for form, output in comparison.outputs.items()]                                    # [d_v, T]
        delta = comparison.outputs["chunked"] - comparison.outputs["recurrent"]
        largest = max(float(np.abs(delta).max()), 1e-300)
        panels.append(Heat(_("Chunked − recurrent: up to ±{limit}").format(limit=f"{largest:.1e}"), delta.T,
                           largest, _("position in the sequence"), _("channel")))
        caption = [f"{_(REGISTRY[comparison.variant].label)} · T = {comparison.length}"]
        return Scene(self.title(), panels, caption=caption, footer=self.footer())

    def table_outputs(self):
        rows = []
        for form, output in self.store.comparison.outputs.items():
            rows = long_rows(rows, [form], output)
        return Table("outputs", _(self.TABLES["outputs"]), ["form", "token", "channel", "value"], rows,
                     notes=[_("value: the output o_t of one head in float32, no unit; token from 0.")])

    def table_errors(self):
        rows = [[dtype, a, b, largest, relative]
                for (dtype, (a, b)), (largest, relative) in self.store.comparison.errors.items()]
        return Table("errors", _(self.TABLES["errors"]), ["dtype", "form_a", "form_b", "largest_abs", "relative_rms"],
                     rows, notes=[_("largest_abs: the largest |a − b|; relative_rms: ‖a − b‖ / ‖a‖ (root mean "
                                    "squares).")])

    def table_mask(self):
        return Table("mask", _(self.TABLES["mask"]), ["t", "j", "L"], long_rows([], [], self.store.mask),
                     notes=[_("L[t, j]: how much token j counts at token t (empty: j after t).")])

    def table_cost(self):
        curve = self.store.curve
        rows = []
        if curve is not None:
            for form, points in curve.times.items():
                wall = dict(curve.wall.get(form, []))
                rows += [[form, T, 1000 * seconds, 1000 * wall.get(T, float("nan"))] for T, seconds in points]
        return Table("cost", _(self.TABLES["cost"]), ["form", "T", "cpu_ms", "wall_ms"], rows,
                     notes=[_("Measured on the machine that made this file (empty: not measured yet).")])


Export = ParallelRecurrentPage
