"""Every student, every device: axe-core 4.14 on every page in both languages (and a card of every lesson),
phone/tablet/projector layouts, touch, the keyboard alone, what a screen reader hears (named groups that say which
button is pressed, cards that say whether open, no unnamed Tab stop, one live region), contrast, type sizes on the
pictures' canvas, and the pictures' numbers against what they draw.

Page loads are shared: each loaded page is checked for several things at once (axe, the layout of
tests/ui/layout.py: sideways scroll, overlaps, touch targets; names, language; tests/ui/seeing.py: contrast, Tab
stops, the pictures' text alternatives), so the whole file loads 20 pages: every page at the phone and tablet sizes,
plus four pages for touch, keyboard, numbers, zoom. On the tablet pass the sections made when scrolled to are reached
by the Tab key from the top of the fresh page instead of by scrolling. The projector pass (every page in Italian at
1366×768, each lesson's first card open) is made on the page loads of test_first_screen_ui.py's walk of every page
(check_every_page).
"""
import re

import numpy as np
import pytest

from lineare.app.components.plots import nice_limit
from lineare.app.dashboards import DASHBOARDS
from lineare.app.dashboards.state_fills_up.model import StateStore, head_frame
from lineare.app.lessons import LESSONS
from axe_core import violations
from first_screen import scroll_to_every_section
from layout import layout, problems, table_problems
from seeing import (contrast_problems, focus_ring, group_names, picture_problems, small_canvas_texts,
                    unnamed_controls)

PAGES = ["", *(d.slug for d in DASHBOARDS if d.build is not None)]
# Violations from inside Bokeh or Panel, which the app cannot fix: (rule, a part of the element's selector, why).
# Keep it short: anything else critical, serious or moderate fails the test. Empty today: those axe found are fixed
# from the app (app/components/access.py): Panel's sidebar <ul> of <div>s (list), Bokeh's unnamed spinner arrows
# (button-name) and slider handles (aria-input-field-name), the header as a second unnamed navigation
# (landmark-unique) and the sidebar outside any landmark (region).
FROM_LIBRARIES = [
]
# the names of the frame's two groups in each language, and the words of the pressed language button
GROUPS = {"en": ("Language", "Level", "English"), "it": ("Lingua", "Livello", "Italiano")}

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


def loaded(visit, path, by_tab=False):
    """The page at `path`, drawn (below 900 px the navigation is in the closed drawer: attached, not shown)."""
    return drawn(visit.page, visit.server + path, by_tab)


def drawn(page, url, by_tab=False):
    """The page at `url`, drawn, its sections made when scrolled to made too: by scrolling, or (`by_tab`) by the Tab
    key from the top of the fresh page to its end, every Tab stop's focus halo checked on the way."""
    page.goto(url, timeout=120_000)
    page.locator('nav a[aria-current="page"]').wait_for(state="attached", timeout=60_000)
    if "/?" not in url:                                         # the landing page has no picture
        page.locator(".bk-Figure").first.wait_for(timeout=60_000)
    page.wait_for_timeout(1000)                      # Bokeh draws the rest (the page's script is run by the check)
    if by_tab:
        stops, halos, reached = tab_to_the_end(page)
        assert halos == [], f"{url}: focus halos under 3:1:\n" + "\n".join(halos)
        assert page.locator(".lineare-later").count() == 0, f"{url}: sections the Tab key never reached"
        assert len(stops) > 10, stops
        if page.evaluate(MARKERS_JS) or reached:
            assert reached, f"{url}: no section was made by the Tab key reaching its marker"
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


FOCUSED_JS = """() => {
  let el = document.activeElement
  while (el && el.shadowRoot && el.shadowRoot.activeElement) { el = el.shadowRoot.activeElement }
  return el && el !== document.body ? `${el.tagName}.${el.className}|${el.getAttribute("aria-label") || ""}` : null }"""


def tab_to_the_end(page, most=400):
    """Press Tab from the top of the loaded page until the focus leaves its last stop. Returns the stops, the focus
    halos under 3:1 against what is around them, and how many sections were made because Tab reached their marker
    (the focus then goes on into the section, not back to the page's top)."""
    import time

    stops, halos, reached = [], [], 0
    page.evaluate("document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0)")
    for _press in range(most):
        page.keyboard.press("Tab")
        now = page.evaluate(FOCUSED_JS)
        if now is None or (stops and now == stops[0]):
            break                                          # past the last stop: the browser's own, or round again
        stops.append(now)
        if ".marker|" in now:                              # a section's marker (app/components/later.py)
            deadline = time.monotonic() + 60
            while ".marker|" in (page.evaluate(FOCUSED_JS) or ".marker|"):
                assert time.monotonic() < deadline, "a section reached by Tab was not made within a minute"
                page.wait_for_timeout(100)
            assert page.evaluate(FOCUSED_JS) is not None, "the focus was lost with the section's marker"
            reached += 1
            continue
        ring = focus_ring(page)
        if ring and ring["best"] < 3:
            halos.append(f"{ring['what']}: {ring['best']:.2f}:1 on {ring['around']} ({ring['outline']})")
    else:
        pytest.fail(f"Tab never left the page after {most} stops")
    return stops, halos, reached


def check_page(page, language, axe):
    """What every page must hold at any size: its language, its layout (no sideways scroll, nothing overlaps,
    touch targets of 24 px, wide tables in named scrolling regions, rows of a few lines), named pictures and
    handles, every Tab stop with a role and a name, text at 4.5:1 and marks at 3:1 (pictures included), no critical,
    serious or moderate axe violation. Returns the layout facts and the slider handles."""
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
    unnamed = unnamed_controls(page)
    assert unnamed == [], "\n".join(unnamed)
    faint = contrast_problems(page)
    assert faint == [], "\n".join(faint)
    found = violations(page, axe, FROM_LIBRARIES)
    assert found == [], "\n".join(found)
    return facts, handles


def card_questions(language):
    """Every lesson card's question, in `language`: the name of its group of choices."""
    from lineare.app.i18n import _, language as in_language

    with in_language(language):
        return {_(card.prompt) for cards in LESSONS.values() for card in cards}


def check_groups(page, language):
    """The page's button groups and the sidebar's cards as a screen reader meets them: each group named (in the
    page's language), saying which of its buttons is pressed, and each card's button whether the card is open. The
    sidebar is opened where it is a closed drawer."""
    drawer = not page.locator("#sidebar").is_visible()
    if drawer:
        page.locator("#sidebar-toggle").click()
        page.wait_for_function("document.getElementById('sidebar').classList.contains('show')")
    page.wait_for_timeout(300)
    groups = group_names(page.locator("body").aria_snapshot())                # the sidebar's and the page's
    language_group, level_group, pressed = GROUPS[language]
    assert groups[language_group] == [("Italiano", language == "it"), ("English", language == "en")], groups
    assert [on for _name, on in groups[level_group]].count(True) == 1, groups
    questions = card_questions(language)
    for name, buttons in groups.items():
        # a widget's group has one button pressed; a lesson card's question none until the student chooses
        pressed = [on for _b, on in buttons].count(True)
        asked = any(name.startswith(question[:40]) for question in questions)
        assert name and buttons and pressed == (pressed if asked else 1) <= 1, (name, buttons)
    other = GROUPS["it" if language == "en" else "en"]
    assert not set(groups) & set(other[:2]), groups                    # named in the page's language
    for card in page.locator("#sidebar .card-header").all():
        assert card.get_attribute("aria-expanded") in ("true", "false")
    if page.locator("#sidebar .card-header").count():
        name = "Download" if language == "en" else "Scarica"
        assert page.get_by_role("button", name=name, expanded=False).count() >= 1
    if drawer:
        page.keyboard.press("Escape")
        page.locator("#sidebar").wait_for(state="hidden")
    return groups


# the knobs' groups of every page, named as their labels say (their parameter's name was English on an Italian page:
# "Dim", "Dtype")
NAMED = {"en": {"Heads", "Numbers per label d", "Attention", "Mode", "Sequence", "Keys", "Chunk size C"},
         "it": {"Teste", "Numeri per etichetta d", "Attenzione", "Modalità", "Sequenza", "Chiavi"}}


def check_named(groups, language):
    """`groups`: the names of the groups met on every page in `language`."""
    assert NAMED[language] <= groups and not {"Dim", "Dtype", "Tokens"} & groups, groups


def check_every_page(page, language, slug, axe, card=False):
    """What each page is checked for on the English tablet pass below and the Italian projector pass (the walk of
    test_first_screen_ui.py, which shares its page loads: each lesson's first card open): check_page, the sidebar's
    groups and cards in the accessibility tree (returned), every picture's text alternative against what it draws,
    at 1366 px every text the pictures draw at 16 px at least."""
    _facts, handles = check_page(page, language, axe)
    groups = set(check_groups(page, language))
    if slug:
        pictures = picture_problems(page)
        assert pictures == [], "\n".join(pictures)
    if page.viewport_size["width"] == 1366:
        small = small_canvas_texts(page)
        assert small == [], "\n".join(small)
    if slug == "softmax" and page.viewport_size["width"] > 900:       # the length slider tells 1024, not its notch
        assert any(h["value"] == "1024" for h in handles), handles
    if card:
        assert page.locator("section.card").count() == 1
    return groups


def test_every_page_at_tablet_size(open_page, axe):
    """Every page at 768×1024 in English, the sections made later reached by the Tab key (check_every_page). The same
    checks in Italian at the projector's 1366×768, each lesson's first card open, are made on the page loads of
    test_first_screen_ui.py::test_no_page_scrolls_sideways_and_every_text_is_16_px."""
    visit = open_page(locale="en")
    visit.page.set_viewport_size({"width": 768, "height": 1024})
    groups = set()
    for slug in PAGES:
        groups |= check_every_page(loaded(visit, f"/{slug}?lang=en", by_tab=True), "en", slug, axe)
    check_named(groups, "en")
    assert visit.errors == []


def test_every_page_on_a_phone_by_touch(chromium, server, axe):
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
            facts, _handles = check_page(page, "it", axe)
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
    # one live region speaks the step with the texts that follow the frame; the step's own line is not live
    assert bar.locator(".where").get_attribute("aria-live") is None
    spoken = bar.locator(".spoken")
    assert spoken.get_attribute("role") == "status"
    assert spoken.text_content().startswith(bar.locator(".where").text_content() + ". ")
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
