"""The app without a browser: catalogs, URL parsing, the token grammar, the store, sessions, the player."""
import math

import numpy as np
import pytest

from lineare.app import i18n, mechanism
from lineare.app.components.player import Player
from lineare.app.i18n import _, language, negotiate
from lineare.app.i18n.catalogs import problems
from lineare.app.urlstate import read_query
from lineare.engine.ops import VARIANTS


# ------------------------------------------------------------------------------------ i18n

@pytest.mark.parametrize("lang", i18n.LANGUAGES)
def test_every_message_is_translated(lang):
    """Every _()/N_() string in app/ has a non-empty, non-fuzzy msgstr with the same placeholders."""
    assert problems(lang) == []


def test_the_runtime_needs_no_catalog_tools():
    """The app imports app.i18n alone; Babel's catalog tools and POSIX-only modules stay out of it."""
    import subprocess
    import sys
    code = ("import sys, app.i18n; from app.i18n import _; "
            "assert 'fcntl' not in sys.modules and 'lineare.app.i18n.catalogs' not in sys.modules, sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_catalogs_are_used_and_differ():
    with language("it"):
        assert _("The state fills up") == "La memoria si riempie"
    with language("en"):
        assert _("The state fills up") == "The state fills up"


def test_language_negotiation():
    assert negotiate("it-IT,it;q=0.9,en;q=0.8") == "it"
    assert negotiate("en-US,en;q=0.9,it;q=0.8") == "en"
    assert negotiate("fr-FR,fr;q=0.9,it;q=0.5,en;q=0.4") == "it"
    assert negotiate("de") == i18n.DEFAULT_LANGUAGE
    assert negotiate("") == i18n.DEFAULT_LANGUAGE
    assert negotiate("it;q=abc, en") == "en"


def test_compile_writes_fresh_catalogs():
    compiled = i18n.compile_catalogs()
    assert {p.parent.parent.name for p in compiled} == set(i18n.LANGUAGES)
    assert all(p.stat().st_size > 0 for p in compiled)


# ------------------------------------------------------------------------------ URL values

def args(**values):
    return {k: [v.encode()] for k, v in values.items()}


def test_url_values_are_cleaned_with_notices():
    from lineare.app.dashboards.state_fills_up.model import StateStore
    with language("en"):
        values, notices = read_query(StateStore, StateStore.URL, args(
            variant="nope", alpha="abc", heads="7", pairs="-3", seed="1e999", beta="nan", preset="crowd"))
    assert values["variant"] == "linear" and values["preset"] == "crowd"
    assert values["heads"] == 4 and values["pairs"] == 1
    assert values["alpha"] == StateStore.param.alpha.default and values["beta"] == StateStore.param.beta.default
    assert values["seed"] == StateStore.param.seed.default
    assert len(notices) == 6 and all(isinstance(n, str) and n for n in notices)


def test_url_notices_quote_bounded_untrusted_text():
    from lineare.app.dashboards.state_fills_up.model import StateStore
    with language("it"):
        values, notices = read_query(StateStore, StateStore.URL, args(variant="<b>" + "x" * 500, text="y" * 900))
    assert len(values["text"]) == 500
    assert len(notices) == 2 and all(len(n) < 300 for n in notices)
    assert "non è valido" in notices[0]


def test_valid_url_values_pass_unchanged():
    from lineare.app.dashboards.state_fills_up.model import StateStore
    values, notices = read_query(StateStore, StateStore.URL, args(variant="gla", alpha="0.8", heads="2"))
    assert notices == [] and values == {"variant": "gla", "alpha": 0.8, "heads": 2}


# ------------------------------------------------------------------------- mechanism mode

def test_grammar():
    tokens, problems = mechanism.parse("Anna:21 Anna? · Bruno:4,Bruno?")
    assert [t.kind for t in tokens] == ["write", "ask", "wait", "write", "ask"]
    assert tokens[0].key == "Anna" and tokens[0].value == "21" and problems == []


def test_hostile_and_bad_input_is_reported_not_run():
    tokens, problems = mechanism.parse("<script>alert(1)</script> Anna:1 x")
    assert [t.text for t in tokens] == ["Anna:1"]
    assert problems == [("unknown", "<script>alert(1)</script> x")]
    assert mechanism.parse("   ")[1] == [("empty", "")]
    tokens, problems = mechanism.parse(" ".join(["a:1"] * 200))
    assert len(tokens) <= mechanism.MAX_TOKENS and {c for c, _ in problems} == {"too_long", "too_many"}


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_variant_answers_the_phone_book(variant):
    tokens, _ = mechanism.parse(mechanism.PRESETS["phonebook"])
    run = mechanism.run_sequence(variant, tokens, heads=2)
    assert len(run.records) == len(tokens)
    asked = [answer for t, answer in zip(tokens, run.answers) if t.kind == "ask"]
    assert asked and all(answer.right for answer in asked)
    if variant == "softmax":
        assert run.records[-1].kv_cache_bytes > run.records[0].kv_cache_bytes
    else:
        assert run.records[-1].state.shape == (1, 2, mechanism.D_V, mechanism.D_K)


def test_delta_rule_replaces_where_the_sum_mixes():
    tokens, _ = mechanism.parse(mechanism.PRESETS["overwrite"])
    anna = next(i for i, t in enumerate(tokens) if t.text == "Anna?")
    delta = mechanism.run_sequence("deltanet", tokens).answers[anna]
    summed = mechanism.run_sequence("linear", tokens).answers[anna]
    assert delta.value == "99" and delta.similarity > 0.99
    assert summed.similarity < 0.8                       # 21 and 99 piled up: neither is read back cleanly


def test_mqar_example_in_the_grammar():
    tokens = mechanism.mqar_tokens(4, 3)
    writes = [t for t in tokens if t.kind == "write"]
    asks = [t for t in tokens if t.kind == "ask"]
    assert len(writes) == 4 and sorted(t.key for t in asks) == sorted(t.key for t in writes)


def test_embeddings_are_fixed_unit_vectors():
    a = mechanism.embedding("Anna", "key", 0, 0)
    assert math.isclose(np.linalg.norm(a), 1.0) and np.array_equal(a, mechanism.embedding("Anna", "key", 0, 0))
    assert not np.array_equal(a, mechanism.embedding("Anna", "key", 1, 0))


# ------------------------------------------------------------------------ store, sessions

def test_store_keeps_url_gates_and_resets_them_on_a_new_model():
    from lineare.app.dashboards.state_fills_up.model import StateStore
    from lineare.app.variants import REGISTRY
    store = StateStore(variant="gla", alpha=0.5)
    assert store.alpha == 0.5 and store.result.variant == "gla"
    store.variant = "retnet"
    assert store.alpha == REGISTRY["retnet"].alpha and store.result.variant == "retnet"
    store.param.update(source="typed", text="<i>x</i>")
    assert store.problems and store.result.tokens                # falls back to the phone book


def test_sessions_are_separate_and_freed():
    from bokeh.document import Document
    from panel.io.state import set_curdoc

    from lineare.app import session as sessions

    before = sessions.live_sessions()
    docs = [Document(), Document()]
    made = []
    for doc in docs:
        with set_curdoc(doc):
            made.append(sessions.Session.start())
            made[-1].store("x", lambda: object())
    assert made[0] is not made[1] and made[0].stores["x"] is not made[1].stores["x"]
    assert sessions.live_sessions() == before + 2
    for doc in docs:
        for callback in list(doc.session_destroyed_callbacks):
            callback(None)
    assert sessions.live_sessions() == before and made[0].stores == {}


# ------------------------------------------------------------------------------ the player

def test_player_reads_the_frame_and_speed_from_the_url_and_counts_runs():
    player, notices = Player.from_query({"t": [b"7"], "speed": [b"99"]})
    assert player.value == 7 and player.speed == 8.0 and len(notices) == 1      # speed clamped, said so
    player.length = 5
    assert player.frame() == 4                                                  # within the run
    player.new_run(12)
    assert player.length == 12 and player.run == 1 and player.frame() == 7


def test_pictures_send_only_changed_numbers():
    from lineare.app.components.plots import BarsPicture, MatrixPicture, RowsPicture

    sent = []
    pictures = [MatrixPicture("", "", "", 3, 4), BarsPicture("", "", "", 4), RowsPicture("", "", ["a", "b"], 4)]
    for picture in pictures:
        picture.source.on_change("data", lambda attr, old, new: sent.append(1))
    data = np.arange(12.0).reshape(3, 4)
    for repeat in range(2):                      # the second time, nothing is sent
        pictures[0].show(data)
        pictures[1].show(data[0])
        pictures[2].show(data[:2])
    assert len(sent) == 3
    with_nan = data.copy()
    with_nan[0, 0] = np.nan
    pictures[0].show(with_nan)
    pictures[0].show(with_nan.copy())            # NaN equals NaN here: an unfilled cell stays unfilled
    pictures[1].show(data[1])
    pictures[2].show(data[1:])
    assert len(sent) == 6
    np.testing.assert_array_equal(pictures[2].source.data["image"][0], data[1:])


def test_a_run_travels_as_one_array_per_column():
    """Bokeh sends every array of a column as a message of its own: a run of T frames is one array."""
    from lineare.app.components.plots import MatrixPicture, nice_limit, quantize

    rng = np.random.default_rng(0)
    frames = rng.normal(size=(7, 3, 4)).cumsum(axis=0)                   # [T, r, c], not of rank one
    picture = MatrixPicture("", "", "", 3, 4)
    picture.show_frames(frames, np.abs(frames).max(), t=2)
    assert all(len(column) == 1 for column in picture.source.data.values())
    np.testing.assert_array_equal(picture.run_codes(), quantize(frames, nice_limit(np.abs(frames).max())))


def test_heat_maps_name_their_numbers_in_the_page_language():
    from bokeh.models import HoverTool

    from lineare.app.components.plots import MatrixPicture, RowsPicture

    def hover_labels(picture):
        return [label for tool in picture.figure.tools if isinstance(tool, HoverTool) for label, _f in tool.tooltips]

    with language("it"):
        italian = [MatrixPicture("", "", "", 3, 4), RowsPicture("", "", ["a"], 4), MatrixPicture("", "", "", 2, 2,
                                                                                                  value_label="o")]
    with language("en"):
        english = MatrixPicture("", "", "", 3, 4)
    assert [hover_labels(p) for p in italian] == [["valore"], ["valore"], ["o"]]
    assert hover_labels(english) == ["value"]


def test_one_sided_bounds_are_enforced_too():
    import param

    class Knobs(param.Parameterized):
        at_most = param.Number(default=1.0, bounds=(None, 5.0))

    args = lambda **values: {k: [v.encode()] for k, v in values.items()}
    with language("en"):
        values, notices = read_query(Player, {"value": "t", "speed": "speed"}, args(t="-1"))
        assert values == {"value": 0}
        assert notices == ["The link gave “t” the value -1, below the least allowed: 0 is used instead."]
        Player(**values)                                  # accepted: a negative frame used to raise here
        values, notices = read_query(Knobs, {"at_most": "m"}, args(m="9"))
        assert values == {"at_most": 5.0} and "above the most allowed: 5 is used" in notices[0]
        assert read_query(Player, {"value": "t"}, args(t="12")) == ({"value": 12}, [])


def test_parameter_docs_never_become_tooltips():
    import panel as pn

    from lineare.app.dashboards.two_bills.calculator import CalculatorStore
    from lineare.app.session import Session
    from lineare.app.shell import without_doc_tooltips

    session = Session()
    session.stores["two-bills"] = store = CalculatorStore()
    from_doc = pn.widgets.IntInput.from_param(store.param.heads)
    assert from_doc.description == "query heads"                 # what Panel does by itself
    ours = pn.widgets.Button(label="x", description=_("Play or pause (Space)"))
    without_doc_tooltips(session, [pn.Column(pn.Row(from_doc)), ours])
    assert from_doc.description is None and ours.description == "Play or pause (Space)"


def test_texts_that_follow_one_another_share_one_pane():
    """Explanations draws its texts in one HTML pane, each at the session's level; a veiled or hidden one is left
    out, and the pane hides when none is left. The texts' own panes are never made."""
    from lineare.app.components.text import Explanation, Explanations
    from lineare.app.session import Session

    session = Session(language="en")
    first = Explanation(session, elementare="first plain", superiore="first $x$")
    second = Explanation(session, elementare="second plain")
    pane = Explanations(first, second).__panel__()
    assert pane.object.count('<div class="part">') == 2 and "second plain" in pane.object and pane.visible
    session.level = "superiore"                      # the second has no formula text: left out
    assert pane.object.count('<div class="part">') == 1 and "<math" in pane.object
    session.level = "elementare"
    second.veiled, first.shown = True, False
    assert pane.object == "" and not pane.visible
    assert first._pane is None and second._pane is None


def test_a_point_is_framed_on_its_own_text():
    """point_box frames the text's own pane (its margin becomes the frame's padding), once, with no Column."""
    from lineare.app.components.text import Explanation, point_box
    from lineare.app.session import Session

    text = Explanation(Session(language="en"), elementare="Look here.")
    framed = point_box(text)
    assert framed is text.__panel__() and framed.css_classes == ["point"] and framed.margin == (6, 10, 8, 10)
    assert framed.styles["padding"] == "4px 10px 4px 10px" and "border-left" in framed.styles
    assert point_box(text) is framed and framed.css_classes == ["point"] and framed.margin == (6, 10, 8, 10)


def test_hover_numbers_and_knob_values_are_written_in_the_page_language():
    """The hover's JavaScript, run by Playwright's own Node: 0,500 on an Italian page, 0.500 on an
    English one; the α/β sliders write their value with the page's formatter (0,95)."""
    import json
    import subprocess
    from pathlib import Path

    import playwright
    from bokeh.models import CustomJSHover, HoverTool

    from lineare.app.components.controls import mechanism_knobs
    from lineare.app.components.plots import MatrixPicture
    from lineare.app.dashboards.state_fills_up.model import StateStore

    node = Path(playwright.__file__).parent / "driver" / "node"

    def hover(picture, value, numbers):
        tool = next(t for t in picture.figure.tools if isinstance(t, HoverTool))
        decode = next(f for f in tool.formatters.values() if isinstance(f, CustomJSHover))
        args = {"locale": decode.args["locale"], "mapper": {"high_color": None if numbers else "#eee"},
                "scale": {"high": 1.0}}
        script = f"const {{locale, mapper, scale}} = {json.dumps(args)}; const value = {value};\n" \
                 f"console.log((() => {{ {decode.code} }})())"
        return subprocess.run([str(node), "-e", script], capture_output=True, text=True, check=True).stdout.strip()

    with language("it"):
        italian = MatrixPicture("", "", "", 3, 4)
        alpha, _beta, _seed = mechanism_knobs(StateStore())
    with language("en"):
        english = MatrixPicture("", "", "", 3, 4)
    assert hover(italian, 0.5, numbers=True) == "0,500" and hover(english, 0.5, numbers=True) == "0.500"
    assert hover(italian, 63.5, numbers=False) == "-0,500"            # a colour index: (63.5 / 127 − 1) · 1
    assert alpha.format.args["locale"] == "it-IT"
    # every fractional slider of the app is given the page's formatter (`format=`)
    import ast

    def is_float_slider(call):          # pn.widgets.FloatSlider(…) or pn.widgets.FloatSlider.from_param(…)
        f = call.func
        f = f.value if isinstance(f, ast.Attribute) and f.attr == "from_param" else f
        return isinstance(f, ast.Attribute) and f.attr == "FloatSlider"

    sources = (Path(__file__).parents[1] / "app").rglob("*.py")
    calls = [(str(path), call.lineno, {k.arg for k in call.keywords}) for path in sources
             for call in ast.walk(ast.parse(path.read_text())) if isinstance(call, ast.Call) and is_float_slider(call)]
    assert len(calls) >= 5 and [where for *where, keywords in calls if "format" not in keywords] == []


def test_url_caps_at_their_exact_edges():
    """500 characters of text kept whole, 501 cut with a notice; a whole number of 12 digits read (then
    clamped), 13 not read at all; a number of 32 characters read, 33 not; an empty switch is no value."""
    import param

    class Knobs(param.Parameterized):
        text = param.String(default="")
        count = param.Integer(default=3, bounds=(0, 10))
        share = param.Number(default=0.5, bounds=(0.0, 1.0))
        on = param.Boolean(default=False)

    mapping = {"text": "text", "count": "count", "share": "share", "on": "on"}
    with language("en"):
        values, notices = read_query(Knobs, mapping, args(text="x" * 500, count="9" * 12, share="0." + "0" * 29 + "1"))
        assert values["text"] == "x" * 500 and values["count"] == 10 and values["share"] == 1e-30
        assert len(notices) == 1 and "outside the range" in notices[0]            # the count clamped, nothing else
        values, notices = read_query(Knobs, mapping, args(text="x" * 501, count="9" * 13, share="0." + "0" * 30 + "1",
                                                          on=""))
    assert values == {"text": "x" * 500, "count": 3, "share": 0.5, "on": False}
    assert len(notices) == 4 and "first 500 characters" in notices[0]
    assert all("not valid here" in notice for notice in notices[1:]), notices
