"""Every student, every device: axe-core on every page in both languages (and a card of every lesson),
phone/tablet/projector layouts, touch, the keyboard alone, and the pictures' numbers against the model.

Page loads are shared: each loaded page is checked for several things at once (axe, the layout of
tests/ui/layout.py: sideways scroll, overlaps, touch targets; names, language), so the whole file loads 28
pages: every page at the phone, tablet and projector sizes, plus four pages for touch, keyboard, numbers, zoom.
"""
import re

import numpy as np
import pytest
from axe_playwright_python.sync_playwright import Axe

from app.components.plots import nice_limit
from app.dashboards import DASHBOARDS
from app.dashboards.state_fills_up.model import StateStore, head_frame
from app.lessons import LESSONS
from first_screen import scroll_to_every_section
from layout import layout, problems, table_problems

PAGES = ["", *(d.slug for d in DASHBOARDS if d.build is not None)]
AXE_OPTIONS = {"runOnly": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}
# Violations from inside Bokeh or Panel, which the app cannot fix: (rule, a part of the element's selector, why).
# Keep it short: anything else serious or critical fails the test. Empty today: those axe found are fixed from
# the app (app/components/access.py): Panel's sidebar <ul> of <div>s (list), Bokeh's unnamed spinner arrows
# (button-name) and slider handles (aria-input-field-name).
FROM_LIBRARIES = [
]

# every element below `root` (shadow roots included) matching `selector`
DEEP_JS = """([selector]) => {
  const out = []
  const walk = (node) => {
    if (node.querySelectorAll) { out.push(...node.querySelectorAll(selector)) }
    for (const el of node.querySelectorAll ? node.querySelectorAll("*") : []) { if (el.shadowRoot) walk(el.shadowRoot) }
  }
  walk(document)
  return out.filter(el => el.getClientRects().length > 0)
     .map(el => ({name: el.getAttribute("aria-label") || el.textContent.trim(), role: el.getAttribute("role"),
                  value: el.getAttribute("aria-valuetext"),
                  w: el.getBoundingClientRect().width, h: el.getBoundingClientRect().height}))
}"""


def serious(page):
    """axe's serious and critical violations of the loaded page, less those listed in FROM_LIBRARIES."""
    found = []
    for violation in Axe().run(page, options=AXE_OPTIONS).response["violations"]:
        if violation["impact"] not in ("serious", "critical"):
            continue
        for node in violation["nodes"]:
            where = " ".join(str(t) for t in node["target"])
            if not any(rule == violation["id"] and part in where for rule, part, _why in FROM_LIBRARIES):
                found.append(f'{violation["id"]} at {where}: {node["failureSummary"][:160]}')
    return found


def loaded(visit, path):
    """The page at `path`, drawn (below 900 px the navigation is in the closed drawer: attached, not shown)."""
    return drawn(visit.page, visit.server + path)


def drawn(page, url):
    page.goto(url, timeout=120_000)
    page.locator('nav a[aria-current="page"]').wait_for(state="attached", timeout=60_000)
    if "/?" not in url:                                         # the landing page has no picture
        page.locator(".bk-Figure").first.wait_for(timeout=60_000)
    page.wait_for_timeout(1000)                      # Bokeh draws the rest (the page's script is run by the check)
    if page.locator(".lineare-later").count():       # sections made when scrolled to are checked too
        markers = page.evaluate(MARKERS_JS)
        scroll_to_every_section(page, wait=False)
        page.evaluate("window.scrollTo(0, 0)")
        page.wait_for_timeout(1000)
        # the page hardly moves when a section arrives: its marker held about its height at this width (under a
        # lesson card a section may come shorter: the card holds back some of its parts until the student acts)
        made = page.evaluate(SLOTS_JS, list(markers))
        jumps = {slot: round(made[slot] - height) for slot, height in markers.items()}
        shorter = "lesson=" in url
        assert all(-JUMP < jump < JUMP or (shorter and jump < 0) for jump in jumps.values()), \
            f"{url}: sections taller than their markers by {jumps}"
    return page


JUMP = 300                       # px: how much a section made when scrolled to may move the page below it
# each section's marker (app/components/later.py): the slot that will hold the section is named, and its height read;
# SLOTS_JS: the named slots' heights once the sections are in them
MARKERS_JS = """() => {
  const out = {}
  const walk = (root) => {
    for (const el of root.querySelectorAll("*")) {
      if (el.classList.contains("lineare-later")) {
        const slot = el.getRootNode().host
        slot.dataset.slot = `section ${Object.keys(out).length + 1}`
        out[slot.dataset.slot] = el.getBoundingClientRect().height
      }
      if (el.shadowRoot) walk(el.shadowRoot)
    }
  }
  walk(document)
  return out }"""
SLOTS_JS = """(names) => {
  const out = {}
  const walk = (root) => {
    for (const el of root.querySelectorAll("*")) {
      if (el.dataset && names.includes(el.dataset.slot)) out[el.dataset.slot] = el.getBoundingClientRect().height
      if (el.shadowRoot) walk(el.shadowRoot)
    }
  }
  walk(document)
  return out }"""


def check_page(page, language):
    """What every page must hold at any size: its language, its layout (no sideways scroll, nothing overlaps,
    touch targets of 24 px, wide tables in named scrolling regions, rows of a few lines), named pictures and
    handles, no serious axe violation. Returns the layout facts and the slider handles."""
    assert page.evaluate("document.documentElement.lang") == language
    facts = layout(page)                            # first: it fits and names what the page's script does each second
    assert problems(facts) == [], "\n".join(problems(facts))
    tables = table_problems(page)                   # a wide table scrolls in a named box of its own; low rows
    assert tables == [], "\n".join(tables)
    for picture in page.evaluate(DEEP_JS, [".bk-Figure"]):
        assert picture["role"] == "figure" and len(picture["name"]) > 10, picture
    handles = page.evaluate(DEEP_JS, [".noUi-handle"])
    for handle in handles:
        assert handle["name"] and handle["value"], handle
        if language == "it":                                       # told as shown: 0,90, never 0.90
            assert not re.search(r"\d\.\d{1,2}(?!\d)", handle["value"]), handle     # (131.072 is Italian)
    violations = serious(page)
    assert violations == [], "\n".join(violations)
    return facts, handles


@pytest.mark.parametrize("size, language", [((768, 1024), "en"), ((1366, 768), "it")])
def test_every_page_at_tablet_and_projector_sizes(open_page, size, language):
    """Every page once in each language (the Italian pass opens each lesson's first card with it)."""
    visit = open_page(locale=language)
    visit.page.set_viewport_size({"width": size[0], "height": size[1]})
    for slug in PAGES:
        card = f"&lesson={slug}&card=1" if language == "it" and slug in LESSONS else ""
        page = loaded(visit, f"/{slug}?lang={language}{card}")
        _facts, handles = check_page(page, language)
        if slug == "softmax" and size[0] > 900:                    # the length slider tells 1024, not its notch
            assert any(h["value"] == "1024" for h in handles), handles
        if card:
            assert page.locator("section.card").count() == 1
    assert visit.errors == []


def test_every_page_on_a_phone_by_touch(chromium, server):
    """390×844, touch, Italian, each lesson page on its first card: every page's layout, axe, a one-row header;
    on the state page the drawer, the player by touch and a lesson card answered by tapping."""
    context = chromium.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True,
                                   locale="it-IT")
    errors = []
    try:
        page = context.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        for slug in PAGES:
            card = f"&lesson={slug}&card=1" if slug in LESSONS else ""
            drawn(page, f"{server}/{slug}?lang=it{card}")
            facts, _handles = check_page(page, "it")
            assert facts["header"] <= 64, facts["header"]           # one row: the page is below it, not behind
            assert not page.locator("#header-items").is_visible()  # the projector's buttons are left out here
            if slug == "state":
                touch_the_state_page(page)
    finally:
        context.close()
    assert errors == []


def touch_the_state_page(page):
    """The drawer, the player's 44-px buttons and a card answered by tapping, on the loaded /state card 1."""
    assert page.locator('meta[name="viewport"]').count() == 1
    # the sidebar is a drawer, closed; its button is named in Italian and opens it
    toggle = page.locator("#sidebar-toggle")
    assert toggle.get_attribute("aria-label") == "Mostra o nascondi il menu"
    assert not page.locator("#sidebar").is_visible()
    toggle.tap()
    page.wait_for_function("document.getElementById('sidebar').classList.contains('show')")
    page.keyboard.press("Escape")
    page.locator("#sidebar").wait_for(state="hidden")
    # the player: 44-px buttons, wrapped within its own box (nothing under it is covered)
    bar = page.locator(".player >> visible=true").first
    buttons = bar.locator("button")
    assert buttons.count() == 3
    for i in range(3):
        box = buttons.nth(i).bounding_box()
        assert box["height"] >= 44 and box["width"] >= 44
    player = bar.bounding_box()
    host = bar.evaluate("el => el.getRootNode().host.getBoundingClientRect().toJSON()")
    assert player["y"] + player["height"] <= host["bottom"] + 1
    # a lesson card answered by touch: a prediction, then ▶ steps until the verdict shows
    card = page.locator("section.card")
    card.locator(".choices button").first.tap()
    forward = buttons.nth(2)
    for _step in range(40):
        if card.get_attribute("data-revealed"):
            break
        forward.tap()
        page.wait_for_timeout(50)
    assert card.get_attribute("data-revealed") in ("right", "wrong")
    assert card.locator(".spoken").text_content().strip() != ""          # the verdict, read aloud
    assert re.fullmatch(r"Passo \d+ di \d+", bar.locator(".where").text_content())
    assert bar.locator(".where").get_attribute("aria-live") == "polite"
    assert problems(layout(page)) == []                                   # the card's verdict shown: still fits


def test_softmax_at_200_percent_zoom(chromium, server):
    """A 1366×768 screen at 200 %: 683×384 CSS pixels; no sideways scroll, nothing overlaps, the card's next
    link inside, and a header of one short row (it took a quarter of the height)."""
    context = chromium.new_context(viewport={"width": 683, "height": 384}, device_scale_factor=2)
    try:
        page = drawn(context.new_page(), f"{server}/softmax?lang=en&lesson=softmax&card=1")
        facts = layout(page)
        assert problems(facts) == [], "\n".join(problems(facts))
        assert facts["header"] <= 0.15 * facts["height"], facts["header"]
        assert not page.locator("#sidebar").is_visible()
        link = page.locator("section.card a.next").bounding_box()
        main = page.locator("#main").bounding_box()
        assert link["x"] >= main["x"] and link["x"] + link["width"] <= main["x"] + main["width"]
    finally:
        context.close()


def test_keyboard_alone_from_the_landing_page(open_page):
    """Tab to the first lesson from the landing page, Enter, Tab to a prediction, Space, → until the verdict."""
    visit = open_page()
    page = loaded(visit, "/?lang=en")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "lineare-skip"        # the skip link comes first
    target = next(iter(LESSONS))
    for _tab in range(80):                                                           # to the first lesson's link
        page.keyboard.press("Tab")
        href = page.evaluate(FOCUSED_HREF_JS)
        if f"lesson={target}&card=1" in href:
            break
    else:
        pytest.fail("the first lesson's link was not reached by Tab")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(f"lesson={target}"))
    page.locator("section.card").wait_for(timeout=60_000)
    page.wait_for_timeout(1500)
    for _tab in range(80):                                                           # to the card's first choice
        page.keyboard.press("Tab")
        focused = page.locator("section.card .choices button:focus")
        if focused.count():
            break
    else:
        pytest.fail("no prediction was reached by Tab")
    page.keyboard.press("Space")
    card = page.locator("section.card")
    page.locator("#main").focus()                                                    # the player's keys, off the button
    for _step in range(40):
        if card.get_attribute("data-revealed"):
            break
        page.keyboard.press("ArrowRight")
        page.wait_for_timeout(50)
    assert card.get_attribute("data-revealed") in ("right", "wrong")


FOCUSED_HREF_JS = """() => {
  let el = document.activeElement
  while (el && el.shadowRoot && el.shadowRoot.activeElement) { el = el.shadowRoot.activeElement }
  return el && el.getAttribute ? el.getAttribute("href") || "" : "" }"""
TABLE_JS = """() => [...document.querySelectorAll("dialog.lineare-numbers tr")].slice(1)
                      .map(tr => [...tr.querySelectorAll("td")].map(td => td.textContent))"""


def test_a_pictures_numbers_are_the_models(open_page):
    """The state picture's text alternative and its numbers table, at two steps, against the engine's state."""
    store = StateStore()
    records = store.result.records
    step = nice_limit(store.limits["state"]) / 127                       # the 8-bit colour step of the state
    page = loaded(open_page(), "/state?lang=en&t=0")
    picture = page.locator('.bk-Figure[aria-label^="Head 1: memory S"]')
    for t in (1, 4):
        while page.evaluate("document.body.dataset.lineareFrame") != str(t):
            page.keyboard.press("ArrowRight")
            page.wait_for_timeout(50)
        exact = head_frame(store.variant, records, 0, t).state
        page.wait_for_timeout(1700)                                        # the name follows within 1.5 s
        name = picture.get_attribute("aria-label")
        low, high = (float(x) for x in re.search(r"from (-?[\d.]*\d) to (-?[\d.]*\d)", name).groups())
        assert f"{exact.shape[0]} × {exact.shape[1]} numbers" in name
        assert low == pytest.approx(exact.min(), abs=step) and high == pytest.approx(exact.max(), abs=step)
        picture.locator(".lineare-numbers-button").press("Enter")
        dialog = page.locator("dialog.lineare-numbers")
        dialog.wait_for()
        assert f"(step {t + 1})" in dialog.locator("p").text_content()
        shown = np.array([[float(v.replace(",", "")) for v in row] for row in page.evaluate(TABLE_JS)])
        np.testing.assert_allclose(shown, exact, atol=step / 2 + 5e-4)     # half a colour step, 3 decimals
        page.keyboard.press("Escape")
        dialog.wait_for(state="hidden")
