"""Build every page server-side, without a browser, and read its visible text: what tests/test_every_sentence.py
checks for English words on Italian pages. A page is built as `python -m lineare.app` builds it for a session (the
shell, the dashboard, its sidebar), into a Bokeh document; its text is every string property of every model
(titles, labels, legends, hover labels, options, HTML), and the string columns of its data sources."""
import html
import re
import types

import numpy as np

# properties that hold no text a student reads (styles, code, identifiers, number formats)
NOT_TEXT = {"stylesheets", "css_classes", "styles", "code", "tags", "name", "id", "subscribed_events", "syncable",
            "js_property_callbacks", "js_event_callbacks", "format", "formatter", "tags", "icon", "url",
            "template", "attributes", "events", "callbacks", "scripts", "data_model", "classes", "children",
            "sizing_mode", "margin", "align", "location", "orientation", "theme", "stylesheet", "value_throttled",
            "button_type", "button_style", "text_align", "text_baseline", "text_color", "text_font",
            "text_font_style", "line_color", "fill_color", "hatch_color", "background_fill_color", "border_line_color",
            "level", "render_mode", "active_drag", "active_scroll", "active_inspect", "active_tap", "active_multi",
            "dimension", "mode", "line_dash", "line_cap", "line_join", "color", "x", "y", "selection_policy",
            "palette", "nan_color", "high_color", "low_color", "clear_color", "session_id", "root_url", "theme_json",
            "_property_values", "esm", "_esm", "importmap", "_render_count", "nodes", "looped",
            "value"}                 # a value is a key among options, or what a student typed
_DROP = re.compile(r"<(math|code|pre|style|script)\b.*?</\1>", re.S | re.I)


def session_document(slug, args):
    """The Bokeh document of one session of page `slug` (None: the landing page) opened with URL `args`."""
    from bokeh.document import Document
    from panel.io.state import set_curdoc

    from lineare.app.components.later import build_all
    from lineare.app.session import Session
    from lineare.app.shell import page

    doc = Document()
    request = types.SimpleNamespace(arguments={k: [v.encode()] for k, v in args.items()}, headers={}, cookies={})
    context = types.SimpleNamespace(request=request, id="italian-pages", server_context=None)
    doc._session_context = lambda: context
    with set_curdoc(doc):
        page(slug)().server_doc(doc)
        build_all(doc)                          # the sections made when a visitor scrolls to them
        session = Session.current()
    return doc, session


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, np.ndarray) and value.dtype.kind in "OU":
        for item in value.ravel():
            yield from _strings(item)
    elif isinstance(getattr(value, "value", None), str):               # a legend's Value("…")
        yield value.value


def model_texts(doc):
    """[(model type.property, text)]: every string a model of `doc` holds, in its visible properties."""
    from bokeh.models import ColumnDataSource

    found = []
    for model in list(doc.models):
        where = type(model).__name__
        if isinstance(model, ColumnDataSource):
            for column, values in model.data.items():
                found.extend((f"{where}.{column}", text) for text in _strings(values))
            continue
        for name, value in model.properties_with_values(include_defaults=False).items():
            if name in NOT_TEXT or name.endswith(("_color", "_alpha", "_width", "_dash", "_policy")):
                continue
            if name == "options":                                       # (value, label): the label shows
                value = [item[1] if isinstance(item, (list, tuple)) else item for item in value]
            found.extend((f"{where}.{name}", text) for text in _strings(value))
    return found


def visible(text):
    """A property's text as read: HTML unescaped and stripped of tags, formulas, code and styles, hover fields
    (@x{0.00}) and the placeholders the browser fills in ({speed})."""
    text = html.unescape(text)
    text = _DROP.sub(" ", text)
    text = re.sub(r"<[^>]+>", " ", text)
    text = html.unescape(text)
    text = re.sub(r"\$\$.+?\$\$|\$[^$]+\$", " ", text, flags=re.S)
    return re.sub(r"[@$]\w+(\{[^}]*\})?|\{\w*\}", " ", text)


# common English words, none of them also an Italian word (no "a", "in", "come", "era", "gate", "token", "state",
# "pause")
ENGLISH = set("""
the and of with what which from this that these those is are was were be its they their there here how when where why
who by for not into each every all some none one two three answer answers answered question questions summary memory
step steps word words pair pairs right wrong left later earlier first last next let through similar show shows hide
open press play speed download model models layer layers head heads key keys value values query queries prompt
input output loss read reads write writes written forget forgets keep keeps kept fade fades erase erases time times
size sure share position on at or to as an if then than more less only also same other new old much many about after
before between below above up down out you your random seed run runs measure""".split())


def english_words(text):
    """The English words of a visible text: words of the list above, outside parentheses of up to three words
    (an English term beside its Italian one, "domanda (query)") and outside code-like names (step_linear)."""
    text = re.sub(r"\((?:[\w-]+ ?){1,3}\)", " ", text)
    words = re.findall(r"[\w'’-]+", text)
    return sorted({word for word in words if word.lower() in ENGLISH})
