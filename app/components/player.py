"""Play / pause / step back / step forward / speed, with the keyboard: Space, ← and →.

    player = Player(length=24)            # player.value is the current frame, 0 … length−1
    player.param.watch(draw, "value")

Playing is driven by a server-side periodic callback that never queues frames: each tick moves to
the frame the wall clock says we should be at, so when drawing a frame takes longer than the
interval the frames in between are skipped (and Tornado skips the ticks that fell behind).
"""
import math
import time

import panel as pn
import param
from panel.custom import JSComponent

from app.i18n import _


class KeyboardShortcuts(JSComponent):
    """Listens on the whole page: Space toggles play, ← and → step (not while typing in a field)."""

    _esm = """
    export function render({ model }) {
      function onKey(event) {
        if (event.ctrlKey || event.metaKey || event.altKey) { return }
        const target = event.composedPath()[0] || event.target
        const tag = (target.tagName || "").toLowerCase()
        const role = target.getAttribute ? target.getAttribute("role") : null
        if (["input", "textarea", "select"].includes(tag) || target.isContentEditable || role === "slider") { return }
        let action = null
        if (event.code === "Space" || event.key === " ") {
          if (tag === "button") { return }          // a focused button already reacts to Space
          action = "toggle"
        } else if (event.key === "ArrowLeft") {
          action = "back"
        } else if (event.key === "ArrowRight") {
          action = "forward"
        }
        if (action !== null) {
          event.preventDefault()
          model.send_msg(action)
        }
      }
      document.addEventListener("keydown", onKey)
      document.body.dataset.lineareKeys = "ready"     // lets tests (and curious readers) see it is listening
      model.on("remove", () => {
        document.removeEventListener("keydown", onKey)
        delete document.body.dataset.lineareKeys
      })
      return document.createElement("span")
    }
    """

    def __init__(self, on_key, **params):
        super().__init__(**params)
        self._on_key = on_key

    def _handle_msg(self, msg):
        if msg in ("toggle", "back", "forward"):
            self._on_key(msg)


class Player(pn.viewable.Viewer):
    """Steps a frame index through 0 … length−1."""

    value = param.Integer(default=0, bounds=(0, None), doc="current frame")
    length = param.Integer(default=1, bounds=(1, None), doc="number of frames")
    playing = param.Boolean(default=False)
    speed = param.Number(default=2.0, bounds=(0.5, 8.0), doc="frames per second")

    URL = {"value": "t", "speed": "speed"}         # the frame and the speed are part of every link

    @classmethod
    def from_query(cls, args, **defaults):
        """(a Player from untrusted URL args over `defaults`, its notices); see app.urlstate."""
        from app.urlstate import read_query
        values, notices = read_query(cls, cls.URL, args)
        return cls(**{**defaults, **values}), notices

    def __init__(self, **params):
        super().__init__(**params)
        self._callback = None
        self._clock = (0.0, 0)                   # (wall-clock time, frame) when playing (re)started
        button = dict(color="primary", width=120, height=44, stylesheets=[":host { font-size: 16px; }"])
        self._back = pn.widgets.Button(label="◀ " + _("Back"), description=_("Step back (←)"), **button)
        self._play = pn.widgets.Button(label="", description=_("Play or pause (Space)"), **button)
        self._forward = pn.widgets.Button(label=_("Forward") + " ▶", description=_("Step forward (→)"), **button)
        self._back.on_click(lambda _event: self.step(-1))
        self._forward.on_click(lambda _event: self.step(+1))
        self._play.on_click(lambda _event: self.toggle())
        self._speed = pn.widgets.FloatSlider.from_param(self.param.speed, name=_("Speed (tokens per second)"),
                                                       step=0.5, width=240)
        self._keys = KeyboardShortcuts(self._key, width=0, height=0, margin=0)
        self._label_play()
        self._layout = pn.Row(self._back, self._play, self._forward, self._speed, self._keys,
                              align="center", styles={"flex-wrap": "wrap"})

    def __panel__(self):
        return self._layout

    def step(self, delta):
        self.playing = False
        self.value = min(max(self.value + delta, 0), self.length - 1)

    def toggle(self):
        if not self.playing and self.value >= self.length - 1:
            self.value = 0                       # play again from the start
        self.playing = not self.playing

    def _key(self, action):
        {"toggle": self.toggle, "back": lambda: self.step(-1), "forward": lambda: self.step(+1)}[action]()

    @param.depends("length", watch=True)
    def _clamp(self):
        if self.value > self.length - 1:
            self.value = self.length - 1

    @param.depends("playing", watch=True)
    def _label_play(self):
        self._play.label = ("⏸ " + _("Pause")) if self.playing else ("▶ " + _("Play"))
        if self.playing:
            self._start()
        elif self._callback is not None:
            self._callback.stop()
            self._callback = None

    @param.depends("speed", watch=True)
    def _restart(self):
        if self.playing:
            self._start()

    def _start(self):
        if self._callback is not None:
            self._callback.stop()
        self._clock = (time.monotonic(), self.value)
        period = max(int(1000 / self.speed), 50)
        self._callback = pn.state.add_periodic_callback(self._tick, period=period)

    def _tick(self):
        started, first = self._clock
        # the frame the clock asks for (ticks jitter around their time: round, don't floor); at least
        # one frame per tick, more only when this tick is late by over half a frame
        due = max(self.value + 1, first + math.floor((time.monotonic() - started) * self.speed + 0.5))
        if due >= self.length - 1:
            self.value = self.length - 1
            self.playing = False
        elif due > self.value:
            self.value = due                     # jump: frames that could not be drawn in time are skipped
