"""The laboratories as Panel components, for a notebook (JupyterLab, classic Notebook) or a script.

    import panel as pn
    pn.extension()
    from lineare import labs
    labs.state(variant="deltanet", preset="overwrite", lang="it")      # the live laboratory, in the cell
    labs.memory_fails(rule="delta", d_k=16, level="superiore")

Each one is the page's own view and knobs (what `lineare serve` shows at /<page>), beside each other in
one component: its player and knobs run in the notebook's kernel as on the server. The settings are the
page's link parameters (the keys after ? in its address, `labs.parameters("state")` lists them), checked as
the page checks its link: a bad value is a ValueError that says why. `lang` is "en" or "it", `level`
"elementare" (plain words) or "superiore" (formulas and paper names).
"""
import importlib

import panel as pn
from panel.io.document import create_doc_if_none_exists

from app.dashboards import BY_SLUG
from app.i18n import language, set_language
from app.session import Session


class Lab(pn.Row):
    """A laboratory's knobs and view, rendered in its language (kept for the knobs' later callbacks).
    `lab.view.store` holds its settings and numbers: `lab.view.store.variant = "gla"` moves a knob."""

    def __init__(self, controls, view, *, lang="en", **params):
        super().__init__(controls, view, **params)
        self.view, self.lang = view, lang                # the view: its store and session, to read or set

    def get_root(self, doc=None, comm=None, preprocess=True):
        doc = create_doc_if_none_exists(doc)
        set_language(self.lang, doc)                     # what _() reads when a knob moves in the browser
        with language(self.lang):
            return super().get_root(doc, comm, preprocess)


def _view(slug):
    dashboard = BY_SLUG[slug]
    return importlib.import_module(f"app.dashboards.{dashboard.build.package}.view").build.__self__


def parameters(slug):
    """{link parameter: the store's parameter it sets} of a laboratory."""
    return {key: name for name, key in _view(slug).Store.URL.items()}


def lab(slug, *, lang="en", level="elementare", **settings):
    """The laboratory at /<slug> on `settings` (its link parameters), in `lang` at `level`."""
    if slug not in BY_SLUG or BY_SLUG[slug].build is None:
        raise ValueError(f"no laboratory {slug!r}: choose one of {', '.join(s for s, d in BY_SLUG.items() if d.build)}")
    View = _view(slug)
    known = parameters(slug)
    unknown = sorted(set(settings) - set(known))
    if unknown:
        raise TypeError(f"{slug} has no setting {', '.join(unknown)}: its settings are {', '.join(known)}")
    session = Session(language=lang, level=level)              # param checks both: a ValueError if unknown
    args = {key: [_link_value(value).encode("utf-8")] for key, value in settings.items()}
    with language(lang):
        store = View.open_store(session, args)
        if session.notices:
            raise ValueError(f"{slug}: " + " ".join(message for _source, message in session.notices))
        view = View(store=store, session=session)
        controls = pn.Column(*view.controls(), width=320, margin=(0, 12, 0, 0))
        return Lab(controls, view, lang=lang, sizing_mode="stretch_width")     # the view's __panel__ runs here


def _link_value(value):
    """A Python value as the page's link writes it (True → true)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def softmax(**settings):
    """Take away the softmax: the table of who looks at whom folds into the state (/softmax)."""
    return lab("softmax", **settings)


def two_bills(**settings):
    """Two bills: the KV cache grows token by token while the state does not (/two-bills)."""
    return lab("two-bills", **settings)


def state(**settings):
    """The state fills up: the state rewritten at every token, on a sequence you choose (/state)."""
    return lab("state", **settings)


def transition(**settings):
    """The transition knob: forget and correct, from one model of the family to another (/transition)."""
    return lab("transition", **settings)


def memory_fails(**settings):
    """Where memory fails: recall against the number of stored pairs and the bound (/memory-fails)."""
    return lab("memory-fails", **settings)


def parallel_recurrent(**settings):
    """Parallel = recurrent: the three forms of one model, their numbers and their cost (/parallel-recurrent)."""
    return lab("parallel-recurrent", **settings)


def architectures(**settings):
    """Architectures: RetNet, RWKV, xLSTM, Mamba-2, GLA and DeltaNet as settings of one skeleton (/architectures)."""
    return lab("architectures", **settings)


__all__ = ["Lab", "lab", "parameters", "softmax", "two_bills", "state", "transition", "memory_fails",
           "parallel_recurrent", "architectures"]
