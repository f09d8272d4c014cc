"""The point of a page on the first screen of a classroom projector (1366×768), sidebar open: its main
pictures (`.main-picture`) and the sentence that says what to notice (`.point`) inside the window,
and no sideways scrolling, neither of the window nor of the page's scrolling area (#main). Used by the
pages' UI tests."""
PROJECTOR = {"width": 1366, "height": 768}
WIDE = {"width": 1920, "height": 1080}
# a main picture's figure: the figure itself where it carries the class (plots.main_picture), else inside the part
MAIN_FIGURE = ".main-picture.bk-Figure, .main-picture .bk-Figure"


def inside(box, width, height):
    return box is not None and box["x"] >= 0 and box["y"] >= 0 and box["x"] + box["width"] <= width + 0.5 \
        and box["y"] + box["height"] <= height + 0.5


def check_first_screen(chromium, server, path, pictures, viewport=PROJECTOR):
    """Open `path` in both languages and levels; `pictures`: how many `.main-picture` it must show.
    Returns a list of problems (empty: all good)."""
    problems = []
    for lang in ("it", "en"):
        context = chromium.new_context(viewport=viewport, locale=lang)
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        try:
            for level in ("elementare", "superiore"):
                where = f"{lang}/{level}"
                page.goto(f"{server}{path}{'&' if '?' in path else '?'}lang={lang}&level={level}")
                page.locator('nav a[aria-current="page"]').wait_for(timeout=30_000)
                page.locator(MAIN_FIGURE).nth(pictures - 1).wait_for(timeout=30_000)
                page.locator(".point").first.wait_for(timeout=10_000)
                page.wait_for_timeout(500)                        # the last layout pass
                if not page.locator("#sidebar").first.is_visible():
                    problems.append(f"{where}: the sidebar is closed")
                size = page.evaluate("[innerWidth, innerHeight, document.scrollingElement.scrollWidth, "
                                     "...(m => m ? [m.scrollWidth, m.clientWidth] : [0, 0])"
                                     "(document.querySelector('#main'))]")
                width, height, scroll_width, main_width, main_view = size
                if scroll_width > width or main_width > main_view:
                    problems.append(f"{where}: scrolls sideways (page {scroll_width} > {width} or "
                                    f"#main {main_width} > {main_view})")
                shown = page.locator(".main-picture")
                if shown.count() != pictures:
                    problems.append(f"{where}: {shown.count()} main pictures, not {pictures}")
                for i in range(shown.count()):
                    box = shown.nth(i).bounding_box()
                    if not inside(box, width, height):
                        problems.append(f"{where}: main picture {i} at {box}, outside {width}×{height}")
                box = page.locator(".point").first.bounding_box()
                if not inside(box, width, height):
                    problems.append(f"{where}: the point at {box}, outside {width}×{height}")
        finally:
            context.close()
    if errors:
        problems.append(f"page errors: {errors}")
    return problems


def scroll_to_every_section(page, wait=True):
    """Scroll to each section made only when a visitor comes near it (app/components/later.py) until all are
    made; `wait`: for the first marker first (once per page load: the page is still loading)."""
    import time

    markers = page.locator(".lineare-later")
    if wait:
        markers.first.wait_for(timeout=120_000)
    deadline = time.monotonic() + 120
    while markers.count():          # made one by one (or several at once): a marker may go at any moment
        markers.evaluate_all("els => els.length && els[0].scrollIntoView({block: 'center'})")
        page.wait_for_timeout(300)
        assert time.monotonic() < deadline, "a section was not made within two minutes of being scrolled to"


# each legend marker of the page (Bokeh paints each into a small canvas of its own): its painted, not
# transparent, pixels and whether it lies inside its figure
LEGEND_MARKERS_JS = """() => {
  const out = []
  const walk = (root) => {
    for (const el of root.querySelectorAll("*")) {
      if (el.shadowRoot) { walk(el.shadowRoot) }
      if (el.tagName === "CANVAS" && el.closest(".bk-glyph") && el.width > 0) {
        let figure = el
        while (figure && !(figure.classList && figure.classList.contains("bk-Figure"))) {
          figure = figure.parentElement || (figure.getRootNode() || {}).host
        }
        const box = el.getBoundingClientRect(), frame = figure.getBoundingClientRect()
        const pixels = el.getContext("2d").getImageData(0, 0, el.width, el.height).data
        let painted = 0
        for (let i = 3; i < pixels.length; i += 4) { if (pixels[i] > 0) { painted++ } }
        out.push([painted, box.left >= frame.left && box.right <= frame.right])
      }
    }
  }
  walk(document)
  return out }"""
