"""Where memory fails in a real browser: a click on a wrong trained answer takes it apart layer by layer, with
the model's numbers; moving α redraws the accuracy map over d_k × N (fixtures in conftest.py)."""
import re

import numpy as np
from first_screen import scroll_to_every_section
from test_memory_fails_ui import PAGE, POINT_ON_SCREEN

# the numbers a Bokeh figure (found by the start of its title) holds in the first glyph with a given column
COLUMN_OF = """([title, column]) => {
  const plot = [...window.Bokeh.documents[0].all_models].find(m => ["Plot", "Figure"].includes(m.type) &&
      m.title && (m.title.text || "").startsWith(title));
  const glyph = plot.renderers.find(r => r.data_source && r.data_source.data[column] !== undefined);
  return Array.from(glyph.data_source.data[column]);
}"""


def rows_of(page, layer):
    """The cells of layer `layer`'s table (1-based), row by row, as the browser shows them."""
    table = page.locator(".forensics-layer table").nth(layer - 1)
    return [[cell.strip() for cell in row.split("\t")] for row in table.locator("tbody tr").all_inner_texts()]


def test_click_a_wrong_trained_answer_and_move_alpha(open_page):
    from lineare.app.dashboards.memory_fails.model import accuracy_map, query_forensics, trained_example
    from lineare.app.dashboards.memory_fails.details import percent
    from lineare.app.i18n import format_number

    task = "64-16"
    example = trained_example(task, 0)
    wrong = np.flatnonzero(~example.right("rwkv6"))
    assert len(wrong), "the test needs a wrong answer of RWKV-6 on this example"
    query = int(wrong[0]) + 1
    visit = open_page()
    visit.page.set_default_navigation_timeout(180_000)            # the first visit builds the curves of the rule
    page = visit.open(f"{PAGE}?lang=en&task={task}&probe=softmax&probe_query=1&rule=gated-delta")
    scroll_to_every_section(page)
    page.get_by_text("Softmax attention, query 1: the label").wait_for(timeout=120_000)

    x, y = page.evaluate(POINT_ON_SCREEN, ["One example, query by query", query, "RWKV-6"])
    page.mouse.click(x, y)                                        # a click on RWKV-6's wrong answer
    found = query_forensics("rwkv6", task, 0, query)
    assert found.answer != found.expected
    page.get_by_text(re.compile(f"RWKV-6, query {query}: the label .* the model answered")).wait_for(timeout=120_000)
    page.wait_for_function(f"() => window.location.search.includes('probe_query={query}')")
    assert "probe=rwkv6" in page.url
    for layer in (1, 2):
        parts, verdict = found.layers[layer - 1], found.verdicts[layer - 1]
        shown = rows_of(page, layer)
        positions = found.right + verdict.others
        assert [int(row[0].split(" (")[0]) for row in shown] == positions
        for row, i in zip(shown, positions):
            assert row[1] == percent(parts.share[i]) + "%"            # as the page writes a percentage
            assert row[3] == percent(parts.kept[i]) + "%"
            assert row[4] == format_number(round(float(parts.similarity[i]), 2), 2)
    bars = page.evaluate(COLUMN_OF, ["Layer 2: the parts of the read-out", "top"])
    np.testing.assert_allclose(bars, found.layers[1].share, rtol=1e-12)

    # the map: computed on the server's worker, then again for a smaller α
    before = accuracy_map("gated-delta", "random", 0, 0, 0.99, 1.0)
    expected = [float(a) for row in before["accuracy"] for a in row]
    wait_for_map(page, expected)
    title = page.locator(".bk-slider-title", has_text="Forget α (gated delta rule")
    title.locator("xpath=..").locator(".noUi-handle").focus()
    for _press in range(5):
        page.keyboard.press("ArrowLeft")                          # α 0.99 → 0.94, by the keyboard
    page.wait_for_function("() => window.location.search.includes('alpha=0.94')", timeout=60_000)
    after = accuracy_map("gated-delta", "random", 0, 0, 0.94, 1.0)
    changed = [float(a) for row in after["accuracy"] for a in row]
    assert changed != expected
    wait_for_map(page, changed)
    assert visit.errors == [] and visit.remote == []


def wait_for_map(page, accuracy):
    """Until the map's cells hold exactly these accuracies (the server computes them on a worker)."""
    page.wait_for_function(f"(expected) => JSON.stringify(({COLUMN_OF})(['Answers right, for every d_k', 'accuracy']))"
                           " === JSON.stringify(expected)", arg=accuracy, timeout=240_000)
