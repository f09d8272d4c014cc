"""Every replacement of a Panel, Bokeh, param or Tornado internal that `python -m lineare.app` makes, in one list.

    python -m lineare.app --patches        # this list, one row a patch
    python -m lineare.app --no-patches     # serve with none of them: Panel and Bokeh as released

Each `Patch` names what it replaces (`targets`: dotted paths, each with the kind of object it must be), the
versions it was tested on, its guard, the test that checks it, and what Bokeh 3.10 means for it. The code of
each lives in the module of its concern: `building` (the build thread and its cap), `speedups` (cheaper
builds), `security`, `websocket` and `limits`.

Invariants:

- patches are installed only on a tested (Panel, Bokeh, param) set (`TESTED`); on any other set the server
  writes one log line and serves unpatched;
- before a patch is installed every target is looked up and checked (present, of the expected kind, and for a
  patch that repeats a library function's body, that body's source hash): a target that is not what the patch
  was written against leaves the patch out, with one log line; nothing is replaced half-way;
- `installed()` puts back every replaced attribute afterwards: tests choose patched or unpatched explicitly
  (never a side effect of which test ran before).
"""
import contextlib
import hashlib
import importlib
import inspect
import logging
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version

log = logging.getLogger("lineare.patches")

# the (Panel, Bokeh, param) sets the patches' tests passed on (tests/test_building.py, every page's document the
# same with and without them); the whole suite runs on the first (the lock file's)
TESTED = {("1.9.4", "3.9.2", "2.4.2"), ("1.9.4", "3.8.2", "2.4.2"), ("1.9.0", "3.8.0", "2.4.2")}
LIBRARIES = ("panel", "bokeh", "param")
FUNCTION, COROUTINE, LIST, CLASS, ANY = "function", "coroutine function", "list", "class", "present"
MISSING = object()


@dataclass(frozen=True)
class Patch:
    name: str
    concern: str                  # building | speedups | security | websocket | limits: the module with its code
    install: str                  # that module's function that installs it
    what: str                     # what it does, in a few words
    targets: tuple                # ((dotted path, kind it must be), …): every attribute it replaces or relies on
    test: str                     # the test that checks it
    bokeh_3_10: str               # "survives?" (nothing known against it), "cannot survive: why", "unneeded: why"
    sources: tuple = ()           # ((dotted path of a function whose body it repeats, sha256[:16] of its source), …)
    replaces: tuple = ()          # the targets it sets (default: every target); put back by uninstall()

    @property
    def guard(self):
        if self.sources:
            return "targets checked; source hash of " + ", ".join(path.rsplit(".", 2)[-2] + "." +
                                                                 path.rsplit(".", 1)[-1] for path, _sha in self.sources)
        return "targets checked"

    def replaced(self):
        return self.replaces or tuple(path for path, _kind in self.targets)


BUILDING, SPEED, SECURITY, SOCKET, LIMITS = "building", "speedups", "security", "websocket", "limits"
WS = "bokeh.server.views.ws.WSHandler"
PATCHES = (
    Patch("stable-defaults-once", SPEED, "cache_stable_defaults",
          "Bokeh's unchanging property defaults made once per class and property",
          (("bokeh.core.property.descriptors.PropertyDescriptor._get_default", FUNCTION),
           ("bokeh.core.property.descriptors.PropertyDescriptor.has_unstable_default", FUNCTION),
           ("bokeh.core.property.wrappers.PropertyValueContainer._register_owner", FUNCTION)),
          "tests/test_building.py::test_stable_defaults_made_once_give_bokehs_own_documents",
          "survives? (nothing known against it)",
          replaces=("bokeh.core.property.descriptors.PropertyDescriptor._get_default",
                    "bokeh.core.property.descriptors.PropertyDescriptor.has_unstable_default")),
    Patch("tuples-checked-once", SPEED, "check_tuples_once",
          "a tuple of numbers and strings checked once per property",
          (("bokeh.core.property.bases.Property.prepare_value", FUNCTION),
           ("bokeh.core.property.bases.validation_on", FUNCTION)),
          "tests/test_building.py::test_tuples_checked_once_are_still_checked",
          "survives? (nothing known against it)",
          replaces=("bokeh.core.property.bases.Property.prepare_value",)),
    Patch("parameters-copied-directly", SPEED, "copy_parameters_faster",
          "param's per-object copy of a Parameter made slot by slot",
          (("param.parameterized._instantiate_param_obj", FUNCTION),
           ("param.parameterized.Parameter._all_slots_", ANY), ("param.parameterized.Parameter.__copy__", FUNCTION),
           ("param._utils.MUTABLE_TYPES", ANY)),
          "tests/test_building.py::test_parameters_copied_faster_are_params_own_copies",
          "survives? (param, not Bokeh)",
          replaces=("param.parameterized._instantiate_param_obj",)),
    Patch("model-walks-without-imports", SPEED, "walk_models_faster",
          "Bokeh's walk of the model graph without an import statement per value",
          (("bokeh.model.util.collect_filtered_models", FUNCTION),
           ("bokeh.model.util.visit_immediate_value_references", FUNCTION),
           ("bokeh.model.util.visit_value_and_its_immediate_references", FUNCTION)),
          "tests/test_building.py::test_models_walked_faster_are_found_in_bokehs_order",
          "survives? (nothing known against it)"),
    Patch("pane-layouts-when-used", SPEED, "pane_layouts_when_used",
          "the Row Panel makes around every pane made when first read",
          (("panel.pane.base.PaneBase.__init__", FUNCTION), ("panel.pane.base.PaneBase._sync_layoutable", FUNCTION)),
          "tests/test_building.py::test_a_pane_layout_made_when_read_is_the_one_panel_makes",
          "survives? (Panel 1.10.0a3's PaneBase.__init__ has the same source: the guard passes)",
          sources=(("panel.pane.base.PaneBase.__init__", "e183ce8d27dd816f"),),
          replaces=("panel.pane.base.PaneBase.__init__", "panel.pane.base.PaneBase._sync_layoutable",
                    "panel.pane.base.PaneBase.layout")),
    Patch("synced-parameters-once", SPEED, "synced_params_once",
          "Panel's list of synced parameters made once per component converted",
          (("panel.reactive.Syncable._init_params", FUNCTION),),
          "tests/test_building.py::test_synced_parameters_listed_once_give_panels_own_parameters",
          "survives? (Panel 1.10.0a3's Syncable._init_params has the same source: the guard passes)",
          sources=(("panel.reactive.Syncable._init_params", "3c20aeeded14dbf2"),)),
    Patch("kept-pages-written-once", SPEED, "write_kept_pages_once",
          "a kept session's HTML written once, each GET's token put in",
          (("panel.io.server.server_html_page_for_session", FUNCTION), ("panel.io.state.state._sessions", ANY)),
          "tests/test_building.py::test_a_kept_page_is_written_once_and_each_get_gets_its_own_token",
          "survives? (Panel 1.10.0a3's server_html_page_for_session has the same source)",
          replaces=("panel.io.server.server_html_page_for_session",)),
    Patch("build-on-thread", BUILDING, "install",
          "pages built on one builder thread, in turns address by address; websockets past the cap (all, or one "
          "address's) or an address's new sessions closed as busy; a gone visitor's build skipped",
          (("panel.io.application.Application.on_session_created", COROUTINE),
           ("panel.io.application.Application.initialize_document", FUNCTION),
           ("panel.io.document._destroy_document", FUNCTION),
           ("bokeh.io.doc._PATCHED_CURDOCS", LIST), ("panel.io.state.state._thread_id_", ANY),
           (f"{WS}._async_open", COROUTINE), (f"{WS}.on_close", FUNCTION)),
          "tests/test_websocket.py::test_past_the_cap_a_new_websocket_is_told_the_server_is_busy",
          "cannot survive: _PATCHED_CURDOCS is a ContextVar of a tuple there (Panel 1.10's tests set it to ()); "
          "unneeded: Bokeh 3.10 runs a Document's initialization off the loop with asyncio.to_thread, in the "
          "loop's default executor (Panel 1.10 installs its --num-threads pool there); the turns and the cap "
          "would move to the websocket's open, before Bokeh makes the session",
          replaces=("panel.io.application.Application.on_session_created",
                    "panel.io.application.Application.initialize_document", "bokeh.io.doc._PATCHED_CURDOCS",
                    f"{WS}._async_open", f"{WS}.on_close")),
    Patch("pull-written-off-loop", BUILDING, "write_pulls_off_loop",
          "a PULL-DOC's JSON written on a thread, under the session's document lock, in turns with the builds",
          (("bokeh.server.session.ServerSession._handle_pull", FUNCTION),
           ("bokeh.server.session._needs_document_lock", FUNCTION)),
          "tests/test_building.py::test_a_pulled_document_is_written_on_its_own_thread_under_the_sessions_lock",
          "survives?, maybe unneeded: Bokeh 3.10 runs locked callbacks with asyncio.to_thread (Panel 1.10's "
          "compat notes); whether its pull handler is one is not known here",
          replaces=("bokeh.server.session.ServerSession._handle_pull",)),
    Patch("malformed-tokens-refused", SECURITY, "refuse_malformed_tokens",
          "a malformed bokeh-token: a 400 page or a closed socket and one log line, not a 500 and a traceback",
          (("bokeh.server.views.session_handler.SessionHandler.get_session", FUNCTION),
           (f"{WS}.open", FUNCTION)),
          "tests/test_security.py::test_a_malformed_token_gets_a_short_400_and_one_log_line",
          "survives? (nothing known against it)"),
    Patch("client-urls-dropped", SECURITY, "drop_client_urls",
          "of the bokeh-* query arguments only the token and session id reach Bokeh",
          (("bokeh.server.views.session_handler.SessionHandler.prepare", COROUTINE),),
          "tests/test_websocket.py::test_a_bokeh_argument_in_a_link_does_not_move_scripts_and_styles",
          "survives? (nothing known against it)"),
    Patch("kept-session-never-handed-out", SECURITY, "keep_kept_sessions",
          "with --reuse-sessions the kept session is made before the first GET, which gets a session of its own",
          (("panel.io.server.DocHandler.get", FUNCTION), ("panel.io.state.state._session_key_funcs", ANY),
           ("panel.io.state.state._sessions", ANY)),
          "tests/test_websocket.py::test_a_kept_session_is_never_handed_to_a_visitor",
          "survives? (Panel 1.10.0a3's DocHandler.get has the same source)",
          replaces=("panel.io.server.DocHandler.get",)),
    Patch("security-headers", SECURITY, "send_security_headers",
          "every answer carries security-headers.conf's headers",
          (("tornado.web.RequestHandler.set_default_headers", FUNCTION),),
          "tests/test_websocket.py::test_the_classroom_server_sends_the_hosted_mode_security_headers",
          "survives (Tornado's own hook, on its base class)"),
    Patch("websocket-allow-list", SOCKET, "install_allow_list",
          "a client's message checked against the allow-list before Bokeh handles it, pulls counted per session; "
          "idle and too-old connections closed",
          ((f"{WS}.on_message", COROUTINE), (f"{WS}.on_pong", FUNCTION)),
          "tests/test_websocket.py::test_push_doc_and_unknown_messages_are_refused",
          "survives? (nothing known against it)"),
    Patch("sockets-per-session", LIMITS, "count_sockets",
          "a session's websockets counted: one past MAX_SOCKETS_PER_SESSION closed at once",
          ((f"{WS}.open", FUNCTION), (f"{WS}.on_close", FUNCTION), ("bokeh.util.token.get_session_id", FUNCTION)),
          "tests/test_websocket.py::test_one_page_holds_a_few_websockets_not_sixty",
          "survives? (nothing known against it)",
          replaces=(f"{WS}.open", f"{WS}.on_close")),
)
BY_NAME = {patch.name: patch for patch in PATCHES}
SPEED_PATCHES = tuple(patch.name for patch in PATCHES if patch.concern == SPEED)


def versions():
    """{library: installed version} for Panel, Bokeh, param and Tornado."""
    found = {}
    for library in (*LIBRARIES, "tornado"):
        try:
            found[library] = version(library)
        except PackageNotFoundError:
            found[library] = None
    return found


def tested(found=None):
    found = found or versions()
    return tuple(found[library] for library in LIBRARIES) in TESTED


def resolve(path):
    """The object at a dotted path (a module, then attributes), or MISSING. A class's own attribute is read from
    its __dict__ when it has one (a descriptor, not what it gives)."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            owner = value
            value = _attribute(owner, name)
            if value is MISSING:
                return MISSING
        return value
    return MISSING


def _attribute(owner, name):
    if isinstance(owner, type):
        for klass in owner.__mro__:
            if name in vars(klass):
                return vars(klass)[name]
    try:
        return getattr(owner, name)
    except Exception:                              # a property that fails, a missing attribute
        return MISSING


def _kind_problem(value, kind):
    if value is MISSING:
        return "missing"
    function = getattr(value, "__func__", value)
    if kind == FUNCTION and not callable(function):
        return f"a {type(value).__name__}, not a function"
    if kind == COROUTINE and not inspect.iscoroutinefunction(function):
        return f"a {type(value).__name__}, not a coroutine function"
    if kind == LIST and type(value) is not list and type(value).__name__ != "PerThread":
        return f"a {type(value).__name__}, not a list"
    if kind == CLASS and not isinstance(value, type):
        return f"a {type(value).__name__}, not a class"
    return None


def _source_hash(value):
    function = getattr(value, "panels_own", None) or getattr(value, "bokehs_own", None) or value
    if isinstance(function, tuple):               # pane_layouts_when_used keeps (init, sync)
        function = function[0]
    try:
        return hashlib.sha256(inspect.getsource(function).encode()).hexdigest()[:16]
    except (OSError, TypeError):
        return None


def problem(patch):
    """Why `patch` cannot be installed on the libraries here (a few words), or None."""
    for path, kind in patch.targets:
        trouble = _kind_problem(resolve(path), kind)
        if trouble:
            return f"{path} is {trouble}"
    for path, sha in patch.sources:
        found = _source_hash(resolve(path))
        if found != sha:
            return f"{path} is not the function it repeats (source hash {found}, written against {sha})"
    return None


_saved = []                                       # (patch name, {path: value before}) in the order installed


def _owner_and_name(path):
    owner_path, name = path.rsplit(".", 1)
    return resolve(owner_path), name


def install(names=None, skip=()):
    """Install the patches named (default: all), less `skip`, in the list's order; the names installed. On a set
    of versions not tested, or for a patch whose targets are not what it expects, one log line instead."""
    found = versions()
    if not tested(found):
        log.warning("Lineare: serving without its patches of Panel and Bokeh: Panel %s, Bokeh %s, param %s is not a "
                    "tested set (%s)", found["panel"], found["bokeh"], found["param"],
                    "; ".join(", ".join(one) for one in sorted(TESTED)))
        return []
    wanted = [patch for patch in PATCHES if (names is None or patch.name in names) and patch.name not in skip]
    done = [name for name, _before in _saved]
    for patch in wanted:
        if patch.name in done:
            continue
        trouble = problem(patch)
        if trouble:
            log.warning("Lineare: patch %s left out: %s", patch.name, trouble)
            continue
        before = {}
        for path in patch.replaced():
            owner, name = _owner_and_name(path)
            before[path] = vars(owner).get(name, MISSING) if isinstance(owner, type) else getattr(owner, name)
        try:
            installed_now = getattr(importlib.import_module(f"lineare.app.server.{patch.concern}"), patch.install)()
        except Exception as error:                 # a target that looked right and was not: serve without it
            _put_back(before)
            log.warning("Lineare: patch %s left out: %s: %s", patch.name, type(error).__name__, error)
            continue
        if installed_now is False:                 # the patch's own check said no (and logged why)
            continue
        _saved.append((patch.name, before))
        done.append(patch.name)
    return [name for name in done if name in {patch.name for patch in wanted}]


def _put_back(before):
    for path, value in before.items():
        owner, name = _owner_and_name(path)
        if value is MISSING:
            with contextlib.suppress(AttributeError):
                type.__delattr__(owner, name) if isinstance(owner, type) else delattr(owner, name)
        elif isinstance(owner, type):
            type.__setattr__(owner, name, value)             # past param's class checks (PaneBase.layout)
        else:
            setattr(owner, name, value)


def uninstall():
    """Put back everything the patches installed through install() replaced, last installed first."""
    while _saved:
        _name, before = _saved.pop()
        _put_back(before)


def installed_names():
    return [name for name, _before in _saved]


@contextlib.contextmanager
def installed(names=None):
    """The patches named (default: all; () for none) installed for the body, and the libraries as they were
    afterwards, whatever was installed before."""
    outer = [name for name, _before in _saved]
    uninstall()
    try:
        install(names) if names != () else None
        yield installed_names()
    finally:
        uninstall()
        if outer:
            install(outer)


def rows():
    """One row a patch, for `python -m lineare.app --patches`: its name, what it replaces, the versions checked, its
    guard (and whether it passes here), its test, and Bokeh 3.10."""
    found = versions()
    here = ", ".join(f"{library} {found[library]}" for library in LIBRARIES)
    checked = " or ".join(" ".join(f"{library} {v}" for library, v in zip(LIBRARIES, one)) for one in sorted(TESTED))
    lines = [f"Replacements of library internals that python -m lineare.app installs (none with --no-patches), "
             f"one row each. "
             f"Versions checked: {checked}; here: {here}{'' if tested(found) else ' (not tested: none installed)'}.",
             " | ".join(("patch", "replaces (app/server/module: installer)", "versions checked", "guard (here)",
                         "test", "Bokeh 3.10"))]
    for patch in PATCHES:
        trouble = problem(patch)
        lines.append(" | ".join((
            patch.name, ", ".join(patch.replaced()) + f" ({patch.concern}.py: {patch.install}())", checked,
            patch.guard + (f" (here: LEFT OUT, {trouble})" if trouble else " (here: ok)"), patch.test,
            patch.bokeh_3_10)))
    return "\n".join(lines)
