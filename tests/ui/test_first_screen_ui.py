"""Every page at 1366×768 (a classroom projector), sidebar open, both languages and both levels: nothing
scrolls sideways, neither the window nor the page's own scrolling area (#main, where a too-wide table
once hid), and the page's main pictures and its point sit inside the first screen. The walk of every page also
makes test_access_ui.py's checks of the Italian projector pass, on the same page loads."""
import re
import pytest

from lineare.app.lessons import LESSONS
from first_screen import MAIN_FIGURE, PROJECTOR, WIDE, check_first_screen, scroll_to_every_section
from layout import layout, problems
from seeing import canvas_texts
from test_access_ui import PAGES as ACCESS_PAGES, check_every_page, check_named, drawn

WIDTH_JS = """() => { const main = document.querySelector('#main');
  return [main.scrollWidth, main.clientWidth, document.scrollingElement.scrollWidth, innerWidth]; }"""

TITLE_SIZE_JS = """() => {            // the page title's type size, found through the shadow roots
  const find = (root) => { const h1 = root.querySelector('h1'); if (h1) return h1;
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) { const f = find(el.shadowRoot); if (f) return f; }
    }
    return null; };
  return parseFloat(getComputedStyle(find(document)).fontSize); }"""

# the width of the first picture shown (0: none)
PICTURE_WIDTH_JS = """() => {
  const plot = (v) => v.renderer_views !== undefined && v.el && "toolbar" in v.model.properties;
  const plots = window.Bokeh && Bokeh.index ? Array.from(Bokeh.index.query(plot)) : [];
  const view = plots.find(v => v.el.getClientRects().length > 0);
  return view ? view.el.getBoundingClientRect().width : 0;
}"""

# the sizes a projector enlarges, in px, on the first picture shown: its title, tick labels and axis names (drawn on
# its canvas: Bokeh's own sizes) and its numbers button
CHART_TYPE_JS = """() => {
  const px = (size) => parseFloat(size) * (/pt$/.test(size) ? 4 / 3 : 1);
  const plots = Bokeh.index.query(v => v.renderer_views !== undefined && v.el && "toolbar" in v.model.properties);
  const view = Array.from(plots).find(v => v.el.getClientRects().length > 0 && v.model.title && v.model.title.text);
  const figure = view.model, axis = figure.below[0];
  const button = view.el.shadowRoot.querySelector(".lineare-numbers-button");
  return {title: px(figure.title.text_font_size), ticks: px(axis.major_label_text_font_size),
          name: px(axis.axis_label_text_font_size), button: parseFloat(getComputedStyle(button).fontSize)};
}"""

# The type a class reads from the back of the room: every text of the sidebar and the page (DOM text, a select's
# shown choice, a text field's value) at 16 px at least, and a select's choice not cut by its box. Canvas text
# (Bokeh's titles, axes, cell numbers) is read from the drawn models (tests/ui/seeing.py). Exempt, with the reason:
EXEMPT = {
    "math-depth": "a formula's sub- and superscripts: MathML draws them smaller, as print does; the symbols they "
                  "belong to are checked",
}
TEXT_SIZES_JS = """([least, exempt]) => {
  const small = [], measure = document.createElement("canvas").getContext("2d");
  const shown = (el) => getComputedStyle(el).visibility !== "hidden" && parseFloat(getComputedStyle(el).opacity) > 0;
  const check = (el, text, where) => {
    const style = getComputedStyle(el), size = parseFloat(style.fontSize);
    if (parseInt(style.mathDepth) > 0 || exempt.some((selector) => el.closest(selector))) return;
    if (size < least - 0.05) small.push(`${where}: ${size.toFixed(1)} px «${text.slice(0, 40)}»`);
  };
  const walk = (node, where) => {
    if (node.nodeType === Node.TEXT_NODE) {
      const text = node.textContent.trim(), range = document.createRange();
      if (!text || !node.parentElement) return;
      range.selectNodeContents(node);
      if ([...range.getClientRects()].some((r) => r.width > 0 && r.height > 0) && shown(node.parentElement)) {
        check(node.parentElement, text, where);
      }
      return;
    }
    if (["STYLE", "SCRIPT"].includes(node.tagName)) return;
    const field = node.tagName === "SELECT" || (node.tagName === "INPUT" && ["text", "number"].includes(node.type));
    if (field) {
      if (node.offsetWidth > 0 && shown(node)) {
        const text = node.tagName === "SELECT" ? (node.selectedOptions[0] || {}).text || "" : node.value;
        check(node, text, where);
        const style = getComputedStyle(node), room = node.clientWidth - parseFloat(style.paddingLeft)
                                                     - parseFloat(style.paddingRight);
        measure.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
        if (node.tagName === "SELECT" && measure.measureText(text).width > room + 0.5) {
          small.push(`${where}: «${text}» cut by its select (${room} px)`);   // a choice cannot wrap
        }
      }
      return;
    }
    if (node.shadowRoot) walk(node.shadowRoot, where);
    for (const child of node.childNodes) walk(child, where);
  };
  for (const where of ["sidebar", "main"]) { const el = document.getElementById(where); if (el) walk(el, where); }
  return small;
}"""

# (path, number of main pictures): the pages whose first screen is checked here; Two bills, Parallel =
# recurrent and Architectures have the same check in their own UI tests
PAGES = [("/state", 3), ("/state?variant=deltanet&preset=overwrite", 3), ("/state?variant=softmax", 3),
         ("/transition", 3), ("/memory-fails", 2)]


@pytest.mark.parametrize("path,pictures", PAGES)
def test_the_point_is_on_the_first_screen(chromium, server, path, pictures):
    assert check_first_screen(chromium, server, path, pictures) == []


# the four ways every page is walked: (language, level, presenter mode); each language once in presenter mode (its
# type a quarter larger, the sidebar folded), and the two others also widened to 1920 × 1080
WALKS = [("it", "elementare", False), ("it", "superiore", True), ("en", "elementare", True), ("en", "superiore", False)]
ACCESS = ("it", "elementare", False)       # test_access_ui.py's Italian projector pass, on the same loads
# every route; then three more states of /state, walked once per language (in the widened walks: each check sees them)
PATHS = ["/", *(f"/{slug}" for slug in ACCESS_PAGES if slug)]
MORE = ["/state?lesson=state&card=2", "/state?mode=trained&variant=gated_deltanet", "/state?heads=4&variant=rwkv7"]


def test_no_page_scrolls_sideways_and_every_text_is_16_px(open_page, axe):
    """Every page opened on the projector in every language and level, two of the four walks in presenter mode (each
    language once); in the two others the same page is then widened to 1920 × 1080, as a window is (each page
    loads once: this test took 3.5 minutes with a second load at 1920), and three more states of /state are walked
    (each language once). On each load at 1366 × 768 every text of the sidebar and the page is at least 16 px
    (TEXT_SIZES_JS, EXEMPT), and on each load the whole layout check of layout.py: nothing overlaps (the pictures'
    titles and their numbers buttons included), every control at least 24 px. Sections made when scrolled to are made
    first, so they are checked too. The Italian walk at the default level opens each lesson's first card and checks
    each page for test_access_ui.py as well (check_every_page: axe, contrast, names, the sidebar's groups, the pictures'
    text alternatives; no page error)."""
    wide, small = [], []
    exempt = [selector for selector in EXEMPT if selector.startswith(".")]

    def check(where):
        page.wait_for_timeout(300)
        found = problems(layout(page))
        if found:
            # looked at again a moment later: once in CI (transition, Italian, presenter mode) tick labels were
            # found 3 px into each other, and two runs of this test after it found nothing; what is wrong with
            # the page is found both times
            page.wait_for_timeout(1500)
            found = problems(layout(page))
        wide.extend(f"{where}: {problem}" for problem in found)

    for lang, level, present in WALKS:
        visit = open_page(locale=lang, viewport=PROJECTOR)
        page, groups = visit.page, set()
        widened = not present
        for path in PATHS + (MORE if widened else []):
            slug = path.strip("/")
            url = (f"{visit.server}{path}{'&' if '?' in path else '?'}lang={lang}&level={level}"
                   + ("&present=1" if present else ""))
            card = (lang, level, present) == ACCESS and slug in LESSONS
            if (lang, level, present) == ACCESS and "?" not in path:
                drawn(page, url + (f"&lesson={slug}&card=1" if card else ""))     # and its sections, as the others
            else:
                page.goto(url, timeout=90_000)                                    # RWKV-7 × 4 heads on a busy CI
                page.locator('nav a[aria-current="page"]').wait_for(state="attached", timeout=60_000)
                if path != "/":
                    page.locator(".bk-Figure").first.wait_for(timeout=60_000)
                if page.locator(".lineare-later").count():
                    scroll_to_every_section(page, wait=False)
                    page.evaluate("window.scrollTo(0, 0)")
            where = f"{path} {lang}/{level}{' presenter' if present else ''}"
            check(f"{where} at 1366")
            small.extend(f"{path} {lang}/{level}: {text}" for text in page.evaluate(TEXT_SIZES_JS, [16, exempt]))
            # the pictures' own words: 16 px, and in presenter mode a quarter more (an axis name that would take
            # three lines may give some of it back, never under 16 px)
            for text in canvas_texts(page):
                least = 16 * 1.25 if present and text["what"] != "axis name" else 16
                if text["px"] < least - 0.05:
                    small.append(f"{where}: «{text['picture']}» {text['what']} at {text['px']:.1f} px, under {least:g}")
            if (lang, level, present) == ACCESS and "?" not in path:
                groups |= check_every_page(page, "it", slug, axe, card=card)
            if widened:
                before = page.evaluate(PICTURE_WIDTH_JS)
                page.set_viewport_size(WIDE)
                check(f"{path} {lang}/{level} at 1920")
                # the pictures use a wide projector's room: drawn larger, not left at their 1366-px size
                after = page.evaluate(PICTURE_WIDTH_JS)
                if before and after < 1.3 * before:
                    wide.append(f"{path} {lang}/{level} at 1920: the first picture is {after:.0f} px wide, "
                                f"{before:.0f} at 1366")
                page.set_viewport_size(PROJECTOR)
        page.goto("about:blank")       # each walk has a context of its own: its last page is not left open behind
        if (lang, level, present) == ACCESS:
            check_named(groups, "it")
            assert visit.errors == []
    assert wide == [], "\n".join(wide)
    assert small == [], "\n".join(small)


def test_presenter_mode_folds_the_sidebar_and_enlarges_the_type(chromium, server):
    context = chromium.new_context(viewport=PROJECTOR)
    page = context.new_page()
    try:
        page.goto(f"{server}/transition?lang=en")
        page.locator(MAIN_FIGURE).first.wait_for(timeout=60_000)
        page.wait_for_timeout(1600)                                   # the pictures' numbers buttons come
        normal = page.evaluate("getComputedStyle(document.documentElement).getPropertyValue('--lineare-scale')")
        normal_title = page.evaluate(TITLE_SIZE_JS)
        normal_chart = page.evaluate(CHART_TYPE_JS)
        # the knobs are in the sidebar, or behind ☰ where it is folded: the intro names the menu, true for both
        assert page.get_by_text(re.compile(r"knobs in the menu \(☰")).count() == 1
        assert page.locator("#sidebar").first.is_visible()
        page.get_by_role("button", name="Presenter mode").click()
        page.wait_for_url("**present=1**", timeout=30_000)
        page.locator(MAIN_FIGURE).first.wait_for(timeout=60_000)
        page.wait_for_timeout(1600)
        assert not page.locator("#sidebar").first.is_visible()
        present_title = page.evaluate(TITLE_SIZE_JS)
        # the pictures' type, their numbers buttons and the player grow with the page's; their titles and axis
        # names still fit, and nothing covers them
        present_chart = page.evaluate(CHART_TYPE_JS)
        for what, size in normal_chart.items():
            assert present_chart[what] >= 1.25 * size - 0.5 if what != "name" else present_chart[what] > size, what
        facts = layout(page)
        assert problems(facts) == [], "\n".join(problems(facts))
        # the knobs are in the folded sidebar: the intro sends to the menu's button
        assert page.get_by_text(re.compile(r"knobs in the menu \(☰")).count() == 1
        assert page.get_by_text("on the left").count() == 0
        assert normal.strip() == "" and page.evaluate(
            "getComputedStyle(document.documentElement).getPropertyValue('--lineare-scale')").strip() == "1.25"
        # the navigation keeps presenter mode, and the ☰ button still opens the sidebar for a knob
        assert "present=1" in page.locator('nav a[aria-current="page"]').get_attribute("href")
        page.locator("#sidebar-toggle").click()
        page.locator("#sidebar").first.wait_for(state="visible", timeout=10_000)
        main, main_view, whole, window = page.evaluate(WIDTH_JS)
        assert main <= main_view and whole <= window
        assert page.get_by_role("button", name="Leave presenter mode").is_visible()
        assert page.get_by_role("button", name="Full screen").is_visible()
    finally:
        context.close()
    assert present_title == pytest.approx(1.25 * normal_title)
