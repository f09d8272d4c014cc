// A lesson card (app/components/lesson.py): predict → act → observe.
// The student chooses a prediction; the card says what to do (play to frame `at`, or sketch a curve on the empty
// axes of the figure `guess_figure`); the browser writes back `chosen`, `played`, `guess`; the server gives the page
// back what the card held back and sets `acted`; the card then shows the verdict and what happened.

const STEP = 0.05                    // a keyboard step of a sketched point: a twentieth of the axis
const KEY_POINTS = 6                 // the points the keyboard places when a sketch starts by keyboard
const SENT_POINTS = 40               // a stroke is thinned to at most this many points before it is sent

// -- the sketch: points [x, y] as fractions of the frame (0 at an axis's start, 1 at its end), a function of
// `along` (0: of x, 1: of y); a stroke over a stretch replaces what was drawn there before

function sorted(points, along) { return [...points].sort((a, b) => a[along] - b[along]) }

function stroke(points, from, to, along) {
  const low = Math.min(from[along], to[along]), high = Math.max(from[along], to[along])
  const kept = points.filter((p) => p[along] < low - 1e-6 || p[along] > high + 1e-6)
  return sorted([...kept, from, to], along)
}

function placed(points, point, along) {
  const kept = points.filter((p) => Math.abs(p[along] - point[along]) > 0.02)
  return sorted([...kept, point], along)
}

function thinned(points, along) {
  if (points.length <= SENT_POINTS) { return points }
  const out = []
  for (let i = 0; i < SENT_POINTS; i++) { out.push(points[Math.round(i * (points.length - 1) / (SENT_POINTS - 1))]) }
  return sorted(out, along)
}

const clamp = (v) => Math.min(1, Math.max(0, v))

// the Bokeh view of the figure with this model id, anywhere on the page
function figureView(id) {
  const index = window.Bokeh && window.Bokeh.index
  if (!index) { return null }
  const seen = new Set()
  const visit = (view) => {
    if (!view || seen.has(view)) { return null }
    seen.add(view)
    if (view.model && view.model.id === id && view.frame) { return view }
    for (const child of view.child_views || []) {
      const found = visit(child)
      if (found) { return found }
    }
    return null
  }
  for (const root of Object.values(index)) {
    const found = visit(root)
    if (found) { return found }
  }
  return null
}

// a layer over a figure's frame where the student sketches; `changed(points)` after each change
function sketchLayer(view, along, words, changed) {
  const NS = "http://www.w3.org/2000/svg"
  const layer = document.createElement("div")
  layer.className = "lineare-sketch"
  layer.tabIndex = 0
  layer.setAttribute("role", "application")
  layer.setAttribute("aria-label", words.sketch_area || "")
  Object.assign(layer.style, {position: "absolute", zIndex: "5", touchAction: "none", cursor: "crosshair",
                              outline: "3px dashed #f0b429", outlineOffset: "-3px", background: "rgba(255,248,225,0.35)"})
  const svg = document.createElementNS(NS, "svg")
  Object.assign(svg.style, {position: "absolute", inset: "0", width: "100%", height: "100%", overflow: "visible"})
  const line = document.createElementNS(NS, "polyline")
  line.setAttribute("fill", "none"); line.setAttribute("stroke", "#7b3294")
  line.setAttribute("stroke-width", "3"); line.setAttribute("stroke-dasharray", "8 5")
  svg.append(line)
  layer.append(svg)
  let points = [], selected = -1, last = null, moved = false

  const size = () => ({w: layer.clientWidth || 1, h: layer.clientHeight || 1})
  const fraction = (event) => {
    const box = layer.getBoundingClientRect()
    return [clamp((event.clientX - box.left) / box.width), clamp(1 - (event.clientY - box.top) / box.height)]
  }
  function draw() {
    const {w, h} = size()
    line.setAttribute("points", points.map(([x, y]) => `${x * w},${(1 - y) * h}`).join(" "))
    for (const dot of [...svg.querySelectorAll("circle")]) { dot.remove() }
    points.forEach(([x, y], i) => {
      const dot = document.createElementNS(NS, "circle")
      dot.setAttribute("cx", x * w); dot.setAttribute("cy", (1 - y) * h)
      dot.setAttribute("r", i === selected ? 8 : 4)
      dot.setAttribute("fill", i === selected ? "#f0b429" : "#7b3294")
      dot.setAttribute("stroke", "#102a43"); dot.setAttribute("stroke-width", i === selected ? 2 : 0)
      svg.append(dot)
    })
  }
  function update(next) { points = next; draw(); changed(points) }

  // mouse, pen or finger: a drag draws, a tap places one point
  layer.addEventListener("pointerdown", (event) => {
    event.preventDefault()
    layer.setPointerCapture(event.pointerId)
    last = fraction(event); moved = false; selected = -1
  })
  layer.addEventListener("pointermove", (event) => {
    if (last === null) { return }
    const here = fraction(event)
    if (Math.abs(here[0] - last[0]) + Math.abs(here[1] - last[1]) < 0.004) { return }
    moved = true
    update(stroke(points, last, here, along))
    last = here
  })
  const end = (event) => {
    if (last === null) { return }
    if (!moved) { update(placed(points, fraction(event), along)) }
    last = null
  }
  layer.addEventListener("pointerup", end)
  layer.addEventListener("pointercancel", () => { last = null })

  // keyboard: a few points across the axis; the arrows along it choose one, the arrows across it move it
  // (Page Up / Page Down: four steps), Home and End the first and the last
  const choose = along === 0 ? {ArrowRight: +1, ArrowLeft: -1} : {ArrowUp: +1, ArrowDown: -1}
  const move = along === 0 ? {ArrowUp: STEP, ArrowDown: -STEP, PageUp: 4 * STEP, PageDown: -4 * STEP}
                           : {ArrowRight: STEP, ArrowLeft: -STEP, PageUp: 4 * STEP, PageDown: -4 * STEP}
  layer.addEventListener("keydown", (event) => {
    if (!(event.key in choose || event.key in move || event.key === "Home" || event.key === "End")) { return }
    event.preventDefault(); event.stopPropagation()            // the page's player keeps its hands off
    if (points.length === 0) {
      for (let i = 0; i < KEY_POINTS; i++) {
        const at = 0.02 + i * 0.96 / (KEY_POINTS - 1)
        points.push(along === 0 ? [at, 0.5] : [0.5, at])
      }
    }
    selected = Math.max(selected, 0)
    if (event.key in choose) { selected = Math.min(points.length - 1, Math.max(0, selected + choose[event.key])) }
    else if (event.key === "Home") { selected = 0 }
    else if (event.key === "End") { selected = points.length - 1 }
    else {
      const p = [...points[selected]]
      p[1 - along] = clamp(p[1 - along] + move[event.key])
      points = points.map((q, i) => i === selected ? p : q)
    }
    update(points)
    layer.dispatchEvent(new CustomEvent("lineare:point", {detail: {n: selected + 1, count: points.length,
                                                                   height: Math.round(100 * points[selected][1 - along])}}))
  })

  function place() {                 // over the frame of the figure, in the figure's own coordinates
    const box = view.frame.bbox
    Object.assign(layer.style, {left: box.left + "px", top: box.top + "px", width: box.width + "px",
                                height: box.height + "px"})
    draw()
  }
  const host = view.shadow_el || view.el
  host.append(layer)
  place()
  const resized = new ResizeObserver(() => requestAnimationFrame(place))      // after Bokeh's own layout
  resized.observe(view.el)
  return {
    layer,
    points: () => points,
    clear: () => { selected = -1; update([]) },
    remove: () => { resized.disconnect(); layer.remove() },
  }
}

export function render({ model, el, view }) {
  const w = model.words
  const card = document.createElement("section")
  card.className = model.present ? "card present" : "card"
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
  // a link of the card's head: an arrow and its words (a phone shows the arrow alone, the name stays)
  const arrowed = (words, href, name, before) => {
    const a = link("", href, name), word = document.createElement("span")
    word.className = "word"; word.textContent = words
    a.append(...(before ? ["← ", word] : [word, " →"]))
    a.setAttribute("aria-label", words)
    return a
  }
  const head = document.createElement("div"); head.className = "head"
  // the lesson's title and the card's number; a phone, whose page header already names the lesson, shows the
  // number alone, so the head keeps to one line of the card's third of the screen
  const title = document.createElement("span")
  const long = document.createElement("span"); long.className = "long"; long.innerHTML = model.heading
  const short = document.createElement("span"); short.className = "short"; short.textContent = w.card_of || ""
  title.append(long, short)
  const previous = arrowed(w.previous, w.previous_href, "previous", true)
  const next = arrowed(model.last ? w.next_lesson : w.next, w.next_href, "next", false)
  head.append(previous, title, next)
  // the question in a box of its own: folded, the box cuts it to two lines (app/components/lesson.py)
  const prompt = document.createElement("div"); prompt.className = "prompt"
  prompt.innerHTML = "<span>" + model.prompt + "</span>"
  prompt.id = "lesson-prompt"
  const choices = document.createElement("div"); choices.className = "choices"
  choices.setAttribute("role", "group")
  choices.setAttribute("aria-labelledby", prompt.id)
  const press = document.createElement("div"); press.className = "press"; press.innerHTML = model.press
  // presenter mode: a live class starts here, beside the choices, in the card that stays in sight (the class's own
  // panel, app/js/classroom/projector.js, takes the press and tells back whether a class is on, or a note)
  const ask = document.createElement("div"); ask.className = "ask"
  ask.append(choices)
  if (w.class_start) {
    const live = document.createElement("div"); live.className = "class-start"
    const start = document.createElement("button"); start.type = "button"; start.className = "go"
    start.textContent = "▶ " + w.class_start; start.title = w.class_hint || ""
    start.onclick = () => document.dispatchEvent(new CustomEvent("lineare:class-start"))
    const note = document.createElement("span"); note.className = "note"; note.setAttribute("role", "status")
    live.append(start, note)
    ask.append(live)
    const shown = (view, said) => { live.hidden = view === "on"; note.textContent = said || "" }
    // a class's panel opening (or closing) narrows (or widens) the page: the part the card speaks of comes back
    // under it
    const onClass = (event) => {
      const was = live.hidden
      shown(event.detail.view, event.detail.note)
      if (live.hidden !== was) { bringAgain() }
    }
    shown(document.body.dataset.lineareClass, "")
    document.addEventListener("lineare:class", onClass)
    model.on("remove", () => document.removeEventListener("lineare:class", onClass))
  }
  // a card that says to press ▶ has ▶ itself, whatever the page scrolled out of sight: its buttons press the page
  // player's own keys (Space plays or pauses, → steps)
  const keys = document.createElement("div"); keys.className = "keys"
  const key = (text, code, name) => {
    const b = document.createElement("button"); b.type = "button"; b.textContent = text; b.className = name
    b.onclick = () => document.dispatchEvent(new KeyboardEvent("keydown", {key: code === "Space" ? " " : code, code,
                                                                          bubbles: true}))
    return b
  }
  const where = document.createElement("span"); where.className = "where"      // the player's step, shown here too
  keys.append(key(w.play || "", "Space", "play"), key(w.step || "", "ArrowRight", "step"), where)
  // the sketch's buttons: clear it, or show the true curve over it
  const sketch = document.createElement("div"); sketch.className = "sketch"
  const how = document.createElement("span"); how.className = "how"; how.textContent = w.sketch_how || ""
  const clear = document.createElement("button"); clear.type = "button"; clear.textContent = w.sketch_clear || ""
  const check = document.createElement("button"); check.type = "button"; check.className = "go"
  check.textContent = w.sketch_check || ""
  sketch.append(how, clear, check)
  const observe = document.createElement("div"); observe.className = "observe"
  // the lesson's last card: the way on once its answer is out
  const end = document.createElement("div"); end.className = "end"
  if (model.last) {
    end.append(document.createTextNode(w.end || ""), link(w.list, w.list_href, "list"))
    if (w.next_href) { end.append(link(w.next_lesson + " →", w.next_href, "onward")) }
  }
  // the settings left the card's: its observation would describe other numbers, so a way back instead
  const stale = document.createElement("div"); stale.className = "stale"; stale.setAttribute("role", "status")
  const back = link(w.back, w.back_href, "back")
  stale.append(document.createTextNode(w.stale), back)
  press.hidden = keys.hidden = sketch.hidden = observe.hidden = end.hidden = true
  check.hidden = model.at >= 0                      // a sketch for a run goes in when the run starts
  stale.hidden = !model.stale
  // what a screen reader says as it happens: the instruction after a choice, then the verdict and what happened,
  // each a sentence of its own (a live region present from the start)
  const spoken = document.createElement("div"); spoken.className = "spoken"
  spoken.setAttribute("aria-live", "polite")
  // (its words in an element of their own: the region's clipping, not their own box, keeps them off the screen)
  const say = (text) => {
    spoken.replaceChildren()
    setTimeout(() => { const words = document.createElement("span"); words.textContent = text; spoken.append(words) }, 50)
  }
  let chosen = null

  const sketching = model.guess_figure !== ""
  const along = model.guess_along === "y" ? 1 : 0
  let layer = null, sent = false, startFrame = null

  const frame = () => {
    const shown = document.body.dataset.lineareFrame
    return shown === undefined ? 0 : Number(shown)
  }
  let told = false                   // the choice came from the server (a live class's Reveal on the projector)
  function verdict() {
    if (chosen === null || !model.acted || model.stale) { return }
    if (told && model.at >= 0 && frame() < model.at) { return }      // once ▶ has played up to the card's frame
    const right = chosen === model.correct
    observe.className = "observe " + (right ? "right" : "wrong")
    const said = right ? w.right : w.wrong
    observe.innerHTML = '<span class="verdict">' + said + "</span> " + model.observe
      + (model.differ ? '<span class="differ">' + model.differ + "</span>" : "")
    observe.hidden = false
    press.hidden = keys.hidden = sketch.hidden = true
    end.hidden = !model.last
    inSight([observe, end])
    card.dataset.revealed = right ? "right" : "wrong"
    const text = (html) => { const box = document.createElement("div"); box.innerHTML = html; return box.textContent }
    say([said, text(model.observe), text(model.differ)].filter((part) => part.trim()).join(" "))
  }
  // a phone's card scrolls inside its third of the screen (app/components/lesson.py): what it has just shown (the
  // action's buttons and instruction after a choice, the verdict after the action) is scrolled into the card's
  // sight, all of it when it fits, else from its start; the page itself does not move
  function inSight(parts) {
    requestAnimationFrame(() => {
      const shown = parts.filter((part) => !part.hidden && part.getBoundingClientRect().height > 0)
      if (!shown.length || card.scrollHeight <= card.clientHeight + 1) { return }
      const box = card.getBoundingClientRect(), at = (y) => y - box.top + card.scrollTop
      const top = Math.min(...shown.map((part) => at(part.getBoundingClientRect().top)))
      const bottom = Math.max(...shown.map((part) => at(part.getBoundingClientRect().bottom)))
      const room = card.clientHeight - 8
      card.scrollTop = bottom - top <= room ? Math.min(top, Math.max(card.scrollTop, bottom - room)) : top - 4
    })
  }
  function sendSketch() {
    if (sent || !layer) { return false }
    const points = layer.points()
    if (points.length < 2) { return false }
    sent = true
    model.guess = thinned(points, along).map(([x, y]) => [Math.round(x * 1e4) / 1e4, Math.round(y * 1e4) / 1e4])
    layer.remove(); layer = null
    return true
  }
  function startSketch(tries = 0) {
    if (layer || sent || model.acted) { return }
    const figure = figureView(model.guess_figure)
    if (!figure) {                                    // the picture is still being drawn
      if (tries < 40) { setTimeout(() => startSketch(tries + 1), 250) }
      return
    }
    layer = sketchLayer(figure, along, w, (points) => { check.disabled = points.length < 2 || sent })
    layer.layer.addEventListener("lineare:point", (event) => {
      const {n, count, height} = event.detail
      say((w.sketch_point || "").replace("{n}", n).replace("{count}", count).replace("{height}", height))
    })
    card.dataset.sketch = "ready"
  }
  clear.onclick = () => { if (layer) { layer.clear() } }
  check.onclick = () => { if (sendSketch()) { sketch.hidden = true } }
  check.disabled = true

  // the choice `i` pressed on the card (by the student, or by the server)
  function pick(i) {
    chosen = i
    Array.from(choices.children).forEach((other, j) => {
      other.setAttribute("aria-pressed", String(j === i))
      if (j === i) { other.dataset.keys = "player" } else { delete other.dataset.keys }
    })
    card.classList.add("folded")
    // an ellipsis where the folded question is cut (not under one that fits)
    requestAnimationFrame(() => prompt.classList.toggle("cut", prompt.scrollHeight > prompt.clientHeight + 1))
  }
  let lastFrame = -Infinity          // when the player last drew a frame (it is playing if that was just now)

  model.choices.forEach((text, i) => {
    const b = document.createElement("button")
    b.type = "button"; b.innerHTML = text; b.setAttribute("aria-pressed", "false")
    b.onclick = () => {
      const first = chosen === null
      pick(i)
      model.chosen = i
      if (first) { bringAgain() }
      if (model.acted) { verdict(); return }
      // the action still to come: what to do, said once
      press.hidden = !model.press
      keys.hidden = model.at < 0
      sketch.hidden = !sketching || sent
      if (sketching) { startSketch() }
      if (model.at >= 0 && startFrame === null) { startFrame = frame() }
      if (first && model.press) { say(press.textContent.trim()) }
      inSight([keys, sketch, press])
      if (model.at >= 0 && frame() >= model.at) { model.played = true }
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
  prompt.onclick = () => card.classList.toggle("folded")          // a phone's folded question, unfolded
  const onFrame = (event) => {
    lastFrame = performance.now()
    where.textContent = (w.step_of || "").replace("{t}", event.detail.t + 1).replace("{n}", event.detail.length)
    if (told && model.acted && observe.hidden) { verdict() }
    if (chosen === null || model.acted) { return }
    // a sketch made for a run goes in when the run starts to play
    if (sketching && !sent && startFrame !== null && event.detail.t !== startFrame && sendSketch()) {
      sketch.hidden = true
    }
    if (model.at >= 0 && event.detail.t >= model.at) { model.played = true }
  }
  document.addEventListener("lineare:frame", onFrame)
  model.on("remove", () => { document.removeEventListener("lineare:frame", onFrame); if (layer) { layer.remove() } })
  model.on("words", () => {
    point(previous, model.words.previous_href); point(next, model.words.next_href)
    point(back, model.words.back_href)
  })
  model.on("acted", () => {
    if (layer && model.acted) { layer.remove(); layer = null }
    verdict()
    // what the card held back above the part it speaks of is back, and pushed that part down: it comes up again
    if (model.acted) { bringAgain() }
  })
  model.on("differ", verdict)
  // a live class's Reveal chooses on the projector's card as the student would (app/classroom/projector.py): the
  // choice pressed, ▶ pressed on a card played up to a frame (unless the player is playing), and the verdict once
  // the page is given back
  model.on("chosen", () => {
    if (model.chosen < 0 || model.chosen === chosen) { return }
    told = true
    pick(model.chosen)
    press.hidden = keys.hidden = sketch.hidden = true
    if (model.at >= 0 && frame() < model.at && performance.now() - lastFrame > 300) {
      document.dispatchEvent(new KeyboardEvent("keydown", {key: " ", code: "Space", bubbles: true}))
    }
    verdict()
  })
  model.on("stale", () => {
    stale.hidden = !model.stale
    if (model.stale) { observe.hidden = true; press.hidden = keys.hidden = sketch.hidden = true } else { verdict() }
  })
  card.append(head, prompt, ask, press, keys, sketch, stale, observe, end, spoken)
  el.append(card)

  let brought = null                          // the part bringIntoView scrolled under the card
  // that part right under the card again, once the card has grown (a choice) or the page above it has (a part given
  // back): the card's next step is about it
  function bringAgain() {
    if (!brought || !brought.isConnected) { return }
    requestAnimationFrame(() => {
      brought.style.scrollMarginTop = view.el.getBoundingClientRect().height + 12 + "px"
      brought.scrollIntoView({block: "start", behavior: "instant"})
    })
  }
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

  // what the card speaks of lies below the first screen: the card stays at the top of the window
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
    const found = model.look ? marked(document, [], "lesson-look").filter(drawn)
                             : marked(document, [], "main-picture").filter(drawn)   // not a hidden part's
    const ready = found.length > 0
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
    const recheck = () => {
      if (visitor || ++checks > 40 || !node.isConnected) {
        moves.forEach((e) => removeEventListener(e, mine, {capture: true})); return
      }
      if (Math.abs(node.getBoundingClientRect().top - top) > 2) {
        node.scrollIntoView({block: "start", behavior: "instant"})
        top = node.getBoundingClientRect().top
      }
      setTimeout(recheck, 250)
    }
    setTimeout(recheck, 250)
  }
}
