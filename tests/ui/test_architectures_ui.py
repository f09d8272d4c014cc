"""The architectures page in a real browser against a real server (fixtures in conftest.py).

Three tests, eight page loads: each one costs seconds on a busy machine.
"""
import time

from first_screen import check_first_screen, scroll_to_every_section
from seeing import redrawn
from test_app_ui import english_only_strings

PAGE = "/architectures"


def wait_for_lamp(page, text, timeout=10_000):
    """The banner that names the model filled into the skeleton."""
    page.get_by_role("status").filter(has_text=text).wait_for(timeout=timeout)


def wait_for_formulas(page, at_least, timeout=10.0):
    """The level switch redraws every card: wait until their formulas have all arrived."""
    deadline = time.monotonic() + timeout
    while page.locator("math").count() < at_least:
        assert time.monotonic() < deadline, f"only {page.locator('math').count()} formulas"
        page.wait_for_timeout(100)


def test_languages_levels_and_a_spoiled_link(open_page):
    visit = open_page(locale="it-IT")
    page = visit.open(f"{PAGE}?arch=%3Cb%3Egpt")            # no ?lang=: the browser asks for Italian
    page.get_by_role("heading", name="Architetture").wait_for()
    wait_for_lamp(page, "Lo scheletro, completato per Attenzione lineare")     # the default, with a notice
    notice = page.get_by_role("alert")
    assert notice.count() == 1 and "«arch»" in notice.inner_text() and "<b>gpt" in notice.inner_text()
    page.wait_for_function("() => window.location.search.includes('arch=linear')")
    scroll_to_every_section(page)                           # the cards are made when scrolled to
    texts = visit.text()
    english = english_only_strings()
    left = [t for t in texts if t in english]
    long_ones = [e for e in english if len(e.split()) >= 4 and any(e in t for t in texts)]
    assert left == [] and long_ones == [], (left, long_ones)
    assert page.locator("math").count() == 0                # Elementare: plain words, no formulas

    page.get_by_role("button", name="Superiore").click()
    wait_for_formulas(page, 50)                             # the skeleton and every card
    curves = page.locator(".main-picture").first.screenshot()
    page.get_by_role("button", name="DeltaNet", exact=True).click()        # a card's name fills the skeleton
    wait_for_lamp(page, "completato per DeltaNet")
    assert redrawn(page, page.locator(".main-picture").first.screenshot, curves)   # … and thickens its curve
    page.wait_for_function("() => ['level=superiore', 'arch=deltanet']"
                           ".every(s => window.location.search.includes(s))")

    page.get_by_role("button", name="English").click()      # reloads in English, the rest from the URL
    page.get_by_role("heading", name="Architectures").wait_for()
    wait_for_lamp(page, "The skeleton, filled in for DeltaNet")
    scroll_to_every_section(page)
    wait_for_formulas(page, 50)
    assert "Architetture" not in " ".join(visit.text())
    page.get_by_role("button", name="Elementare").click()
    page.locator("math").first.wait_for(state="detached")
    assert page.get_by_text("One card per model").count() == 1
    assert visit.errors == [] and visit.remote == [] and visit.dialogs == []


def test_a_card_opens_the_other_dashboards_on_its_model(open_page):
    visit = open_page()
    page = visit.open(f"{PAGE}?lang=en&level=superiore")
    scroll_to_every_section(page)
    knob = page.locator('a[data-link="knob"][href*="gate=channel"][href*="beta=1"]')
    assert knob.count() == 1 and "alpha=0.7" in knob.get_attribute("href")          # RWKV-7: the nearest knob setting
    assert page.locator('a[data-link="knob"]', has_text="nearest knob setting").count() == 3   # RWKV-6, RWKV-7, mLSTM
    page.locator('a[data-link="state"][href*="variant=rwkv7"]').click()
    page.get_by_role("heading", name="The state fills up").wait_for()
    page.wait_for_function("() => window.location.pathname.endsWith('/state')")
    assert "variant=rwkv7" in page.url and "level=superiore" in page.url
    assert page.locator("select").first.input_value() == "RWKV-7"        # the model chosen in the sidebar
    assert page.locator("math").count() > 0                               # the level came along
    assert visit.errors == [] and visit.remote == []


def test_the_point_is_on_the_first_screen_of_a_projector(chromium, server):
    """The forgetting curves, the eigenvalues and the sentence about them, at 1366×768 with the sidebar
    open, in both languages and levels, and no sideways scrolling."""
    assert check_first_screen(chromium, server, PAGE, pictures=2) == []
