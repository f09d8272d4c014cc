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
import contextlib
import importlib
import numbers
import pathlib

import panel as pn
import param
from bokeh.models import UIElement
from panel.io.document import create_doc_if_none_exists
from panel.io.notebook import patch_inline_stylesheets
from panel.io.state import set_curdoc

from lineare.app.dashboards import BY_SLUG
from lineare.app.i18n import language, set_language
from lineare.app.session import Session

# a classroom laptop has no network: Panel's and Bokeh's scripts and stylesheets go into the notebook itself
# (the README's first cell says pn.extension(inline=True); this covers a notebook that forgot it)
pn.config.inline = True


class Lab(pn.Row):
    """A laboratory's knobs and view, rendered in its language (kept for the knobs' later callbacks).
    `lab.set(variant="gla")` moves a knob from the kernel, `lab.view.store` holds its settings and numbers,
    `lab.export("run.gif")` saves what it shows as a file."""

    def __init__(self, controls, view, *, slug, lang="en", **params):
        super().__init__(controls, view, **params)
        self.view, self.slug, self.lang = view, slug, lang      # the view: its store and session, to read or set
        self._shown_in = None                                    # the Bokeh document of the cell showing it

    def set(self, **settings):
        """Move knobs from the kernel, as the page's controls do: `lab.set(variant="gla", heads=2)`. The
        settings and their checks are the laboratory's own (`labs.parameters`); its texts keep its language.
        Returns None: the laboratory already in its cell follows; returning it would show a second copy in the cell
        that ran set(), a second Bokeh document of the same panes, and Panel 1.9.4 then hands one document's
        stylesheets to the other on the next change ("ImportedStyleSheet ... is already in a doc")."""
        store = self.view.store
        values = _checked(type(store), settings, f"{self.slug.replace('-', '_')}.set()")
        # as Panel applies a change from the browser: in the cell's document (the panes the change makes belong
        # to it) and in the laboratory's language
        with set_curdoc(self._shown_in) if self._shown_in is not None else contextlib.nullcontext():
            with language(self.lang):
                store.param.update(**values)

    def export(self, path, *, size=None, fps=None, t=None, table=None):
        """Save the laboratory's current run as `path`, whose suffix says what: .gif, .mp4, .zip (every frame as
        PNG), .png (step `t`, counted from 0; default: the one the page opens on), .csv (one of its tables,
        `table`; a text file beside it, NAME.about.txt, says what it holds) or .html (a lesson in one file that
        plays offline, with no server). `size`: (width, height) or "small", "projector", "full-hd"; `fps`:
        frames per second. Returns the path written; a ValueError says why an export is refused."""
        from lineare.app.export.__main__ import split_notes
        from lineare.app.export.files import ExportRefused, make_file, parse_size
        from lineare.app.export.pages import PAGES

        path = pathlib.Path(path)
        fmt = path.suffix.lstrip(".").lower()
        if isinstance(size, str):
            size = parse_size(size) or _refuse(f"size={size!r}: write 'WIDTHxHEIGHT' or small, projector, full-hd")
        if self.slug not in PAGES:
            raise ValueError(f"{self.slug} has nothing to export")
        page = PAGES[self.slug](self.view.session)
        try:
            result = make_file(page, fmt, size=size, fps=2.0 if fps is None else fps, t=t, table=table)
        except ExportRefused as refusal:
            raise ValueError(str(refusal)) from None
        data = result.data
        if fmt == "csv":
            data, notes = split_notes(data)
            path.with_name(path.stem + ".about.txt").write_text(notes, encoding="utf-8")
        path.write_bytes(data)
        return path

    def get_root(self, doc=None, comm=None, preprocess=True):
        doc = create_doc_if_none_exists(doc)
        set_language(self.lang, doc)                     # what _() reads when a knob moves in the browser
        self._shown_in = doc
        # one walk of the model graph at the end, not one per model (Panel walks it again for each stylesheet
        # it inlines below: 5 of a lab's 8-9 s in a notebook)
        with language(self.lang), doc.models.freeze():
            root = super().get_root(doc, comm, preprocess)
            if comm is not None and pn.config.inline:        # a notebook cell: the stylesheets go with it
                for model in root.select({"type": UIElement}):
                    patch_inline_stylesheets(model)
        return root


def _view(slug):
    dashboard = BY_SLUG[slug]
    return importlib.import_module(f"lineare.app.dashboards.{dashboard.build.package}.view").build.__self__


def parameters(slug):
    """{setting: what it sets} of a laboratory: its Python names (`d_k`), each with the parameter's doc."""
    Store = _view(slug).Store
    return {name: Store.param[name].doc for name in Store.URL}


def lab(slug, *, lang="en", level="elementare", **settings):
    """The laboratory at /<slug> on `settings` (its parameters' names, or its link's keys), in `lang` at `level`."""
    if slug not in BY_SLUG or BY_SLUG[slug].build is None:
        raise ValueError(f"no laboratory {slug!r}: choose one of {', '.join(s for s, d in BY_SLUG.items() if d.build)}")
    View = _view(slug)
    values = _checked(View.Store, settings, f"labs.{slug.replace('-', '_')}()")
    args = {View.Store.URL[name]: [_link_value(value).encode("utf-8")] for name, value in values.items()}
    session = Session(language=lang, level=level, notebook=True)        # param checks both: a ValueError if unknown
    with language(lang):
        store = View.open_store(session, args)
        if session.notices:                          # settings that do not go together (N above what d_k allows)
            raise ValueError(f"labs.{slug.replace('-', '_')}(): these settings do not go together: "
                             + " ".join(message for _source, message in session.notices))
        view = View(store=store, session=session)
        controls = pn.Column(*view.controls(), width=320, margin=(0, 12, 0, 0))
        return Lab(controls, view, slug=slug, lang=lang, sizing_mode="stretch_width")    # runs the view's __panel__


def _checked(Store, settings, call):
    """{parameter name: value} of settings given by Python name or link key, each checked (`_check`)."""
    by_key = {key: name for name, key in Store.URL.items()}
    values = {}
    for given, value in settings.items():
        name = given if given in Store.URL else by_key.get(given)
        if name is None:
            raise TypeError(f"{call} got an unexpected keyword argument {given!r}; its settings are "
                            f"{', '.join(Store.URL)}")
        _check(Store.param[name], name, value, call)
        values[name] = value
    return values


def _refuse(message):
    raise ValueError(message)


def _check(parameter, name, value, call):
    """A TypeError or ValueError in Python's words for a value the parameter does not take."""
    if isinstance(parameter, param.Selector):
        if value not in parameter.objects:
            raise ValueError(f"{call}: {name}={value!r} is not one of {', '.join(map(repr, parameter.objects))}")
    elif isinstance(parameter, param.Boolean):
        if not isinstance(value, bool):
            raise TypeError(f"{call}: {name} must be True or False, not {value!r}")
    elif isinstance(parameter, (param.Integer, param.Number)):
        integer = isinstance(parameter, param.Integer)
        if isinstance(value, bool) or not isinstance(value, numbers.Integral if integer else numbers.Real):
            raise TypeError(f"{call}: {name} must be {'an int' if integer else 'a number'}, "
                            f"not {type(value).__name__} {value!r}")
        low, high = parameter.bounds or (None, None)
        if (low is not None and value < low) or (high is not None and value > high):
            raise ValueError(f"{call}: {name}={value!r} is out of range: it goes from {low} to {high}")
    elif isinstance(parameter, param.String) and not isinstance(value, str):
        raise TypeError(f"{call}: {name} must be a str, not {type(value).__name__}")


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
