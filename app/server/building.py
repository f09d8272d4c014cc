"""Pages built on a thread of their own, so that the event loop keeps serving every other visitor.

Bokeh builds a session's page (runs app/pages/<page>.py) inside the event loop: for the one to seven
seconds a page takes on two busy cores, every other session of the process waits — its knobs, its
pings, even a bare GET. `install()` moves that build to one builder thread: Panel's session hook
(`Application.on_session_created`, awaited by Bokeh just before it builds) builds the new Document
there and awaits it, and Bokeh's own build call that follows finds the Document built. The loop is
free meanwhile (PyTorch and NumPy release the GIL; Python hands it over every few milliseconds).

The browser then pulls the whole Document (Bokeh's PULL-DOC): its JSON is written on a thread of its
own too (`WRITER`), while the session's document lock is held, so that nothing changes the Document
meanwhile; the heaviest page took about a second to write, on the loop.

The new Document belongs to no connection yet, so nothing else touches it while it is built; after
the build Panel is told that the loop's thread owns it (its callbacks then run as usual). Panel finds
the current document in a context variable (copied into the thread); Bokeh keeps a stack of
"current documents" for the whole process, which a build and a callback on the loop would push and
pop in each other's way, so that stack is made one per thread. One builder thread: pages are built
one at a time, in the order asked.

A build waits its turn, taken fairly among addresses (app/server/limits.py: a crowd of builds from one address
waits behind one build of each other address); when its turn comes and the websocket that asked for it has closed
meanwhile (a visitor who left, a script opening and closing sockets), the build is skipped and the session is
discarded at the next check instead of living another minute. At most `MAX_WAITING` builds wait or
run at once per server (`python -m app --max-waiting-builds`), `MAX_WAITING_PER_ADDRESS` of them from one address
(a class behind one school address fits; one client can no longer keep the whole cap full): past it a new
websocket is closed at once with code 1013 ("try again later") and one log line, rather than queued behind a
minute of builds; the page (BUSY_SCRIPT, in every page's frame) then tells its visitor so.

`freeze_model_walks()` (for every server, --build-on-loop too): Bokeh walks a document's whole model
graph again after each change that may add or drop a model (a new root, a list of children, a
stylesheet); while a page is built or a knob's callbacks run, those walks are put off to one at the
end, if any. The state page was built 35 walks deep: 1.4 s → 0.8 s (measured in-process, one core).

`cache_stable_defaults()` (for every server): a Bokeh property never set is read from its default, which
Bokeh makes anew at each read (copied, validated, merged with the class's overrides), and every walk of
the model graph and every serialisation reads them all: for a default that cannot change (a number, a
string, None), the value made once per model class and property is kept. Where memory fails, in-process,
CPU per page 0.91 → 0.67 s (its JSON 0.18 → 0.08 s). A default that is an empty list, dict or set (a model's
tags, classes, stylesheets, callbacks: a dozen per model) must be each model's own, and Bokeh made each one
through the class's overrides and the property's checks; once a class's default is known to be empty it is
made directly, as Bokeh's own container type with the model as its owner: the state page 0.352 → 0.307 s
(in-process, 8 builds each, alternating), every page's document JSON unchanged in both languages.

`check_tuples_once()` (for every server): Bokeh checks a value against its property each time it is set; a
tuple of numbers and strings (a heat map's palette of 255 colours, checked colour by colour: 2.7 ms for each of
a page's six colour mappers; a margin) is checked once per property and value, and the value Bokeh made of it
kept: the state page 0.309 → 0.295 s, transition 0.243 → 0.230 s (in-process, 12 builds each, alternating).

`copy_parameters_faster()` and `walk_models_faster()` (for every server): param copies a class's Parameter
for an object the first time that object's own parameter is read, about 500 copies a state page (Panel reads
every parameter of each browser-side component as it converts it), each through Parameter.__setattr__'s
checks and an abstract-class test of every slot; Bokeh's walk of the model graph runs an import statement
at each value it visits. Both made directly, with the same results (tests/test_building.py compares every
page's document with and without): in-process, alternating builds, 12–14 each on a slow afternoon, state
467 → 367 ms, softmax 372 → 306, transition 480 → 434, memory-fails 304 → 276, two-bills unchanged within
the noise. `pane_layouts_when_used()` (for every server): the Row Panel makes around every pane, read only
when the pane is shown alone, is made when first read (over half of what an HTML pane cost to make).
`synced_params_once()`: Panel listed a component's synced parameters anew for each of its parameters as it
converted it; listed once (state 234 → 226 ms in-process, 12 builds each, alternating).
`serialize_set_values_only()`: a document's JSON asked every model for the values set on it, and Bokeh read
every default to drop it; the defaults kept by cache_stable_defaults() are dropped unread (the JSON phase 20 %
cheaper: state 228 → 224 ms, softmax 230 → 222 in-process, 10 builds each, alternating).

`write_kept_pages_once()` (for every server): the HTML a GET gets from a kept session (--reuse-sessions) is
written once and given each visitor's token.
"""
import asyncio
import contextlib
import contextvars
import copy
import functools
import logging
import secrets
import sys
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor

from app.server import limits

BUILDER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lineare-build")
WRITER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lineare-write")
SWITCH_INTERVAL_S = 0.001
# builds waiting or running per server (--max-waiting-builds). A page costs ~0.6-1 s of CPU on a quiet 2-core
# machine: a class of 60 behind one address fits even when one process of `python -m app` accepts all of it (16
# refused a quarter of a class of 60 on 2 servers), and one address cannot take the last 20 places from the others,
# whose builds, taking turns, come before most of the class's
MAX_WAITING = 80
MAX_WAITING_PER_ADDRESS = 60
BUSY_CODE, BUSY_REASON = 1013, "the server is busy: try again in a moment"
log = logging.getLogger("lineare.building")
# in every page (app/components/access.py): a page whose websocket is closed as busy fails to load its session, and
# Bokeh says why only in the browser's console; this says it on the page, in the page's language
BUSY_SCRIPT = """<script>
window.WebSocket = class extends WebSocket {
  constructor(url, protocols) {
    super(url, protocols);
    this.addEventListener("close", function (event) {
      if (event.code !== CODE || document.querySelector(".lineare-busy")) { return; }
      var words = WORDS, line = document.createElement("p"), again = document.createElement("a");
      line.className = "lineare-busy"; line.setAttribute("role", "alert");
      line.style.cssText = "font-size: 20px; margin: 16px; padding: 12px 16px; border: 2px solid #b44d12; " +
        "border-radius: 6px; background: #fffbea; color: #102a43;";
      again.href = location.href; again.textContent = words.again; again.style.marginLeft = "12px";
      line.append(words.busy, again);
      (document.getElementById("main") || document.body).prepend(line);
    });
  }
};
</script>"""
IMMUTABLE = (type(None), bool, int, float, str)       # defaults that may be shared by every model of a class
MAX_CHECKED_TUPLES = 10_000                            # tuples kept checked (check_tuples_once)
# a weak reference to the websocket a session is being made for (set in Bokeh's _async_open): its build is
# skipped once it has closed. Weak: the contexts copied meanwhile (a build's, a session's tasks) must not keep it.
ASKER = contextvars.ContextVar("lineare_asker", default=None)
builds = {"built": 0, "skipped": 0, "refused": 0}
waiting = set()                       # per build waiting or running: its websocket, or a stand-in for a GET's


def busy_script():
    """The script that shows a visitor refused at the cap a line saying so (translated now: the page's language)."""
    import json

    from app.i18n import _

    words = json.dumps({"busy": _("The server is busy: too many pages are being opened at once. Try again in a "
                                  "moment."), "again": _("Try again")}).replace("<", "\\u003c")
    return BUSY_SCRIPT.replace("CODE", str(BUSY_CODE)).replace("WORDS", words)


def waiting_for_someone(address=None):
    """Builds waiting or running whose websocket is still open (a skipped one costs next to nothing); those of
    `address` only, if given."""
    return sum(not getattr(asker, "lineare_gone", False) and (address is None or limits.address_of(asker) == address)
               for asker in waiting)


class PerThread:
    """A list-like stack, one list per thread (what bokeh.io.doc asks of its _PATCHED_CURDOCS)."""

    def __init__(self):
        self._local = threading.local()

    def _stack(self):
        if not hasattr(self._local, "stack"):
            self._local.stack = []
        return self._local.stack

    def append(self, item):
        self._stack().append(item)

    def pop(self):
        return self._stack().pop()

    def __len__(self):
        return len(self._stack())

    def __getitem__(self, index):
        return self._stack()[index]


@contextlib.contextmanager
def walks_put_off(doc):
    """The walks Bokeh would make in the body (its `invalidate()`, the end of its own `freeze()`
    blocks), made once at the end, and only if one was asked for: a knob that changes numbers only
    needs none. Bokeh's own `doc.models.freeze()` walks at its end in any case."""
    models = doc.models
    if "invalidate" in vars(models):                 # already inside one: the outer one walks
        yield
        return
    asked = []

    def pop_freeze():
        models._freeze_count -= 1
        asked.append(True)

    models.invalidate, models._pop_freeze = (lambda: asked.append(True)), pop_freeze
    try:
        yield
    finally:
        del models.invalidate, models._pop_freeze
        if asked and models._freeze_count == 0:
            models.recompute()


def freeze_model_walks():
    """Patch Panel's Application and Syncable so that a page build and a knob's callbacks walk the
    document's models once, at the end."""
    from panel.io.application import Application
    from panel.reactive import Syncable

    if getattr(Application.initialize_document, "walks_put_off", False):
        return
    initialize, change, bokeh_event = (Application.initialize_document, Syncable._change_event,
                                       Syncable._process_bokeh_event)

    def initialize_document(self, doc):
        with walks_put_off(doc):
            initialize(self, doc)

    def _change_event(self, doc):
        with walks_put_off(doc):
            change(self, doc)

    def _process_bokeh_event(self, doc, event):
        with walks_put_off(doc):
            bokeh_event(self, doc, event)

    initialize_document.walks_put_off = True
    Application.initialize_document = initialize_document
    Syncable._change_event, Syncable._process_bokeh_event = _change_event, _process_bokeh_event


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

    _get_default.lineare, _get_default.stable = True, stable
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


PANE_INIT_SHA = "e183ce8d27dd816f"   # Panel's PaneBase.__init__ that pane_layouts_when_used() repeats (Panel 1.9)


def pane_layouts_when_used():
    """Patch Panel's panes: each makes a layout of its own (a Row around the pane, kept in step with the
    pane's size, margins and styles), read only when the pane is a page's root, is shown through
    `pn.panel()` or has its model replaced; made when first read, and in step from then on. More than half
    of what an HTML pane cost to make. Left alone if Panel's PaneBase.__init__ is not the one repeated here."""
    import hashlib
    import inspect

    from panel.pane.base import PaneBase
    from panel.viewable import Layoutable

    init, sync = PaneBase.__init__, PaneBase._sync_layoutable
    if getattr(init, "lineare", False) or \
            hashlib.sha256(inspect.getsource(init).encode()).hexdigest()[:16] != PANE_INIT_SHA:
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


INIT_PARAMS_SHA = "3c20aeeded14dbf2"   # Panel's Syncable._init_params that synced_params_once() repeats (Panel 1.9)


def synced_params_once():
    """Patch Panel's Syncable._init_params (every layout, widget and component converted): it asked for the
    list of synced parameters once per parameter, each time a new list made from all of them (~25 × 25 for a
    Column). Asked once here, with the same result. Left alone if Panel's function is not the one repeated."""
    import hashlib
    import inspect

    from panel.reactive import Syncable

    init_params = Syncable._init_params
    if getattr(init_params, "lineare", False) or \
            hashlib.sha256(inspect.getsource(init_params).encode()).hexdigest()[:16] != INIT_PARAMS_SHA:
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


QUERY_PROPERTIES_SHA = "e864a09d384658f4"   # Bokeh's HasProps.query_properties_with_values (Bokeh 3.8)


def serialize_set_values_only():
    """Patch Bokeh's HasProps.query_properties_with_values, which a document's JSON asks of every model for the
    values set on it (include_defaults=False): Bokeh read every property's value, defaults too, and then dropped
    the defaults. A default that cache_stable_defaults() keeps (a number, a string, None: never unset, read
    without side effects) is dropped unread; every other property as Bokeh does. Needs cache_stable_defaults()."""
    import hashlib
    import inspect

    from bokeh.core.has_props import HasProps
    from bokeh.core.property.descriptors import PropertyDescriptor, UnsetValueError
    from bokeh.core.property.singletons import Undefined
    from bokeh.core.property.wrappers import PropertyValueContainer

    query_properties = HasProps.query_properties_with_values
    stable = getattr(PropertyDescriptor._get_default, "stable", None)
    if stable is None or getattr(query_properties, "lineare", False) or \
            hashlib.sha256(inspect.getsource(query_properties).encode()).hexdigest()[:16] != QUERY_PROPERTIES_SHA:
        return

    def query_properties_with_values(self, query, *, include_defaults=True, include_undefined=False):
        if include_defaults:
            return query_properties(self, query, include_defaults=True, include_undefined=include_undefined)
        # Bokeh's loop, less the reading of the kept defaults it drops
        selected = set(self._property_values) | set(self._unstable_default_values)
        themed = self.themed_values()
        themed_keys = set(themed) if themed is not None else set()
        selected |= themed_keys
        kind, result = type(self), {}
        for key in self.properties(_with_props=True):
            if key not in selected and (kind, key) in stable:
                continue
            descriptor = self.lookup(key)
            if not query(descriptor):
                continue
            try:
                value = descriptor.get_value(self)
            except UnsetValueError:
                if not include_undefined:
                    raise
                value = Undefined
            else:
                if key not in selected:
                    continue
                if key not in themed_keys and isinstance(value, PropertyValueContainer) and \
                        key in self._unstable_default_values:
                    continue
            result[key] = value
        return result

    query_properties_with_values.lineare, query_properties_with_values.bokehs_own = True, query_properties
    HasProps.query_properties_with_values = query_properties_with_values


def cheaper_builds():
    """The patches that change what a page's build costs, for every server and for bench.pages (which measures
    builds as the servers make them)."""
    freeze_model_walks()
    cache_stable_defaults()
    check_tuples_once()
    copy_parameters_faster()
    walk_models_faster()
    pane_layouts_when_used()
    synced_params_once()
    serialize_set_values_only()


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


def install():
    """Patch Panel's Application (every page of `panel serve` is one) to build documents on BUILDER."""
    import bokeh.io.doc
    from panel.io.application import Application
    from panel.io.document import _destroy_document as destroy_document
    from panel.io.state import state

    created, initialize = Application.on_session_created, Application.initialize_document
    if getattr(created, "lineare", False):
        return
    built = weakref.WeakSet()                       # Documents built on the thread, not yet handed to Bokeh

    def build(self, doc, asker):
        if getattr(asker, "lineare_gone", False):
            builds["skipped"] += 1                  # its visitor left while it waited: nobody will see it
            # Panel gives every document it builds a destroy() without Bokeh's full garbage collection (it
            # schedules one for all); unbuilt, this one would have Bokeh's: a crowd of pages opened and closed
            # at once then cost one full collection each when discarded together (30 s of the event loop)
            doc.destroy = functools.partial(destroy_document, doc)
            return
        initialize(self, doc)
        builds["built"] += 1

    async def on_session_created(self, session_context):
        asker = (ASKER.get() or object)() or object()     # the websocket, or a stand-in for a GET's build
        waiting.add(asker)                          # first, before any await: the cap counts it at once
        try:
            await created(self, session_context)
            doc = session_context._document
            loop_thread = threading.get_ident()
            context = contextvars.copy_context()    # Panel's current document and our language live there
            address = limits.address_of(asker) or getattr(session_context.request, "remote_ip", None)
            try:
                async with limits.PAGE_WORK.turn(address, session_context.id):
                    await asyncio.get_running_loop().run_in_executor(BUILDER, context.run, build, self, doc, asker)
            finally:
                built.add(doc)                      # even half built or skipped: never built twice
                state._thread_id_[doc] = loop_thread    # from now on the loop's thread owns it
        finally:
            waiting.discard(asker)

    def initialize_document(self, doc):
        if doc in built:
            built.discard(doc)
            return
        initialize(self, doc)                       # --warm, and anything not made by a session

    bokeh.io.doc._PATCHED_CURDOCS = PerThread()       # at start-up: nothing is patched yet
    # The loop gives up the GIL at every socket call and waits up to one switch interval (5 ms) to get
    # it back from a building thread: a knob makes dozens of such calls. 1 ms keeps those waits short.
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    on_session_created.lineare = True
    Application.on_session_created, Application.initialize_document = on_session_created, initialize_document
    write_pulls_off_loop()
    skip_gone_and_cap()


def skip_gone_and_cap():
    """Patch Bokeh's WSHandler (app/server/websocket.py patches its on_message and on_pong; these are its
    _async_open and on_close): a websocket that closes marks itself gone, so that its build waiting on
    BUILDER is skipped; one that would make a new session past MAX_WAITING builds is closed at once."""
    from bokeh.server.views.ws import WSHandler

    if getattr(WSHandler._async_open, "lineare", False):
        return
    async_open, on_close = WSHandler._async_open, WSHandler.on_close

    async def _async_open(self, token):
        from bokeh.util.token import get_session_id

        if getattr(self, "lineare_gone", False):        # closed before it was opened: nothing to make
            return
        session_id = get_session_id(token)
        context = self.application_context
        new = session_id not in context._sessions and session_id not in context._pending_sessions
        address = self.request.remote_ip
        full = waiting_for_someone() >= MAX_WAITING or waiting_for_someone(address) >= MAX_WAITING_PER_ADDRESS
        if new and (full or not limits.may_start_session(address)):
            builds["refused"] += 1
            log.warning("websocket %s from %s: refused, %s", self.request.path, address,
                        f"{waiting_for_someone()} pages already waiting to be built ({waiting_for_someone(address)} "
                        "from there)" if full else "too many new pages from there in a short time")
            self.close(BUSY_CODE, BUSY_REASON)
            return
        asking = ASKER.set(weakref.ref(self))           # this task's context: seen by on_session_created
        try:
            await async_open(self, token)
        finally:
            ASKER.reset(asking)
        if getattr(self, "lineare_gone", False):
            if self.connection in self.application._clients:
                # it closed while its session was made: Bokeh's on_close found no connection to let go
                self.application.client_lost(self.connection)
            session = context._sessions.get(session_id)
            if new and session is not None:
                session.request_expiration()            # discarded at the next check, not a minute later

    def _on_close(self):
        self.lineare_gone = True
        on_close(self)

    _async_open.lineare = True
    WSHandler._async_open, WSHandler.on_close = _async_open, _on_close


def write_pulls_off_loop():
    """Bokeh's answer to a browser's PULL-DOC (the whole Document as JSON), made on WRITER. Bokeh's own
    lock decorator (private) holds the session's document lock until the answer is made, as it does
    for its own `_handle_pull`: the session's callbacks wait, every other session goes on."""
    from bokeh.server.session import ServerSession, _needs_document_lock

    async def _handle_pull(self, message, connection):
        async with limits.PAGE_WORK.turn(limits.address_of(getattr(connection, "_socket", None)), self.id):
            return await asyncio.get_running_loop().run_in_executor(
                WRITER, connection.protocol.create, "PULL-DOC-REPLY", message.header["msgid"], self.document)

    ServerSession._handle_pull = _needs_document_lock(_handle_pull)
