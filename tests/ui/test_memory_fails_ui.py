"""Where memory fails in a real browser against a real server (fixtures in conftest.py)."""
import re
import time

from first_screen import LEGEND_MARKERS_JS, PROJECTOR, scroll_to_every_section
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from seeing import picture_problems

PAGE = "/memory-fails"

# where a data point of a Bokeh figure (found by the start of its title) is on the screen; y may be a factor
POINT_ON_SCREEN = """([title, x, y]) => {
  const views = [];
  const walk = (view) => { views.push(view); for (const child of (view.child_views ?? [])) walk(child); };
  for (const root of window.Bokeh.index.roots) walk(root);
  const plot = views.find(v => ["Plot", "Figure"].includes(v.model.type) && v.model.title &&
                               (v.model.title.text || "").startsWith(title));
  plot.el.scrollIntoView({block: "center"});
  const box = plot.el.getBoundingClientRect();
  const at = typeof y === "string" ? plot.model.y_range.synthetic(y) : y;
  return [box.left + plot.frame.x_scale.compute(x), box.top + plot.frame.y_scale.compute(at)];
}"""


def detail(page):
    return page.locator("p", has_text="is answered").first.inner_text()


def taken_apart(page):
    """Scroll to «One query taken apart»: its section is made when the visitor comes near it."""
    page.locator(".lineare-later").first.evaluate("el => el.scrollIntoView({block: 'center'})")


def test_click_a_failed_query_and_reopen_the_link(open_page):
    from lineare.app.dashboards.memory_fails.model import recall
    right = recall("sum", 16, "random", 24, 0, 0).right          # what the page will compute
    start, query = int(right.argmax()) + 1, int((~right).argmax()) + 1
    visit = open_page()
    page = visit.open(f"{PAGE}?lang=en&dk=16&pairs=24&query={start}")
    page.get_by_role("heading", name="Where memory fails").wait_for()
    taken_apart(page)
    page.get_by_text(f"Query {start} is answered right.").wait_for()
    page.get_by_text(f"Query {query} fails: pick it to see why").wait_for()
    x, y = page.evaluate(POINT_ON_SCREEN, ["Every query", query, 0.05])
    page.mouse.click(x, y)                                    # a click on that query's bar
    page.get_by_text(f"Query {query} is answered with the number of pair").wait_for()
    page.wait_for_function(f"() => window.location.search.includes('query={query}')")
    link = page.url
    # by keyboard: the picture is a slider (its event layer, app/js/page/access.js) whose arrows pick the next query
    slider = page.get_by_role("slider", name=re.compile("^Every query at this N"))
    slider.focus()
    page.keyboard.press("ArrowRight")
    page.locator("p", has_text=f"Query {query + 1} is answered").first.wait_for()
    assert slider.get_attribute("aria-valuetext").startswith(f"query {query + 1}, match ")
    # a tap anywhere in a query's column picks it, high above its bar too (the bar alone was 8 px wide)
    x, y = page.evaluate(POINT_ON_SCREEN, ["Every query", start, 1.05])
    page.mouse.click(x, y)
    page.get_by_text(f"Query {start} is answered right.").wait_for()

    again = open_page().open(link.split(visit.server)[-1])   # the shared link reopens the same query
    taken_apart(again)
    again.get_by_text(f"Query {query} is answered with the number of pair").wait_for()
    assert visit.errors == [] and visit.remote == []


# each widget name in the sidebar: its text, font size (px) and whether it stays inside the sidebar
SIDEBAR_NAMES_JS = """() => {
  const sidebar = document.querySelector("#sidebar").getBoundingClientRect(), out = []
  const walk = (root) => {
    for (const el of root.querySelectorAll("label, .bk-slider-title, .bk-clearfix")) {
      const box = el.getBoundingClientRect()
      if (box.width > 0 && box.left < sidebar.right && el.textContent.trim()) {
        out.push([el.textContent.trim(), parseFloat(getComputedStyle(el).fontSize), box.right <= sidebar.right])
      }
    }
    for (const el of root.querySelectorAll("*")) { if (el.shadowRoot) { walk(el.shadowRoot) } }
  }
  walk(document)
  return out }"""


def test_italian_superiore_and_bad_links(open_page):
    visit = open_page(locale="it-IT")
    page = visit.open(f"{PAGE}?keys=orthogonal&pairs=999&rule=<script>alert(1)</script>&task=64-8")
    page.get_by_role("heading", name="Dove la memoria cede").wait_for()
    notices = page.get_by_role("alert")
    notices.first.wait_for()
    assert notices.count() == 2, notices.all_inner_texts()          # rule, and pairs (lowered once)
    texts = " ".join(notices.all_inner_texts())
    assert "<script>alert(1)</script>" in texts                      # quoted back as text
    assert "«pairs»" not in texts and "pairs" in texts and "si usa 16" in texts   # at most d_k orthogonal keys
    scroll_to_every_section(page)                                    # the sections made when scrolled to, too
    page.evaluate("window.scrollTo(0, 0)")
    text = " ".join(visit.text())
    assert visit.dialogs == []                                       # the script was text, never run
    for english in ("Where memory fails", "Recall error", "One query taken apart", "answered"):
        assert english not in text, english
    assert page.locator("math").count() == 0
    # every legend marker is painted and inside its figure (a long Italian label once pushed it off)
    markers = page.evaluate(LEGEND_MARKERS_JS)
    assert len(markers) >= 4 and all(painted > 0 and inside for painted, inside in markers), markers
    # the sidebar's widget names are read from the back of a room: 16 px at least, inside the sidebar
    names = page.evaluate(SIDEBAR_NAMES_JS)
    assert len(names) >= 6 and all(size >= 16 and inside for _, size, inside in names), names
    page.get_by_role("button", name="Superiore").click()
    page.locator("math").first.wait_for()
    assert page.locator("math").count() > 10
    page.get_by_text("Esempio 1: 64 token, 8 coppie.").wait_for()   # the first example, counted from 1
    assert visit.errors == [] and visit.remote == []


# the accuracy map's numbers (the text glyph over the squares of a source with a "d_k" column), as drawn: each
# shown number's width in its glyph's font, against its square's width on the screen
MAP_NUMBERS_JS = """() => {
  const models = [...Bokeh.documents[0].all_models];
  const texts = models.find(m => m.constructor.__name__ === "GlyphRenderer" && m.glyph.constructor.__name__ === "Text"
                                 && "d_k" in m.data_source.data);
  const figure = texts && models.find(m => (m.renderers || []).includes(texts));
  if (!figure || !figure.inner_width || !texts.data_source.data.label.length) return null;
  const spec = (v) => (v && typeof v === "object" && "value" in v) ? v.value : v;
  const context = document.createElement("canvas").getContext("2d");
  context.font = `${spec(texts.glyph.text_font_size)} ${spec(texts.glyph.text_font)}`;
  const data = texts.data_source.data, x = figure.x_range, per = figure.inner_width / (x.end - x.start);
  return Array.from(data.label, (label, i) => ({label, width: context.measureText(label).width,
                                                cell: (data.right[i] - data.left[i]) * per}));
}"""


def map_numbers_fit(page):
    """The map's numbers once drawn and fitted: (shown, all fit in their squares); None before it is drawn."""
    cells = page.evaluate(MAP_NUMBERS_JS)
    if cells is None:
        return None
    shown = [c for c in cells if c["label"]]
    return len(shown), all(c["width"] + 2 <= c["cell"] for c in shown)


def settle(page, predicate, timeout=20_000):
    """Wait until the JS `predicate` holds (the server answers a new width in its own time), at most `timeout` ms;
    what is then checked says what is wrong if it never does."""
    try:
        page.wait_for_function(predicate, timeout=timeout)
    except PlaywrightTimeout:
        pass


MAP_FITS = f"() => {{ const c = ({MAP_NUMBERS_JS})(); return c !== null && c.every(x => x.width + 2 <= x.cell); }}"
MAP_ALL = f"() => {{ const c = ({MAP_NUMBERS_JS})(); return c !== null && c.every(x => x.label); }}"
# the queries to a row of the trained models' grid
GRID_ACROSS = """() => { const r = [...Bokeh.documents[0].all_models].find(m => m.glyph &&
    m.glyph.constructor.__name__ === "Rect" && "variant" in m.data_source.data);
  return Math.max(...r.data_source.data.x) }"""


# the trained models' grid (the squares of a source with a "variant" column): a square's size on the screen, and
# where the square of `query` of the first model is
GRID_JS = """(query) => {
  const views = [];
  const walk = (view) => { views.push(view); for (const child of (view.child_views ?? [])) walk(child); };
  for (const root of window.Bokeh.index.roots) walk(root);
  const squares = (r) => r.glyph && r.glyph.constructor.__name__ === "Rect" && "variant" in r.data_source.data;
  const plot = views.find(v => v.model.renderers && v.model.renderers.some(squares));
  const model = plot.model, r = model.renderers.find(squares), data = r.data_source.data;
  const spec = (v) => (v && typeof v === "object" && "value" in v) ? v.value : v;
  const queries = data.query ?? data.x, i = Array.from(queries).indexOf(query);     // (one row: x is the query)
  const x = plot.frame.x_scale.compute(data.x[i]), y = plot.frame.y_scale.compute(model.y_range.synthetic(data.y[i]));
  plot.el.scrollIntoView({block: "start"});                          // the square in the middle of the window
  const main = document.getElementById("main"), top = plot.el.getBoundingClientRect().top;
  const scroller = main && main.scrollHeight > main.clientHeight ? main : document.scrollingElement;
  scroller.scrollBy(0, top + y - innerHeight / 2);
  const box = plot.el.getBoundingClientRect();
  const high = data.h ? data.h[i] : spec(r.glyph.height);
  return {width: spec(r.glyph.width) * model.inner_width / (model.x_range.end - model.x_range.start),
          height: high * model.inner_height / (model.y_range.end - model.y_range.start),
          count: queries.length, variant: data.variant[i],
          x: box.left + x, y: box.top + y};
}"""


def steady_square(page, query, most_s=10.0):
    """GRID_JS once the square stays where it is for half a second: a tap measured while the page's tidying
    re-wraps the grid, or while a section above it arrives, lands where the square was."""
    grid, deadline = page.evaluate(GRID_JS, query), time.monotonic() + most_s
    while time.monotonic() < deadline:
        page.wait_for_timeout(500)
        again = page.evaluate(GRID_JS, query)
        if (round(again["x"]), round(again["y"]), round(again["width"])) == (
                round(grid["x"]), round(grid["y"]), round(grid["width"])):
            return again
        grid = again
    return grid


def test_on_a_phone_the_map_numbers_fit_and_the_grid_can_be_tapped(chromium, server):
    """390×844: the accuracy map is drawn a third as wide as on a projector; its numbers never run into each other
    (a square's number fits it, or no square has one); the trained models' grid wraps its 32 queries into rows of
    squares of 24 px at least, and a tap on the last one takes that answer apart. On the projector: every number
    there, more queries to a row, its squares 24 px at least too (in one row they were 19 px wide)."""
    context = chromium.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    try:
        page = context.new_page()
        page.goto(f"{server}{PAGE}?lang=en&task=128-32")
        scroll_to_every_section(page)
        page.wait_for_function(f"() => ({MAP_NUMBERS_JS})() !== null", timeout=120_000)
        settle(page, MAP_FITS)                    # the page's script fits it to the column, the server its numbers
        shown, fit = map_numbers_fit(page)
        assert fit, page.evaluate(MAP_NUMBERS_JS)
        settle(page, f"() => ({GRID_ACROSS})() < 32")
        across = page.evaluate(f"({GRID_ACROSS})()")
        grid = steady_square(page, 32)
        assert grid["width"] >= 24 and grid["height"] >= 24, grid
        page.touchscreen.tap(grid["x"], grid["y"])
        page.wait_for_function("() => /probe_query=32(&|$)/.test(window.location.search)", timeout=15_000)
        assert f"probe={grid['variant']}" in page.url

        page.set_viewport_size(PROJECTOR)
        settle(page, MAP_ALL)
        settle(page, f"() => ({GRID_ACROSS})() > {across}")                   # more to a row than on the phone
        shown, fit = map_numbers_fit(page)
        assert fit and shown == len(page.evaluate(MAP_NUMBERS_JS)), page.evaluate(MAP_NUMBERS_JS)
        grid = page.evaluate(GRID_JS, 32)
        assert grid["width"] >= 24 and grid["height"] >= 24, grid                  # a fingertip's square there too

        # past 40 queries the squares are too small for a ✓ or ✗: the numbers table still says each one
        page.goto(f"{server}{PAGE}?lang=en&task=256-64")
        scroll_to_every_section(page)
        page.wait_for_function("""() => [...Bokeh.documents[0].all_models].some(m => m.glyph &&
          m.glyph.constructor.__name__ === "Rect" && "variant" in m.data_source.data &&
          m.data_source.data.query.length && Math.max(...m.data_source.data.query) === 64)""", timeout=60_000)
        assert picture_problems(page) == []
    finally:
        context.close()
