"""Meaning never carried by colour alone, read from a page's built Bokeh figures (no browser).

`told_by_colour_alone(figure)` lists what in one figure is told apart by its colour and nothing else:
- two series (a legend entry, or a renderer outside the legend) of different colours whose glyphs of one kind
  look the same otherwise: lines of one dash (and no markers along them), markers of one shape, bars or areas of
  one hatch, texts of one text;
- two reference lines (Spans) of different colours and one dash;
- the rows of a renderer whose colour is a column (a bar per pair, a square per answer): two colours of it whose
  rows share a non-colour cue — their hatch, their marker, the texts written at their place (a ✓, a ✗, a number)
  and the named row or column of a categorical axis they sit on.
A colour that encodes a number (a colour mapper's field, the app's value palette) is a scale read with its colour
bar or its numbers, not a category: it is left out.
"""
from bokeh.models import FactorRange, GlyphRenderer, Legend, Span

from lineare.app.components.plots import EMPTY, PALETTE

LINES = {"Line", "MultiLine", "Step", "Segment", "Ray"}
AREAS = {"VBar", "HBar", "Quad", "Rect", "Patches", "Patch", "Wedge", "AnnularWedge", "Annulus", "Block", "Varea",
         "Harea", "Ellipse"}
SCALE = {c.lower() for c in PALETTE} | {EMPTY}          # colours that stand for a value, with a colour bar
COORDINATES = ("x", "y", "xs", "ys", "left", "right", "top", "bottom", "width", "height")
INK = {"#000000", "#ffffff", "black", "white", "#1f2933"}   # a text's ink picked for contrast on its cell
MARKED = 3                                                # markers along a line: at least this many points


def _spec(glyph, name, source):
    """('field', column) or ('value', constant) of a glyph's property; ('scale', …) for a mapped field."""
    value = getattr(glyph, name, None)
    if isinstance(value, dict):                           # {"field": …, "transform": …} / {"value": …}
        if "value" in value:
            return "value", value["value"]
        return ("scale" if value.get("transform") is not None else "field"), value.get("field")
    if hasattr(value, "field"):                           # Field(…)
        return ("scale" if getattr(value, "transform", None) is not None else "field"), value.field
    if hasattr(value, "value") and not isinstance(value, (str, int, float)):
        return "value", value.value
    if isinstance(value, str) and value in source.data:
        return "field", value
    return "value", value


def _alpha(glyph, name, source):
    kind, value = _spec(glyph, name, source)
    return 1.0 if kind != "value" or value is None else float(value)


def _colour_spec(glyph, source):
    """The property that colours what a glyph draws: a text's ink, a line's, an area's or a marker's fill (its line
    where it has no fill)."""
    kind = type(glyph).__name__
    if kind == "Text":
        return "text_color"
    if kind in LINES:
        return "line_color"
    fill = _spec(glyph, "fill_color", source)
    if fill[1] is None or _alpha(glyph, "fill_alpha", source) == 0:
        return "line_color"
    return "fill_color"


def _shown(glyph, source):
    """Whether the glyph draws anything (a hit area for taps is drawn in no colour)."""
    kind = type(glyph).__name__
    alphas = ["text_alpha"] if kind == "Text" else ["line_alpha"] if kind in LINES else ["fill_alpha", "line_alpha"]
    return any(_alpha(glyph, a, source) > 0 for a in alphas)


def _dash(value):
    if isinstance(value, str):
        return {"solid": (), "dashed": (6,), "dotted": (2, 4), "dotdash": (2, 4, 6, 4), "dashdot": (6, 4, 2, 4)}.get(
            value, value)
    return tuple(value or ())


def _kind(glyph):
    kind = type(glyph).__name__
    return "line" if kind in LINES else "area" if kind in AREAS else kind.lower()


def _cue(renderer, markers):
    """What a constant-coloured glyph looks like apart from its colour."""
    glyph, source = renderer.glyph, renderer.data_source
    kind = _kind(glyph)
    if kind == "line":
        return _dash(glyph.line_dash), markers
    if kind == "scatter":
        return _spec(glyph, "marker", source)[1], _spec(glyph, "fill_color", source)[1] is None   # hollow or not
    if kind == "area":
        return str(_spec(glyph, "hatch_pattern", source)[1] or "").strip(), _dash(glyph.line_dash)
    if kind == "text":
        return _spec(glyph, "text", source)[1]
    return kind


def _rows(source):
    return len(next(iter(source.data.values()), []))


def _texts_at(figure):
    """[(x, y, text)]: every text a Text glyph of `figure` draws."""
    found = []
    for renderer in figure.renderers:
        if not isinstance(renderer, GlyphRenderer) or type(renderer.glyph).__name__ != "Text" or \
                not renderer.visible or not _shown(renderer.glyph, renderer.data_source):
            continue
        glyph, source = renderer.glyph, renderer.data_source
        columns = {name: _spec(glyph, name, source) for name in ("x", "y", "text")}
        for i in range(_rows(source)):
            x, y, text = (source.data[v][i] if k == "field" else v for k, v in columns.values())
            if str(text).strip():
                found.append((_key(x), _key(y), str(text)))
    return found


def _near(a, b):
    """Whether a text at `a` stands over a bar at `b` (bars one unit apart: a text over the gap between two
    stands over both)."""
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(a - b) <= 0.5
    return a == b


def _texts_by(texts, kind, x, y):
    """The texts written at a row's place: over a bar (its x; a horizontal bar's y), else at its (x, y)."""
    if kind == "VBar":
        return frozenset(text for tx, _ty, text in texts if _near(tx, x))
    if kind == "HBar":
        return frozenset(text for _tx, ty, text in texts if _near(ty, y))
    return frozenset(text for tx, ty, text in texts if (tx, ty) == (x, y))


def _key(value):
    return tuple(value) if isinstance(value, list) else value.item() if hasattr(value, "item") else value


def _factor(value):
    """The named row or column a value sits on, on a categorical axis (its first level)."""
    return value[0] if isinstance(value, (tuple, list)) else value


def _coloured_rows(figure, renderer, field, texts):
    """Problems of one renderer coloured by a column: colours whose rows share all their other cues."""
    glyph, source = renderer.glyph, renderer.data_source
    colours = [str(c).lower() if c is not None else None for c in source.data[field]]
    if set(colours) - {None} <= SCALE:
        return []
    if type(glyph).__name__ == "Text" and set(colours) - {None} <= INK:
        return []
    kind = type(glyph).__name__
    x_spec, y_spec = _spec(glyph, "x" if kind != "HBar" else "right", source), _spec(glyph, "y", source)
    hatch, marker = _spec(glyph, "hatch_pattern", source), _spec(glyph, "marker", source)
    cues = {}
    for i, colour in enumerate(colours):
        if colour is None:
            continue
        x = source.data[x_spec[1]][i] if x_spec[0] == "field" else x_spec[1]
        y = source.data[y_spec[1]][i] if y_spec[0] == "field" else y_spec[1]
        cue = (str(source.data[hatch[1]][i] if hatch[0] == "field" else hatch[1] or "").strip(),
               source.data[marker[1]][i] if marker[0] == "field" else marker[1],
               _texts_by(texts, kind, _key(x), _key(y)),
               _factor(_key(x)) if isinstance(figure.x_range, FactorRange) else None,
               _factor(_key(y)) if isinstance(figure.y_range, FactorRange) else None)
        cues.setdefault(colour, set()).add(cue)
    problems = []
    names = sorted(cues)
    for a, first in enumerate(names):
        for second in names[a + 1:]:
            shared = cues[first] & cues[second]
            if shared:
                problems.append(f"{kind} rows coloured {first} and {second} differ by colour alone "
                                f"(both {sorted(shared, key=str)[0]})")
    return problems


def told_by_colour_alone(figure):
    """What `figure` tells apart by colour alone, as sentences (empty: nothing)."""
    legend_of = {}
    for legend in [item for item in figure.select(type=Legend)]:
        for number, item in enumerate(legend.items):
            for renderer in item.renderers:
                legend_of[renderer.id] = (legend.id, number)
    series, problems, texts = {}, [], _texts_at(figure)
    for renderer in figure.renderers:
        if not isinstance(renderer, GlyphRenderer) or not renderer.visible or \
                not _shown(renderer.glyph, renderer.data_source):
            continue
        glyph, source = renderer.glyph, renderer.data_source
        prop = _colour_spec(glyph, source)
        kind, value = _spec(glyph, prop, source)
        if kind == "scale":
            continue
        if kind == "field":
            problems += [f"«{figure.title.text if figure.title else ''}»: {p}"
                         for p in _coloured_rows(figure, renderer, value, texts)]
            continue
        # a series: a legend entry, else what one renderer draws (two drawing the same places of one source are
        # one thing drawn twice: a white halo under a dark outline)
        places = (source.id, *(str(_spec(glyph, name, source)) for name in COORDINATES if hasattr(glyph, name)))
        series.setdefault(legend_of.get(renderer.id, places), []).append((str(value).lower(), renderer))
    described = {}
    for key, members in series.items():
        markers = frozenset(_spec(r.glyph, "marker", r.data_source)[1] for _c, r in members
                            if _kind(r.glyph) == "scatter" and _rows(r.data_source) >= MARKED)
        looks = {}
        for _colour, renderer in members:
            looks.setdefault(_kind(renderer.glyph), set()).add(_cue(renderer, markers))
        described[key] = ({c for c, _r in members}, looks)
    keys = list(described)
    title = figure.title.text if figure.title else ""
    for a, first in enumerate(keys):
        for second in keys[a + 1:]:
            (colours_a, looks_a), (colours_b, looks_b) = described[first], described[second]
            if colours_a == colours_b:
                continue
            for kind in set(looks_a) & set(looks_b):
                if looks_a[kind] == looks_b[kind]:
                    problems.append(f"«{title}»: {kind}s of {sorted(colours_a)} and {sorted(colours_b)} differ by "
                                    f"colour alone ({sorted(looks_a[kind], key=str)})")
    spans = [s for s in figure.center if isinstance(s, Span) and s.visible is not False]
    for a, first in enumerate(spans):
        for second in spans[a + 1:]:
            if str(first.line_color).lower() != str(second.line_color).lower() and \
                    _dash(first.line_dash) == _dash(second.line_dash):
                problems.append(f"«{title}»: reference lines {first.line_color} and {second.line_color} differ by "
                                f"colour alone")
    return problems
