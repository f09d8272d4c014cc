"""One lesson card on a page: predict → press → observe, all in the browser.

    card = LessonCard(prompt=..., choices=["21", "99"], correct=1, at=5, press=..., observe=...)

The student picks a prediction (buttons, so mouse or keyboard); the card then says what to press, and
once the page's player reaches frame `at` (the `lineare:frame` event of app/components/player.py; at
−1: at once) it shows what happened and whether the prediction was right. Nothing goes to the server:
the right answer and the observation were computed with the run and sent with the card.
Texts are our own escaped HTML (formulas already converted), never a visitor's raw text.
"""
import param
from panel.custom import JSComponent

LESSON_CSS = """
:host { display: block; }
.card { border: 2px solid #1d4f7a; border-radius: 10px; background: #f7fafc; padding: 8px 14px;
        margin: 4px 10px 8px 10px; font-size: calc(17px * var(--lineare-scale, 1)); color: #1f2933; }
.head { display: flex; justify-content: space-between; align-items: center; gap: 8px;
        font-size: calc(16px * var(--lineare-scale, 1)); color: #52606d; }
.head a { color: #1d4f7a; font-weight: 600; text-decoration: none; border: 1px solid #9fb3c8;
          border-radius: 6px; padding: 2px 10px; }
.head a:hover { background: #e6eef6; }
.head a[aria-disabled="true"] { visibility: hidden; }
@media (max-width: 600px) {     /* a phone: the lesson's name on a row of its own, the two links under it */
  .head { flex-wrap: wrap; }
  .head span { order: -1; flex: 1 1 100%; }
}
.prompt { margin: 6px 0; font-weight: 600; }
.choices { display: flex; flex-wrap: wrap; gap: 8px; margin: 4px 0; }
.choices button { font-size: calc(16px * var(--lineare-scale, 1)); padding: 6px 14px; border-radius: 8px;
                  border: 2px solid #1d4f7a; background: white; color: #1d4f7a; cursor: pointer; }
.choices button:focus-visible, .head a:focus-visible { outline: 3px solid #102a43; outline-offset: 2px;
                                                       box-shadow: 0 0 0 5px white; }
.choices button[aria-pressed="true"] { background: #1d4f7a; color: white; }
.press { margin: 6px 0 2px 0; color: #8d5a00; font-weight: 600; }
.observe { margin: 6px 0 2px 0; padding: 6px 10px; border-radius: 6px; background: white; }
.verdict { font-weight: 700; margin-right: 6px; }
.stale { margin: 6px 0 2px 0; padding: 6px 10px; border-radius: 6px; background: #fff8e1; color: #3e2c00;
         border-left: 6px solid #f0b429; }
.stale a { margin-left: 8px; color: #1d4f7a; font-weight: 600; border: 1px solid #9fb3c8; border-radius: 6px;
           padding: 2px 10px; text-decoration: none; white-space: nowrap; }
.right .verdict { color: #1a7f37; } .wrong .verdict { color: #b42318; }
[hidden] { display: none !important; }
.spoken { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
"""


class LessonCard(JSComponent):
    """A prediction, the action that tests it and what happened; played in the browser."""

    heading = param.String(default="", doc="e.g. 'Lesson: The state fills up · card 2 of 4' (escaped HTML)")
    prompt = param.String(default="", doc="the question (HTML)")
    choices = param.List(default=[], doc="the predictions to choose from (escaped HTML)")
    correct = param.Integer(default=0, doc="index of the right prediction, computed from the run")
    at = param.Integer(default=-1, doc="the frame at which the result shows (−1: as soon as one chooses)")
    press = param.String(default="", doc="what to do after choosing (HTML)")
    observe = param.String(default="", doc="what happened (HTML)")
    words = param.Dict(default={}, doc="right, wrong, previous, next, stale, back, and their links")
    chosen = param.Integer(default=-1, doc="the prediction chosen in the browser (−1: none yet)")
    BROWSER_WRITES = ("chosen",)                  # what the server accepts from the browser (app/server/websocket.py)
    stale = param.Boolean(default=False, doc="the page's settings have left the card's")
    look = param.Boolean(default=False, doc="the page marked what the card asks about (class lesson-look)")
    present = param.Boolean(default=False, doc="presenter mode: the card brings the page's main picture under it")

    _stylesheets = [LESSON_CSS]

    _esm = """
    export function render({ model, el, view }) {
      const w = model.words
      const card = document.createElement("section")
      card.className = "card"
      card.setAttribute("aria-label", w.label || "")
      const point = (a, href) => {
        if (href) { a.href = href; a.removeAttribute("aria-disabled") }
        else { a.removeAttribute("href"); a.setAttribute("aria-disabled", "true") }
      }
      const link = (text, href, name) => {
        const a = document.createElement("a"); a.textContent = text; a.className = name
        point(a, href)
        return a
      }
      const head = document.createElement("div"); head.className = "head"
      const title = document.createElement("span"); title.innerHTML = model.heading
      const previous = link("← " + w.previous, w.previous_href, "previous")
      const next = link(w.next + " →", w.next_href, "next")
      head.append(previous, title, next)
      const prompt = document.createElement("div"); prompt.className = "prompt"; prompt.innerHTML = model.prompt
      const choices = document.createElement("div"); choices.className = "choices"
      choices.setAttribute("role", "group")
      const press = document.createElement("div"); press.className = "press"; press.innerHTML = model.press
      const observe = document.createElement("div"); observe.className = "observe"
      // the settings left the card's: its observation would describe other numbers, so a way back instead
      const stale = document.createElement("div"); stale.className = "stale"; stale.setAttribute("role", "status")
      const back = link(w.back, w.back_href, "back")
      stale.append(document.createTextNode(w.stale), back)
      press.hidden = observe.hidden = true
      stale.hidden = !model.stale
      // read aloud by screen readers when the verdict appears (a live region present from the start)
      const spoken = document.createElement("div"); spoken.className = "spoken"
      spoken.setAttribute("aria-live", "polite")
      let chosen = null

      const frame = () => {
        const shown = document.body.dataset.lineareFrame
        return shown === undefined ? 0 : Number(shown)
      }
      function reveal(t) {
        if (chosen === null || model.stale || (model.at >= 0 && t < model.at)) { return }
        const right = chosen === model.correct
        observe.className = "observe " + (right ? "right" : "wrong")
        observe.innerHTML = '<span class="verdict">' + (right ? w.right : w.wrong) + "</span>" + model.observe
        observe.hidden = false
        press.hidden = true
        card.dataset.revealed = right ? "right" : "wrong"
        spoken.textContent = observe.textContent
      }
      model.choices.forEach((text, i) => {
        const b = document.createElement("button")
        b.type = "button"; b.innerHTML = text; b.setAttribute("aria-pressed", "false")
        b.onclick = () => {
          chosen = i
          model.chosen = i
          for (const other of choices.children) {
            other.setAttribute("aria-pressed", String(other === b))
            if (other === b) { other.dataset.keys = "player" } else { delete other.dataset.keys }
          }
          press.hidden = model.at < 0 || frame() >= model.at
          observe.hidden = true
          reveal(frame())
        }
        // once chosen, Space belongs to the page's player (play, pause), not to this button again
        b.onkeydown = (event) => {
          const space = event.code === "Space" || event.key === " "
          if (space && b.dataset.keys === "player" && document.body.dataset.lineareKeys === "ready") {
            event.preventDefault()
          }
        }
        choices.append(b)
      })
      const onFrame = (event) => reveal(event.detail.t)
      document.addEventListener("lineare:frame", onFrame)
      model.on("remove", () => document.removeEventListener("lineare:frame", onFrame))
      model.on("words", () => {
        point(previous, model.words.previous_href); point(next, model.words.next_href)
        point(back, model.words.back_href)
      })
      model.on("stale", () => {
        stale.hidden = !model.stale
        if (model.stale) { observe.hidden = true; press.hidden = true } else { reveal(frame()) }
      })
      card.append(head, prompt, choices, press, stale, observe, spoken)
      el.append(card)
      let brought = null                          // the part bringIntoView scrolled under the card
      if (model.look || model.present) { bringIntoView() }
      // a choice, a verdict or a notice makes the stuck card taller, and the browser keeps the part below
      // where it was on the screen, so the card grew over its first lines: the part comes down under it
      // again, unless the visitor has scrolled it away (above the card, or lower than the card's edge)
      const grows = new ResizeObserver(() => {
        if (!brought || !brought.isConnected) { return }
        const box = view.el.getBoundingClientRect(), top = brought.getBoundingClientRect().top
        if (top >= box.top && top < box.bottom + 12) {
          brought.style.scrollMarginTop = box.height + 12 + "px"
          brought.scrollIntoView({block: "start", behavior: "instant"})
        }
      })
      grows.observe(card)
      model.on("remove", () => grows.disconnect())

      // what the card asks about lies below the first screen: the card stays at the top of the window
      // and the page scrolls the first marked part under it, every marked part outlined
      function marked(root, found, name) {
        for (const node of root.querySelectorAll("*")) {
          if (node.classList.contains(name)) { found.push(node) }
          if (node.shadowRoot) { marked(node.shadowRoot, found, name) }
        }
        return found
      }
      function bringIntoView(tries = 0) {
        const host = view.el
        // opaque, and over the strip above it too: nothing scrolls through beside or above the stuck card
        Object.assign(host.style, {position: "sticky", top: "0px", zIndex: "20", background: "#ffffff",
                                   boxShadow: "0 -16px 0 0 #ffffff"})
        // in presenter mode, larger type pushes the pictures down: the first main picture comes up instead
        const drawn = (node) => node.getBoundingClientRect().height > 0
        const found = model.look ? marked(document, [], "lesson-look")
                                 : marked(document, [], "main-picture").filter(drawn)   // not a hidden part's
        const ready = found.length && found.every(drawn)
        if (!ready && tries < 40) { setTimeout(() => bringIntoView(tries + 1), 250); return }
        if (!model.look) { found.splice(1) }
        for (const node of model.look ? found : []) {
          node.style.outline = "4px solid #f0b429"; node.style.outlineOffset = "4px"
        }
        if (found.length) {
          // the part the card names just above (lesson-lead) comes up too when it costs little: the marked
          // part then still starts in the upper half of the room under the card (a projector, not a phone)
          const under = host.getBoundingClientRect().height + 12
          const port = (document.getElementById("main") || document.body).getBoundingClientRect()
          const room = Math.min(port.bottom, window.innerHeight) - Math.max(port.top, 0) - under
          const lead = model.look ? marked(document, [], "lesson-lead").filter(drawn)[0] : undefined
          const both = lead && found[0].getBoundingClientRect().top - lead.getBoundingClientRect().top <= room / 2
          const first = both ? lead : found[0]
          first.style.scrollMarginTop = under + "px"
          first.scrollIntoView({block: "start", behavior: "instant"})
          brought = first
          keepInView(first)
        }
      }
      // a section above, made as the scroll passed it (app/components/later.py), may come taller than its
      // marker (presenter mode's larger type) and push the part down: it is brought back while it moves, for
      // up to ten seconds, unless the visitor scrolls or presses a key meanwhile
      function keepInView(node) {
        const moves = ["wheel", "touchstart", "keydown", "pointerdown"]
        let top = node.getBoundingClientRect().top, checks = 0, visitor = false
        const mine = () => { visitor = true }
        moves.forEach((e) => addEventListener(e, mine, {capture: true, passive: true}))
        const check = () => {
          if (visitor || ++checks > 40 || !node.isConnected) {
            moves.forEach((e) => removeEventListener(e, mine, {capture: true})); return
          }
          if (Math.abs(node.getBoundingClientRect().top - top) > 2) {
            node.scrollIntoView({block: "start", behavior: "instant"})
            top = node.getBoundingClientRect().top
          }
          setTimeout(check, 250)
        }
        setTimeout(check, 250)
      }
    }
    """
