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

`freeze_model_walks()` (for every server, --build-on-loop too): Bokeh walks a document's whole model
graph again after each change that may add or drop a model (a new root, a list of children, a
stylesheet); while a page is built or a knob's callbacks run, those walks are put off to one at the
end, if any. The state page was built 35 walks deep: 1.4 s → 0.8 s (measured in-process, one core).
"""
import asyncio
import contextlib
import contextvars
import sys
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor

BUILDER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lineare-build")
WRITER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lineare-write")
SWITCH_INTERVAL_S = 0.001


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


def install():
    """Patch Panel's Application (every page of `panel serve` is one) to build documents on BUILDER."""
    import bokeh.io.doc
    from panel.io.application import Application
    from panel.io.state import state

    created, initialize = Application.on_session_created, Application.initialize_document
    if getattr(created, "lineare", False):
        return
    built = weakref.WeakSet()                       # Documents built on the thread, not yet handed to Bokeh

    async def on_session_created(self, session_context):
        await created(self, session_context)
        doc = session_context._document
        loop_thread = threading.get_ident()
        context = contextvars.copy_context()        # Panel's current document and our language live there
        try:
            await asyncio.get_running_loop().run_in_executor(BUILDER, context.run, initialize, self, doc)
        finally:
            built.add(doc)                          # even half built: never built twice
            state._thread_id_[doc] = loop_thread    # from now on the loop's thread owns it

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


def write_pulls_off_loop():
    """Bokeh's answer to a browser's PULL-DOC (the whole Document as JSON), made on WRITER. Bokeh's own
    lock decorator (private) holds the session's document lock until the answer is made, as it does
    for its own `_handle_pull`: the session's callbacks wait, every other session goes on."""
    from bokeh.server.session import ServerSession, _needs_document_lock

    async def _handle_pull(self, message, connection):
        return await asyncio.get_running_loop().run_in_executor(
            WRITER, connection.protocol.create, "PULL-DOC-REPLY", message.header["msgid"], self.document)

    ServerSession._handle_pull = _needs_document_lock(_handle_pull)
