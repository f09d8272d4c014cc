"""The transition knob in a real browser against a real server (fixtures in conftest.py).

Few page loads on purpose: each one costs seconds on a busy machine.
"""
import re

from first_screen import scroll_to_every_section
from seeing import redrawn

PAGE = "/transition"


def wait_for_lamp(page, text, timeout=10_000):
    """The banner that names the model the knobs are on."""
    page.get_by_role("status").filter(has_text=text).wait_for(timeout=timeout)


def state_picture(page):
    """A screenshot of the memory S after the sequence (the second picture of the page)."""
    return page.locator(".bk-Figure").nth(1).screenshot()


def test_languages_and_levels_offline(open_page):
    visit = open_page(locale="it-IT")
    page = visit.open(PAGE)                                 # no ?lang=: the browser asks for Italian
    page.get_by_role("heading", name="La manopola della transizione").wait_for()
    wait_for_lamp(page, "Le manopole sono su: Attenzione lineare")
    assert "tiene tutto" in page.locator("tr.lit").inner_text()     # the unified table, its row lit
    assert page.locator("math").count() == 0                # Elementare: plain words, no formulas
    page.get_by_role("button", name="Superiore").click()
    page.locator("tr.lit math").first.wait_for()            # formulas in the table, the intro, the captions
    assert page.locator("math").count() > 20
    page.wait_for_function("() => window.location.search.includes('level=superiore')")

    page.get_by_role("button", name="English").click()      # reloads in English, the rest from the URL
    page.get_by_role("heading", name="The transition knob").wait_for()
    wait_for_lamp(page, "The knobs are on: Linear attention")
    assert "lang=en" in page.url and page.locator("math").count() > 20
    assert "La manopola" not in " ".join(visit.text())
    page.get_by_role("button", name="Elementare").click()
    page.locator("math").first.wait_for(state="detached")
    assert "keeps everything" in page.locator("tr.lit").inner_text()
    assert visit.errors == [] and visit.remote == []


def test_turning_the_knobs_and_reopening_the_link(open_page):
    visit = open_page()
    page = visit.open(f"{PAGE}?lang=en")
    wait_for_lamp(page, "Linear attention")
    score = page.locator(".score").first                    # the knob's recall
    assert score.inner_text() == "3 of 4 answers right"      # the sum keeps Anna's old number
    before = state_picture(page)

    page.get_by_role("button", name="DeltaNet", exact=True).click()
    wait_for_lamp(page, "DeltaNet")
    page.locator('tr.lit[data-variant="deltanet"]').wait_for()
    page.get_by_text("4 of 4 answers right").first.wait_for()
    assert redrawn(page, lambda: state_picture(page), before)       # the picture changed with the model
    page.get_by_text("Scalar: one per token").click()       # a gate chosen by the token: Gated DeltaNet
    wait_for_lamp(page, "Gated DeltaNet")
    beta = page.get_by_role("slider").nth(1)                # β, by keyboard: 1 → 0.5 in steps of 0.05
    for _ in range(10):
        beta.press("ArrowLeft")
    wait_for_lamp(page, "Between two models: Mamba-2 and Gated DeltaNet")
    scroll_to_every_section(page)                                # the small multiples: made when scrolled to
    page.locator("select").nth(2).select_option(label="GLA")      # small multiple 2
    page.wait_for_function("() => ['gate=scalar', 'beta=0.5', 'model2=gla']"
                           ".every(s => window.location.search.includes(s))")
    assert visit.errors == []

    # the link in a new browser session, with three values spoiled on the way
    again = open_page()
    reopened = again.open(page.url.replace(visit.server, "") + "&model1=gpt&seed=x&model3=%3Cb%3E")
    wait_for_lamp(reopened, "Between two models: Mamba-2 and Gated DeltaNet")
    scroll_to_every_section(reopened)
    assert reopened.locator("tr.near").count() == 2 and reopened.locator("tr.lit").count() == 0
    assert reopened.get_by_role("radio", name="Scalar: one per token").is_checked()
    assert reopened.locator("select").nth(2).input_value() == "GLA"
    notices = reopened.get_by_role("alert")
    assert notices.count() == 3, again.text()               # model1, seed, model3: defaults, with a notice
    texts = " ".join(notices.all_inner_texts())
    assert "“model1”" in texts and "“seed”" in texts and "<b>" in texts       # quoted as text, not markup
    assert reopened.locator("select").nth(1).input_value() == "Linear attention"
    assert reopened.locator("select").nth(3).input_value() == "DeltaNet"
    reopened.wait_for_function("() => window.location.search.includes('model1=linear')")
    assert re.search(r"seed=0\b", reopened.url)
    assert again.errors == [] and again.dialogs == []
