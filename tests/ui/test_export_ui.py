"""Exports in a real Chromium: the lesson file plays with the network cut and shows the exported frames;
the sidebar's download section gives the step the browser shows, a whole run, and says why it refuses."""
import base64
import io
import zipfile

import imageio.v3 as iio
import numpy as np
from PIL import Image
from playwright.sync_api import expect

from lineare.app.export import make_file, open_page

SMALL = (480, 270)


def pixels(data):
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


def shown_frame(page):
    """The pixels of the picture the lesson shows now, and its frame number."""
    image = page.locator("img[data-frame]")
    src = image.get_attribute("src")
    return int(image.get_attribute("data-frame")), pixels(base64.b64decode(src.split(",", 1)[1]))


def test_the_lesson_plays_offline_in_chromium_and_its_frames_are_the_exported_ones(chromium, tmp_path):
    lesson, _notices = open_page("/state?variant=deltanet&lang=it&t=5&speed=8")
    path = tmp_path / "lesson.html"
    path.write_bytes(make_file(lesson, "html", size=SMALL, fps=8).data)
    archive = zipfile.ZipFile(io.BytesIO(make_file(lesson, "zip", size=SMALL).data))
    frames = [pixels(archive.read(name)) for name in archive.namelist()]

    context = chromium.new_context(viewport={"width": 1000, "height": 900})
    blocked, errors = [], []
    # the network is cut: anything but the file itself (and its data: URLs) is refused
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(("file:", "data:"))
                  else (blocked.append(route.request.url), route.abort()))
    page = context.new_page()
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(path.as_uri())
        page.locator("img[data-frame]").wait_for(timeout=30_000)
        t, shown = shown_frame(page)
        assert t == 5 and np.array_equal(shown, frames[5])              # opens on the link's step
        assert page.get_by_text("Passo 6 di 11").count() == 1
        assert page.get_by_text("Risposta per Bruno", exact=False).count() >= 1     # the caption, in Italian
        page.get_by_role("button", name="▶ Avvia").click()
        page.wait_for_function("() => document.body.dataset.lineareFrame === '10'", timeout=20_000)
        page.get_by_role("button", name="▶ Avvia").wait_for(timeout=5_000)          # stopped at the end
        t, shown = shown_frame(page)
        assert t == 10 and np.array_equal(shown, frames[10])
        page.get_by_role("button", name="◀ Indietro").click()
        page.get_by_role("button", name="◀ Indietro").click()
        page.wait_for_function("() => document.body.dataset.lineareFrame === '8'")
        t, shown = shown_frame(page)
        assert t == 8 and np.array_equal(shown, frames[8]) and not np.array_equal(shown, frames[10])
        assert page.get_by_text("Passo 9 di 11").count() == 1
        assert blocked == [] and errors == []
    finally:
        context.close()


def open_downloads(page):
    section = page.locator(".lineare-downloads")
    section.locator(".card-header, button").first.click()
    section.locator("select").first.wait_for(state="visible", timeout=10_000)
    return section


def download(page, section):
    with page.expect_download(timeout=90_000) as info:
        section.locator(".lineare-export a").click()
    return info.value


def test_the_download_section_gives_the_step_the_browser_shows_and_the_whole_run(open_page, tmp_path):
    visit = open_page("it-IT")
    page = visit.open("/state?lang=it&variant=deltanet&t=2")
    page.wait_for_function("() => document.body.dataset.lineareFrame === '2'", timeout=30_000)
    page.get_by_role("heading", name="La memoria si riempie").click()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => document.body.dataset.lineareFrame === '4'")
    section = open_downloads(page)
    section.locator("select").first.select_option(label="Immagine di questo passo (PNG)")
    picture = download(page, section)
    assert picture.suggested_filename == "lineare-state-5.png"            # the frame shown, not the link's
    picture.save_as(tmp_path / "step.png")
    assert Image.open(tmp_path / "step.png").size == (1920, 1080)
    section.locator("select").first.select_option(label="Animazione (GIF)")
    expect(section.locator("select").nth(1)).to_have_value("960 × 540")
    gif = download(page, section)
    gif.save_as(tmp_path / "run.gif")
    assert iio.imread(tmp_path / "run.gif", index=None).shape[:3] == (11, 540, 960)
    section.get_by_text("Pronto: lineare-state.gif").wait_for(timeout=10_000)
    assert visit.errors == []


def test_an_export_past_the_limits_is_refused_in_the_page_with_a_message(open_page):
    visit = open_page()
    page = visit.open("/two-bills?lang=en&tokens=128&heads=1&dim=16")
    section = open_downloads(page)
    selects = section.locator("select")
    selects.nth(0).select_option(label="Video (MP4)")
    expect(selects.nth(1)).to_have_value("1280 × 720")        # the server's size for a video came back
    selects.nth(1).select_option(label="1920 × 1080")
    downloads = []
    page.on("download", lambda d: downloads.append(d))
    section.locator(".lineare-export a").click()
    section.get_by_text("at most 56", exact=False).wait_for(timeout=30_000)
    page.wait_for_timeout(1000)
    assert downloads == [] and visit.errors == []
    selects.nth(1).select_option(label="960 × 540")                      # a smaller one is made
    assert download(page, section).suggested_filename == "lineare-two-bills.mp4"
