"""The "Parallel = recurrent" page in a real browser against a real server (fixtures in conftest.py)."""
import re

from first_screen import WIDE, check_first_screen, scroll_to_every_section
from seeing import redrawn

PAGE = "/parallel-recurrent"
MASK, COUNT, COST = 4, 5, 6
CANVAS_TEXTS = """() => [...Bokeh.documents[0].all_models]
    .filter(m => m.constructor.__name__ === 'Title' && m.visible).map(m => m.text)"""
COUNTED = """() => [...Bokeh.documents[0].all_models].filter(m => m.data && 'count' in m.data)
    .map(m => m.data.count.length)"""


def figure(page, index):
    """A screenshot of one Bokeh picture: 0–2 the outputs (recurrent, chunked, parallel), 3 the difference,
    4 the mask, 5 the counted cost, 6 the measured cost (3–6 once their sections are scrolled to)."""
    return page.locator(".bk-Figure").nth(index).screenshot()


def wait_for_title(page, text, timeout=15_000):
    """A title Bokeh paints on its canvas (not in the DOM): wait until one reads `text`."""
    page.wait_for_function(f"() => ({CANVAS_TEXTS})().includes({text!r})", timeout=timeout)


def wait_for_url(page, fragment):
    page.wait_for_function(f"() => window.location.search.includes({fragment!r})")


def after(texts, label):
    """The text shown right after `label` (a slider's value)."""
    return texts[texts.index(label) + 1]


def test_loads_offline_switches_level_and_language(open_page):
    visit = open_page()
    page = visit.open(f"{PAGE}?lang=en&level=elementare")
    page.get_by_role("heading", name="Parallel = recurrent").wait_for()
    scroll_to_every_section(page)
    page.get_by_text("How far apart the three answers are").wait_for()
    assert page.locator(".bk-Figure").count() == 7
    assert page.locator("math").count() == 0                       # plain words only
    page.get_by_role("button", name="Superiore").click()
    page.locator("math").first.wait_for()
    assert page.locator("math").count() >= 10
    assert "Katharopoulos et al. 2020" in " ".join(visit.text())
    wait_for_url(page, "level=superiore")
    page.get_by_role("button", name="Elementare").click()
    page.locator("math").first.wait_for(state="detached")

    page.get_by_role("button", name="Italiano").click()             # reloads with ?lang=it
    page.get_by_role("heading", name="Parallelo = ricorrente").wait_for()
    scroll_to_every_section(page)
    page.get_by_text("Quanto distano le tre risposte").wait_for()
    texts = " ".join(visit.text())
    assert "Stesso ingresso, tre forme" in texts and "Same input, three forms" not in texts
    assert "Non ancora misurato per RetNet, blocchi da 16." in texts
    assert "lang=it" in page.url
    page.wait_for_timeout(300)
    assert visit.errors == [] and visit.remote == []


def test_chunk_size_redraws_the_mask_and_measure_draws_the_cost(open_page):
    visit = open_page()
    page = visit.open(f"{PAGE}?lang=en&T=64")
    scroll_to_every_section(page)
    page.get_by_text("Not measured yet for RetNet, chunks of 16.").wait_for()
    assert page.evaluate(COUNTED) == [11, 11, 11]           # the counted cost is drawn before any press
    mask, cost = figure(page, MASK), figure(page, COST)
    page.get_by_role("button", name="32", exact=True).click()
    wait_for_url(page, "chunk=32")
    page.get_by_text("Not measured yet for RetNet, chunks of 32.").wait_for()
    assert redrawn(page, lambda: figure(page, MASK), mask)     # the chunk outlines moved
    page.get_by_role("button", name="Measure", exact=True).click()              # timed in a worker thread
    page.get_by_text(re.compile(r"^Measured for RetNet, chunks of 32\.")).wait_for(timeout=25_000)
    page.get_by_role("button", name="Measure again").wait_for()
    wait_for_url(page, "cost=true")
    assert redrawn(page, lambda: figure(page, COST), cost)     # the three curves are drawn
    assert visit.errors == []


def test_a_link_reopens_the_same_view(open_page):
    visit = open_page()
    page = visit.open(f"{PAGE}?lang=en&variant=gla&T=100&chunk=8&channel=5&seed=7&alpha=0.8&level=superiore")
    scroll_to_every_section(page)
    page.get_by_text("GLA fades each key channel at its own speed", exact=False).wait_for()
    assert page.locator("select").first.input_value() == "GLA"
    texts = visit.text()
    assert after(texts, "Sequence length T:") == "100" and after(texts, "Key channel shown in the mask:") == "5"
    assert after(texts, "Forget α (1 keeps everything):") == "0.80"
    assert page.locator("math").count() >= 1
    page.get_by_role("button", name="64", exact=True).click()        # a change goes to the URL …
    wait_for_url(page, "chunk=64")
    page.reload()                                                    # … and comes back with it
    page.locator('nav a[aria-current="page"]').wait_for()
    scroll_to_every_section(page)
    page.get_by_text("GLA fades each key channel at its own speed", exact=False).wait_for()
    for part in ("variant=gla", "T=100", "chunk=64", "channel=5", "seed=7", "alpha=0.8", "level=superiore"):
        assert part in page.url, part
    assert page.locator("select").first.input_value() == "GLA"
    assert after(visit.text(), "Key channel shown in the mask:") == "5"
    assert visit.errors == []


def test_malformed_url_values_give_notices_and_defaults(open_page):
    visit = open_page()
    page = visit.open(f"{PAGE}?lang=en&variant=softmax&T=99999&chunk=7&alpha=abc&channel=-4&seed=%3Cb%3E&cost=maybe")
    notices = page.get_by_role("alert")
    notices.first.wait_for()
    assert notices.count() == 7, visit.text()
    texts = " ".join(notices.all_inner_texts())
    for key in ("variant", "T", "chunk", "alpha", "channel", "seed", "cost"):
        assert f"“{key}”" in texts, key
    assert "<b>" in texts                                            # shown as text, never as markup
    assert page.locator("select").first.input_value() == "RetNet"
    scroll_to_every_section(page)
    page.get_by_text("Not measured yet for RetNet, chunks of 16.").wait_for()
    assert after(visit.text(), "Sequence length T:") == "256"
    for part in ("variant=retnet", "T=256", "chunk=16", "channel=0", "seed=0", "cost=false"):
        wait_for_url(page, part)
    assert visit.errors == [] and visit.dialogs == []


def test_the_strips_fill_in_each_forms_order(open_page):
    """The page opens with the chunked form one block from done: three strips filled to three lengths;
    a step forward fills one more token of the recurrent strip and one more block of the chunked one."""
    visit = open_page()
    page = visit.open(f"{PAGE}?lang=en")
    wait_for_title(page, "Recurrent: one token per step, 3 of 64 answered")
    wait_for_title(page, "Chunked: a block of 16 per step, 48 of 64 answered")
    wait_for_title(page, "Parallel: all 64 tokens in one step")
    recurrent = figure(page, 0)
    page.locator("body[data-lineare-keys=ready]").wait_for(state="attached")
    page.get_by_role("heading", name="Parallel = recurrent").click()          # focus on the page
    page.keyboard.press("ArrowRight")
    wait_for_title(page, "Recurrent: one token per step, 4 of 64 answered")
    wait_for_title(page, "Chunked: a block of 16 per step, 64 of 64 answered")
    page.wait_for_function("() => window.location.search.includes('t=3')")
    assert redrawn(page, lambda: figure(page, 0), recurrent)
    page.get_by_role("button", name="32", exact=True).click()              # a new run opens on its own step
    wait_for_title(page, "Chunked: a block of 32 per step, 32 of 64 answered")
    wait_for_title(page, "Recurrent: one token per step, 1 of 64 answered")
    assert visit.errors == []


def test_the_point_is_on_the_first_screen_of_a_projector(chromium, server):
    """The three strips and the sentence about them, at 1366×768 with the sidebar open, in both languages
    and levels, and no sideways scrolling; at 1920×1080 too."""
    assert check_first_screen(chromium, server, PAGE, pictures=3) == []
    assert check_first_screen(chromium, server, PAGE, pictures=3, viewport=WIDE) == []
