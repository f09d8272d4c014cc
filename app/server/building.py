"""Pages built on a thread of their own, so that the event loop keeps serving every other visitor, and a cap on
the builds that wait.

Bokeh builds a session's page (runs app/pages/<page>.py) inside the event loop: for the time a page takes, every
other session of the process waits — its knobs, its pings, even a bare GET. `install()` moves that build to one
builder thread (`BUILDER`): Panel's session hook (`Application.on_session_created`, awaited by Bokeh just before
it builds) builds the new Document there and awaits it, and Bokeh's own build call that follows finds it built.
The browser's PULL-DOC (the whole Document as JSON) is written on a thread of its own too (`WRITER`).

Invariants:

- a Document being built belongs to no connection, so nothing else touches it; once built, Panel is told that
  the loop's thread owns it, and every callback runs on the loop as usual;
- a document is built once: half built or skipped, it is never built again by Bokeh's own call;
- Bokeh's stack of "current documents" is one per thread (`PerThread`), so a build and a callback on the loop
  never see each other's document; Panel's current document and the page's language live in a context
  variable copied into the build;
- pages are built one at a time, taking turns with document pulls fairly among addresses (app/server/limits.py:
  a crowd of builds from one address waits behind one build of each other address); a new page's first pull
  takes no turn of its own (it runs beside whatever has the turn), so that its visitor waits once for the
  others, not twice;
- a PULL-DOC reply is written while the session's document lock is held: nothing changes the Document meanwhile;
- a build whose websocket closed while it waited is skipped, and its session discarded at the next check;
- at most `MAX_WAITING` builds wait or run at once per server process (`python -m lineare.app --max-waiting-builds`),
  `MAX_WAITING_PER_ADDRESS` of them from one address (a class behind one school address fits; one client cannot
  keep the whole cap full), and one address has at most limits.NEW_SESSIONS_BURST new sessions at once, then one
  per limits.NEW_SESSION_EVERY_S: past either, a new websocket is closed at once with code 1013 ("try again later")
  and one log line, and the page (app/js/page/busy.js, in every page's frame) tells its visitor so, in the page's
  language.

Every replacement of a library internal made here is listed in app/server/patches.py, which installs this
module only on a tested (Panel, Bokeh, param) set and only if what it replaces is what it expects (else one
log line, and pages are built on the loop as plain Panel does).
"""
import asyncio
import contextlib
import contextvars
import functools
import logging
import sys
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor

from lineare.app.server import limits

BUILDER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lineare-build")
WRITER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lineare-write")
SWITCH_INTERVAL_S = 0.001
# builds waiting or running per server (--max-waiting-builds). A page costs ~0.6-1 s of CPU on a quiet 2-core
# machine: a class of 60 behind one address fits even when one process of `python -m lineare.app` accepts all of it (16
# refused a quarter of a class of 60 on 2 servers), and one address cannot take the last 20 places from the others,
# whose builds, taking turns, come before most of the class's
MAX_WAITING = 80
MAX_WAITING_PER_ADDRESS = 60
BUSY_CODE, BUSY_REASON = 1013, "the server is busy: try again in a moment"
log = logging.getLogger("lineare.building")
# a weak reference to the websocket a session is being made for (set in Bokeh's _async_open): its build is
# skipped once it has closed. Weak: the contexts copied meanwhile (a build's, a session's tasks) must not keep it.
ASKER = contextvars.ContextVar("lineare_asker", default=None)
builds = {"built": 0, "skipped": 0, "refused": 0}
waiting = set()                       # per build waiting or running: its websocket, or a stand-in for a GET's


def busy_script():
    """The script (app/js/page/busy.js, in every page's frame) that shows a visitor refused at the cap a line saying
    so (translated now: the page's language)."""
    from lineare.app.components.browser import page_script
    from lineare.app.i18n import _

    words = {"busy": _("The server is busy: too many pages are being opened at once. Try again in a moment."),
             "again": _("Try again")}
    return page_script("busy", {"code": BUSY_CODE, "words": words})


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


def install():
    """Patch Panel's Application (every page of `panel serve` is one) to build documents on BUILDER, and Bokeh's
    WSHandler to skip a gone visitor's build and cap the builds waiting. False (and one log line) when what it
    replaces is not what it was written against: pages are then built on the loop, as plain Panel does."""
    import bokeh.io.doc
    from panel.io.application import Application
    from panel.io.document import _destroy_document as destroy_document
    from panel.io.state import state

    from lineare.app.server.patches import BY_NAME, problem

    created, initialize = Application.on_session_created, Application.initialize_document
    if getattr(created, "lineare", False):
        return True
    trouble = problem(BY_NAME["build-on-thread"])
    if trouble:
        log.warning("Lineare: pages are built on the event loop, as plain Panel does: %s", trouble)
        return False
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
    skip_gone_and_cap()
    return True


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
        # a new page's first pull finishes its opening, begun by its build's turn: it takes no second turn (its
        # visitor would wait for one more build of each other address). One per session, and each session's build
        # waited its turn: a pull past the first takes its turn like a build.
        first = not getattr(self, "lineare_pulled", False)
        self.lineare_pulled = True
        turn = contextlib.nullcontext() if first else limits.PAGE_WORK.turn(
            limits.address_of(getattr(connection, "_socket", None)), self.id)
        async with turn:
            return await asyncio.get_running_loop().run_in_executor(
                WRITER, connection.protocol.create, "PULL-DOC-REPLY", message.header["msgid"], self.document)

    ServerSession._handle_pull = _needs_document_lock(_handle_pull)
