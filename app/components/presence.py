"""A page's sign of life: while the page is visible in its tab, the browser tells the server once a
minute. A connection the server hears nothing from for `--idle-minutes` (a tab left in the
background, a script holding a place) is closed (app/server/websocket.py); a class listening to its teacher
keeps its pages, since they stay visible."""
import param
from panel.custom import JSComponent

from lineare.app.components.browser import module


class Presence(JSComponent):
    seen = param.Integer(default=0, doc="counts the minutes the page was seen visible")

    BROWSER_WRITES = ("seen",)                # what the server accepts from the browser (app/server/websocket.py)

    _esm = module("presence")                # beats once a minute (BEAT_MS there)
