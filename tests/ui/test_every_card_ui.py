"""Every card of every lesson opened in Chromium, as a class meets it: one page load per card (the languages taking
turns card by card, so every lesson is seen in both; every third card in presenter mode at 1366×768; two lessons
on a phone, 390×844, answered by touch), and on each load everything checked at once:

- before a choice: every picture drawn at a readable size, the choices on the first screen, in presenter mode the
  page's first picture too, what a card speaks of brought up under it; none of the page's words that state the
  answer anywhere visible (computed from the card's store, as tests/test_lessons.py does without a browser); the
  series the card holds back hidden, with no numbers sent;
- after the choice: still none of those words; what the card speaks of, and the card's own ▶ when it says to press
  it, on the screen; the card clear of what it speaks of;
- the action: the player stepped up to the card's frame (the card's own → first), or a curve sketched on the
  empty axes (by mouse, by touch on a phone, by the arrow keys on one card): the sketch is kept, drawn by the
  server as a series of its own, and the true line drawn with it (the picture's pixels change); the verdict shows;
- on a phone, where the card scrolls inside its third of the screen: the choices whole in the card's sight before
  a choice, the instruction and its buttons after it, the verdict and what happened after the action (from their
  start, and to their end when they fit);
- no console error and no Bokeh "out of bounds" warning.

Two cards also try a knob: the level switched in place (the card's links follow) and α moved off its card's value
(the card says it is stale)."""
import io
import re

from bokeh.models import GlyphRenderer
from PIL import Image, ImageChops
from playwright.sync_api import expect

from lineare.app.i18n import language
from lineare.app.lessons import LESSONS, SKETCH, parts

from first_screen import PROJECTOR, inside
from seeing import redrawn

PHONE = {"width": 390, "height": 844}
ON_A_PHONE = ("two-bills", "memory-fails")        # lessons walked on a phone, answered by touch
BY_KEYBOARD = ("softmax", 5)                       # the card whose curve is sketched with the arrow keys

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
# the figures holding a series that is hidden and sent empty (a card holds it back): {figure id: [x, y, w, h]}, and
# the points of every series drawn in the sketch's colour
HELD = """(sketch) => {
  const held = {}, sketched = [], seen = new Set();
  const rows = (r) => Math.max(0, ...Object.values(r.data_source.data).map((c) => c.length || 0))
  const visit = (view) => {
    if (!view || seen.has(view)) { return }
    seen.add(view)
    if (view.frame && view.model.renderers && view.el.checkVisibility()) {
      const hidden = view.model.renderers.filter((r) => r.data_source && !r.visible && rows(r) === 0)
      if (hidden.length) {
        const box = view.el.getBoundingClientRect()
        held[view.model.id] = [box.x, box.y, box.width, box.height, hidden.length]
      }
      for (const r of view.model.renderers) {
        const spec = r.glyph && r.glyph.line_color, colour = spec && spec.value !== undefined ? spec.value : spec
        if (colour === sketch && r.visible) { sketched.push(rows(r)) }
      }
    }
    for (const child of view.child_views || []) { visit(child) }
  }
  for (const root of Object.values(window.Bokeh ? Bokeh.index : {})) { visit(root) }
  return {held, sketched}
}"""
ELEMENT_OF = """(id) => {
  const seen = new Set();
  const visit = (view) => {
    if (!view || seen.has(view)) { return null }
    seen.add(view)
    if (view.model && view.model.id === id && view.frame) { return view.el }
    for (const child of view.child_views || []) {
      const found = visit(child)
      if (found) { return found }
    }
    return null
  }
  for (const root of Object.values(window.Bokeh ? Bokeh.index : {})) {
    const found = visit(root)
    if (found) { return found }
  }
  return null
}"""
# the text a reader can see: every text node whose element is drawn (shadow roots included; no canvas)
VISIBLE_TEXT = """() => {
  const out = [];
  const walk = (node, shown) => {
    if (node.nodeType === Node.TEXT_NODE) {
      if (shown && node.textContent.trim()) { out.push(node.textContent) }
      return
    }
    if (node.nodeType === Node.ELEMENT_NODE) {
      if (["STYLE", "SCRIPT"].includes(node.tagName)) { return }
      // an element with no box of its own (display: contents, as Bokeh's hosts) hides nothing by itself
      const boxless = getComputedStyle(node).display === "contents"
      shown = shown && (boxless || node.checkVisibility({visibilityProperty: true, opacityProperty: true}))
      if (node.shadowRoot) { walk(node.shadowRoot, shown) }
    }
    for (const child of node.childNodes) { walk(child, shown) }
  };
  walk(document.body, true);
  return out.join(" ").split(/\\s+/).join(" ");
}"""
SMALLEST = 40                       # px: a picture smaller than this is not a picture
# which of the card's parts matching a selector are drawn but not wholly in the card's own sight (a phone's card
# scrolls inside its third of the screen: a part below its edge is cut off)
CUT_IN_CARD = """(card, selector) => {
  const box = card.getBoundingClientRect(), top = box.top + card.clientTop, bottom = top + card.clientHeight
  return [...card.querySelectorAll(selector)].filter((e) => e.getBoundingClientRect().height > 0)
    .filter((e) => e.getBoundingClientRect().top < top - 1 || e.getBoundingClientRect().bottom > bottom + 1)
    .map((e) => e.textContent.trim().slice(0, 40))
}"""
# the verdict and what happened, in the card's sight as far as they fit: from their start, to their end when they fit
OBSERVATION_CUT = """(card) => {
  const box = card.getBoundingClientRect(), top = box.top + card.clientTop, bottom = top + card.clientHeight
  const said = card.querySelector(".observe").getBoundingClientRect()
  const fits = said.height <= card.clientHeight - 8
  return said.top < top - 1 || (fits && said.bottom > bottom + 1) || (!fits && said.top > top + 12)
}"""


def expectations():
    """Per card, from the card's page built without a browser (tests/test_lessons.py): the page's words that state
    the answer in each language, and whether the card holds back a series of a picture."""
    from tests.test_lessons import card_on_its_page
    found = {}
    for slug, cards in LESSONS.items():
        for number, card in enumerate(cards, 1):
            said = {}
            for lang in ("it", "en"):
                with language(lang):
                    _widget, view, store = card_on_its_page(slug, number, lang=lang)
                    said[lang] = [a for a in card.answer(store) if a]
            # those on the page as it opens (a section further down is made when the visitor scrolls to it)
            series = any(isinstance(t, GlyphRenderer) for t in parts(view, card.hides, now=False))
            found[slug, number] = said, series
    return found


def on_screen(box, size):
    return box is not None and box["y"] < size["height"] - 40 and box["y"] + box["height"] > 40 \
        and box["x"] < size["width"] and box["x"] + box["width"] > 0


def shot(page, figure):
    """A picture of the figure with this Bokeh id (scrolled into view), or None when it is not on the page."""
    element = page.evaluate_handle(ELEMENT_OF, figure).as_element()
    return Image.open(io.BytesIO(element.screenshot())).convert("RGB") if element else None


def changed(before, after):
    """The share of pixels that differ between two pictures of one figure (compared at the smaller size)."""
    size = (min(before.width, after.width), min(before.height, after.height))
    diff = ImageChops.difference(before.crop((0, 0, *size)), after.crop((0, 0, *size))).convert("L")
    return sum(diff.point(lambda v: 255 if v > 24 else 0).histogram()[255:]) / max(1, size[0] * size[1])


def brought_up(page, card, size, tries=20):
    """The first part the card marks (lesson-look) starts just under the card, high on the first screen."""
    marked = page.locator(".lesson-look >> visible=true").first
    for _try in range(tries):
        box, under = marked.bounding_box(), card.bounding_box()
        if box and under and under["y"] + under["height"] - 2 <= box["y"] <= size["height"] - 200:
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


def settled(page, pictures, sketched, seconds=10):
    """What the page holds back and the sketch's lines (HELD), looked at again until the answer's pictures are
    whole and the sketch is drawn, or `seconds` have passed: on a loaded machine the redraw can follow the verdict."""
    for _try in range(int(seconds / 0.25)):
        after = page.evaluate(HELD, SKETCH)
        if (not sketched or any(n >= 2 for n in after["sketched"])) and not set(pictures) & set(after["held"]):
            break
        page.wait_for_timeout(250)
    return after


def sketch(page, card, how):
    """A curve on the card's empty axes: a drag by mouse, taps on a phone, or the arrow keys."""
    layer = page.locator(".lineare-sketch")
    layer.wait_for(timeout=20_000)
    layer.scroll_into_view_if_needed()
    box = layer.bounding_box()
    points = [(0.05, 0.15), (0.3, 0.4), (0.55, 0.6), (0.8, 0.75), (0.95, 0.85)]
    at = lambda fx, fy: (box["x"] + fx * box["width"], box["y"] + fy * box["height"])
    if how == "touch":
        for fx, fy in points:
            page.touchscreen.tap(*at(fx, fy))
            page.wait_for_timeout(100)
    elif how == "keys":
        layer.focus()
        for key in ("ArrowUp", "ArrowUp", "ArrowRight", "PageUp", "ArrowRight", "ArrowDown", "End", "PageUp"):
            page.keyboard.press(key)
    else:
        page.mouse.move(*at(*points[0]))
        page.mouse.down()
        for fx, fy in points[1:]:
            page.mouse.move(*at(fx, fy), steps=6)
        page.mouse.up()


def test_every_card_draws_its_pictures_and_keeps_its_answer_until_the_student_acts(open_page):
    expected = expectations()
    cards = [(slug, n) for slug in LESSONS for n in range(1, len(LESSONS[slug]) + 1)]
    visits = {}
    for lang in ("it", "en"):
        locale = "it-IT" if lang == "it" else "en-US"
        visits[lang, False] = open_page(locale)
        visits[lang, False].page.set_viewport_size(PROJECTOR)
        visits[lang, True] = open_page(locale, viewport=PHONE, has_touch=True, is_mobile=True)
    warnings = {key: [] for key in visits}
    for key, visit in visits.items():
        visit.page.set_default_navigation_timeout(120_000)       # a page's first visit loads its models
        visit.page.on("console",
                      lambda m, key=key: warnings[key].append(m.text) if "out of bounds" in m.text else None)
    problems = []
    for i, (slug, number) in enumerate(cards):
        phone = slug in ON_A_PHONE
        lang, present = ("it", "en")[i % 2], i % 3 == 2 and not phone
        size = PHONE if phone else PROJECTOR
        record, (said, holds_series) = LESSONS[slug][number - 1], expected[slug, number]
        page = visits[lang, phone].page
        where = f"{slug} {number} ({lang}{', presenter' if present else ''}{', phone' if phone else ''})"
        page.goto(f"{visits[lang, phone].server}/{slug}?lang={lang}&lesson={slug}&card={number}"
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
        cut = card.evaluate(CUT_IN_CARD, ".choices button") if phone else []
        if cut:
            problems.append(f"{where}: choices cut off at the card's edge before a choice: {cut}")
        for k in range(buttons.count()):
            if not inside(buttons.nth(k).bounding_box(), size["width"], size["height"]):
                problems.append(f"{where}: choice {k + 1} not on the first screen")
        if present and not record.look:                            # a card with a `look` brings that instead
            picture = page.locator(".main-picture >> visible=true").first
            try:
                expect(picture).to_be_in_viewport(ratio=1.0, timeout=10_000)
            except AssertionError:
                problems.append(f"{where}: the first picture not on the first screen: {picture.bounding_box()}")
        if record.look and not brought_up(page, card, size):
            problems.append(f"{where}: what the card speaks of is not under it on the first screen")
        if card.locator(".observe").is_visible() or card.get_attribute("data-revealed") is not None:
            problems.append(f"{where}: the result shows before a choice")
        leaked = [a for a in said[lang] if a in page.evaluate(VISIBLE_TEXT)]
        if leaked:
            problems.append(f"{where}: the answer on the page before a choice: {leaked}")
        held = page.evaluate(HELD, SKETCH)["held"] if holds_series else {}
        if holds_series and not held:
            problems.append(f"{where}: the series the card holds back are drawn before the action")
        pictures = {figure: shot(page, figure) for figure, box in held.items() if box[2] > 0 and box[3] > 0}

        buttons.first.click()
        if record.look and not clear_of_the_card(page, card):
            problems.append(f"{where}: after a choice the card grew over what it speaks of")
        acts = record.at is not None or record.guess is not None
        if acts:
            page.wait_for_timeout(300)
            leaked = [a for a in said[lang] if a in page.evaluate(VISIBLE_TEXT)]
            if leaked or card.get_attribute("data-revealed") is not None:
                problems.append(f"{where}: the answer shows at the choice, before the action: {leaked}")
            looked = page.locator(".lesson-look >> visible=true").first
            if record.look and not on_screen(looked.bounding_box(), size):
                problems.append(f"{where}: what the card names is off the screen after the choice")
        if record.at is not None and not on_screen(card.locator(".keys button.play").bounding_box(), size):
            problems.append(f"{where}: the card says to press ▶ and no ▶ is on the screen")
        if phone and acts:
            page.wait_for_timeout(300)
            cut = card.evaluate(CUT_IN_CARD, ".press, .keys button, .sketch button")
            if cut:
                problems.append(f"{where}: after a choice, what to do is cut off at the card's edge: {cut}")
        if record.guess is not None:
            how = "touch" if phone else "keys" if (slug, number) == BY_KEYBOARD else "mouse"
            sketch(page, card, how)
            if record.at is None:
                try:
                    expect(card.locator(".sketch button.go")).to_be_enabled(timeout=5_000)
                except AssertionError:
                    problems.append(f"{where}: a sketch by {how} is not taken")
                    continue
                card.locator(".sketch button.go").click()
        if record.at is not None:
            card.locator(".keys button.step").click()              # the card's own →, then the keyboard's
            for _step in range(record.at(expected_store(slug, number)) + 2):
                if card.get_attribute("data-revealed"):
                    break
                page.keyboard.press("ArrowRight")
        try:
            expect(card).to_have_attribute("data-revealed", re.compile("right|wrong"), timeout=20_000)
        except AssertionError:
            problems.append(f"{where}: no verdict after the action")
            continue
        page.wait_for_timeout(600)
        if phone and card.evaluate(OBSERVATION_CUT):
            problems.append(f"{where}: the verdict and what happened are cut off at the card's edge")
        after = settled(page, pictures, record.guess is not None)
        if record.guess is not None and not any(n >= 2 for n in after["sketched"]):
            problems.append(f"{where}: the sketch ({how}) is not kept on the picture: {after['sketched']}")
        for figure, before in pictures.items():
            if figure in after["held"]:
                problems.append(f"{where}: a series is still held back after the action")
            elif not redrawn(page, lambda figure=figure: shot(page, figure), before,
                             test=lambda before, now: now is not None and changed(before, now) >= 0.002):
                problems.append(f"{where}: the picture holding the answer did not change after the action")
        if (slug, number) == ("transition", 3):                   # α leaves the card's 0.5: a stale observation
            page.locator("#sidebar .noUi-handle").first.focus()    # forget α, the sidebar's first slider
            page.keyboard.press("End")
            expect(card.locator(".stale")).to_be_visible(timeout=20_000)
            expect(card.locator(".observe")).to_be_hidden()
        if (slug, number) == ("state", 2):                        # the level, switched in place (no reload)
            page.get_by_role("button", name="Superiore").click()
            for name in ("a.previous", "a.next"):
                expect(card.locator(name)).to_have_attribute("href", re.compile("level=superiore"), timeout=20_000)
        if number == len(LESSONS[slug]) and not card.locator(".end a.list").is_visible():
            problems.append(f"{where}: the lesson's last card does not lead back to the list")
    for key, visit in visits.items():
        if visit.errors:
            problems.append(f"console errors ({key}): {visit.errors[:5]}")
        if warnings[key]:
            problems.append(f"{len(warnings[key])} Bokeh 'out of bounds' warnings ({key}): {warnings[key][:3]}")
    assert problems == [], "\n".join(problems)


def expected_store(slug, number):
    from tests.test_lessons import _STORES
    return _STORES[slug, number]
