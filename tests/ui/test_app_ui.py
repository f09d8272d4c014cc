"""The app in a real browser against a real server (see conftest.py)."""
import re
import time
from urllib.parse import quote

from babel.messages import pofile

from lineare.app import i18n
from lineare.app.dashboards import DASHBOARDS

STATE = "/state"


def step_text(page):
    return page.get_by_text(re.compile(r"^(Step|Passo) \d+ (of|di) \d+$")).inner_text()


def current_step(page):
    return int(re.search(r"\d+", step_text(page)).group())


def wait_for_step(page, n, timeout=10_000):
    page.get_by_text(re.compile(rf"^(Step|Passo) {n} (of|di) \d+$")).wait_for(timeout=timeout)


def wait_for_step_at_least(page, n, timeout=10.0):
    deadline = time.monotonic() + timeout
    while current_step(page) < n:
        assert time.monotonic() < deadline, f"still at step {current_step(page)}, waiting for {n}"
        page.wait_for_timeout(100)


def keyboard_ready(page):
    """Wait until the page listens for Space and the arrows (the listener is set up after the first draw)."""
    page.locator("body[data-lineare-keys=ready]").wait_for(state="attached")


def state_picture(page):
    """A screenshot of the first picture (the state S_t of head 1)."""
    return page.locator(".bk-Figure").first.screenshot()


PAGES = ["/", STATE, "/two-bills", f"{STATE}?variant=softmax&heads=2&level=superiore&lang=it"]


def test_pages_load_offline_without_errors(open_page):
    visit = open_page()
    for path in PAGES:
        page = visit.open(path)
        page.wait_for_timeout(300)
        assert visit.errors == [], (path, visit.errors)
        assert visit.remote == [], (path, visit.remote)
        if path == "/":                                    # every dashboard is described and linked
            for slug in (dashboard.slug for dashboard in DASHBOARDS):
                assert page.locator(f'a[href^="./{slug}?"]').count() >= 1


def english_only_strings():
    """English texts whose Italian translation differs (what must not show on an Italian page)."""
    with open(i18n.po_path("it"), "rb") as source:
        italian = pofile.read_po(source, locale="it")
    return {m.id for m in italian if isinstance(m.id, str) and m.id and m.string and m.string != m.id     # not plurals
            and "{" not in m.id and "$" not in m.id}


def test_language_follows_the_browser_and_switches(open_page):
    visit = open_page(locale="it-IT")
    page = visit.open(STATE)                               # no ?lang=: Accept-Language says Italian
    page.get_by_role("heading", name="La memoria si riempie").wait_for()
    texts = visit.text()
    english = english_only_strings()
    left = [t for t in texts if t in english]
    long_ones = [e for e in english if len(e.split()) >= 4 and any(e in t for t in texts)]
    assert left == [] and long_ones == [], (left, long_ones)

    page.get_by_role("button", name="English").click()
    page.get_by_role("heading", name="The state fills up").wait_for()
    assert "lang=en" in page.url
    assert "Step 1 of" in " ".join(visit.text())


def test_level_shows_and_hides_formulas(open_page):
    visit = open_page()
    page = visit.open(f"{STATE}?lang=en&level=elementare")
    assert page.locator("math").count() == 0
    page.get_by_role("button", name="Superiore").click()
    page.locator("math").first.wait_for()
    assert page.locator("math").count() >= 3
    page.wait_for_function("() => window.location.search.includes('level=superiore')")
    page.get_by_role("button", name="Elementare").click()
    page.locator("math").first.wait_for(state="detached")
    assert page.locator("math").count() == 0


def test_play_pause_and_keyboard_step(open_page):
    visit = open_page()
    page = visit.open(f"{STATE}?lang=en&speed=2")
    wait_for_step(page, 1)
    before = state_picture(page)
    keyboard_ready(page)
    page.get_by_role("heading", name="The state fills up").click()   # focus on the page, not on a control
    page.keyboard.press("Space")                            # play, two tokens a second
    wait_for_step_at_least(page, 3)
    page.keyboard.press("Space")                            # pause
    page.wait_for_timeout(400)
    paused = current_step(page)
    page.wait_for_timeout(600)
    assert current_step(page) == paused and paused >= 3
    assert state_picture(page) != before                    # the state picture changed
    page.keyboard.press("ArrowLeft")
    wait_for_step(page, paused - 1)
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    wait_for_step(page, paused + 1)
    page.wait_for_function(f"() => window.location.search.includes('t={paused}')")   # frame 0-based
    page.get_by_role("button", name="▶ Play").click()        # and with the mouse
    page.get_by_role("button", name="❚❚ Pause").wait_for()


def test_a_link_reopens_the_same_view(open_page):
    visit = open_page()
    page = visit.open(f"{STATE}?lang=en&variant=deltanet&preset=overwrite&t=5&heads=2&beta=0.5&level=superiore")
    wait_for_step(page, 6)
    assert page.locator("select").first.input_value() == "DeltaNet"
    page.get_by_text("Head 2", exact=True).wait_for()
    page.get_by_role("button", name="Typed").click()          # change a control: the URL follows
    page.wait_for_function("() => window.location.search.includes('source=typed')")
    page.reload()
    # the navigation is the frame's HTML, there before Bokeh draws the page: wait for what the level draws
    page.locator("math").first.wait_for()                    # level=superiore came back too
    assert page.get_by_role("button", name="Typed").get_attribute("class") is not None
    assert "source=typed" in page.url and "variant=deltanet" in page.url and "beta=0.5" in page.url
    assert page.locator("select").first.input_value() == "DeltaNet"
    assert visit.errors == []


def test_malformed_url_values_give_notices_and_defaults(open_page):
    visit = open_page()
    page = visit.open(f"{STATE}?lang=xx&variant=nope&alpha=abc&t=999&heads=7&speed=-3&level=%3Cb%3E")
    notices = page.get_by_role("alert")
    notices.first.wait_for()
    assert notices.count() == 7, visit.text()        # lang, level, variant, alpha, heads, speed, t
    texts = " ".join(notices.all_inner_texts())
    assert "“lang”" in texts and "“variant”" in texts and "step 1000" in texts
    assert page.locator("select").first.input_value() == "Linear attention"
    wait_for_step(page, 11)                                  # t clamped to the last step
    page.wait_for_function("() => window.location.search.includes('variant=linear')")
    assert visit.errors == []


def test_hostile_text_is_shown_as_text(open_page):
    visit = open_page()
    hostile = "<script>alert(1)</script> <img src=x onerror=alert(2)> Anna:1 Anna?"
    page = visit.open(f"{STATE}?lang=en&source=typed&text={quote(hostile)}")
    notice = page.get_by_role("alert").first
    notice.wait_for()
    assert "<script>alert(1)</script>" in notice.inner_text()
    assert page.locator("img[src=x]").count() == 0
    page.locator("textarea").fill("<b>bold</b> Bruno:2 Bruno?")
    page.locator("textarea").blur()
    page.get_by_text("Bruno:2", exact=True).wait_for()
    assert "<b>bold</b>" in " ".join(page.get_by_role("alert").all_inner_texts())
    page.wait_for_timeout(300)
    assert visit.dialogs == [] and visit.errors == []


def test_two_browsers_stay_independent(open_page):
    first, second = open_page(), open_page()
    a = first.open(f"{STATE}?lang=en")
    b = second.open(f"{STATE}?lang=en")
    keyboard_ready(a)
    a.get_by_role("heading", name="The state fills up").click()
    a.keyboard.press("ArrowRight")
    a.keyboard.press("ArrowRight")
    wait_for_step(a, 3)
    a.locator("select").first.select_option(label="GLA")
    a.wait_for_function("() => window.location.search.includes('variant=gla')")
    b.wait_for_timeout(500)
    assert current_step(b) == 1
    assert b.locator("select").first.input_value() == "Linear attention"
    assert "variant=linear" in b.url
