"""The download section of a page's sidebar: what to save, its size, a download button and its progress.

`DashboardView.downloads()` (app/dashboards/base.py) puts it under every page that has an adapter in
`app.export.pages.PAGES`; the view needs nothing else. The button is a `FileDownload` with an async
callback: the file is made on one export thread for the whole process (so the event loop and the other
visitors go on), the progress bar follows frame by frame, and a refusal is shown as a message instead
of a file. At most `MAX_WAITING` exports wait or run at once; past that a visitor is asked to retry.
One session has at most one export at a time (the button is disabled meanwhile, but a client's clicks
may still arrive), and its next one waits until PAUSE_S after its last one ended, so that one session
cannot keep the export thread to itself.

The picture of "this step" needs the frame the browser shows, which the player never sends back: a
small `FrameProbe` reads it (and the speed) from the address bar when a visitor presses the download
button, and sends it just before the button's own click.
"""
import asyncio
import html
import io
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import panel as pn
import param
from panel.custom import JSComponent

from lineare.app.components.browser import module
from lineare.app.components.player import Player
from lineare.app.export.files import SIZES, ExportRefused, make_file
from lineare.app.export.pages import PAGES
from lineare.app.i18n import _, format_number
from lineare.app.urlstate import read_query
from lineare.app.work import on_next_tick

EXPORTS = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lineare-export")
MAX_WAITING = 2
PAUSE_S = 5                  # a session's next export starts (waits until) this long after its last one ended
_waiting = [0]
_lock = threading.Lock()

TITLE_CSS = ":host(.card-title) h3 { font-size: calc(16px * var(--lineare-scale, 1)); }"       # over the theme's 1.17em
MESSAGE_CSS = """
:host { width: 100%; font-size: calc(16px * var(--lineare-scale, 1)); }
.refused { background: #fff8e1; border-left: 5px solid #f0b429; padding: 6px 10px; color: #3e2c00; }
.done { color: #1a7f37; }
"""


class FrameProbe(JSComponent):
    """Sends the browser's frame and speed when a visitor presses an element of class `lineare-export`."""

    frame = param.Integer(default=-1, doc="the frame shown when the download was pressed (−1: unknown)")
    speed = param.Number(default=0.0, doc="the player's speed then (0: unknown)")

    BROWSER_WRITES = ("frame", "speed")           # what the server accepts from the browser (app/server/websocket.py)

    _esm = module("frame_probe")


class ExportDownload(pn.widgets.FileDownload):
    """A FileDownload whose callback may answer None: nothing is sent (a refusal was shown instead), and which
    lets its file go once the browser has it: FileDownload keeps the file it sent (as a data URL in its `data`,
    on the server and in the page's document) until the next one, 72 MiB for a video, for as long as the page
    is open. The browser makes its download of `data` as the transfer count changes; on the next tick, once that
    change has gone out, `data` is emptied.

    Panel 1.9's FileDownload drops `color` on the way to the browser (the button stays grey): here `color`
    goes to the model's `button_type`."""

    _rename = {**pn.widgets.FileDownload._rename, "color": "button_type"}

    document = None                 # the session's document, set by ExportSection as it makes a file

    def _sync_data(self, fileobj):
        if fileobj is None:
            return
        super()._sync_data(fileobj)
        on_next_tick(self.document, self._let_go)      # after the updates the line above scheduled

    def _let_go(self):
        self.data = ""                              # Bokeh's model takes a string


def choices(page):
    """{label: key} of what this page can be saved as."""
    options = {}
    if page.animated:
        options.update({_("Animation (GIF)"): "gif", _("Video (MP4)"): "mp4",
                        _("Every frame (PNG files in a zip)"): "zip"})
    options[_("Picture of this step (PNG)") if page.animated else _("Picture (PNG)")] = "png"
    for name, title in page.tables().items():
        options[_("Numbers: {what} (CSV)").format(what=title)] = f"csv:{name}"
    if page.animated:
        options[_("Lesson in one file (HTML, plays offline)")] = "html"
    return options


class ExportSection(pn.viewable.Viewer):
    """The sidebar's download section of one page, in one session."""

    def __init__(self, view, **params):
        super().__init__(**params)
        self.view = view
        values, _notices = read_query(Player, Player.URL, pn.state.session_args)   # the page reports them
        self._asked = values.get("value"), values.get("speed")
        # the card's title as Panel draws it (an h3 in a card-title pane), at the sidebar's 16 px
        title = pn.pane.HTML(f"<h3>{html.escape(_('Download'))}</h3>", css_classes=["card-title"], margin=(5, 0),
                             stylesheets=[TITLE_CSS])
        # filled when first opened: a closed section adds nothing to the page (no widgets made or drawn, and
        # the page's own controls stay the only ones until a visitor asks for a file)
        self.layout = pn.Card(header=title, collapsed=True, sizing_mode="stretch_width",
                              css_classes=["lineare-downloads"])
        self.layout.param.watch(self._opened, "collapsed")
        self._making, self._ended = False, -PAUSE_S     # this session's export, and when its last one ended

    def __panel__(self):
        return self.layout

    def _opened(self, event):
        if not event.new and not self.layout.objects:
            self._fill()
            self.layout.objects = [self.what, self.size, self.button, self.progress, self.message, self.probe]

    def _fill(self):
        self.page = PAGES[self.view.slug](self.view.session)
        self.page.frame, self.page.speed = self._asked
        self.what = pn.widgets.Select(label=_("What"), options=choices(self.page), sizing_mode="stretch_width")
        sizes = {f"{w} × {h}": key for key, (w, h) in SIZES.items()}
        self.size = pn.widgets.Select(label=_("Size (pixels)"), options=sizes, sizing_mode="stretch_width")
        self.probe = FrameProbe(height=0, width=0, margin=0)
        self.button = ExportDownload(callback=self._make, label=_("Download"), color="primary",
                                     filename="lineare.gif", sizing_mode="stretch_width",
                                     css_classes=["lineare-export"])
        self.progress = pn.indicators.Progress(value=0, max=100, visible=False, sizing_mode="stretch_width",
                                               height=14, bar_color="primary")
        self.message = pn.pane.HTML("", stylesheets=[MESSAGE_CSS], sizing_mode="stretch_width", margin=(0, 10))
        self.what.param.watch(self._chosen, "value")
        self._chosen()

    def _chosen(self, *_events):
        fmt, _sep, table = self.what.value.partition(":")
        self.size.visible = fmt not in ("csv",)
        self.size.value = {"gif": "small", "html": "small", "png": "full-hd"}.get(fmt, "projector")
        self.button.filename = f"lineare-{self.page.slug}" + (f"-{table}.csv" if table else f".{fmt}")
        self.message.object = ""

    def _say(self, text, kind):
        self.message.object = f'<div class="{kind}">{html.escape(text)}</div>'

    async def _make(self):
        """The file the button downloads (a BytesIO), or None after showing why it was refused."""
        fmt, _sep, table = self.what.value.partition(":")
        page, size = self.page, SIZES[self.size.value]
        if self.probe.frame >= 0:
            page.frame = self.probe.frame
        fps = self.probe.speed or page.speed or 2.0
        if self._making:
            self._say(_("Your file is still being made: wait until it is ready."), "refused")
            return None
        self._making = True
        wait = PAUSE_S - (time.monotonic() - self._ended)
        if wait > 0:                                 # the session's last file ended just now: others first
            await asyncio.sleep(wait)
        with _lock:
            busy = _waiting[0] >= MAX_WAITING
            if not busy:
                _waiting[0] += 1
        if busy:
            self._making = False
            self._say(_("The server is making other files right now: try again in a minute."), "refused")
            return None
        doc = self.button.document = pn.state.curdoc
        self.button.disabled, self.progress.value, self.progress.visible = True, 0, True
        self.message.object = ""

        def progress(done, total):
            value = int(100 * done / total)
            on_next_tick(doc, lambda: setattr(self.progress, "value", value))

        def work():
            try:
                return make_file(page, fmt, size=size, fps=fps, table=table or None, progress=progress)
            finally:
                with _lock:
                    _waiting[0] -= 1

        try:
            result = await asyncio.wrap_future(EXPORTS.submit(work))
        except ExportRefused as refusal:
            self._say(str(refusal), "refused")
            return None
        finally:
            self._making, self._ended = False, time.monotonic()
            self.button.disabled, self.progress.visible = False, False
        self.button.filename = result.filename
        self._say(_("Ready: {name} ({size} kB).").format(name=result.filename,
                                                         size=format_number(round(len(result.data) / 1e3))), "done")
        return io.BytesIO(result.data)


def download_section(view):
    """The download section for `view`'s page, or nothing when the page has no export."""
    if view.slug not in PAGES:
        return []
    return [ExportSection(view)]
