"""A page's sign of life: while the page is visible in its tab, the browser tells the server once a
minute. A connection the server hears nothing from for `--idle-minutes` (a tab left in the
background, a script holding a place) is closed (app/server/websocket.py); a class listening to its teacher
keeps its pages, since they stay visible."""
import param
from panel.custom import JSComponent

BEAT_MS = 60_000


class Presence(JSComponent):
    seen = param.Integer(default=0, doc="counts the minutes the page was seen visible")

    BROWSER_WRITES = ("seen",)                # what the server accepts from the browser (app/server/websocket.py)

    _esm = """
    export function render({ model }) {
      const beat = () => { if (document.visibilityState === "visible") { model.seen = model.seen + 1 } }
      const timer = setInterval(beat, BEAT_MS)
      model.on("remove", () => clearInterval(timer))
    }
    """.replace("BEAT_MS", str(BEAT_MS))
