"""Where memory fails in a real browser against a real server (fixtures in conftest.py)."""
from first_screen import LEGEND_MARKERS_JS

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


def test_click_a_failed_query_and_reopen_the_link(open_page):
    from app.dashboards.memory_fails.model import recall
    right = recall("sum", 16, "random", 24, 0, 0).right          # what the page will compute
    start, query = int(right.argmax()) + 1, int((~right).argmax()) + 1
    visit = open_page()
    page = visit.open(f"{PAGE}?lang=en&dk=16&pairs=24&query={start}")
    page.get_by_role("heading", name="Where memory fails").wait_for()
    page.get_by_text(f"Query {start} is answered right.").wait_for()
    page.get_by_text(f"Query {query} fails: pick it to see why").wait_for()
    x, y = page.evaluate(POINT_ON_SCREEN, ["Every query", query, 0.05])
    page.mouse.click(x, y)                                    # a click on that query's bar
    page.get_by_text(f"Query {query} is answered with the number of pair").wait_for()
    page.wait_for_function(f"() => window.location.search.includes('query={query}')")
    link = page.url

    again = open_page().open(link.split(visit.server)[-1])   # the shared link reopens the same query
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
