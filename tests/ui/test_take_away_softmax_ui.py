"""Take away the softmax in a real browser against a real server (fixtures in conftest.py): both languages
and levels, the switch to φ, the player stepping and playing the collapse in the browser, the length
slider's counts, the URL, and the point on the first screen of a projector."""
from lineare.app.devtools import SocketTraffic, wait_until_quiet
from first_screen import WIDE, check_first_screen

PAGE = "/softmax"


def frame(page):
    return page.evaluate("document.body.dataset.lineareFrame")


def caption(page):
    return page.locator(".vec").first.locator("xpath=..").inner_text()


def vectors(page):
    """The vectors of the step caption: o_t from the table (and from the state, with φ)."""
    return page.locator(".vec").all_inner_texts()


def counts(page):
    """The live counts: the cost picture's legend is drawn on a canvas, so read the sentence under it."""
    return page.locator(".counts p").first.inner_text()


def test_the_point_is_on_the_first_screen_in_both_languages_and_levels(chromium, server):
    assert check_first_screen(chromium, server, PAGE, 3) == []
    assert check_first_screen(chromium, server, f"{PAGE}?attention=linear&t=7", 3) == []
    assert check_first_screen(chromium, server, f"{PAGE}?attention=linear&T=8&d=256", 3, viewport=WIDE) == []


def test_switch_to_phi_step_and_play_the_collapse_then_count(open_page):
    visit = open_page()
    traffic = SocketTraffic(visit.page)
    sent = traffic.sent                                             # messages from the page to the server
    page = visit.open(f"{PAGE}?lang=en")
    page.get_by_role("heading", name="Take away the softmax").wait_for()
    page.wait_for_function("() => document.body.dataset.lineareFrame === '0'", timeout=30_000)
    assert caption(page).startswith("Word 1, “Yesterday”") and len(vectors(page)) == 1      # softmax: no state
    assert page.locator("math").count() == 0

    page.get_by_role("button", name="φ = elu + 1").click()
    page.get_by_text("The same numbers").first.wait_for(timeout=15_000)
    page.wait_for_function("() => location.search.includes('attention=linear')")
    table, state = vectors(page)
    assert table == state                                           # o_1 both ways, as printed
    wait_until_quiet(page, traffic)                                 # the switch's own messages
    quiet = len(sent)
    assert quiet > 0                                                # the switch went to the server

    page.get_by_role("button", name="Forward ▶").click()
    page.wait_for_function("() => document.body.dataset.lineareFrame === '1'")
    page.get_by_role("heading", name="Take away the softmax").click()
    page.keyboard.press("ArrowRight")                               # the keyboard steps too
    page.wait_for_function("() => new URL(location.href).searchParams.get('t') === '2'")
    assert caption(page).startswith("Word 3, “read”")
    table, state = vectors(page)
    assert table == state and table != "(0.000 0.000 0.000 0.000)"
    page.get_by_role("button", name="▶ Play").click()
    page.wait_for_function("() => document.body.dataset.lineareFrame === '7'", timeout=20_000)
    page.get_by_role("button", name="▶ Play").wait_for(timeout=10_000)            # stopped at the end
    assert caption(page).startswith("Word 8, “whales”")
    table, state = vectors(page)
    assert table == state
    assert len(sent) == quiet, "stepping and playing talked to the server"

    # the length slider (by keyboard, one length at a time) and d: the counts change, the URL follows
    before = counts(page)
    assert before.startswith("1,024 words, d = 64") and "16 times fewer" in before
    slider = page.get_by_role("slider").first
    slider.focus()
    slider.press("ArrowRight")
    page.wait_for_function("() => location.search.includes('T=2048')")
    page.get_by_text("2,048 words, d = 64").wait_for()
    assert "32 times fewer" in counts(page)
    page.get_by_role("button", name="128", exact=True).click()
    page.get_by_text("2,048 words, d = 128").wait_for()
    assert "16 times fewer" in counts(page)
    page.wait_for_function("() => location.search.includes('d=128')")         # written after the counts
    assert frame(page) == "7"                                       # the counts left the player alone
    assert visit.errors == [] and visit.dialogs == []


def test_italian_superiore_and_a_spoiled_link(open_page):
    visit = open_page(locale="it-IT")
    page = visit.open(f"{PAGE}?level=superiore&attention=linear&t=99&T=100&d=%3Cb%3E")
    page.get_by_role("heading", name="Togli la softmax").wait_for()
    notices = page.get_by_role("alert")
    notices.first.wait_for()
    texts = " ".join(notices.all_inner_texts())
    assert notices.count() == 3, texts                              # t past the sentence, T and d not allowed
    assert "«T»" in texts and "«<b>»" in texts and "passo 100" in texts
    page.locator(".point math").first.wait_for()                    # Superiore: formulas in the point
    page.wait_for_function("() => document.body.dataset.lineareFrame === '7'")
    assert "Differenza massima" in caption(page)
    assert page.get_by_text("1.024 parole").count() == 0 and page.get_by_text("T = 1.024, d = 64").count() == 1
    page.get_by_role("button", name="Elementare").click()
    page.get_by_text("Gli stessi numeri").first.wait_for()
    page.locator(".point math").first.wait_for(state="detached")
    assert "Take away" not in " ".join(visit.text())
    assert visit.errors == [] and visit.remote == []
