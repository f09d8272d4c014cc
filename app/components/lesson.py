"""One lesson card on a page: predict → act → observe (its browser code: app/js/components/lesson.js).

    card = LessonCard(prompt=..., choices=["21", "99"], correct=1, at=5, press=..., observe=...)

The student picks a prediction (buttons, so mouse or keyboard); the card then says what to do: play the page's
player up to frame `at` (the `lineare:frame` event of app/components/player.py), or sketch the curve the card asks
about on the empty axes of the picture `guess_figure` (mouse, finger, taps, or the arrow keys). The browser writes
back what the student did (`chosen`, `played`, `guess`); the server then gives the page back what the card held
back (app/lessons.py) and sets `acted`, and the card shows what happened and whether the prediction was right.
Texts are our own escaped HTML (formulas already converted), never a visitor's raw text.
"""
import math
from pathlib import Path

import param
from panel.custom import JSComponent

MAX_POINTS = 64                 # a sketch's points, at most: the browser thins a stroke down to fewer

LESSON_CSS = """
:host { display: block; }
.card { border: 2px solid #1d4f7a; border-radius: 10px; background: #f7fafc; padding: 8px 14px;
        margin: 4px 10px 8px 10px; font-size: calc(17px * var(--lineare-scale, 1)); color: #1f2933; }
.head { display: flex; justify-content: space-between; align-items: center; gap: 8px;
        font-size: calc(16px * var(--lineare-scale, 1)); color: #52606d; }
.head a, .end a { color: #1d4f7a; font-weight: 600; text-decoration: none; border: 1px solid #9fb3c8;
                  border-radius: 6px; padding: 2px 10px; }
.head a:hover, .end a:hover { background: #e6eef6; }
.head a[aria-disabled="true"] { visibility: hidden; }
.head .short { display: none; }
.prompt { margin: 6px 0; font-weight: 600; }
.choices { display: flex; flex-wrap: wrap; gap: 8px; margin: 4px 0; }
.ask { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; }
.ask .choices { flex: 0 1 auto; }
.class-start { margin-left: auto; display: flex; flex-wrap: wrap; gap: 8px; align-items: center; }
.class-start .note { color: #3e2c00; }
.class-start .note:empty { display: none; }
.choices button, .sketch button, .keys button, .class-start button { font-size: calc(16px * var(--lineare-scale, 1));
                                  padding: 6px 14px;
                                  border-radius: 8px; border: 2px solid #1d4f7a; background: white; color: #1d4f7a;
                                  cursor: pointer; min-height: 44px; }
.choices button:focus-visible, .class-start button:focus-visible, .head a:focus-visible, .end a:focus-visible,
.sketch button:focus-visible, .keys button:focus-visible {
  outline: 3px solid #102a43; outline-offset: 2px; box-shadow: 0 0 0 5px white; }
.choices button[aria-pressed="true"] { background: #1d4f7a; color: white; }
.sketch button:disabled { border-color: #9fb3c8; color: #7b8794; cursor: default; }
.sketch button.go:not(:disabled), .class-start button { background: #1d4f7a; color: white; }
.class-start button { font-weight: 600; }
.press { margin: 6px 0 2px 0; color: #8d5a00; font-weight: 600; }
.keys { display: flex; flex-wrap: wrap; gap: 8px; margin: 4px 0; align-items: center; }
.keys .where { color: #52606d; font-size: calc(16px * var(--lineare-scale, 1)); font-variant-numeric: tabular-nums; }
.keys button.play { background: #0d6efd; border-color: #0b5cad; color: white; }
.sketch { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin: 4px 0; }
.sketch .how { flex: 1 1 16em; font-size: calc(16px * var(--lineare-scale, 1)); color: #52606d; }
.observe { margin: 6px 0 2px 0; padding: 6px 10px; border-radius: 6px; background: white; }
.verdict { font-weight: 700; margin-right: 6px; }
.differ { display: block; margin-top: 4px; }
.end { margin: 8px 0 2px 0; display: flex; flex-wrap: wrap; gap: 8px; align-items: center; }
.stale { margin: 6px 0 2px 0; padding: 6px 10px; border-radius: 6px; background: #fff8e1; color: #3e2c00;
         border-left: 6px solid #f0b429; }
.stale a { margin-left: 8px; color: #1d4f7a; font-weight: 600; border: 1px solid #9fb3c8; border-radius: 6px;
           padding: 2px 10px; text-decoration: none; white-space: nowrap; }
.right .verdict { color: #1a7f37; } .wrong .verdict { color: #b42318; }
[hidden] { display: none !important; }
.spoken { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
/* presenter mode: the card's type is larger, so it folds too once a prediction is chosen (its question in two lines,
   a click unfolds it), and leaves the sketch's instruction to the line above: the picture it asks about keeps the
   rest of a projector's screen */
.card.present.folded .prompt { max-height: 2.9em; line-height: 1.45; overflow: hidden; cursor: pointer;
                               position: relative; }
.card.present.folded .prompt.cut::after { content: "…"; position: absolute; right: 0; bottom: 0; padding-left: 1.5em;
                                      background: linear-gradient(to right, rgba(247, 250, 252, 0), #f7fafc 40%); }
.card.present .sketch .how { display: none; }
@media (max-width: 600px) {     /* a phone: a third of the screen at most, the rest scrolls inside the card */
  .card { padding: 4px 10px; margin: 2px 4px 6px 4px; max-height: 33vh; overflow-y: auto;
          font-size: calc(16px * var(--lineare-scale, 1)); }
  /* a six-line question and four choices still fit in that third before anything scrolls */
  .prompt { font-size: calc(15px * var(--lineare-scale, 1)); line-height: 1.35; margin: 4px 0; }
  .head { font-size: 14px; gap: 4px; }
  .head span { flex: 1 1 auto; text-align: center; }
  .head .long { display: none; } .head .short { display: inline; }   /* the page's header names the lesson */
  .head a { padding: 2px 8px; white-space: nowrap; }
  .head a .word { display: none; }              /* the arrows alone; the link keeps its name (aria-label) */
  .choices { gap: 4px 6px; margin: 2px 0; }
  .choices button, .sketch button, .keys button { padding: 4px 10px; min-height: 40px; }
  .sketch .how { display: none; }               /* the instruction says it */
  /* the buttons of the action right under the choices, the instruction under them: in the card's third of the
     screen the button to press stays in sight */
  .card { display: flex; flex-direction: column; }
  .card > * { flex-shrink: 0; }                 /* the card scrolls; its parts keep their height */
  .press { order: 2; } .stale, .observe, .end, .spoken { order: 3; }
  /* once a prediction is chosen the card folds: its question in two lines (a tap unfolds it), no links */
  .card.folded .head { display: none; }
  .card.folded .prompt { max-height: 2.9em; line-height: 1.45; overflow: hidden; cursor: pointer; margin: 2px 0;
                         position: relative; flex: none; }
  .card.folded .prompt.cut::after { content: "…"; position: absolute; right: 0; bottom: 0; padding-left: 1.5em;
                                background: linear-gradient(to right, rgba(247, 250, 252, 0), #f7fafc 40%); }
}
"""


class Sketch(param.List):
    """A sketched curve as the browser writes it: 2 to MAX_POINTS points [x, y], each a fraction of the picture's
    axes (0 at the start of an axis, 1 at its end), or empty (nothing sketched yet). Anything else is refused."""

    def _validate_value(self, value, allow_None):
        super()._validate_value(value, allow_None)
        if not value:
            return
        if not 2 <= len(value) <= MAX_POINTS:
            raise ValueError(f"a sketch has 2 to {MAX_POINTS} points, not {len(value)}")
        for point in value:
            if not (isinstance(point, (list, tuple)) and len(point) == 2
                    and all(isinstance(c, (int, float)) and not isinstance(c, bool) and math.isfinite(c)
                            and 0 <= c <= 1 for c in point)):
                raise ValueError("a sketch's point is two numbers between 0 and 1")


class LessonCard(JSComponent):
    """A prediction, the action that tests it and what happened."""

    heading = param.String(default="", doc="e.g. 'Lesson: The state fills up · card 2 of 4' (escaped HTML)")
    prompt = param.String(default="", doc="the question (HTML)")
    choices = param.List(default=[], doc="the predictions to choose from (escaped HTML)")
    correct = param.Integer(default=0, doc="index of the right prediction, computed from the run")
    at = param.Integer(default=-1, doc="the frame at which the answer is out (−1: no player to play)")
    press = param.String(default="", doc="what to do after choosing (HTML)")
    observe = param.String(default="", doc="what happened (HTML)")
    words = param.Dict(default={}, doc="right, wrong, previous, next, stale, back, the sketch's words, and links")
    guess_figure = param.String(default="", doc="the id of the figure to sketch on ('': no sketch)")
    guess_along = param.Selector(default="x", objects=["x", "y"], doc="the axis the sketched curve is a function of")
    chosen = param.Integer(default=-1, bounds=(-1, None), doc="the prediction chosen in the browser (−1: none yet)")
    played = param.Boolean(default=False, doc="the browser's player reached `at` after a choice")
    guess = Sketch(default=[], doc="the sketch the browser sends (fractions of the axes)")
    BROWSER_WRITES = ("chosen", "played", "guess")    # what the server accepts from the browser (server/websocket.py)
    acted = param.Boolean(default=False, doc="the server gave the page back: the answer is out")
    differ = param.String(default="", doc="where the sketch and the true curve differ (escaped HTML)")
    stale = param.Boolean(default=False, doc="the page's settings have left the card's")
    look = param.Boolean(default=False, doc="the page marked what the card speaks of (class lesson-look)")
    present = param.Boolean(default=False, doc="presenter mode: the card brings the page's main picture under it")
    last = param.Boolean(default=False, doc="the lesson's last card: it ends with the way on")

    _stylesheets = [LESSON_CSS]
    _esm = Path(__file__).resolve().parent.parent / "js" / "components" / "lesson.js"

    def __init__(self, **params):
        super().__init__(**params)
        self.param.chosen.bounds = (-1, len(self.choices) - 1)   # a choice the card does not have is refused
