"""A lesson walked end to end in Chromium: from the landing page to a card, a prediction by mouse and one
by keyboard, the player driven by keys until the result shows, and a shared link that reopens a card."""


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
    page.get_by_role("link", name="Next card →").click()
    page.wait_for_url("**card=2**", timeout=30_000)
    page.locator("section.card").wait_for(timeout=60_000)
    assert "card 2 of 4" in page.locator("section.card .head").inner_text()
    page.get_by_role("button", name="21").focus()
    page.keyboard.press("Tab")                                   # from «21» to «99», what the strip will show
    page.keyboard.press("Enter")
    assert page.get_by_role("button", name="99", exact=True).get_attribute("aria-pressed") == "true"
    for _step in range(4):
        page.keyboard.press("ArrowRight")
    assert page.locator("section.card .observe").is_hidden()     # «Anna?» is step 6: not yet
    page.keyboard.press("ArrowRight")
    page.locator("section.card .observe").wait_for(state="visible", timeout=10_000)
    assert verdict(page) == "right" and "21 and 99" in page.locator("section.card .observe").inner_text()
    assert "t=5" in page.url

    # a wrong prediction says so
    page.get_by_role("button", name="another number").click()
    assert verdict(page) == "wrong" and "Not this time." in page.locator("section.card .observe").inner_text()

    # the link of card 3, opened by someone else, opens card 3 on DeltaNet
    shared = page.get_by_role("link", name="Next card →").get_attribute("href")
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
    page.get_by_role("link", name="Next card →").click()
    page.wait_for_url("**card=2**", timeout=30_000)
    card.wait_for(timeout=60_000)
    assert "card 2 of 4" in card.locator(".head").inner_text() and "beta=1" in page.url
    assert "DeltaNet" in page.locator("div.lamp").inner_text()
    page.get_by_role("button", name="99, the new number").click()
    card.locator(".observe").wait_for(state="visible", timeout=10_000)
    assert verdict(page) == "right" and "erased" in card.locator(".observe").inner_text()
    assert visit.errors == [] and visit.remote == []
