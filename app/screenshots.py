"""Take screenshots of every page in Italian and English: `python -m lineare.app.screenshots`.

Writes assets/screenshots/<page>-<lang>[-<level>].png at 1366×768, a common classroom projector, with the
sidebar open (the first screen: what a class sees before anyone scrolls).
Starts its own server on a free port and closes it and the browser at the end.
`--devices`: a phone (390×844) and a tablet (768×1024) instead, by touch, as <device>-<page>-<lang>.png.
"""
import argparse

from lineare.app.dashboards import DASHBOARDS
from lineare.app.devtools import ROOT, browser, running_server
from lineare.app.lessons import LESSONS

OUT = ROOT / "assets" / "screenshots"
# one card of every lesson, as a class meets it (the picture the card asks about on the same screen)
PREFERRED_CARDS = {"softmax": 2, "state": 3, "memory-fails": 2}            # else the first


def pages():
    """(file stem, path and query) of each picture worth taking."""
    shots = [("home", "/", "")]
    for dashboard in DASHBOARDS:
        if dashboard.build is None:
            continue
        shots.append((dashboard.slug, f"/{dashboard.slug}", "&t=3"))
    # the state page again: formulas, the delta rule overwriting a number, and softmax's growing cache
    shots.append(("state-superiore", "/state", "&level=superiore&variant=deltanet&preset=overwrite&t=2"))
    shots.append(("state-softmax", "/state", "&variant=softmax&t=7"))
    shots.append(("state-trained", "/state", "&mode=trained&variant=deltanet&t=40"))
    shots.append(("two-bills-superiore", "/two-bills",
                  "&level=superiore&context=4096&t=30&preset=retnet_6_7b&n=8192&dtype=fp16"))
    shots.append(("parallel-recurrent-superiore", "/parallel-recurrent", "&level=superiore&variant=gla&T=96&chunk=32"))
    shots.append(("transition-superiore", "/transition", "&level=superiore&gate=scalar&alpha=0.7&beta=0.5"))
    shots.append(("memory-fails-superiore", "/memory-fails", "&level=superiore&rule=delta&rewrites=8&query=3"))
    shots.append(("architectures-superiore", "/architectures", "&level=superiore&arch=rwkv7"))
    # the first lesson with φ on, a card of every lesson, and presenter mode
    shots.append(("softmax-linear", "/softmax", "&attention=linear&t=5"))
    for slug in LESSONS:
        card = PREFERRED_CARDS.get(slug, 1)
        shots.append((f"lesson-{slug}", f"/{slug}", f"&lesson={slug}&card={card}"))
    shots.append(("present-transition", "/transition", "&present=1&gate=scalar&alpha=0.7&beta=0.5"))
    return shots


# (device, viewport, file stem, path and query): what a student sees on their own phone or tablet
DEVICES = [("phone", (390, 844), "lesson-state", "/state", "&lesson=state&card=3"),
           ("tablet", (768, 1024), "softmax", "/softmax", "&attention=linear&t=5")]


def device_shots(url, chromium):
    for lang in ("it", "en"):
        for device, (width, height), stem, path, query in DEVICES:
            context = chromium.new_context(viewport={"width": width, "height": height}, locale=lang,
                                           has_touch=True, is_mobile=True, device_scale_factor=2)
            page = context.new_page()
            page.goto(f"{url}{path}?lang={lang}{query}", timeout=120_000)
            page.wait_for_selector("nav", state="attached", timeout=120_000)
            page.wait_for_timeout(3500)                     # Bokeh draws; wide pictures are fitted each second
            target = OUT / f"{device}-{stem}-{lang}.png"
            page.screenshot(path=str(target))
            print(target.relative_to(ROOT))
            context.close()


def live_class_shots(url, chromium, phones=11):
    """A live class: the projector (1366 × 768, Italian) with the class's answers shown as bars, and an English
    phone (390 × 844) after the reveal. `phones` more answer over the protocol (bench.load's Phone)."""
    import asyncio
    import random
    import threading

    from lineare.bench.load import Phone

    projector_context = chromium.new_context(viewport={"width": 1366, "height": 768}, locale="it-IT")
    projector = projector_context.new_page()
    projector.goto(f"{url}/softmax?lesson=softmax&card=1&present=1&lang=it", timeout=120_000)
    projector.locator("aside.class button[data-command=start]").click(timeout=120_000)
    code = projector.locator("aside.class .letters").inner_text(timeout=60_000)
    phone_context = chromium.new_context(viewport={"width": 390, "height": 844}, locale="en-US", has_touch=True,
                                         is_mobile=True)
    phone = phone_context.new_page()
    phone.goto(f"{url}/join?code={code}")
    phone.locator("button.choice").nth(1).tap(timeout=60_000)

    async def class_answers():
        rng, crowd = random.Random(3), [Phone(url) for _ in range(phones)]
        for i, student in enumerate(crowd):
            await student.join(code, ("it", "en")[i % 2])
            await student.answer(rng.choice([0, 1, 1, 1, 2]))
        await asyncio.sleep(2)
        return crowd
    answering = threading.Thread(target=lambda: asyncio.run(class_answers()))   # Playwright holds this loop
    answering.start()
    answering.join(300)
    projector.locator("aside.class button[data-command=show]").click()
    projector.locator("aside.class .bar").first.wait_for(timeout=30_000)
    projector.wait_for_timeout(1500)
    target = OUT / "live-class-projector-it.png"
    projector.screenshot(path=str(target))
    print(target.relative_to(ROOT))
    projector.locator("aside.class button[data-command=reveal]").click()
    phone.locator("section.phone[data-verdict]").wait_for(timeout=30_000)
    phone.wait_for_timeout(500)
    target = OUT / "live-class-phone-en.png"
    phone.screenshot(path=str(target))
    print(target.relative_to(ROOT))
    projector_context.close()
    phone_context.close()


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m lineare.app.screenshots")
    parser.add_argument("--width", type=int, default=1366)
    parser.add_argument("--height", type=int, default=768)
    parser.add_argument("--full-page", action="store_true")
    parser.add_argument("--only", default="", help="only the pictures whose name starts so (e.g. lesson-)")
    parser.add_argument("--devices", action="store_true", help="a phone and a tablet, by touch")
    parser.add_argument("--live-class", action="store_true", help="a live class: the projector and a phone")
    args = parser.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    with running_server() as url, browser() as chromium:
        if args.devices:
            device_shots(url, chromium)
            return
        if args.live_class:
            live_class_shots(url, chromium)
            return
        for lang in ("it", "en"):
            context = chromium.new_context(viewport={"width": args.width, "height": args.height}, locale=lang)
            page = context.new_page()
            for stem, path, query in (shot for shot in pages() if shot[0].startswith(args.only)):
                page.goto(f"{url}{path}?lang={lang}{query}", timeout=120_000)
                page.wait_for_selector("nav", state="attached", timeout=120_000)
                if "lesson=" in query:                      # the card, and the picture it brings under it
                    page.locator("section.card").wait_for(timeout=60_000)
                page.wait_for_timeout(2500)                 # let Bokeh finish drawing
                if args.full_page:
                    # the Player paints a figure only near the screen: make the whole page the screen
                    height = page.evaluate("document.documentElement.scrollHeight")
                    page.set_viewport_size({"width": args.width, "height": height})
                    page.wait_for_timeout(1000)
                target = OUT / f"{stem}-{lang}.png"
                page.screenshot(path=str(target), full_page=args.full_page)
                page.set_viewport_size({"width": args.width, "height": args.height})
                print(target.relative_to(ROOT))
            context.close()


if __name__ == "__main__":
    main()
