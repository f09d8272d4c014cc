"""The pages' browser code: JavaScript files under app/js/, never JavaScript kept in Python strings (a file can be
linted; tests/test_project.py has Node.js parse every one).

    _esm = module("player")                             # app/js/components/player.js: a JSComponent's ES module
    CustomJS(code=callback("lesson_step"), args=…)      # app/js/callbacks/lesson_step.js: a callback's body
    page_script("numbers", {"locale": "it-IT", …})      # app/js/page/numbers.js, in a <script> of the page's frame

A page script reads its settings from the JSON element just before it (`settings_of(name)` in JavaScript:
`JSON.parse(document.getElementById("lineare-<name>-settings").textContent)`), so that no Python fills words or
numbers into the code.
"""
import json
from functools import cache
from pathlib import Path

JS = Path(__file__).resolve().parent.parent / "js"


def module(name):
    """The path of a JSComponent's ES module (Panel reads it: its `_esm` takes a path)."""
    return JS / "components" / f"{name}.js"


@cache
def callback(name):
    """The body of a Bokeh callback (CustomJS, a tick formatter, a hover formatter, a jscallback), read once."""
    return (JS / "callbacks" / f"{name}.js").read_text(encoding="utf-8")


@cache
def _page_code(name):
    return (JS / "page" / f"{name}.js").read_text(encoding="utf-8")


def page_script(name, settings=None):
    """A <script> for the page's frame, with its `settings` as JSON in an element of its own before it ("<" written
    as \\u003c: no text can close the script)."""
    data = ""
    if settings is not None:
        text = json.dumps(settings).replace("<", "\\u003c")
        data = f'<script type="application/json" id="lineare-{name}-settings">{text}</script>\n'
    return f"{data}<script>\n{_page_code(name)}</script>"
