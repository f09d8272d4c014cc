"""Cheaper page builds: replacements of Panel, Bokeh and param internals that make the same document for less
CPU (every one is listed, with its guard and its test, in app/server/patches.py; what each saved is logged in
bench/RESULTS.md).

Invariants every patch here keeps:

- the document a browser gets is byte for byte the one Panel and Bokeh make without it (ids named in order:
  tests/test_building.py::test_the_cheaper_builds_change_no_page, every page, both languages);
- a patch that repeats a library function's body checks that body's source hash first and, if it differs, is
  left out (one log line, app/server/patches.py): it never runs over code it was not written against;
- each keeps the library's own function (`.panels_own`, `.bokehs_own`, `.params_own`) so that tests compare
  both, and installing twice changes nothing;
- nothing here keeps per-visitor state: what is kept is per model class, per property or per kept session, and
  bounded (MAX_CHECKED_TUPLES).
"""
import copy
import secrets
import weakref

IMMUTABLE = (type(None), bool, int, float, str)       # defaults that may be shared by every model of a class
MAX_CHECKED_TUPLES = 10_000                            # tuples kept checked (check_tuples_once)


def cache_stable_defaults():
    """Patch Bokeh's property descriptor: the stable defaults of a class's properties are made once."""
    from bokeh.core.property.descriptors import PropertyDescriptor

    from bokeh.core.property.wrappers import PropertyValueDict, PropertyValueList, PropertyValueSet

    get_default, has_unstable = PropertyDescriptor._get_default, PropertyDescriptor.has_unstable_default
    if getattr(get_default, "lineare", False):
        return
    stable, unstable, empty, missing = {}, {}, {}, object()
    containers = (PropertyValueList, PropertyValueDict, PropertyValueSet)

    def has_unstable_default(self, obj):            # depends on the class only (its overridden defaults)
        key = (obj.__class__, self.name)
        if key not in unstable:
            unstable[key] = has_unstable(self, obj)
        return unstable[key]

    def _get_default(self, obj):
        themed = vars(obj).get("__themed_values__")     # obj.themed_values(), without HasProps.__getattr__
        if themed is not None and self.name in themed:
            return get_default(self, obj)           # a theme's value: Bokeh's own path
        key = (obj.__class__, self.name)
        value = stable.get(key, missing)
        if value is not missing:
            return value
        kind = empty.get(key)
        if kind is not None:                        # an empty container of the model's own, made once
            made = obj._unstable_default_values
            value = made.get(self.name)
            if value is None:
                value = made[self.name] = kind()
                value._register_owner(obj, self)
            return value
        value = get_default(self, obj)
        if type(value) in IMMUTABLE and not has_unstable_default(self, obj):
            stable[key] = value
        elif type(value) in containers and not value and has_unstable_default(self, obj):
            empty[key] = type(value)
        return value

    _get_default.lineare = True
    PropertyDescriptor._get_default, PropertyDescriptor.has_unstable_default = _get_default, has_unstable_default


def check_tuples_once():
    """Patch Bokeh's Property.prepare_value: a tuple of numbers, strings and None set on a property is checked
    (and made into the property's value) once; the same tuple, item types included, set again on the same
    property gets that value. Tuples with a failed check, or on properties whose checks read the model
    (`assertions`), or set while Bokeh's checks are off, are never kept, and at most MAX_CHECKED_TUPLES are."""
    from bokeh.core.property.bases import Property, validation_on

    prepare = Property.prepare_value
    if getattr(prepare, "lineare", False):
        return
    checked = {}                                   # (property id, tuple, item types) -> (property, value)
    # every page in both languages sets 29 distinct tuples; the bound keeps anything else (values a browser
    # sends, a mistake) from growing the process

    def prepare_value(self, owner, name, value, *, hint=None):
        if type(value) is not tuple or hint is not None or self.assertions:
            return prepare(self, owner, name, value, hint=hint)
        kinds = tuple(map(type, value))
        key = (id(self), value, kinds)
        found = checked.get(key)
        if found is not None and found[0] is self:     # the very property (ids of freed ones are reused)
            return found[1]
        made = prepare(self, owner, name, value, hint=hint)
        if validation_on() and type(made) is tuple and all(kind in IMMUTABLE for kind in kinds) \
                and len(checked) < MAX_CHECKED_TUPLES:
            checked[key] = (self, made)
        return made

    prepare_value.lineare = True
    Property.prepare_value = prepare_value


def copy_parameters_faster():
    """Patch param's copy of a class's Parameter for one object (made the first time an object's own
    parameter is read: `obj.param[name]`, which Panel does for every parameter of a browser-side component
    while it converts it): the same slots, containers other than the default copied, no owner's watchers,
    set directly instead of through Parameter.__setattr__ (whose checks only concern changes to a
    parameter in use). Kinds of Parameter that change how they are copied or set keep param's own copy."""
    import param.parameterized as parameterized
    from param._utils import MUTABLE_TYPES

    instantiate = parameterized._instantiate_param_obj
    if getattr(instantiate, "lineare", False):
        return
    base = parameterized.Parameter
    plain = (*IMMUTABLE, tuple, type)                 # never copied: saves the abstract-class checks
    slots = {}

    def _instantiate_param_obj(paramobj, owner=None):
        kind = type(paramobj)
        names = slots.get(kind)
        if names is None:
            same = all(getattr(kind, name) is getattr(base, name) for name in ("__copy__", "__setattr__", "_on_set"))
            names = slots[kind] = tuple(kind._all_slots_) if same else ()
        if not names:
            return instantiate(paramobj, owner)
        made = kind.__new__(kind)
        for name in names:
            value = getattr(paramobj, name)
            if name != "default" and type(value) not in plain and isinstance(value, MUTABLE_TYPES):
                value = copy.copy(value)
            object.__setattr__(made, name, value)
        object.__setattr__(made, "owner", owner)
        object.__setattr__(made, "watchers", {})
        return made

    _instantiate_param_obj.lineare, _instantiate_param_obj.params_own = True, instantiate
    parameterized._instantiate_param_obj = _instantiate_param_obj


WALKERS = ("collect_filtered_models", "visit_immediate_value_references", "visit_value_and_its_immediate_references")


def walk_models_faster():
    """Patch Bokeh's walk of the model graph (`collect_filtered_models`: every `references()`, `select()` and
    document recompute; a page is walked whole about 35 times while it is built and written): the same
    models in the same order, without the import statement Bokeh's visitor runs at each value it looks at
    (about 8,000 over a state page's build), with the common scalars passed over first."""
    from collections import deque

    from bokeh.core.has_props import HasProps
    from bokeh.model import Model, util
    from bokeh.util.dataclasses import entries, is_dataclass

    if getattr(util.collect_filtered_models, "lineare", False):
        return
    bokehs_own = {name: getattr(util, name) for name in WALKERS}
    scalars = frozenset(IMMUTABLE)

    def visit_value(value, visitor):               # Bokeh's visit_value_and_its_immediate_references
        kind = type(value)
        if kind in scalars:
            return
        if kind is list or issubclass(kind, (list, tuple)):
            for item in value:
                visit_value(item, visitor)
        elif issubclass(kind, dict):
            for key, item in value.items():
                visit_value(key, visitor)
                visit_value(item, visitor)
        elif issubclass(kind, HasProps):
            if issubclass(kind, Model):
                visitor(value)
            else:
                visit_references(value, visitor)
        elif is_dataclass(value):
            for _name, item in entries(value):
                visit_value(item, visitor)

    def visit_references(value, visitor):          # Bokeh's visit_immediate_value_references
        if isinstance(value, HasProps):
            for name in value.properties_with_refs():
                visit_value(getattr(value, name), visitor)
        else:
            visit_value(value, visitor)

    def collect_filtered_models(discard, *input_values):
        ids, collected, queued = set(), [], deque()

        def queue_one(model):
            if model.id not in ids and not (callable(discard) and discard(model)):
                queued.append(model)

        for value in input_values:
            visit_value(value, queue_one)
        while queued:
            model = queued.popleft()
            if model.id not in ids:
                ids.add(model.id)
                collected.append(model)
                visit_references(model, queue_one)
        return collected

    collect_filtered_models.lineare, collect_filtered_models.bokehs_own = True, bokehs_own
    util.collect_filtered_models = collect_filtered_models
    util.visit_immediate_value_references = visit_references
    util.visit_value_and_its_immediate_references = visit_value


def pane_layouts_when_used():
    """Patch Panel's panes: each makes a layout of its own (a Row around the pane, kept in step with the
    pane's size, margins and styles), read only when the pane is a page's root, is shown through
    `pn.panel()` or has its model replaced; made when first read, and in step from then on. More than half
    of what an HTML pane cost to make. Its guard (app/server/patches.py): the
    source of Panel's PaneBase.__init__, repeated here."""
    from panel.pane.base import PaneBase
    from panel.viewable import Layoutable

    init, sync = PaneBase.__init__, PaneBase._sync_layoutable
    if getattr(init, "lineare", False):
        return
    unmade = "_lineare_layout_unmade"              # (layout class, its keywords) until first read

    def __init__(self, object=None, **params):     # Panel's, but for the layout
        self._object_changing = False
        super(PaneBase, self).__init__(object=object, **params)
        if not hasattr(self, "_internal_callbacks"):
            self._internal_callbacks = []
        applies = self.applies(self.object, **(params if self._applies_kw else {}))
        if (isinstance(applies, bool) and not applies) and self.object is not None:
            self._type_error(self.object)
        kwargs = {k: v for k, v in params.items() if k in Layoutable.param and k not in self._skip_layoutable}
        vars(self)[unmade] = (self.default_layout, kwargs)
        self._internal_callbacks.append(self.param.watch(self._sync_layoutable, list(Layoutable.param)))

    def get_layout(self):
        state = vars(self)
        if unmade in state:
            kind, kwargs = state.pop(unmade)
            state["_lineare_layout"] = kind(self, **kwargs)
            sync(self)                             # as Panel's __init__ ends
        return state["_lineare_layout"]

    def set_layout(self, layout):
        vars(self).pop(unmade, None)
        vars(self)["_lineare_layout"] = layout

    def _sync_layoutable(self, *events):
        if unmade not in vars(self):               # an unmade layout is made in step
            sync(self, *events)

    __init__.lineare, __init__.panels_own = True, (init, sync)
    PaneBase.__init__, PaneBase._sync_layoutable = __init__, _sync_layoutable
    type.__setattr__(PaneBase, "layout", property(get_layout, set_layout))    # past param's class checks


def synced_params_once():
    """Patch Panel's Syncable._init_params (every layout, widget and component converted): it asked for the
    list of synced parameters once per parameter, each time a new list made from all of them (~25 × 25 for a
    Column). Asked once here, with the same result. Its guard: the source of
    Panel's function, repeated here."""
    from panel.reactive import Syncable

    init_params = Syncable._init_params
    if getattr(init_params, "lineare", False):
        return

    def _init_params(self):
        synced = set(self._synced_params)
        params = {}
        for name in self.param:                   # in the parameters' order, as Panel's
            if name in synced:
                value = getattr(self, name)
                if value is not None:
                    params[name] = value
        return params

    _init_params.lineare, _init_params.panels_own = True, init_params
    Syncable._init_params = _init_params


def write_kept_pages_once():
    """Patch Panel's page writer (for every server): with --reuse-sessions every GET of a page is written
    from the one session Panel keeps for that page and language (app/server/security.py), and the HTML is the same
    each time but for the visitor's own token. It is written once per kept session, title, template and
    template variables, with a stand-in for the token, and the token put in at each GET. Writing it walked the
    kept document's models twice (their stylesheets, the scripts they need): the state page's GET took 31–33 ms
    of the server's CPU, now 2–3 ms."""
    import panel.io.server as server
    from panel.io.state import state

    write = server.server_html_page_for_session
    if getattr(write, "lineare", False):
        return
    written = weakref.WeakKeyDictionary()          # kept session -> (what the page depends on, html, stand-in)

    def depends(resources, title, rest):
        variables = rest.get("template_variables") or {}
        return (resources.mode, resources.root_url, title, id(rest.get("template")),
                repr(sorted(variables.items(), key=lambda item: item[0])))

    def server_html_page_for_session(session, resources, title, token=None, **rest):
        kept = token is not None and any(one is session for one in list(state._sessions.values()))
        if not kept:
            return write(session, resources, title, token=token, **rest)
        found = written.get(session)
        if found is None or found[0] != depends(resources, title, rest):
            stand_in = f"lineare-token-{secrets.token_hex(16)}"
            html = write(session, resources, title, token=stand_in, **rest)
            if html.count(stand_in) != 1:              # not where a token would be: write each page in full
                return write(session, resources, title, token=token, **rest)
            # asked after the writing: it puts two variables of its own in (the theme, where Panel's files are)
            found = written[session] = (depends(resources, title, rest), html, stand_in)
        return found[1].replace(found[2], token)

    server_html_page_for_session.lineare = True
    server.server_html_page_for_session = server_html_page_for_session
