"""The state page's "what changes now" and "what fades or is erased" are rebuilt in the browser from the
state's 8-bit frames and the transition: at every step they agree with the engine's numbers to within
the state's colour step; the write, multiplied out from its two vectors, agrees to far less; and stepping
sends nothing to the server. The second row (the write, what fades) is made when scrolled to, at the
frame the browser shows."""
import numpy as np
import pytest
from first_screen import scroll_to_every_section

from lineare.app.components.plots import nice_limit
from lineare.app.dashboards.state_fills_up.model import StateStore, head_frame

WRITE_JS = """() => {
  const m = [...Bokeh.documents[0].all_models].find(x => (x.tags || [])[0] === "lineare-outer")
  return Array.from(m.data.image[0]) }"""
IMAGE_JS = """(part) => {
  const m = [...Bokeh.documents[0].all_models].find(x => (x.tags || [])[0] === "lineare-update" && x.tags[5] === part)
  return Array.from(m.data.image[0]) }"""
# is one of the second row's pictures in the page yet: the write (a rank-one picture), what fades (an update)
SECOND_ROW_JS = """() => [...Bokeh.documents[0].all_models].some(x => ["lineare-outer", "lineare-update"]
  .includes((x.tags || [])[0]) && (x.tags[0] === "lineare-outer" || x.tags[5] === "removed"))"""
# how far each displayed formula of the narrow picture cards runs past its own card (px; 0: it fits)
OVERFLOW_JS = """() => {
  const out = []
  const walk = (root) => {
    for (const el of root.querySelectorAll("*")) {
      if (el.shadowRoot) { walk(el.shadowRoot) }
      if (el.classList.contains("display") && el.offsetParent !== null) {
        const host = el.getRootNode().host
        if (!host || host.getBoundingClientRect().width > 400) { continue }         // only the cards' notes
        const right = Math.max(...[...el.querySelectorAll("math *")].map(x => x.getBoundingClientRect().right))
        out.push([el.textContent, right - host.getBoundingClientRect().right])
      }
    }
  }
  walk(document)
  return out }"""


@pytest.mark.parametrize("variant", ["gated_deltanet", "rwkv7", "mamba2"])
def test_the_change_drawn_is_the_engines(open_page, variant):
    query = f"variant={variant}&preset=overwrite&alpha=0.7&beta=0.6"
    store = StateStore(variant=variant, preset="overwrite", alpha=0.7, beta=0.6)
    records = store.result.records
    state_step = nice_limit(store.limits["state"]) / 127                    # one colour step of the state
    write_size = max(np.abs(r.write[0, 0]).max() for r in records)
    visit = open_page()
    visit.page.set_viewport_size({"width": 1366, "height": 768})        # the second row below the first screen
    page = visit.open(f"/state?lang=en&{query}&t=0")
    page.locator(".bk-Figure").first.wait_for(timeout=60_000)
    page.wait_for_timeout(500)
    made_at = 2                                    # the second row is scrolled to at this frame
    for t in range(1, len(records)):
        page.keyboard.press("ArrowRight")
        page.wait_for_function(f"document.body.dataset.lineareFrame === '{t}'", timeout=10_000)
        if t == made_at:
            assert page.evaluate(SECOND_ROW_JS) is False           # not made with the page
            scroll_to_every_section(page)
            page.wait_for_function(SECOND_ROW_JS, timeout=30_000)
            page.wait_for_timeout(1000)
            # both rows on the screen: the player draws the pictures off it only when they come into view
            page.set_viewport_size({"width": 1400, "height": 1000})
            page.get_by_role("heading", name="The state fills up").scroll_into_view_if_needed()
            page.wait_for_timeout(500)
        frame = head_frame(variant, records, 0, t)
        A = np.diag(frame.diag) + (np.outer(*frame.low) if frame.low else 0)
        # the state is known to half a colour step per entry; (A − I) spreads that error along each column
        tolerance = state_step * np.abs(A - np.eye(len(frame.diag))).sum(0).max() + 1e-5
        for part, exact in (("change", frame.change), ("removed", frame.removed))[:2 if t >= made_at else 1]:
            drawn = np.array(page.evaluate(IMAGE_JS, part)).reshape(exact.shape)
            np.testing.assert_allclose(drawn, exact, atol=tolerance, err_msg=f"{part} at t={t}")
        if t < made_at:
            continue
        # the write travels as its two vectors in 16-bit codes (plots.packed): exact to ~1e-4 of its size
        write = np.array(page.evaluate(WRITE_JS)).reshape(frame.write.shape)
        np.testing.assert_allclose(write, frame.write, atol=1e-4 * write_size + 1e-7, err_msg=f"write at t={t}")
    # the Superiore notes' formulas stay inside their cards, also in presenter mode's larger type
    page.get_by_role("button", name="Superiore").click()
    page.locator("math").first.wait_for()
    page.evaluate("document.documentElement.style.setProperty('--lineare-scale', '1.25')")   # as presenter mode
    formulas = page.evaluate(OVERFLOW_JS)
    assert len(formulas) >= 3 and all(over <= 0.5 for _, over in formulas), formulas
