"""Animation in the browser: the server sends a run once; playing and stepping send nothing back."""
import hashlib
import re

from lineare.app.devtools import SocketTraffic, wait_until_quiet
from seeing import redrawn

STATE = "/state?lang=en&variant=deltanet&preset=phonebook"


def frame(page):
    return int(page.evaluate("document.body.dataset.lineareFrame"))


def url_frame(page):
    return page.evaluate("new URL(location.href).searchParams.get('t')")


def picture(page, n=0):
    return hashlib.sha256(page.locator(".bk-Figure").nth(n).screenshot()).hexdigest()


def answer_shown(page, step):
    """Is the memory's answer under the token of `step` visible (answers appear once reached)?"""
    return page.locator(f'[data-step="{step}"] .answer > span').evaluate(
        "span => getComputedStyle(span).visibility") == "visible"


# every live region of the page (not a notice: role=alert), and from now on what each says (window.__said)
LIVE_JS = """() => {
  window.__said = []
  const regions = []
  const walk = (root) => {
    for (const el of root.querySelectorAll("*")) {
      if (el.shadowRoot) walk(el.shadowRoot)
      const live = el.getAttribute("aria-live"), role = el.getAttribute("role")
      if ((live && live !== "off") || ["status", "log", "marquee", "timer"].includes(role)) regions.push(el)
    }
  }
  walk(document)
  for (const el of regions) {
    new MutationObserver(() => window.__said.push(el.textContent)).observe(el, {childList: true, characterData: true,
                                                                              subtree: true})
  }
  return regions.length
}"""


# counts, from now on, how often Bokeh measures the axes, titles and colour bars of the figures with fixed ranges
# and no per-step title, to see whether their layout must change (it re-measures every tick label: most of a
# step's script); returns how many figures it watches
COUNT_MEASURES = """() => {
  window.__measures = 0
  const fixed = (r) => r && (r.type === "Range1d" || r.type === "FactorRange")
  const stepped = (m) => m && (m.tags || [])[0] === "lineare-text"
  let watched = 0
  for (const view of Bokeh.index.query(v => v.renderer_views !== undefined && v.model.x_range)) {
    const f = view.model
    if (!fixed(f.x_range) || !fixed(f.y_range) || [f.title, ...f.above].some(stepped)) { continue }
    watched++
    // the player skips the measure while a figure looks as at its last one (player.py measureOnlyWhenNeeded);
    // a figure not repainted since the player mapped it has no last one yet, and its first step measured it
    // (a load that ended just before the count): it takes that first measure now
    if (typeof view._invalidate_layout_if_needed === "function") { view._invalidate_layout_if_needed() }
    for (const part of view.renderer_views.values()) {
      const layout = part.layout
      if (layout && layout.has_size_changed) {
        const measure = layout.has_size_changed.bind(layout)
        layout.has_size_changed = () => { window.__measures++; return measure() }
      }
    }
  }
  return watched
}"""


def test_stepping_and_playing_send_nothing_and_the_url_keeps_the_frame(open_page):
    visit = open_page()
    page = visit.page
    traffic = SocketTraffic(page)
    sent = traffic.sent
    visit.open(STATE + "&t=2&speed=8")
    page.wait_for_function("() => document.body.dataset.lineareFrame === '2'", timeout=30_000)
    wait_until_quiet(page, traffic)                             # the page's own first messages
    assert url_frame(page) == "2" and not answer_shown(page, 5)          # "Bruno?" not reached yet
    before, quiet = picture(page), len(sent)
    page.get_by_role("heading", name="The state fills up").click()
    assert page.evaluate(COUNT_MEASURES) > 0
    assert page.evaluate(LIVE_JS) == 1                          # one live region speaks the steps
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    page.wait_for_function("() => document.body.dataset.lineareFrame === '5'")
    page.wait_for_timeout(300)
    assert url_frame(page) == "5" and answer_shown(page, 5) and picture(page) != before
    # the steps repainted the pictures without measuring their unchanged axes again
    assert page.evaluate("window.__measures") == 0
    # each step is said once, with what the frame's texts say: «Bruno?» asked and answered at step 6
    said = page.evaluate("window.__said")
    assert [text.split(".")[0] for text in said] == ["Step 4 of 11", "Step 5 of 11", "Step 6 of 11"], said
    assert "Bruno" in said[-1]
    page.evaluate("window.__said = []")
    page.get_by_role("button", name="▶ Play").click()
    page.get_by_role("button", name="▶ Play").wait_for(timeout=10_000)   # played to the end and stopped
    assert frame(page) == 10 and url_frame(page) == "10"
    said = page.evaluate("window.__said")                 # five frames played, the last one said
    assert len(said) == 1 and said[0].startswith("Step 11 of 11."), said
    page.get_by_role("button", name="Forward ▶").click()                 # at the end: stays there
    page.get_by_role("button", name="◀ Back").click()
    assert frame(page) == 9
    assert len(sent) == quiet, "the player talked to the server"
    assert visit.errors == []


# the element that has the keyboard, through the shadow roots it is nested in (the sidebar's column, its widget)
FOCUSED_TEXT_JS = """() => {
  let el = document.activeElement
  while (el && el.shadowRoot && el.shadowRoot.activeElement) { el = el.shadowRoot.activeElement }
  return el ? el.textContent : "" }"""


def test_a_knob_sends_a_new_run_and_the_frame_stays(open_page):
    visit = open_page()
    page = visit.page
    traffic = SocketTraffic(page)
    sent = traffic.sent
    visit.open(STATE + "&t=4&speed=0.5")          # slow: Space must find it still playing on a loaded machine
    page.wait_for_function("() => document.body.dataset.lineareFrame === '4'", timeout=30_000)
    page.wait_for_timeout(1500)
    quiet, before = len(sent), picture(page)
    page.locator("select").first.select_option(label="GLA")
    page.wait_for_function("() => new URL(location.href).searchParams.get('variant') === 'gla'")
    page.wait_for_timeout(1000)
    assert len(sent) > quiet                                  # the knob went to the server …
    assert frame(page) == 4 and url_frame(page) == "4"        # … and the frame stayed where it was
    assert redrawn(page, lambda: picture(page), before)
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => new URL(location.href).searchParams.get('t') === '5'")
    # after a click on a sidebar button, the arrows and Space still drive the player (not the button)
    page.get_by_role("button", name="Superiore").click()
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => new URL(location.href).searchParams.get('t') === '6'")
    page.keyboard.press("Space")
    page.get_by_role("button", name="❚❚ Pause").wait_for(timeout=10_000)
    page.keyboard.press("Space")
    page.wait_for_timeout(500)
    page.get_by_role("button", name="▶ Play").wait_for(timeout=10_000)
    # a button reached with Tab keeps Space: Shift+Tab from the clicked "Superiore" to "Elementare", whose
    # Space picks that level, and the player neither plays nor moves
    shown = url_frame(page)
    page.keyboard.press("Shift+Tab")
    assert page.evaluate(FOCUSED_TEXT_JS) == "Elementare"
    page.keyboard.press("Space")
    page.wait_for_function("() => new URL(location.href).searchParams.get('level') === 'elementare'")
    page.wait_for_timeout(500)
    assert page.get_by_role("button", name="▶ Play").is_visible() and url_frame(page) == shown
    assert visit.errors == []


def test_a_link_with_a_frame_reopens_it_and_two_bills_plays_in_the_browser(open_page):
    visit = open_page()
    page = visit.page
    traffic = SocketTraffic(page)
    sent = traffic.sent
    visit.open("/two-bills?lang=en&tokens=16&t=3")
    page.wait_for_function("() => document.body.dataset.lineareFrame === '3'", timeout=60_000)
    page.get_by_text(re.compile("^Token 4 of 16 ")).wait_for()            # the line shown (the live region says it too)
    wait_until_quiet(page, traffic)
    quiet = len(sent)
    page.get_by_role("heading", name="Two bills").click()
    page.keyboard.press("ArrowRight")
    page.get_by_text(re.compile("^Token 5 of 16 ")).wait_for()
    assert url_frame(page) == "4" and len(sent) == quiet
    assert visit.errors == []
