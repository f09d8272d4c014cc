"""Exports without a browser: files opened again (GIF, MP4, zip, CSV, HTML) and compared with the
stores' numbers, the limits every export is checked against, the command line, both languages."""
import io
import re
import subprocess
import sys
import zipfile

import imageio.v2 as imageio_v2
import imageio.v3 as iio
import numpy as np
import pandas as pd
import pytest
from PIL import Image, ImageColor

from lineare.app.components.plots import PALETTE, nice_limit, quantize
from lineare.app.dashboards.state_fills_up.model import head_frame
from lineare.app.dashboards.state_fills_up.texts import said
from lineare.app.dashboards.two_bills.model import rolling_median
from lineare.app.export import ExportRefused, Limits, make_file, open_page
from lineare.app.export.__main__ import main
from lineare.app.export.draw import draw, font
from lineare.app.export.files import check, parse_size
from lineare.app.export.pages import plain, strip_from_html
from lineare.app.export.scene import Scene
from lineare.app.i18n import language

SMALL = (480, 270)


@pytest.fixture(scope="module")
def state():
    page, notices = open_page("/state?variant=deltanet&preset=phonebook&lang=en")
    assert notices == []
    return page


@pytest.fixture(scope="module")
def bills():
    page, _notices = open_page("/two-bills?tokens=16&heads=1&dim=16&lang=en")
    return page


def test_a_gif_has_one_frame_per_step_at_the_size_asked(state):
    result = make_file(state, "gif", size=SMALL, fps=4)
    frames = iio.imread(result.data, index=None, extension=".gif")              # [T, H, W, channels]
    assert result.filename == "lineare-state.gif" and result.mime == "image/gif"
    assert frames.shape[:3] == (state.length(), SMALL[1], SMALL[0]) == (11, 270, 480)
    assert not np.array_equal(frames[0], frames[-1])                              # it moves
    assert iio.immeta(result.data, extension=".gif", index=0)["duration"] == 250  # 4 frames per second


def test_an_mp4_reads_back_with_its_frames_size_and_speed(bills, tmp_path):
    result = make_file(bills, "mp4", size=(640, 360), fps=8)
    (tmp_path / result.filename).write_bytes(result.data)                     # ffmpeg reads files
    reader = imageio_v2.get_reader(tmp_path / result.filename, format="FFMPEG")
    try:
        meta = reader.get_meta_data()
        frames = [frame for frame in reader]
    finally:
        reader.close()
    assert meta["codec"] == "h264" and meta["size"] == (640, 360) and meta["fps"] == 8
    assert len(frames) == bills.length() == 16
    assert frames[0].shape == (360, 640, 3)


def test_the_zip_holds_every_frame_as_a_png(state):
    archive = zipfile.ZipFile(io.BytesIO(make_file(state, "zip", size=SMALL).data))
    names = archive.namelist()
    assert names == [f"frame-{i:03d}.png" for i in range(1, 12)]
    assert Image.open(archive.open(names[4])).size == SMALL


def test_a_png_is_the_urls_step_at_projector_size():
    page, _notices = open_page("/state?variant=deltanet&t=5")
    result = make_file(page, "png")
    image = Image.open(io.BytesIO(result.data))
    assert result.filename == "lineare-state-6.png" and image.size == (1920, 1080)
    assert page.scene(5).step == "Step 6 of 11"


def test_heat_maps_use_the_pages_numbers_and_fixed_colour_range(state):
    store, t = state.store, 6
    frame = head_frame(store.result.variant, store.result.records, 0, t)
    memory = state.scene(t).panels[0]
    assert np.array_equal(memory.values, frame.state)
    assert memory.limit == nice_limit(store.limits["state"])                # per run, as the page rounds it
    # the cell of largest |value| is drawn in its palette colour (the browser's 8-bit step)
    image = np.asarray(draw(Scene("", [memory]), (1280, 720)))
    i, j = np.unravel_index(np.abs(frame.state).argmax(), frame.state.shape)
    colour = ImageColor.getrgb(PALETTE[int(quantize(frame.state[i, j], memory.limit))])
    assert (image == colour).all(-1).sum() > 50


def test_the_csv_of_two_bills_is_the_stores_run(bills):
    result = make_file(bills, "csv", table="tokens")
    text = result.data.decode("utf-8")
    assert text.startswith("# Lineare · Two bills · Generating, one token at a time\n# /two-bills?")
    assert "tokens=16" in text.splitlines()[1] and "ms: the wall-clock time" in text
    table = pd.read_csv(io.BytesIO(result.data), comment="#")
    run = bills.store.result
    assert list(table.columns) == ["token", "tokens_in_memory", "kv_cache_bytes", "state_bytes", "softmax_ms",
                                   "state_ms", "softmax_ms_median9", "state_ms_median9"]
    assert table["token"].tolist() == list(range(1, 17))
    assert np.array_equal(table["kv_cache_bytes"], run.kv_cache_bytes)
    assert np.array_equal(table["state_bytes"], run.state_bytes)
    assert np.array_equal(table["softmax_ms"], run.softmax_ms)                  # every digit kept
    assert np.array_equal(table["state_ms_median9"], rolling_median(run.state_ms))


def test_the_two_bills_picture_has_the_work_bill_counted_as_the_page_counts_it(bills):
    from lineare.app.dashboards.two_bills.model import multiply_adds, work_crossing
    from lineare.app.dashboards.two_bills.pictures import WorkPicture

    run, t = bills.store.result, 9
    with language("en"):
        scene = bills.scene(t)
        page = WorkPicture("en")                   # the page's own picture of the same run at the same step
        page.show_run(run, "Linear attention", t)
    work = next(p for p in scene.panels if p.title == "The work bill: multiply-adds per token")
    lines = {s.label: s for s in work.series if s.label}
    softmax, state = multiply_adds(run.held, run.heads, run.dim, run.dim)
    assert np.array_equal(lines["softmax"].x, run.held[:t + 1])
    assert np.allclose(lines["softmax"].y * 1e3, softmax[:t + 1])            # in thousands: 2 d per token held
    assert np.allclose(lines["state (linear attention)"].y * 1e3, state)
    crossing = work_crossing(run.dim, run.dim)
    assert np.array_equal(lines[f"from token {crossing} softmax does more per token"].x, [crossing] * 2)
    so_far = [line for line in scene.caption if line.startswith("So far")]
    assert so_far == [page.subtitle.tags[1][t]]                                # the page's subtitle, word for word
    assert draw(scene, SMALL).size == SMALL


def test_the_csv_of_the_state_holds_every_picture_at_every_step(state):
    table = pd.read_csv(io.BytesIO(make_file(state, "csv", table="pictures").data), comment="#")
    result = state.store.result
    for t in (0, 5, 10):
        frame = head_frame(result.variant, result.records, 0, t)
        for name in ("state", "write", "output"):
            cells = table[(table.step == t + 1) & (table.picture == name)]
            values = np.zeros(np.atleast_2d(getattr(frame, name)).shape)
            values[cells.row, cells.col] = cells.value
            assert np.array_equal(values, np.atleast_2d(getattr(frame, name)).astype(float))
    steps = pd.read_csv(io.BytesIO(make_file(state, "csv", table="steps").data), comment="#",
                        keep_default_na=False)
    assert steps.token.tolist() == [token.text for token in result.tokens]
    asked = [i for i, token in enumerate(result.tokens) if token.kind == "ask"]
    assert all(steps.result[i] in ("ok", "bad") for i in asked)
    assert [steps.answer[i].split(" ✓")[0].split(" ✗")[0] for i in asked] == [said(result.answers[i]) for i in asked]


def test_the_lesson_is_one_file_with_every_frame_and_nothing_to_fetch(state):
    html = make_file(state, "html", size=SMALL).data.decode("utf-8")
    frames = {url for url in re.findall(r"data:image/png;base64,[A-Za-z0-9+/=]+", html) if len(url) > 5000}
    assert len(frames) == state.length()                                          # (Bokeh's icons are small)
    assert "<script src=" not in html and "<link " not in html                  # Bokeh's JavaScript inline
    assert "Step 1 of 11" in html and "DeltaNet" in html


def test_both_languages_italian_words_and_accents_in_the_frames():
    page, notices = open_page("/state?variant=deltanet&lang=it&t=5")
    with language(page.language):                        # make_file does the same
        scene = page.scene(5)
    assert scene.step == "Passo 6 di 11" and scene.title.startswith("La memoria si riempie")
    assert any("Risposta per Bruno" in line for line in scene.caption)
    html = make_file(page, "html", size=SMALL).data.decode("utf-8")
    assert '<html lang="it">' in html and "Passo 6 di 11" in html and "Avvia" in html
    csv_head = make_file(page, "csv", table="steps").data.decode("utf-8").splitlines()[0]
    assert "La memoria si riempie" in csv_head and "lang=it" in make_file(page, "csv").data.decode()
    # an accented letter is drawn as itself, not as the font's empty box
    box = font(20).getmask("\uffff").getbbox()
    assert all(font(20).getmask(letter).getbbox() != box for letter in "àèéìòù")


def test_the_captions_come_from_the_pages_own_html():
    assert plain("<p>one &amp; two</p><p>three<br>four</p>") == ["one & two", "three", "four"]
    strip = strip_from_html('<div class="strip"><div class="tok ask" data-step="0">A?'
                            '<span class="answer"><span class="ok">21 ✓</span></span></div>'
                            '<div class="tok write" data-step="1">B:2<span class="answer"></span></div></div>', 1)
    assert strip.tokens == ["A?", "B:2"] and strip.marks == ["21 ✓", ""] and strip.moods == ["ok", ""]
    assert strip.asks == [True, False] and strip.current == 1


# ------------------------------------------------------------------------------ limits

@pytest.mark.parametrize("size, fps, words", [
    ((99999, 5), 2.0, "is not made here"),
    ((100, 60), 2.0, "is not made here"),
    ((1080, 1920), 2.0, "wider than tall"),
    ((1280, 720), 1000.0, "frames per second"),
    ((1280, 720), 0.0, "frames per second"),
    ((1280, 720), float("nan"), "frames per second"),
])
def test_hostile_sizes_and_speeds_are_refused_with_a_message(state, size, fps, words):
    with pytest.raises(ExportRefused, match=words):
        make_file(state, "gif", size=size, fps=fps)


def test_too_many_frames_for_their_size_are_refused_before_anything_is_drawn():
    check("gif", 56, (1920, 1080), 2.0)                                    # the most at full HD
    with pytest.raises(ExportRefused, match="at most 56"):
        check("mp4", 57, (1920, 1080), 2.0)
    page, _notices = open_page("/two-bills?tokens=128&heads=1&dim=16")
    calls = []
    with pytest.raises(ExportRefused, match="128 frames"):
        make_file(page, "mp4", size=(1920, 1080), progress=lambda *a: calls.append(a))
    assert calls == []


def test_an_export_past_its_time_or_bytes_is_stopped_with_a_message(state):
    with pytest.raises(ExportRefused, match="longer than 0 seconds"):
        make_file(state, "gif", size=SMALL, limits=Limits(max_seconds=0))
    with pytest.raises(ExportRefused, match="MB"):
        make_file(state, "png", size=SMALL, limits=Limits(max_bytes=1000))


def test_unknown_formats_tables_and_pages_are_refused(state):
    with pytest.raises(ExportRefused, match="not a format"):
        make_file(state, "exe")
    with pytest.raises(ExportRefused, match="no table"):
        make_file(state, "csv", table="../../etc/passwd")
    with pytest.raises(ExportRefused, match="not a page"):
        open_page("/admin?x=1")
    assert parse_size("1280x720") == (1280, 720) and parse_size("projector") == (1280, 720)
    assert parse_size("1e9x2") is None and parse_size("12345678901x1") is None


def test_hostile_url_values_are_cleaned_as_the_page_cleans_them():
    page, notices = open_page("/state?variant=nope&alpha=1e308&t=-5&speed=99&text=" + "A:1 " * 400)
    assert page.store.variant == "linear" and page.store.alpha == 1.0
    assert page.frame == 0 and page.speed == 8.0
    for key in ("variant", "alpha", "“t”", "speed", "text"):
        assert sum(key in notice for notice in notices) == 1, (key, notices)
    assert make_file(page, "png", size=SMALL).filename == "lineare-state-1.png"


# ------------------------------------------------------------------------------ the command line

def test_the_command_line_writes_what_it_is_asked(tmp_path, capsys):
    gif = tmp_path / "delta.gif"
    assert main(["/state?variant=deltanet&t=3&lang=it&speed=4", "-o", str(gif), "--size", "small"]) == 0
    assert iio.imread(gif, index=None).shape[:3] == (11, 540, 960)
    table = tmp_path / "bills.csv"
    assert main(["two-bills?tokens=16&heads=1&dim=16", "--format", "csv", "--table", "tokens", "-o", str(table)]) == 0
    assert len(pd.read_csv(table, comment="#")) == 16
    assert main(["/state?variant=deltanet", "-f", "gif", "--size", "9000x9000", "-o", str(tmp_path / "x.gif")]) == 2
    assert main(["/state", "-f", "png", "--size", "huge", "-o", str(tmp_path / "x.png")]) == 2
    assert not (tmp_path / "x.gif").exists() and not (tmp_path / "x.png").exists()
    assert "refused:" in capsys.readouterr().err


def test_python_dash_m_app_export_runs(tmp_path):
    out = tmp_path / "step.png"
    done = subprocess.run([sys.executable, "-m", "lineare.app.export", "/state?variant=gla&t=2&alpha=7",
                           "-o", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "warning:" in done.stderr and "alpha" in done.stderr              # the URL's fix, reported
    assert Image.open(out).size == (1920, 1080)


# ------------------------------------------------------------------------------ the pages of one picture

def read_table(page, name):
    return pd.read_csv(io.BytesIO(make_file(page, "csv", table=name).data), comment="#", keep_default_na=False)


def matrix_of(table, rows, cols):
    values = np.full((rows, cols), np.nan)
    values[table["row"], table["col"]] = table["value"]
    return values


def test_the_transition_page_exports_its_memories_and_answers():
    page, _notices = open_page("/transition?gate=scalar&alpha=0.8&beta=0.5&lang=it")
    store = page.store
    assert Image.open(io.BytesIO(make_file(page, "png", size=(1280, 720)).data)).size == (1280, 720)
    memory = read_table(page, "memory")
    knob = memory[memory.model == "La manopola"]                              # the model names, in Italian
    assert np.array_equal(matrix_of(knob, *store.knob.state.shape), store.knob.state)
    recall = read_table(page, "recall")
    questions = store.knob.recall.questions
    assert recall[recall.model == "La manopola"].question.tolist() == [q.token.text for q in questions]
    cosines = recall[recall.model == "La manopola"].filter(like="cos_").to_numpy()
    assert np.array_equal(cosines, np.array([q.cosines for q in questions]))
    transition = read_table(page, "transition")
    assert np.array_equal(matrix_of(transition, *store.knob.transition.shape), store.knob.transition)


def test_where_memory_fails_exports_its_capacity_curve():
    page, _notices = open_page("/memory-fails?rule=delta&dk=8")
    curve = read_table(page, "curve")
    for name in ("pairs", "error", "best", "accuracy", "bound"):
        assert np.array_equal(curve[name], page.store.curve[name])
    queries = read_table(page, "queries")
    assert len(queries) == page.store.pairs and queries.right.tolist() == page.store.run.right.tolist()
    assert Image.open(io.BytesIO(make_file(page, "png", size=SMALL).data)).size == SMALL
    with pytest.raises(ExportRefused, match="not a format"):
        make_file(page, "gif; rm -rf /")


def test_parallel_equals_recurrent_exports_its_outputs_differences_and_mask():
    page, _notices = open_page("/parallel-recurrent?variant=gla&T=32&chunk=8")
    comparison = page.store.comparison
    outputs = read_table(page, "outputs")
    for form, output in comparison.outputs.items():
        rows = outputs[outputs.form == form]
        assert np.array_equal(matrix_of(rows.rename(columns={"token": "row", "channel": "col"}), *output.shape),
                              output)
    errors = read_table(page, "errors")
    assert len(errors) == len(comparison.errors) == 6
    assert errors.largest_abs.max() == max(largest for largest, _relative in comparison.errors.values())
    mask = read_table(page, "mask").rename(columns={"t": "row", "j": "col", "L": "value"})
    mask["value"] = pd.to_numeric(mask["value"].replace("", np.nan))
    assert np.array_equal(matrix_of(mask, 32, 32), page.store.mask, equal_nan=True)
    assert read_table(page, "cost").empty                                   # not measured: the header alone


def test_architectures_exports_its_two_pictures_and_their_numbers():
    from lineare.app.dashboards.architectures import model

    page, notices = open_page("/architectures?arch=gated_deltanet&lang=it")
    assert notices == [] and not page.animated
    picture = Image.open(io.BytesIO(make_file(page, "png", size=(1280, 720)).data))
    assert picture.size == (1280, 720)
    forgetting = pd.read_csv(io.BytesIO(make_file(page, "csv", table="forgetting").data), comment="#")
    for variant in ("retnet", "gated_deltanet"):
        shown = forgetting[forgetting.model == variant].sort_values("tokens_after").share_left.to_numpy()
        np.testing.assert_array_equal(shown, model.forgetting_curve(variant))
    eigen = pd.read_csv(io.BytesIO(make_file(page, "csv", table="eigenvalues").data), comment="#")
    wide = eigen[(eigen.model == "deltanet") & (eigen.beta == model.WIDE_BETA)].eigenvalue.to_numpy()
    np.testing.assert_allclose(wide, model.eigenvalues("deltanet", model.WIDE_BETA))
    assert wide.min() == pytest.approx(-1.0)                  # β = 2 flips the key's direction


def test_the_exported_forgetting_curves_are_told_apart_without_their_colours():
    """As on the page: each model's line differs from every other by its dash or its marker, and carries marks; a
    dashed curve of many short segments stays dashed (its pattern went on across segments, not from each start)."""
    from lineare.app.export.draw import Painter

    page, _notices = open_page("/architectures?lang=en")
    lines = [s for s in page.scene(0).panels[0].series if s.kind == "line"]
    assert len(lines) >= 8 and all(s.marks is not None and len(s.marks) for s in lines)
    cues = [(str(s.dash), s.marker) for s in lines]
    assert len(set(cues)) == len(cues), cues
    painter = Painter((1280, 720))
    painter.line([(100 + 2 * k, 100) for k in range(200)], "#000000", width=2, dash=True)      # 2-px segments
    row = np.asarray(painter.image.convert("L"))[100, 100:496] < 128
    assert 0.5 < row.mean() < 0.75, row.mean()                  # 10 on, 6 off: about 62 % inked


def test_a_csv_keeps_typed_text_on_its_line_and_out_of_formulas():
    """A visitor's typed text (a page setting, a token) with a newline broke the header; a cell starting
    with = + - @ ran as a formula in a spreadsheet. Numbers keep their minus sign."""
    from types import SimpleNamespace

    from lineare.app.export.files import csv_bytes

    page = SimpleNamespace(title=lambda: "State", slug="state", language="en",
                           settings=lambda: {"text": "a\nb\r\n=HYPERLINK(\"http://evil.example\")"})
    table = SimpleNamespace(title="Steps", notes=["one\nnote"], columns=["token", "=value"],
                            rows=[["=HYPERLINK(\"http://evil.example\",\"x\")", -0.5], ["+1", 3], ["@sum\t", -2],
                                  ["-", np.float64(-1.25)], ["plain", None]])
    text = csv_bytes(page, table).decode("utf-8")
    lines = text.splitlines()
    assert len(lines) == 3 + 1 + 5 and all(line.startswith("# ") for line in lines[:3])
    assert "=HYPERLINK" in lines[1] and lines[2] == "# one note"
    read = pd.read_csv(io.StringIO(text), comment="#", keep_default_na=False)
    assert list(read.columns) == ["token", "'=value"]
    assert read.token.tolist() == ["'=HYPERLINK(\"http://evil.example\",\"x\")", "'+1", "'@sum ", "'-", "plain"]
    assert read["'=value"].tolist() == ["-0.5", "3", "-2", "-1.25", ""]


def test_one_session_makes_one_export_at_a_time_and_pauses_between_them(monkeypatch):
    """The button is disabled while a file is made, but a client's clicks still arrive: a second click
    is answered with a message; a click just after a file waits until PAUSE_S after it."""
    import asyncio
    import threading
    import time
    from types import SimpleNamespace

    from lineare.app.export import section
    from lineare.app.export.files import ExportFile
    from lineare.app.session import Session

    release = threading.Event()
    made = []

    def slow_make(page, fmt, **kwargs):
        made.append(time.monotonic())
        release.wait(10)
        return ExportFile(b"x,y\n", "lineare.csv", "text/csv")

    monkeypatch.setattr(section, "make_file", slow_make)
    monkeypatch.setattr(section, "PAUSE_S", 1.0)
    view = SimpleNamespace(slug="two-bills", session=Session())
    with language("en"):
        one = section.ExportSection(view)
        assert not one.layout.objects                                   # closed: nothing made yet
        one.layout.collapsed = False                                    # opened, as a visitor does first
        assert one.button in one.layout.objects

        async def clicks():
            first = asyncio.ensure_future(one._make())
            await asyncio.sleep(0.2)
            second = await one._make()                                  # while the first is being made
            busy = one.message.object
            release.set()
            done = await first
            ended = one._ended                                          # when the first one ended
            third = await one._make()                                   # at once after it: waits
            return second, busy, done, ended, third
        second, busy, done, ended, third = asyncio.run(clicks())
    assert second is None and "still being made" in busy
    assert done.read() == b"x,y\n" and third.read() == b"x,y\n"
    assert len(made) == 2 and made[1] - ended >= 0.95


def test_two_clicks_inside_the_pause_make_one_export_and_the_file_is_let_go(monkeypatch):
    """After a file, a session's next export waits PAUSE_S; two clicks within that pause (a client's, the button
    being disabled only in the browser) make one file, the other click is answered with a message. The file
    handed to the browser is not kept in the page (FileDownload kept it as a data URL: 72 MiB for a video)."""
    import asyncio
    import time
    from types import SimpleNamespace

    from bokeh.document import Document

    from lineare.app.export import section
    from lineare.app.export.files import ExportFile
    from lineare.app.session import Session

    made = []

    def make(page, fmt, **kwargs):
        made.append(time.monotonic())
        return ExportFile(b"x" * 1000, "lineare.csv", "text/csv")

    monkeypatch.setattr(section, "make_file", make)
    monkeypatch.setattr(section, "PAUSE_S", 1.0)
    view = SimpleNamespace(slug="two-bills", session=Session())
    with language("en"):
        one = section.ExportSection(view)
        one.layout.collapsed = False
        model = one.button.get_root(Document())                       # what the page's document holds

        async def clicks():
            first = await one._make()
            transfers = one.button._transfers
            one.button._sync_data(first)                              # what FileDownload does with the answer
            kept = one.button._transfers - transfers, one.button.data, model.data
            again = asyncio.ensure_future(one._make())                 # inside the pause: waits
            await asyncio.sleep(0.1)
            other = await one._make()                                  # inside the same pause: refused
            message = one.message.object
            return kept, await again, other, message
        kept, again, other, message = asyncio.run(clicks())
    assert kept == (1, "", "")                                        # handed over, then let go
    assert again.read() == b"x" * 1000 and other is None and "still being made" in message
    assert len(made) == 2 and made[1] - made[0] >= 0.95


def test_the_first_lesson_exports_its_table_its_summary_and_its_cost():
    """/softmax: the attention table and the summary S_t, z_t against the sentence's q, k, v computed here,
    the cost against 2·T²·d and 2·T·d², a GIF of one frame per word."""
    from lineare.app.dashboards.take_away_softmax.model import LENGTHS, sentence_vectors

    page, notices = open_page("/softmax?attention=linear&d=32&lang=it")
    assert notices == [] and page.length() == 8
    read = lambda name: pd.read_csv(io.BytesIO(make_file(page, "csv", table=name).data), comment="#")
    q, k, v = sentence_vectors()
    phi = lambda x: np.where(x > 0, x + 1, np.exp(np.minimum(x, 0)))
    scores = np.tril(phi(q) @ phi(k).T)                                           # [T, T], i ≤ t
    weights = read("table")
    expected = [scores[t, i] / scores[t].sum() for t in range(8) for i in range(t + 1)]
    assert np.allclose(weights["weight"], expected, rtol=1e-12)
    memory = read("memory")
    after_5 = memory[memory.word == 5].pivot(index="row", columns="column", values="value").to_numpy()
    S = sum(np.outer(v[i], phi(k[i])) for i in range(5))
    assert np.allclose(after_5, np.vstack([S, phi(k[:5]).sum(axis=0)]), rtol=1e-12)
    cost = read("cost")
    assert list(cost.length_T) == list(LENGTHS) and set(cost.d) == {32}
    assert list(cost.multiply_adds_table_QKt_V) == [2 * T * T * 32 for T in LENGTHS]
    assert list(cost.multiply_adds_summary_Q_KtV) == [2 * T * 32 * 32 for T in LENGTHS]
    assert Image.open(io.BytesIO(make_file(page, "gif", size=SMALL).data)).n_frames == 8
    with language("it"):
        assert " ".join(page.captions(2)).startswith("Parola 3, «ha»")


def test_every_export_cap_at_its_edge_and_one_past():
    """The caps written out: 320 to 1920 pixels wide, 180 to 1080 tall, 1.2 to 2.4 times wider than tall, 0.5 to 8
    frames per second, 128 frames at 1280 × 720 (the pixels of that), 60 MiB, a link of 2,000 characters."""
    from lineare.app.export.files import Budget
    from lineare.app.export.query import split

    for size in [(1920, 1080), (320, 180), (1296, 1080), (1728, 720)]:
        check("gif", 1, size, 2.0)
    for size in [(1921, 1080), (319, 180), (1920, 1081), (324, 179), (1295, 1080), (1729, 720)]:
        with pytest.raises(ExportRefused, match="is not made here"):
            check("gif", 1, size, 2.0)
    check("gif", 1, (1280, 720), 0.5)
    check("gif", 1, (1280, 720), 8.0)
    for fps in (0.49, 8.01):
        with pytest.raises(ExportRefused, match="frames per second"):
            check("gif", 1, (1280, 720), fps)
    check("mp4", 128, (1280, 720), 2.0)
    with pytest.raises(ExportRefused, match="at most 128"):
        check("mp4", 129, (1280, 720), 2.0)
    budget = Budget()
    assert len(budget.bytes(b"x" * 60 * 2 ** 20)) == 60 * 2 ** 20
    with pytest.raises(ExportRefused, match="60 MB"):
        budget.bytes(b"x" * (60 * 2 ** 20 + 1))
    head = "/two-bills?a="
    assert split(head + "x" * (2000 - len(head) - 5) + "&b=12")[1]["b"] == [b"12"]         # 2,000 characters read
    assert split(head + "x" * (2000 - len(head) - 4) + "&b=12")[1]["b"] == [b"1"]          # the 2,001st not


def test_a_session_waits_5_s_between_exports_and_the_server_makes_2_at_a_time(monkeypatch):
    """Past two waiting exports, a third (of another session) is answered at once with a message."""
    import asyncio
    from types import SimpleNamespace

    from lineare.app.export import section
    from lineare.app.session import Session

    assert (section.PAUSE_S, section.MAX_WAITING) == (5, 2)
    monkeypatch.setattr(section, "_waiting", [2])
    with language("en"):
        one = section.ExportSection(SimpleNamespace(slug="two-bills", session=Session()))
        one.layout.collapsed = False
        one._ended = -10.0                                             # no pause to wait
        assert asyncio.run(one._make()) is None
    assert "other files" in one.message.object and not one._making
