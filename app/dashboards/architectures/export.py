"""Architectures, exported (app/export): what is left of a pair and what each direction keeps, as one
picture and as tables.
"""
import numpy as np

from lineare.app.export.pages import PageExport
from lineare.app.export.scene import Curves, Scene, Series, Table
from lineare.app.i18n import N_, _
from lineare.app.variants import REGISTRY


class ArchitecturesPage(PageExport):
    slug, package, title_msgid = "architectures", "architectures", "Architectures"
    TABLES = {"forgetting": N_("What is left of a pair"), "eigenvalues": N_("What each direction keeps per token")}

    def _models(self):
        from lineare.app.dashboards.architectures import model
        return model, [v for v in model.ARCHITECTURES if REGISTRY[v].fixed_state]

    def scene(self, t):
        from lineare.app.dashboards.architectures.pictures import COLOURS, MARKERS, dash, marked

        model, variants = self._models()
        chosen = self.store.arch
        steps = np.arange(model.TOKENS + 1)
        # each model's dash and marker as on the page: the lines are told apart without their colours too
        curves = [Series(_(REGISTRY[v].label), steps, model.forgetting_curve(v), COLOURS[v],
                         dash={"solid": False, "dashed": True}.get(dash(v), dash(v)), marker=MARKERS[v],
                         marks=marked(v), size=12.0 if v == chosen else 9.0, width=6.0 if v == chosen else 2.5)
                  for v in variants]
        dots = [Series("", model.eigenvalues(v),
                       np.full(model.D, len(variants) - i, dtype=float), COLOURS[v], kind="dots", marker=MARKERS[v],
                       size=11.0 if v == chosen else 7.0) for i, v in enumerate(variants)]
        panels = [Curves(_("What is left of a pair"), curves, (0, model.TOKENS), (-0.05, 1.05),
                         _("tokens after it was written"), _("share of the pair left")),
                  Curves(_("What each direction keeps per token"), dots, (-1.1, 1.1), (0.3, len(variants) + 0.7),
                         _("factor per token"), _("row: the models, top to bottom as in the legend"))]
        caption = [_("Highlighted: {name}").format(name=_(REGISTRY[chosen].label))]
        return Scene(self.title(), panels, caption=caption, footer=self.footer())

    def table_forgetting(self):
        model, variants = self._models()
        rows = [[v, n, float(share)] for v in variants for n, share in enumerate(model.forgetting_curve(v))]
        return Table("forgetting", _(self.TABLES["forgetting"]), ["model", "tokens_after", "share_left"], rows,
                     notes=[_("share_left: the mean over {texts} random texts of k₀ᵀA₁⋯Aₙk₀, what is left of a "
                              "pair written at token 0 (1: all of it).").format(texts=model.TEXTS)])

    def table_eigenvalues(self):
        model, variants = self._models()
        rows = [[v, 1.0, i, float(x)] for v in variants for i, x in enumerate(model.eigenvalues(v))]
        rows += [[v, model.WIDE_BETA, i, float(x)] for v in model.WIDE
                 for i, x in enumerate(model.eigenvalues(v, model.WIDE_BETA))]
        return Table("eigenvalues", _(self.TABLES["eigenvalues"]), ["model", "beta", "index", "eigenvalue"], rows,
                     notes=[_("eigenvalue: of the transition A_t at one token, real part, smallest first; no unit.")])


Export = ArchitecturesPage
