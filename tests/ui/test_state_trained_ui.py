"""Trained mode of "The state fills up" in a real browser against a real server (fixtures in conftest.py).

Two page loads on purpose: each one costs seconds on a busy machine.
"""
import re

from test_app_ui import english_only_strings

PAGE = "/state?mode=trained&variant=deltanet"


def current_step(page):
    text = page.get_by_text(re.compile(r"^(Step|Passo) \d+ (of|di) 64$")).inner_text()
    return int(re.search(r"\d+", text).group())


def state_picture(page):
    """A screenshot of the first picture: layer 1's state S_t."""
    return page.locator(".bk-Figure").first.screenshot()


def test_playing_steps_the_model_and_marks_its_answers(open_page):
    visit = open_page()
    page = visit.open(f"{PAGE}&lang=en&pairs=8&example=3&t=14&speed=2")
    page.get_by_text("Step 15 of 64", exact=True).wait_for()
    assert page.locator(".tok").count() == 64
    assert page.locator(".tok.current").get_attribute("data-step") == "14"
    assert page.locator(".tok .ok, .tok .bad").count() == 8             # every answer is in the page …
    assert page.locator(".tok .ok:visible, .tok .bad:visible").count() == 0   # … shown once its question is reached
    assert not page.get_by_text("Forget α", exact=False).is_visible()    # mechanism knobs are hidden
    before = state_picture(page)

    page.get_by_role("button", name="▶ Play").click()
    page.get_by_role("button", name="❚❚ Pause").wait_for()
    page.locator(".tok .ok, .tok .bad").first.wait_for(timeout=15_000)  # the first answer, ✓ or ✗
    page.get_by_role("button", name="❚❚ Pause").click()                 # long before the end (step 64)
    page.get_by_role("button", name="▶ Play").wait_for()
    page.wait_for_timeout(300)
    step = current_step(page)
    assert step > 15 and page.locator(".tok.current").get_attribute("data-step") == str(step - 1)
    assert state_picture(page) != before                                # the state picture changed
    page.get_by_role("button", name="Forward ▶").click()
    page.get_by_text(f"Step {step + 1} of 64", exact=True).wait_for()
    assert "Right so far:" in " ".join(visit.text())
    page.wait_for_function(f"() => window.location.search.includes('t={step}')")
    assert "mode=trained" in page.url and "layer=both" in page.url
    assert visit.errors == [] and visit.remote == []


def test_italian_page_at_both_levels(open_page):
    visit = open_page(locale="it-IT")
    page = visit.open(f"{PAGE}&lang=it&level=elementare&t=40")
    page.get_by_role("heading", name="La memoria si riempie").wait_for()
    page.get_by_text("Passo 41 di 64", exact=True).wait_for()
    english = english_only_strings()
    for level in ("Elementare", "Superiore"):
        if level == "Superiore":
            page.get_by_role("button", name="Superiore").click()
            page.locator("math").first.wait_for()
        texts = visit.text()
        left = [t for t in texts if t in english]
        long_ones = [e for e in english if len(e.split()) >= 4 and any(e in t for t in texts)]
        assert left == [] and long_ones == [], (level, left, long_ones)
        assert any("Strato 1" in t for t in texts) and any("Giuste finora" in t for t in texts)
    assert visit.errors == [] and visit.remote == []
