"""A live class in real browsers: the teacher's projector at 1366 × 768 in Italian, two students' phones at
390 × 844 by touch (one in English): join by the code and by the QR code's link, answer, show, reveal, next card.
The projector's QR code is read back from a screenshot of it (zxing-cpp) and must be the join link."""
import io
import re

from PIL import Image
from playwright.sync_api import expect
from axe_core import violations
from test_access_ui import FROM_LIBRARIES

from lineare.app.devtools import is_local

LESSON = "/softmax?lesson=softmax&card=1&present=1&lang=it"


def context(chromium, width, height, locale, touch=False):
    made = chromium.new_context(viewport={"width": width, "height": height}, locale=locale, has_touch=touch,
                                is_mobile=touch)
    page = made.new_page()
    page.problems = []
    page.on("request", lambda r: None if is_local(r.url) else page.problems.append(f"request left: {r.url}"))
    page.on("console", lambda m: page.problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.problems.append(str(e)))
    return made, page


def decoded_qr(element):
    """The text of the QR code drawn in `element` (a screenshot of it, read by zxing-cpp)."""
    import zxingcpp

    image = Image.open(io.BytesIO(element.screenshot())).convert("L")
    found = zxingcpp.read_barcodes(image)
    return [barcode.text for barcode in found]


def test_a_class_on_a_projector_and_two_phones(chromium, server, axe):
    teacher_context, projector = context(chromium, 1366, 768, "it-IT")
    english_context, english = context(chromium, 390, 844, "en-US", touch=True)
    italian_context, italian = context(chromium, 390, 844, "it-IT", touch=True)
    try:
        projector.goto(server + LESSON)
        start = projector.locator(".card .class-start button")      # in the lesson card, which stays in sight
        start.wait_for(timeout=60_000)
        assert start.inner_text() == "▶ Avvia una sessione in classe"
        start.click()
        code = projector.locator("aside.class .letters")
        code.wait_for(timeout=30_000)
        expect(start).to_be_hidden()                                 # the class's panel took its place
        code = code.inner_text()
        assert re.fullmatch(r"[A-Z2-9]{6}", code)
        link = f"{server}/join?code={code}"
        # the QR code on the projector is the join link (its host: this server, as the teacher opened it)
        assert decoded_qr(projector.locator("aside.class .qr")) == [link]
        # the room's secret never shows in the projector's address bar
        assert code not in projector.url
        # a phone joins by typing the code (lower case, a space), the other by the QR code's link
        italian.goto(server + "/join")
        italian.locator("input.code").fill(f"{code[:3].lower()} {code[3:].lower()}")
        italian.locator("button.go").tap()
        english.goto(link)
        for phone in (italian, english):
            phone.locator("button.choice").first.wait_for(timeout=60_000)
        assert italian.locator("html").get_attribute("lang") == "it"
        assert english.locator("html").get_attribute("lang") == "en"
        assert english.locator("p.heading").inner_text().startswith("Lesson: Take away the softmax · card 1 of 5")
        assert italian.locator("p.heading").inner_text().startswith("Lezione: ")
        # axe: the phone and the class's panel
        assert violations(english, axe, FROM_LIBRARIES) == [] and violations(projector, axe, FROM_LIBRARIES) == []
        for phone in (italian, english):                                     # nothing scrolls sideways
            assert phone.evaluate("() => document.documentElement.scrollWidth") <= 390
        # each answers with a tap, one changes its mind; the projector counts two answers
        english.locator("button.choice").nth(0).tap()
        italian.locator("button.choice").nth(0).tap()
        italian.locator("button.choice").nth(1).tap()
        projector.locator("aside.class .answered .n", has_text="2/2").wait_for(timeout=20_000)
        projector.locator("aside.class button[data-command=show]").click()
        bars = projector.locator("aside.class .bar")
        bars.first.wait_for(timeout=20_000)
        assert [b.inner_text().split("\n")[-1] for b in bars.all()] == ["1", "1", "0"]
        projector.locator("aside.class button[data-command=reveal]").click()
        for phone in (italian, english):
            phone.locator("section.phone[data-verdict]").wait_for(timeout=20_000)
        marked = [i for i, bar in enumerate(bars.all()) if "correct" in bar.get_attribute("class")]
        assert len(marked) == 1                                  # the projector marks the right choice
        for phone, chose in ((english, 0), (italian, 1)):
            verdict = phone.locator("section.phone").get_attribute("data-verdict")
            assert verdict == ("right" if chose in marked else "wrong")
        assert italian.locator("p.explain").inner_text().strip() and english.locator("p.explain").inner_text().strip()
        # axe: the verdict, the bars
        assert violations(italian, axe, FROM_LIBRARIES) == [] and violations(projector, axe, FROM_LIBRARIES) == []
        assert english.locator(".verdict").inner_text().split(".")[0] in ("Right", "Not this time")
        # the projector's own card takes the right choice as if clicked, and shows its verdict and observation
        revealed_on_the_projector(projector, marked[0])
        assert italian.locator(".verdict").inner_text().split(".")[0] in ("Giusto", "Non questa volta")
        # next card: the projector follows the lesson's link, every phone moves
        projector.locator("aside.class button[data-command=next]").click()
        projector.wait_for_url(re.compile(r"card=2"), timeout=60_000)
        for phone, heading in ((english, "card 2 of 5"), (italian, "scheda 2 di 5")):
            phone.locator("p.heading", has_text=heading).wait_for(timeout=30_000)
            assert phone.locator("button.choice[aria-pressed=true]").count() == 0
        projector.locator("aside.class .answered .n", has_text="0/2").wait_for(timeout=30_000)
        # card 2 is answered by playing up to a frame: at Reveal the projector's card presses ▶ and gives its
        # verdict once the player has reached that frame
        assert projector.evaluate("() => Number(document.body.dataset.lineareFrame || 0)") == 0
        english.locator("button.choice").nth(0).tap()
        projector.locator("aside.class .answered .n", has_text="1/2").wait_for(timeout=20_000)
        projector.locator("aside.class button[data-command=show]").click()
        projector.locator("aside.class .bar").first.wait_for(timeout=20_000)
        projector.locator("aside.class button[data-command=reveal]").click()
        english.locator("section.phone[data-verdict]").wait_for(timeout=20_000)
        right = [i for i, bar in enumerate(projector.locator("aside.class .bar").all())
                 if "correct" in bar.get_attribute("class")]
        revealed_on_the_projector(projector, right[0])
        assert projector.evaluate("() => Number(document.body.dataset.lineareFrame)") >= 1
        for page in (projector, english, italian):
            assert page.problems == []
    finally:
        for made in (teacher_context, english_context, italian_context):
            made.close()


def revealed_on_the_projector(projector, right):
    """The lesson card on the projector's page, which nobody clicked, after Reveal: the right choice pressed, the
    verdict «Giusto.» and the card's observation (what the page held back given back by the server)."""
    card = projector.locator("section.card")
    card.and_(projector.locator("[data-revealed=right]")).wait_for(timeout=30_000)
    pressed = [b.get_attribute("aria-pressed") for b in card.locator(".choices button").all()]
    assert [i for i, p in enumerate(pressed) if p == "true"] == [right]
    assert card.locator(".observe .verdict").inner_text().strip() == "Giusto."
    assert len(card.locator(".observe").inner_text()) > 40


def test_the_join_page_alone_asks_for_the_code(chromium, server, axe):
    made, phone = context(chromium, 390, 844, "it-IT", touch=True)
    try:
        phone.goto(server + "/join")
        phone.locator("input.code").wait_for(timeout=60_000)
        assert phone.locator("h1").inner_text() == "Entra nella sessione"
        phone.locator("input.code").fill("ZZZZZZ")
        phone.locator("button.go").tap()
        phone.locator(".error", has_text="Nessuna sessione ha questo codice").wait_for(timeout=20_000)
        width = phone.evaluate("() => document.documentElement.scrollWidth")
        assert width <= 390                                     # nothing scrolls sideways
        assert violations(phone, axe, FROM_LIBRARIES) == []
        assert phone.problems == []
    finally:
        made.close()


def test_a_phone_sketches_the_curve_it_expects(chromium, server):
    """A draw-your-guess card on a phone: empty axes of the projector's picture, a stroke of a finger, sent once;
    the room keeps it (the card is put in the room here, as the projector's page does for such a card)."""
    from lineare.app.classroom.live import default_rooms
    from lineare.app.classroom.store import open_rooms

    rooms = open_rooms(default_rooms(int(server.rsplit(":", 1)[1])))
    code, secret = rooms.open()
    turn = rooms.goto(code, secret, {"slug": "memory-fails", "number": 1, "choices": 4,
                                     "guess": {"x": [1, 16, False, "pairs"], "y": [0, 1, False, "share right"],
                                               "along": "x"}})
    made, phone = context(chromium, 390, 844, "en-US", touch=True)
    try:
        phone.goto(f"{server}/join?code={code}")
        phone.locator("button.choice").nth(2).tap(timeout=60_000)
        area = phone.locator(".sketch svg")
        area.wait_for(timeout=20_000)
        box = area.bounding_box()
        send = phone.locator(".sketch button.go")
        assert send.is_disabled()                                   # nothing drawn yet
        phone.mouse.move(box["x"] + 0.2 * box["width"], box["y"] + 0.2 * box["height"])
        phone.mouse.down()
        for i in range(1, 11):
            phone.mouse.move(box["x"] + (0.2 + 0.07 * i) * box["width"], box["y"] + (0.2 + 0.05 * i) * box["height"])
        phone.mouse.up()
        send.tap()
        phone.locator("p.status", has_text="Your sketch is in.").wait_for(timeout=20_000)
        phone.wait_for_timeout(500)
        kept = rooms.sketches(code, turn)
        assert len(kept) == 1 and 2 <= len(kept[0]) <= 40
        xs, ys = zip(*kept[0])
        assert all(0 <= v <= 1 for v in xs + ys) and xs == tuple(sorted(xs)) and ys[0] > ys[-1]   # falling line
        assert rooms.state(code)["answered"] == 1 and phone.problems == []
    finally:
        made.close()
        rooms.close(code, secret)
