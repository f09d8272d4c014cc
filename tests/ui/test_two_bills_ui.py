"""Dashboard "Two bills" in a real browser against a real server (fixtures in conftest.py)."""
import re
import time

from first_screen import LEGEND_MARKERS_JS, PROJECTOR, WIDE, check_first_screen, scroll_to_every_section
from layout import table_problems

PAGE = "/two-bills"
STATUS = re.compile(r"^Token \d+ (of|di) \d+")


def status(page):
    return page.get_by_text(STATUS).inner_text()


def wait_for_token(page, t, n, timeout=15_000):
    page.get_by_text(re.compile(rf"^Token {t} (of|di) {n} ")).wait_for(timeout=timeout)


def memory_picture(page):
    return page.locator(".bk-Figure").first.screenshot()


def calculator_model(page):
    """The calculator's model choice (the sidebar may hold other, hidden choices before it), once the
    calculator is made (when scrolled to)."""
    choice = page.locator("select", has=page.locator("option", has_text="RetNet-6.7B"))
    if not choice.count():
        scroll_to_every_section(page)
    return choice


def work_picture(page):
    return page.locator(".main-picture").nth(1).screenshot()


CANVAS_TEXTS = """() => [...Bokeh.documents[0].all_models]
    .filter(m => ['Title', 'Label'].includes(m.constructor.__name__) && m.visible)
    .map(m => m.text.replace(/\\n/g, " "))"""                   # a long note is broken in two lines


def wait_for_canvas_text(page, text, timeout=15_000):
    """Titles and labels Bokeh paints on its canvas (not in the DOM): wait until one reads `text`."""
    page.wait_for_function(f"() => ({CANVAS_TEXTS})().includes({text!r})", timeout=timeout)


def test_loads_offline_in_both_languages_and_switches(open_page):
    visit = open_page(locale="it-IT")
    page = visit.open(f"{PAGE}?tokens=16")                   # no ?lang=: the browser's language decides
    page.get_by_role("heading", name="Due conti da pagare", exact=True).wait_for()
    scroll_to_every_section(page)
    page.get_by_role("heading", name="Il conto per i modelli veri").wait_for()
    page.get_by_text(STATUS).wait_for()
    assert page.locator(".bk-Figure").count() >= 4          # memory, time, measurements, calculator
    texts = " ".join(visit.text())
    assert "Cache KV a 131.072 token" in texts              # numbers written the Italian way
    assert "Time per token, measured on this server" not in texts and "The bill for real models" not in texts
    assert visit.errors == [] and visit.remote == []

    page.get_by_role("button", name="English").click()
    page.get_by_role("heading", name="Two bills", exact=True).wait_for()
    page.get_by_role("heading", name="Time per token, measured on this server").wait_for()
    scroll_to_every_section(page)
    page.get_by_role("heading", name="The bill for real models").wait_for()
    assert "lang=en" in page.url and "tokens=16" in page.url
    texts = " ".join(visit.text())
    assert "KV cache at 131,072 tokens" in texts and "Il conto per i modelli veri" not in texts
    page.wait_for_timeout(300)
    assert visit.errors == [] and visit.remote == []


def test_stepping_grows_the_cache_and_presets_change_the_bill(open_page):
    visit = open_page()
    page = visit.open(f"{PAGE}?lang=en&context=0&tokens=32&heads=2&dim=16&t=0")
    wait_for_token(page, 1, 32)
    assert "KV cache (softmax)" in " ".join(visit.text())
    wait_for_canvas_text(page, "So far: softmax 64, state 1,024")   # token 1: 2 heads × 1 × (16 + 16), 2 × 2 × 16²
    before, work = memory_picture(page), work_picture(page)
    page.locator("body[data-lineare-keys=ready]").wait_for(state="attached")
    page.get_by_role("heading", name="Two bills", exact=True).click()   # focus on the page, not a control
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    wait_for_token(page, 3, 32)
    page.get_by_text("768 B", exact=True).wait_for()       # 3 tokens × 2 heads × (16 + 16) numbers × 4 B
    # softmax 2 heads × (1 + 2 + 3) tokens × (16 + 16), the state 3 × 2 heads × 2 × 16 × 16
    wait_for_canvas_text(page, "So far: softmax 384, state 3,072")
    assert memory_picture(page) != before and work_picture(page) != work      # the rows grow with the player
    scroll_to_every_section(page)                     # the measured times and the calculator, with their legends
    page.get_by_role("heading", name="Two bills", exact=True).click()
    page.get_by_role("button", name="▶ Play").click()
    page.wait_for_timeout(1500)
    page.get_by_role("button", name="❚❚ Pause").click()
    # every legend keeps its markers after Play (Bokeh paints them apart, into small canvases of their own)
    deadline = time.monotonic() + 20                  # on a loaded machine the later sections paint a moment after
    while True:
        markers = [painted for painted, _inside in page.evaluate(LEGEND_MARKERS_JS)]
        if (len(markers) >= 5 and min(markers) > 0) or time.monotonic() > deadline:
            break
        page.wait_for_timeout(500)
    assert len(markers) >= 5 and min(markers) > 0, markers
    # fewer tokens: a new run, shown whole
    page.get_by_role("button", name="16", exact=True).first.click()
    wait_for_token(page, 16, 16)
    page.wait_for_function("() => window.location.search.includes('tokens=16')")
    # the calculator: another model, another bill
    calculator_model(page).select_option(label="RetNet-6.7B")
    page.get_by_text("134 MB", exact=True).first.wait_for()  # 32 × 16 × 256 × 512 numbers × 2 bytes
    page.wait_for_function("() => window.location.search.includes('preset=retnet_6_7b')")
    assert visit.errors == []


def test_a_link_reopens_the_same_view_and_the_level_switches(open_page):
    visit = open_page()
    page = visit.open(f"{PAGE}?lang=en&variant=retnet&heads=2&dim=32&tokens=16&t=5&preset=mamba2_2_7b"
                      f"&dtype=fp16&n=8192&level=superiore")
    wait_for_token(page, 6, 16)
    assert page.locator("select").first.input_value() == "RetNet"
    assert calculator_model(page).input_value() == "Mamba-2-2.7B"
    page.get_by_text("83.9 MB", exact=True).first.wait_for()
    assert page.locator("math").count() >= 10                # formulas at level Superiore
    page.get_by_role("button", name="Elementare").click()
    page.locator("math").first.wait_for(state="detached")
    page.wait_for_function("() => window.location.search.includes('level=elementare')")
    page.get_by_role("button", name="Superiore").click()
    page.locator("math").first.wait_for()

    page.get_by_role("button", name="fp32", exact=True).click()
    page.get_by_text("168 MB", exact=True).first.wait_for()
    page.wait_for_function("() => window.location.search.includes('dtype=fp32')")
    page.reload()
    page.locator('nav a[aria-current="page"]').wait_for()
    scroll_to_every_section(page)
    wait_for_token(page, 6, 16)
    page.get_by_text("168 MB", exact=True).first.wait_for()
    for kept in ("variant=retnet", "heads=2", "dim=32", "preset=mamba2_2_7b", "n=8192", "dtype=fp32",
                 "level=superiore"):
        assert kept in page.url
    assert page.locator("math").count() >= 10
    assert visit.errors == []


def test_malformed_url_values_give_notices_and_defaults(open_page):
    visit = open_page()
    page = visit.open(f"{PAGE}?lang=en&variant=softmax&context=5000&heads=3&t=999&preset=gpt5&n=-5"
                      f"&dtype=fp64&speed=99&layers=%3Cb%3Ex&tokens=16")
    notices = page.get_by_role("alert")
    notices.first.wait_for()
    # variant, context, heads, preset, n, dtype, layers, speed, and t past the last token
    assert notices.count() == 9, notices.all_inner_texts()
    texts = " ".join(notices.all_inner_texts())
    assert "“variant”" in texts and "“context”" in texts and "token 1000" in texts and "<b>x" in texts
    wait_for_token(page, 16, 16)                              # t on the last token
    assert page.locator("select").first.input_value() == "Linear attention"
    assert calculator_model(page).input_value() == "Llama-3.1-8B"
    page.wait_for_function("() => window.location.search.includes('variant=linear')")
    assert page.locator("b:text-is('x')").count() == 0
    assert visit.errors == [] and visit.dialogs == []


def test_the_point_is_on_the_first_screen_of_a_projector(chromium, server):
    """Memory held and the work bill, and the sentence about them, at 1366×768 with the sidebar open, in
    both languages and levels, and no sideways scrolling; at 1920×1080 too."""
    assert check_first_screen(chromium, server, PAGE, pictures=2) == []
    assert check_first_screen(chromium, server, PAGE, pictures=2, viewport=WIDE) == []


def test_the_opening_marks_where_the_cache_passes_the_state(open_page):
    visit = open_page()
    page = visit.open(f"{PAGE}?lang=en")
    wait_for_canvas_text(page, "from token 33 the cache is bigger")            # d = 64: equal at d/2
    wait_for_canvas_text(page, "from token 65 softmax does more per token")     # 2 d_k d_v / (d_k + d_v)
    page.get_by_text("The cache has been bigger than the state since token 33.").wait_for()   # the run played on
    page = visit.open(f"{PAGE}?lang=en&context=0&tokens=16")               # a run that ends before both
    wait_for_token(page, 16, 16)
    wait_for_canvas_text(page, "from token 33 the cache is bigger")            # marked ahead of the run
    wait_for_canvas_text(page, "from token 65 softmax does more per token")
    assert visit.errors == []


def test_the_models_table_scrolls_in_its_own_box_on_a_phone(chromium, server):
    """390×844: the table of every model is wider than the column: it scrolls sideways in a named region the
    keyboard reaches, says so under it, and its rows stay a line or three high; on a projector it fits whole."""
    context = chromium.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True,
                                   locale="it-IT")
    try:
        page = context.new_page()
        page.goto(f"{server}{PAGE}?lang=it")
        scroll_to_every_section(page)
        region = page.get_by_role("region", name="Il conto di ogni modello")
        region.wait_for()
        page.wait_for_timeout(1500)                                   # the page's script fits the column
        assert table_problems(page) == []
        hint = page.get_by_text("Scorri di lato per vedere tutte le colonne →")
        assert hint.is_visible()
        region.focus()
        for _press in range(4):
            page.keyboard.press("ArrowRight")                         # the keyboard scrolls it
        page.wait_for_timeout(300)
        assert region.evaluate("box => box.scrollLeft") > 50
        page.set_viewport_size(PROJECTOR)
        page.wait_for_timeout(1500)
        assert table_problems(page) == []
        assert not hint.is_visible()
        assert region.evaluate("box => box.scrollWidth <= box.clientWidth + 1")     # whole: nothing to scroll
    finally:
        context.close()
