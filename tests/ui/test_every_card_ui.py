"""Every card of every lesson opened in Chromium at 1366×768, as a class meets it: one page load per card
(the languages taking turns card by card, so every lesson is seen in both; every third card in presenter
mode), and on each load everything checked at once: every picture drawn at a readable size, the choices on
the first screen, in presenter mode the page's first picture too, what a card asks about brought up under
it (and still clear of the card once a choice has made it taller), the result hidden until a choice, then
shown; no console error and no Bokeh "out of bounds" warning. Two cards also try a knob: the level switched
in place (the card's links follow) and α moved off its card's value (the card says it is stale)."""
import re

from playwright.sync_api import expect

from app.lessons import LESSONS

from first_screen import PROJECTOR, inside

# the drawn area (inside the axes) of every figure the page shows, in CSS pixels
FIGURES = """() => {
  const out = [], seen = new Set();
  const visit = (view) => {
    if (!view || seen.has(view)) { return }
    seen.add(view)
    if (view.frame && view.model.x_range && view.el.checkVisibility()) {
      const title = view.model.title ? view.model.title.text : ""
      out.push([title, Math.round(view.frame.bbox.width), Math.round(view.frame.bbox.height)])
    }
    for (const child of view.child_views || []) { visit(child) }
  }
  for (const root of Object.values(window.Bokeh ? Bokeh.index : {})) { visit(root) }
  return out
}"""
SMALLEST = 40                       # px: a picture smaller than this is not a picture


def brought_up(page, card, tries=20):
    """The first part the card marks (lesson-look) starts just under the card, high on the first screen."""
    marked = page.locator(".lesson-look >> visible=true").first
    for _try in range(tries):
        box, under = marked.bounding_box(), card.bounding_box()
        if box and under and under["y"] + under["height"] - 2 <= box["y"] <= PROJECTOR["height"] - 200:
            return True
        page.wait_for_timeout(250)
    return False


def clear_of_the_card(page, card, tries=20):
    """The first marked part starts below the card, not under it: after a choice the card grows (the press
    line, the verdict) while it stays stuck at the top of the window."""
    marked = page.locator(".lesson-look >> visible=true").first
    for _try in range(tries):
        box, under = marked.bounding_box(), card.bounding_box()
        if box and under and box["y"] >= under["y"] + under["height"] - 2:
            return True
        page.wait_for_timeout(250)
    return False


def test_every_card_draws_its_pictures_and_keeps_its_answer_until_a_choice(open_page):
    cards = [(slug, n) for slug in LESSONS for n in range(1, len(LESSONS[slug]) + 1)]
    visits = {lang: open_page("it-IT" if lang == "it" else "en-US") for lang in ("it", "en")}
    warnings = {lang: [] for lang in visits}
    for lang, visit in visits.items():
        visit.page.set_viewport_size(PROJECTOR)
        visit.page.set_default_navigation_timeout(120_000)       # a page's first visit loads its models
        visit.page.on("console", lambda m, lang=lang: warnings[lang].append(m.text)
                      if "out of bounds" in m.text else None)
    problems = []
    for i, (slug, number) in enumerate(cards):
        lang, present = ("it", "en")[i % 2], i % 3 == 2
        page, where = visits[lang].page, f"{slug} {number} ({lang}{', presenter' if present else ''})"
        page.goto(f"{visits[lang].server}/{slug}?lang={lang}&lesson={slug}&card={number}"
                  + ("&present=1" if present else ""))
        card = page.locator("section.card")
        card.wait_for(timeout=60_000)
        page.wait_for_function("() => window.Bokeh && Object.keys(Bokeh.index).length > 0", timeout=60_000)
        page.wait_for_timeout(800)                                # the last layout pass
        figures = page.evaluate(FIGURES)
        small = [f for f in figures if f[1] < SMALLEST or f[2] < SMALLEST]
        if not figures or small:
            problems.append(f"{where}: pictures drawn too small {small} of {len(figures)}")
        buttons = card.locator(".choices button")
        for k in range(buttons.count()):
            if not inside(buttons.nth(k).bounding_box(), PROJECTOR["width"], PROJECTOR["height"]):
                problems.append(f"{where}: choice {k + 1} not on the first screen")
        if present and LESSONS[slug][number - 1].look is None:      # a card with a `look` brings that instead
            picture = page.locator(".main-picture >> visible=true").first
            try:
                expect(picture).to_be_in_viewport(ratio=1.0, timeout=10_000)
            except AssertionError:
                problems.append(f"{where}: the first picture not on the first screen: {picture.bounding_box()}")
        if LESSONS[slug][number - 1].look is not None:             # what it asks about, brought up under the card
            if not brought_up(page, card):
                problems.append(f"{where}: what the card asks about is not under it on the first screen")
        if card.locator(".observe").is_visible() or card.get_attribute("data-revealed") is not None:
            problems.append(f"{where}: the result shows before a choice")
        buttons.first.click()
        if LESSONS[slug][number - 1].look is not None and not clear_of_the_card(page, card):
            problems.append(f"{where}: after a choice the card grew over what it asks about")
        if card.locator(".press").is_hidden() and card.get_attribute("data-revealed") not in ("right", "wrong"):
            problems.append(f"{where}: no result after a choice on a card without a player")
        if (slug, number) == ("transition", 3):                   # α leaves the card's 0.5: a stale observation
            page.locator("#sidebar .noUi-handle").first.focus()    # forget α, the sidebar's first slider
            page.keyboard.press("End")
            expect(card.locator(".stale")).to_be_visible(timeout=20_000)
            expect(card.locator(".observe")).to_be_hidden()
        if (slug, number) == ("state", 2):                        # the level, switched in place (no reload)
            page.get_by_role("button", name="Superiore").click()
            for name in ("a.previous", "a.next"):
                expect(card.locator(name)).to_have_attribute("href", re.compile("level=superiore"), timeout=20_000)
    for lang, visit in visits.items():
        if visit.errors:
            problems.append(f"console errors ({lang}): {visit.errors[:5]}")
        if warnings[lang]:
            problems.append(f"{len(warnings[lang])} Bokeh 'out of bounds' warnings ({lang}): {warnings[lang][:3]}")
    assert problems == []
