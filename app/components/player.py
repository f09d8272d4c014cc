"""Play, pause and step through a run in the browser: the server sends a run once, the browser animates it.

    player, notices = Player.from_query(pn.state.session_args)       # the frame and speed from the URL
    picture.show_frames(frames, limit, t=player.value)               # every frame of the run, at once
    strip = FrameText(html=..., frames=[...])                        # per-frame text (see FrameText)
    player.new_run(length)                                           # after sending a new run

The buttons, the keyboard (Space plays or pauses, ← and → step) and the clock all run in the browser:
at each frame the player points every picture's frame filter (`plots.FRAME_TAG`) at the frame,
multiplies out every rank-one picture (`plots.OUTER_TAG`: u[t] w[t]ᵀ), cuts every growing line after
frame t (`plots.PREFIX_TAG`), sets every per-frame title
(`plots.TEXT_TAG`), tells every `FrameText` (a `lineare:frame` event on the document) and writes `t`
and `speed` into the address bar (`history.replaceState`). None of it is sent
to the server (the models it changes are `syncable=False`), so a class of viewers playing at 8 tokens
per second costs the server nothing; the server is asked again only when a knob changes the run.

The clock jumps to the frame the wall clock asks for: when a frame takes longer than its interval,
the frames in between are skipped rather than queued.
"""
import param
from panel.custom import JSComponent

from lineare.app.components.browser import module
from lineare.app.i18n import _

# sizes times the page's --lineare-scale: a quarter larger in presenter mode (app/shell.py)
PLAYER_CSS = """
:host { display: block; --s: var(--lineare-scale, 1); }
.player { display: flex; flex-wrap: wrap; align-items: center; gap: 8px; margin: 4px 10px; }
button { font-size: calc(16px * var(--s)); min-width: calc(120px * var(--s)); height: calc(44px * var(--s));
         border-radius: 6px; border: 1px solid #0b5cad;
         background: #0d6efd; color: white; cursor: pointer; padding: 0 12px; }
button:hover { background: #0b5ed7; }
button:focus-visible, input:focus-visible { outline: 3px solid #102a43; outline-offset: 2px;
                                            box-shadow: 0 0 0 5px white; }
label { display: flex; flex-direction: column; font-size: calc(16px * var(--s)); color: #323f4b; margin-left: 8px; }
input[type=range] { width: 220px; max-width: 100%; height: 44px; }
.where { font-size: calc(16px * var(--s)); color: #52606d; margin-left: 8px; font-variant-numeric: tabular-nums; }
.spoken { font-size: calc(16px * var(--s)); position: absolute; width: 1px; height: 1px; overflow: hidden;
          clip: rect(0 0 0 0); clip-path: inset(50%); white-space: nowrap; }
"""


class Player(JSComponent):
    """Steps a frame index through 0 … length−1, in the browser."""

    value = param.Integer(default=0, bounds=(0, None), doc="the frame shown when the page opens")
    length = param.Integer(default=1, bounds=(1, None), doc="number of frames of the current run")
    speed = param.Number(default=2.0, bounds=(0.5, 8.0), doc="frames per second when the page opens")
    run = param.Integer(default=0, doc="counts the runs sent: the browser redraws its frame on a new one")
    jump = param.Integer(default=-1, doc="the frame a new run opens on (−1: the browser keeps its own)")
    labels = param.Dict(default={}, doc="the buttons' words, in the page's language")

    URL = {"value": "t", "speed": "speed"}         # read from the URL; the browser writes them back

    _stylesheets = [PLAYER_CSS]

    _esm = module("player")

    @classmethod
    def from_query(cls, args, **defaults):
        """(a Player from untrusted URL args over `defaults`, its notices); see app.urlstate."""
        from lineare.app.urlstate import read_query
        values, notices = read_query(cls, cls.URL, args)
        return cls(**{**defaults, **values}), notices

    def __init__(self, **params):
        from lineare.app.i18n import browser_locale
        params.setdefault("labels", {
            "back": _("Back"), "forward": _("Forward"), "play": _("Play"), "pause": _("Pause"),
            "back_tip": _("Step back (←)"), "forward_tip": _("Step forward (→)"),
            "play_tip": _("Play or pause (Space)"), "speed": _("Speed: {speed} tokens per second"),
            "step": _("Step {t} of {n}"), "locale": browser_locale()})
        params.setdefault("min_height", 52)         # its own height: the buttons wrap on a narrow column
        params.setdefault("sizing_mode", "stretch_width")
        super().__init__(**params)

    def new_run(self, length, jump=None):
        """A new run was sent: its length; the browser keeps its frame (clamped) and redraws it, or opens
        the new run on frame `jump`."""
        self.param.update(length=max(1, int(length)), jump=-1 if jump is None else int(jump), run=self.run + 1)

    def frame(self):
        """The frame the server shows before the browser takes over (the URL's, within the run)."""
        return min(self.value, self.length - 1)


class FrameText(JSComponent):
    """Text that follows the player's frame, our own escaped HTML (never a visitor's raw text).

    - `frames` only: the whole text is swapped at every frame (short texts: a caption, an answer);
    - `html` too: `html` is drawn once and `frames[t]` goes into its element of class `frame-slot`;
      in both cases every element with `data-step="i"` gets the class `past`, `current` or `future`
      (a token strip lights its current token with no text sent per frame).
    """

    html = param.String(default="", doc="drawn once per run")
    frames = param.List(default=[], doc="one HTML string per frame")
    value = param.Integer(default=0, doc="the frame shown before the player's first event")

    _esm = module("frame_text")

    def show(self, frames, html="", t=0):
        """A new run's text: `frames` (one per frame) and, optionally, the part drawn once. Only what
        changed is sent (a knob often changes the numbers but not the captions; each update costs Panel
        a few ms per visitor)."""
        new = {"html": html, "frames": list(frames), "value": t}
        changed = {name: value for name, value in new.items() if getattr(self, name) != value}
        if changed:
            self.param.update(changed)
