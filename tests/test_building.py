"""app/server/building.py and speedups.py without a server: Bokeh's stack of current documents, one per thread;
the walks over a document's models put off to the end of a build or a knob's callbacks; each cheaper build
against the library's own function. A patch is installed for one test through `patched(...)` and put back after
it (app/server/patches.py), never left installed for the tests after."""
import contextlib
import os
import re
import threading
from pathlib import Path

import bokeh.io.doc
import pytest
from bokeh.document import Document
from bokeh.models import Div

from lineare.app.server.building import PerThread
from lineare.app.server.speedups import write_kept_pages_once


def test_a_build_and_the_event_loop_never_see_each_others_current_document(monkeypatch):
    monkeypatch.setattr(bokeh.io.doc, "_PATCHED_CURDOCS", PerThread())
    loop_doc, built_doc, seen = Document(), Document(), {}
    pushed, release = threading.Event(), threading.Event()

    def build():
        with bokeh.io.doc.patch_curdoc(built_doc):          # as Panel's run_app does around a page script
            pushed.set()
            release.wait(10)
            seen["build"] = bokeh.io.doc.curdoc()

    thread = threading.Thread(target=build)
    with bokeh.io.doc.patch_curdoc(loop_doc):                # a session callback on the loop, and meanwhile
        thread.start()                                       # a build begins
        pushed.wait(10)
        seen["loop"] = bokeh.io.doc.curdoc()
    release.set()
    thread.join(10)
    assert seen == {"build": built_doc, "loop": loop_doc}
    assert len(bokeh.io.doc._PATCHED_CURDOCS) == 0


def test_a_page_build_walks_its_document_once():
    """Bokeh walks a document's whole model graph after each change that may add a model; a page is built under
    Bokeh's public doc.models.freeze() (app/shell.py serve()), so it is walked once, at the end (eight times for
    the state page without it), patched or not."""
    from bokeh.document.models import DocumentModelManager
    from panel.io.application import build_single_handler_application

    from lineare.app.serve import PAGES as PAGE_DIR
    from lineare.bench.pages import PAGES, fake_session

    walked, recompute = [], DocumentModelManager.recompute
    application = build_single_handler_application(str(PAGE_DIR / "state.py"))
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(DocumentModelManager, "recompute", lambda self: (walked.append(1), recompute(self))[1])
        doc = Document()
        session = fake_session(doc, "state", PAGES["state"], "en")
        application.initialize_document(doc)
    assert session is not None and len(doc.roots) == 6 and len(walked) == 1, len(walked)
    assert all(doc.get_model_by_id(model.id) is model for model in doc.roots[-1].references())


def test_a_pulled_document_is_written_on_its_own_thread_under_the_sessions_lock(monkeypatch):
    import asyncio

    from bokeh.protocol import Protocol
    from bokeh.server.session import ServerSession

    from lineare.app.server.building import write_pulls_off_loop

    monkeypatch.setattr(ServerSession, "_handle_pull", ServerSession._handle_pull)      # put back afterwards
    write_pulls_off_loop()

    class Held:                           # a lock as Bokeh uses one (`with await lock.acquire():`) that says if held
        held = False

        async def acquire(self):
            self.held = True
            return self

        def __enter__(self):
            return self

        def __exit__(self, *_exc):
            self.held = False

    class Session:                        # what Bokeh's lock decorator and _handle_pull use of a session
        destroyed, _pending_writes, _lock, id = False, None, Held(), "a session"
        block_expiration = unblock_expiration = lambda self: None

    session, doc, seen = Session(), Document(), {}
    doc.add_root(Div(text="<b>a page</b>"))
    session.document = doc
    to_json = doc.to_json

    def written(*args, **kwargs):
        seen.update(thread=threading.current_thread().name, locked=session._lock.held)
        return to_json(*args, **kwargs)

    monkeypatch.setattr(doc, "to_json", written)
    protocol = Protocol()
    asking = protocol.create("PULL-DOC-REQ")
    connection = type("Connection", (), {"protocol": protocol})()

    async def pull():
        loop_thread = threading.current_thread().name
        reply = await ServerSession._handle_pull(session, asking, connection)
        return loop_thread, reply

    loop_thread, reply = asyncio.run(pull())
    assert seen == {"thread": seen["thread"], "locked": True}
    assert seen["thread"].startswith("lineare-write") and seen["thread"] != loop_thread
    assert reply.msgtype == "PULL-DOC-REPLY" and reply.header["reqid"] == asking.header["msgid"]
    assert reply.content["doc"]["roots"][0]["attributes"]["text"] == "<b>a page</b>"
    assert session._pending_writes is None and not session._lock.held
    # while another address's build has the page work's turn, a new page's first pull (the end of its opening) is
    # written at once; its next pull waits for the turn
    from lineare.app.server import limits

    async def beside_a_build():
        fresh = Session()
        fresh.document = doc
        async with limits.PAGE_WORK.turn("another address", "its session"):
            first = await asyncio.wait_for(ServerSession._handle_pull(fresh, asking, connection), 5)
            second = asyncio.ensure_future(ServerSession._handle_pull(fresh, asking, connection))
            await asyncio.sleep(0.2)
            assert not second.done()
        return first, await asyncio.wait_for(second, 5)

    assert [r.msgtype for r in asyncio.run(beside_a_build())] == ["PULL-DOC-REPLY"] * 2


STABLE_DEFAULTS = r"""
import re
from bokeh.document import Document
from bokeh.protocol import Protocol
from bokeh.models import Div, Slider
from bokeh.plotting import figure
from bokeh.themes import Theme

def page(theme=None):
    doc = Document()
    if theme is not None:
        doc.theme = theme
    fig = figure(title="t", width=300, height=200, tools="hover")
    fig.line([1, 2], [3, 4], legend_label="a")
    fig.scatter([1, 2], [3, 4], size=8)
    for root in (fig, Div(text="x"), Slider(start=0, end=1, value=0.5, step=0.1, title="s")):
        doc.add_root(root)
    doc.validate()                       # reads every property, so the cache is filled before the JSON
    return fig, re.sub(r'"p\d+"', '"p"', Protocol().create("PULL-DOC-REPLY", "x", doc).content_json)

theme = Theme(json={"attrs": {"Title": {"text_font_size": "31px"}, "Plot": {"min_border": 7}}})
bokehs = [page()[1], page(theme)[1]]
from lineare.app.server.speedups import cache_stable_defaults
cache_stable_defaults()
ours = [page()[1], page()[1], page(theme)[1], page()[1]]
assert ours[0] == ours[1] == ours[3] == bokehs[0], "the same document, whatever was read before"
assert ours[2] == bokehs[1] and '"31px"' in ours[2], "a theme's values still win"
one, two = page()[0], page()[0]
one.tags.append("mine")
assert two.tags == [] and one.renderers is not two.renderers, "containers are never shared"
assert one.tags == ["mine"] and one.css_classes is one.css_classes, "an empty default is made once per model"
# an empty default made directly still tells its document when it changes, as Bokeh's own does
doc, changes = Document(), []
div = Div(text="y")
doc.add_root(div)
doc.on_change(lambda event: changes.append((event.model, event.attr)))
div.css_classes.append("wide")
div.styles["color"] = "red"
assert changes == [(div, "css_classes"), (div, "styles")], changes
assert Div().css_classes == [] and Div().styles == {}
"""


def test_stable_defaults_made_once_give_bokehs_own_documents():
    """cache_stable_defaults() (installed by python -m lineare.app) changes no document: with and without it, in a
    fresh process, the same JSON; a theme's values still apply; mutable defaults are each model's own, and a
    change to an empty one made directly reaches its document."""
    import subprocess
    import sys

    subprocess.run([sys.executable, "-c", STABLE_DEFAULTS], check=True, timeout=120)


TUPLES_CHECKED_ONCE = """
import pytest
from bokeh.models import Div, LinearColorMapper
from bokeh.palettes import RdBu11, interp_palette
from lineare.app.server.speedups import check_tuples_once

palette = interp_palette(RdBu11, 255)
def attempts():
    made = [LinearColorMapper(palette=palette).palette, Div(margin=(1, 2)).margin]
    for bad in (dict(margin=(1.0, 2.0)), dict(margin=(1, "2"))):        # Int items only: refused each time
        with pytest.raises(ValueError):
            Div(**bad)
    with pytest.raises(ValueError):
        LinearColorMapper(palette=("#12345", "red"))
    return made

bokehs = attempts()
check_tuples_once()
ours = [attempts(), attempts()]
assert ours[0] == ours[1] == bokehs and ours[1][0] == tuple(palette)

import lineare.app.server.speedups as speedups
speedups.MAX_CHECKED_TUPLES = 3                    # past the bound: still checked, no longer kept
margins = [Div(margin=(i, i)).margin for i in range(10)]
assert margins == [(i, i) for i in range(10)]
with pytest.raises(ValueError):
    Div(margin=(1.0, 2.0))
from bokeh.core.property.bases import Property
kept = dict(zip(Property.prepare_value.__code__.co_freevars,
                (c.cell_contents for c in Property.prepare_value.__closure__)))["checked"]
assert len(kept) == 3
"""


def test_tuples_checked_once_are_still_checked():
    """check_tuples_once() (installed by python -m lineare.app): the values Bokeh makes are the same, and a tuple that
    fails Bokeh's check (an item of the wrong type, even one equal to a valid one: 1.0 for 1) still fails."""
    import subprocess
    import sys

    subprocess.run([sys.executable, "-c", TUPLES_CHECKED_ONCE], check=True, timeout=120)


def test_a_kept_page_is_written_once_and_each_get_gets_its_own_token(monkeypatch):
    import panel.io.server as server
    from bokeh.resources import Resources
    from panel.io.state import state

    panel_writes, written = server.server_html_page_for_session, []
    monkeypatch.setattr(server, "server_html_page_for_session",            # counted; Panel's own after the test
                        lambda *args, **kwargs: (written.append(1), panel_writes(*args, **kwargs))[1])
    write_kept_pages_once()

    def page_for(session, token, write=None):
        doc = session.document
        return (write or server.server_html_page_for_session)(
            session, resources=Resources(mode="server"), title=doc.title, token=token, template=doc.template,
            template_variables=doc.template_variables)

    class Session:                            # what the writer reads of Bokeh's ServerSession
        def __init__(self, document, token):
            self.document, self.token = document, token

    def session_with(text):
        doc = Document()
        doc.add_root(Div(text=text))
        doc.title = "Lo stato si riempie"
        return Session(document=doc, token="its own token")

    kept, own = session_with("kept"), session_with("a visitor's")
    monkeypatch.setitem(state._sessions, ("/state", "it"), kept)          # what Panel keeps with --reuse-sessions
    first, second = page_for(kept, "token-A"), page_for(kept, "token-B")
    assert "token-A" in first and "token-B" in second and "token-A" not in second
    assert first.replace("token-A", "T") == second.replace("token-B", "T")
    before = len(written)
    third = page_for(kept, "token-C")
    assert len(written) == before                                         # no new writing
    # the page Panel itself writes, but for the ids it gives the page's own elements anew each time (the
    # root's place, drawn at random, and the script that holds the document's JSON, from Bokeh's counter)
    element = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\bp\d+\b")
    assert element.sub("id", third) == element.sub("id", page_for(kept, "token-C", write=panel_writes))
    page_for(own, "token-D"), page_for(own, "token-E")                    # a session not kept: written each time
    assert len(written) == before + 2


EVERY_PAGE_UNCHANGED = r"""
import re
from bokeh.document import Document
from bokeh.protocol import Protocol
from panel.io.application import build_single_handler_application
from lineare.app.serve import PAGES as PAGE_DIR
from lineare.bench.pages import PAGES, fake_session
from bokeh_wire import normalized

def document_json(route, language):
    doc = Document()
    session = fake_session(doc, route, PAGES[route], language)     # kept: the document holds it weakly (without
    build_single_handler_application(str(PAGE_DIR / f"{route}.py")).initialize_document(doc)     # it: no page)
    assert len(doc.roots) == 6 and session is not None, (route, len(doc.roots))
    return normalized(Protocol().create("PULL-DOC-REPLY", "x", doc).content_json)

pages = [(route, "en") for route in PAGES] + [("state", "it"), ("transition", "it")]
[document_json(*page) for page in pages]        # the first build in a process also defines its classes
panels = [document_json(*page) for page in pages]
again = [document_json(*page) for page in pages]
# two bills measures its time per token as it opens (and again once its measure is a minute old): its numbers
# differ from one build to the next, the rest of it does not
numbers = lambda text: re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "#", text)
measured = [route == "two-bills" for route, _language in pages]
panels, again = ([numbers(one) if varies else one for one, varies in zip(texts, measured)] for texts in (panels, again))
assert panels == again, [page for page, one, two in zip(pages, panels, again) if one != two]
from lineare.app.server import patches
assert patches.install(patches.SPEED_PATCHES) == list(patches.SPEED_PATCHES)
for page, panel, ours, varies in zip(pages, panels, [document_json(*page) for page in pages], measured):
    ours = numbers(ours) if varies else ours
    at = next((i for i, (a, b) in enumerate(zip(panel, ours)) if a != b), min(len(panel), len(ours)))
    assert len(panel) > 20000 and ours == panel, (page, panel[at - 300:at + 200], ours[at - 300:at + 200])
"""


def test_the_cheaper_builds_change_no_page():
    """The speed patches (every server, bench.pages): each page's document, as the browser gets it, is the one
    Bokeh and Panel make without the patches (every page in English, two in Italian; ids named in order)."""
    import subprocess
    import sys

    subprocess.run([sys.executable, "-c", EVERY_PAGE_UNCHANGED], check=True, timeout=300,
                   env={**os.environ, "PYTHONPATH": str(Path(__file__).parent)})


@contextlib.contextmanager
def patched(*names):
    """The patches named installed for the body, the libraries as they were afterwards (app/server/patches.py)."""
    from lineare.app.server import patches

    with patches.installed(names) as done:
        assert done == list(names), f"left out: {set(names) - set(done)} (see the log line)"
        yield


def test_parameters_copied_faster_are_params_own_copies():
    import param.parameterized as parameterized

    with patched("parameters-copied-directly"):
        parameters_compared(parameterized._instantiate_param_obj)
    assert not hasattr(parameterized._instantiate_param_obj, "params_own"), "param's own, put back"


def parameters_compared(ours):
    import copy

    import panel as pn

    param_copy = ours.params_own
    compared = 0
    for kind in (pn.widgets.IntSlider, pn.widgets.Select, pn.pane.HTML, pn.Column, pn.custom.JSComponent,
                 pn.template.BootstrapTemplate, pn.widgets.FileSelector):
        for parameter in kind.param.objects(instance=False).values():
            theirs, mine = param_copy(parameter, None), ours(parameter, None)
            for slot, value in theirs.__getstate__().items():
                made = getattr(mine, slot)
                assert type(made) is type(value) and made == value, (kind, parameter.name, slot)
                shared = getattr(parameter, slot)
                # a container slot is the copy's own, as in param's copy (the default is kept as is)
                assert (made is shared) == (value is shared), (kind, parameter.name, slot)
            compared += 1
    assert compared > 150
    # an object's own parameter: changed for it alone
    one, two = pn.widgets.IntSlider(start=0, end=9), pn.widgets.IntSlider(start=0, end=9)
    one.param.value.bounds = (0, 3)
    assert one.param.value.bounds == (0, 3) and two.param.value.bounds != (0, 3)
    assert pn.widgets.IntSlider.param.value.bounds != (0, 3)
    seen = []
    one.param.watch(lambda event: seen.append(event.new), "value")
    two.value = 4
    one.value = 2
    assert seen == [2] and copy.copy(one.param.value).bounds == (0, 3)


def test_models_walked_faster_are_found_in_bokehs_order():
    from bokeh.model import util
    from bokeh.models import ColumnDataSource, CustomJS, Div, HoverTool
    from bokeh.plotting import figure

    fig = figure(tools=[HoverTool(tooltips=[("x", "@x")])], title="t")
    fig.line("x", "y", source=ColumnDataSource({"x": [1, 2], "y": [3, 4]}), legend_label="a")
    fig.js_on_event("tap", CustomJS(args={"other": Div(text="d"), "many": [Div(), {"k": Div()}]}, code=""))
    second = Div(text="root two")
    assert not getattr(util.collect_filtered_models, "lineare", False)
    bokehs, references = util.collect_models(fig, [second]), fig.references()
    not_divs = util.collect_filtered_models(lambda model: isinstance(model, Div), fig)
    with patched("model-walks-without-imports"):
        assert getattr(util.collect_filtered_models, "lineare", False)
        assert len(bokehs) > 30 and sum(isinstance(m, Div) for m in bokehs) == 4
        assert util.collect_models(fig, [second]) == bokehs
        assert util.collect_filtered_models(lambda model: isinstance(model, Div), fig) == not_divs
        assert fig.references() == references and second not in references


def test_a_pane_layout_made_when_read_is_the_one_panel_makes():
    import panel as pn
    from panel.pane.base import PaneBase

    def layouts():
        made = []
        for read_early in (False, True):
            pane = pn.pane.HTML("<p>x</p>", width=300, margin=(4, 10), sizing_mode="fixed", styles={"a": "b"})
            if read_early:
                pane.layout                         # made now: kept in step from here on
            pane.param.update(width=420, margin=(1, 2, 3, 4), visible=False, min_height=30)
            row = pane.layout
            made.append({name: value for name, value in row.param.values().items() if name not in ("name", "objects")})
            assert row.objects == [pane] and pane.layout is row
        return made

    panels = layouts()
    with patched("pane-layouts-when-used"):
        assert getattr(PaneBase.__init__, "lineare", False)
        assert layouts() == panels and panels[0]["width"] == 420 + 2 + 4 and panels[0]["visible"] is False
        assert "_lineare_layout_unmade" in vars(pn.pane.HTML("y")), "not made before it is read"
        own, pane = pn.Row(), pn.pane.Markdown("z")
        pane.layout = own                            # Panel's own code may set it
        assert pane.layout is own
    assert "layout" not in vars(PaneBase) and "_lineare_layout_unmade" not in vars(pn.pane.HTML("y"))


def test_synced_parameters_listed_once_give_panels_own_parameters():
    from panel.reactive import Syncable

    with patched("synced-parameters-once"):
        synced_compared(Syncable._init_params)


def synced_compared(ours):
    import panel as pn

    from lineare.app.components.player import FrameText

    objects = [pn.Column(pn.pane.HTML("x"), sizing_mode="stretch_width", css_classes=["a"]),
               pn.widgets.RadioButtonGroup(options=["a", "b"], value="b", label="n"),
               pn.widgets.FloatSlider(start=0, end=2, value=0.5, visible=False), FrameText(), pn.layout.Divider()]
    for obj in objects:                              # each of them converted through Syncable's (not FlexBox)
        assert type(obj)._init_params is ours, type(obj).__name__
        own = ours.panels_own(obj)
        assert list(obj._init_params().items()) == list(own.items()) and own, type(obj).__name__


def test_patches_install_only_on_a_tested_set_and_put_everything_back(monkeypatch, caplog):
    """app/server/patches.py: every patch installs here and is put back; on an untested (Panel, Bokeh, param) set
    none installs and one log line says why."""
    from lineare.app.server import patches

    before = {path: patches.resolve(path) for patch in patches.PATCHES for path in patch.replaced()}
    with patches.installed() as done:
        assert done == [patch.name for patch in patches.PATCHES]
        changed = [path for path, value in before.items() if patches.resolve(path) is not value]
        assert set(changed) == set(before)
    assert {path: patches.resolve(path) for path in before} == before
    monkeypatch.setattr(patches, "versions", lambda: {"panel": "1.10.0", "bokeh": "3.10.1", "param": "2.4.2",
                                                      "tornado": "6.6"})
    with caplog.at_level("WARNING", logger="lineare.patches"), patches.installed() as done:
        assert done == []
    [line] = [record.getMessage() for record in caplog.records]
    assert line.startswith("Lineare: serving without its patches of Panel and Bokeh: Panel 1.10.0, Bokeh 3.10.1, "
                           "param 2.4.2 is not a tested set (") and "1.9.4, 3.9.2, 2.4.2" in line


def test_a_target_not_as_expected_leaves_its_patch_out_with_one_line(monkeypatch, caplog):
    """Bokeh 3.10 keeps its current documents in a ContextVar: the build thread's patch (which replaces a list) is
    left out and pages are built on the loop, instead of every page failing; a function whose body a patch
    repeats, changed, leaves that patch out; a patch whose need was left out is left out too."""
    import contextvars
    import dataclasses

    import bokeh.io.doc
    from panel.io.application import Application
    from panel.reactive import Syncable

    from lineare.app.server import building, patches

    monkeypatch.setattr(bokeh.io.doc, "_PATCHED_CURDOCS", contextvars.ContextVar("curdocs", default=()))
    created = Application.on_session_created
    with caplog.at_level("WARNING"):
        assert building.install() is False
        assert Application.on_session_created is created
        monkeypatch.setattr(Syncable, "_init_params", lambda self: {})              # not Panel's own any more
        moved = dataclasses.replace(patches.BY_NAME["stable-defaults-once"],
                                    targets=(("bokeh.nowhere.Thing", "present"),))
        monkeypatch.setattr(patches, "PATCHES", tuple(moved if p.name == moved.name else p for p in patches.PATCHES))
        with patches.installed() as done:
            assert "build-on-thread" not in done and "synced-parameters-once" not in done
            assert "stable-defaults-once" not in done
            assert "websocket-allow-list" in done and Application.on_session_created is created
    lines = [record.getMessage() for record in caplog.records]
    assert lines[0].startswith("Lineare: pages are built on the event loop, as plain Panel does: "
                               "bokeh.io.doc._PATCHED_CURDOCS is a ContextVar, not a list")
    assert any(line.startswith("Lineare: patch synced-parameters-once left out: panel.reactive.Syncable._init_params "
                               "is not the function it repeats") for line in lines)
    assert len(lines) == 4, lines       # install(), then build-on-thread, synced and stable defaults once each


def test_the_patches_listing_names_every_replacement(capsys):
    from lineare.app import serve
    from lineare.app.server import patches

    assert serve.main(["--patches"]) == 0
    rows = capsys.readouterr().out.splitlines()[2:]
    assert len(rows) == len(patches.PATCHES)
    for row, patch in zip(rows, patches.PATCHES):
        name, replaces, versions, guard, test, bokeh_3_10 = row.split(" | ")
        assert name == patch.name and all(path in replaces for path in patch.replaced())
        assert "panel 1.9.4 bokeh 3.9.2 param 2.4.2" in versions and guard.endswith("(here: ok)")
        assert test.split("::")[0].startswith("tests/") and bokeh_3_10
    assert "cannot survive" in next(row for row in rows if row.startswith("build-on-thread |"))
