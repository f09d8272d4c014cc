"""A lesson walked end to end in Chromium: from the landing page to a card, a prediction by mouse and one
by keyboard, the player driven by keys until the result shows, and a shared link that reopens a card."""
import io
import re

from PIL import Image


def verdict(page):
    return page.locator("section.card").get_attribute("data-revealed")


def test_walk_the_state_lesson_by_mouse_and_keyboard(open_page):
    visit = open_page()
    page = visit.open("/?lang=en")
    page.locator("ol.lessons a", has_text="The state fills up").click()
    page.locator("section.card").wait_for(timeout=60_000)
    assert "card 1 of 4" in page.locator("section.card .head").inner_text()

    # card 1, by mouse: predict, then the answer stays hidden until the run reaches the last step
    page.get_by_role("button", name="Yes, all four").click()
    assert page.locator("section.card .press").is_visible() and verdict(page) is None
    page.keyboard.press("Space")                                 # plays: the chosen button is not clicked again
    page.wait_for_function("() => Number(document.body.dataset.lineareFrame || 0) > 0", timeout=10_000)
    assert page.get_by_role("button", name="Yes, all four").get_attribute("aria-pressed") == "true"
    page.locator("section.card .observe").wait_for(state="visible", timeout=30_000)
    assert verdict(page) == "right" and "4 of 4 right" in page.locator("section.card .observe").inner_text()

    # card 2, by keyboard: Tab to a prediction, Enter, then → steps the player up to «Anna?»
    page.get_by_role("link", name="Next card").click()
    page.wait_for_url("**card=2**", timeout=30_000)
    page.locator("section.card").wait_for(timeout=60_000)
    assert "card 2 of 4" in page.locator("section.card .head").inner_text()
    page.get_by_role("button", name="99", exact=True).focus()
    page.keyboard.press("Tab")                                   # from «99» to the tie, what the strip will show
    page.keyboard.press("Enter")
    mix = page.get_by_role("button", name="a mix of both, counted as wrong")
    assert mix.get_attribute("aria-pressed") == "true"
    for _step in range(4):
        page.keyboard.press("ArrowRight")
    assert page.locator("section.card .observe").is_hidden()     # «Anna?» is step 6: not yet
    page.keyboard.press("ArrowRight")
    page.locator("section.card .observe").wait_for(state="visible", timeout=10_000)
    assert verdict(page) == "right" and "21 and 99" in page.locator("section.card .observe").inner_text()
    assert "tie: 21 / 99 ✗" in page.locator(".strip").first.inner_text()      # the strip marks the tie in words
    # the player writes the address bar after the frame's paint (app/components/player.py), not with it
    page.wait_for_url(re.compile(r"[?&]t=5(&|$)"), timeout=5_000)

    # a wrong prediction says so
    page.get_by_role("button", name="another number").click()
    assert verdict(page) == "wrong" and "Not this time." in page.locator("section.card .observe").inner_text()

    # the link of card 3, opened by someone else, opens card 3 on DeltaNet
    shared = page.get_by_role("link", name="Next card").get_attribute("href")
    other = open_page().open("/state" + shared[shared.index("?"):])
    other.locator("section.card").wait_for(timeout=60_000)
    assert "card 3 of 4" in other.locator("section.card .head").inner_text()
    assert "DeltaNet" in other.locator("select").first.input_value() or \
        other.locator("select").first.evaluate("s => s.options[s.selectedIndex].text") == "DeltaNet"
    assert visit.errors == [] and visit.remote == []


def test_from_the_picture_to_the_code(open_page):
    visit = open_page()
    page = visit.open("/state?lang=en&variant=gated_deltanet")
    page.locator("summary", has_text="From the pictures to the code").click()
    code = page.locator("details pre").first
    code.wait_for(state="visible", timeout=30_000)
    assert "def step_gated_deltanet(" in code.inner_text()
    href = page.locator("details a[download]").get_attribute("href")
    notebook = page.request.get(visit.server + "/" + href.removeprefix("./"))
    assert notebook.status == 200 and '"cells"' in notebook.text()


def test_walk_the_transition_lesson_by_mouse(open_page):
    visit = open_page()
    page = visit.open("/?lang=en")
    page.locator("ol.lessons a", has_text="The transition knob").click()
    card = page.locator("section.card")
    card.wait_for(timeout=60_000)
    assert "card 1 of 4" in card.locator(".head").inner_text()
    assert "Linear attention" in page.locator("div.lamp").inner_text()

    # no player on this page: the answer shows as soon as one chooses, and a second choice is judged again
    page.get_by_role("button", name="99, the new number").click()
    card.locator(".observe").wait_for(state="visible", timeout=10_000)
    assert verdict(page) == "wrong" and "21 + 21 + 99" in card.locator(".observe").inner_text()
    page.get_by_role("button", name="21, the old one").click()
    assert verdict(page) == "right"
    assert "right: 99" in page.locator("table").filter(has_text="Anna?").first.inner_text()   # the page agrees

    # card 2 opens on DeltaNet (β = 1), and there the new number comes back
    page.get_by_role("link", name="Next card").click()
    page.wait_for_url("**card=2**", timeout=30_000)
    card.wait_for(timeout=60_000)
    assert "card 2 of 4" in card.locator(".head").inner_text()
    page.wait_for_url("**beta=1**", timeout=30_000)      # the card's settings reach the address bar after it
    assert "DeltaNet" in page.locator("div.lamp").inner_text()
    page.get_by_role("button", name="99, the new number").click()
    card.locator(".observe").wait_for(state="visible", timeout=10_000)
    assert verdict(page) == "right" and "erased" in card.locator(".observe").inner_text()
    assert visit.errors == [] and visit.remote == []


def test_the_transition_cards_bring_up_the_knobs_row_whole_or_not_at_all(open_page):
    """Cards 1-3 bring «What each answer matches» up under the stuck card. On a projector (1366×768) the row
    «Set the knobs to:» just above it comes up whole with it; on a phone (390×844) there is no room for both,
    and the row stays above the card rather than half under it. Nothing of the page shows above the card."""
    for lang, size, row_shown in (("en", (1366, 768), True), ("it", (1366, 768), True), ("en", (390, 844), False)):
        visit = open_page("it-IT" if lang == "it" else "en-US")
        page = visit.page
        page.set_viewport_size({"width": size[0], "height": size[1]})
        page.goto(f"{visit.server}/transition?lang={lang}&lesson=transition&card=1")   # on a phone the
        page.locator('nav a[aria-current="page"]').wait_for(state="attached", timeout=60_000)   # nav is folded
        card, marked, row = (page.locator(".card").first, page.locator(".lesson-look").first,
                             page.locator(".lesson-lead").first)
        card.wait_for(timeout=60_000)
        for _try in range(40):                                  # the card brings the picture up once it is drawn
            under = card.bounding_box()
            box = marked.bounding_box()
            if box and under and under["y"] + under["height"] - 2 <= box["y"] <= size[1] - 200:
                break
            page.wait_for_timeout(250)
        else:
            raise AssertionError(f"{lang} {size}: the picture is not under the card: {box}, card {under}")
        card_bottom, line = under["y"] + under["height"], row.bounding_box()
        if row_shown:
            assert card_bottom - 1 <= line["y"] and line["y"] + line["height"] <= box["y"], (lang, size, line, under)
        else:
            assert line["y"] + line["height"] <= card_bottom, (lang, size, line, under)
        # the stuck card hides what scrolls under it, in the strip above it too (the page showed through there)
        # (only the header's shadow falls there: every line of pixels across it is one colour)
        top = page.evaluate("() => document.getElementById('main').getBoundingClientRect().top")
        clip = {"x": under["x"] + 12, "y": top, "width": under["width"] - 24, "height": under["y"] - top - 1}
        strip = Image.open(io.BytesIO(page.screenshot(clip=clip))).convert("L")
        lines = [strip.crop((0, y, strip.width, y + 1)).getextrema() for y in range(strip.height)]
        assert all(high - low <= 3 for low, high in lines), (lang, size, lines)
        assert visit.errors == [], visit.errors
