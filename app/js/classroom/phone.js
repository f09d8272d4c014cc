// A student's phone in a live class (app/classroom/phone.py): it draws what the server's `screen` says and writes
// back only `hello` ([code, token]), `answer` ([turn, choice]) and `sketch` ([turn, [x, y], …]).
// The token of the room joined is kept in this tab (sessionStorage), so a reload comes back to the same place; the
// optional nickname never leaves the phone.

const SENT_POINTS = 40                   // a stroke is thinned to at most this many points before it is sent
const NICKNAME = "lineare-nickname"
const placeKey = (code) => "lineare-join:" + code

function make(tag, className, text) {
  const node = document.createElement(tag)
  if (className) { node.className = className }
  if (text !== undefined) { node.textContent = text }
  return node
}

function html(tag, className, markup) {      // our own escaped HTML from the server (formulas as MathML)
  const node = make(tag, className)
  node.innerHTML = markup
  return node
}

// a stroke over a stretch replaces what was drawn there before; points [x, y] in fractions of the axes
function stroke(points, from, to, along) {
  const low = Math.min(from[along], to[along]), high = Math.max(from[along], to[along])
  const kept = points.filter((p) => p[along] < low - 1e-6 || p[along] > high + 1e-6)
  return [...kept, from, to].sort((a, b) => a[along] - b[along])
}

function thinned(points) {
  if (points.length <= SENT_POINTS) { return points }
  const out = []
  for (let i = 0; i < SENT_POINTS; i++) { out.push(points[Math.round(i * (points.length - 1) / (SENT_POINTS - 1))]) }
  return out
}

const number = (v) => (Math.abs(v) >= 1e4 || (Math.abs(v) < 1e-2 && v !== 0)) ? v.toExponential(0) : String(+v.toFixed(2))

// empty axes to sketch on: `guess` is {x: [start, end, log, label], y: [...], along: "x" | "y"}
function sketchArea(guess, words, send) {
  const NS = "http://www.w3.org/2000/svg"
  const box = make("div", "sketch")
  const along = guess.along === "y" ? 1 : 0
  const W = 320, H = 220, L = 44, B = 34, T = 10, R = 12           // the frame inside the drawing, in its units
  const svg = document.createElementNS(NS, "svg")
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`)
  svg.setAttribute("role", "img")
  svg.setAttribute("aria-label", words.sketch)
  const el = (name, attrs, text) => {
    const node = document.createElementNS(NS, name)
    for (const [k, v] of Object.entries(attrs)) { node.setAttribute(k, v) }
    if (text !== undefined) { node.textContent = text }
    svg.append(node)
    return node
  }
  el("rect", {x: L, y: T, width: W - L - R, height: H - T - B, fill: "#fffdf5", stroke: "#52606d"})
  el("text", {x: L, y: H - B + 14, "font-size": 11, "text-anchor": "middle"}, number(guess.x[0]))
  el("text", {x: W - R, y: H - B + 14, "font-size": 11, "text-anchor": "end"}, number(guess.x[1]))
  el("text", {x: (L + W - R) / 2, y: H - 4, "font-size": 12, "text-anchor": "middle"}, guess.x[3] || "")
  el("text", {x: L - 4, y: H - B, "font-size": 11, "text-anchor": "end"}, number(guess.y[0]))
  el("text", {x: L - 4, y: T + 10, "font-size": 11, "text-anchor": "end"}, number(guess.y[1]))
  el("text", {x: 12, y: (T + H - B) / 2, "font-size": 12, "text-anchor": "middle",
              transform: `rotate(-90 12 ${(T + H - B) / 2})`}, guess.y[3] || "")
  const line = el("polyline", {fill: "none", stroke: "#1d4f7a", "stroke-width": 3})
  let points = [], last = null
  const fraction = (event) => {
    const r = svg.getBoundingClientRect(), sx = r.width / W, sy = r.height / H
    const x = ((event.clientX - r.left) / sx - L) / (W - L - R), y = 1 - ((event.clientY - r.top) / sy - T) / (H - T - B)
    return [Math.min(1, Math.max(0, x)), Math.min(1, Math.max(0, y))]
  }
  const redraw = () => {
    line.setAttribute("points", points.map(([x, y]) => `${L + x * (W - L - R)},${T + (1 - y) * (H - T - B)}`).join(" "))
    go.disabled = points.length < 2
  }
  svg.addEventListener("pointerdown", (event) => { event.preventDefault(); svg.setPointerCapture(event.pointerId); last = fraction(event) })
  svg.addEventListener("pointermove", (event) => {
    if (last === null) { return }
    const here = fraction(event)
    if (Math.abs(here[0] - last[0]) + Math.abs(here[1] - last[1]) < 0.01) { return }
    points = stroke(points, last, here, along); last = here; redraw()
  })
  svg.addEventListener("pointerup", () => { last = null })
  svg.addEventListener("pointercancel", () => { last = null })
  const buttons = make("div", "row")
  const clear = make("button", "plain", words.clear); clear.type = "button"
  const go = make("button", "go", words.send); go.type = "button"; go.disabled = true
  clear.onclick = () => { points = []; redraw() }
  go.onclick = () => { if (points.length >= 2) { send(thinned(points).map(([x, y]) => [Math.round(x * 1e4) / 1e4, Math.round(y * 1e4) / 1e4])) } }
  buttons.append(clear, go)
  box.append(make("p", "hint", words.sketch), svg, buttons)
  return box
}

export function render({ model, el }) {
  const w = model.words
  const root = make("section", "phone")
  root.setAttribute("aria-live", "polite")
  el.append(root)
  let sketched = null                       // the turn whose sketch was sent from here

  function language() {
    const a = make("a", "language", w.language)
    const url = new URL(window.location.href)
    url.searchParams.set("lang", w.language_code)
    a.href = url.toString()
    return a
  }

  function codeView(s) {
    root.append(make("h1", "", w.title))
    const form = make("form", "join")
    const label = make("label", "", w.code)
    const input = make("input", "code")
    Object.assign(input, {type: "text", name: "code", autocomplete: "off", spellcheck: false, maxLength: 9,
                          value: s.code || "", required: true})
    input.setAttribute("autocapitalize", "characters")
    label.append(input)
    const nick = make("label", "nick", w.nickname)
    const nickname = make("input", "")
    Object.assign(nickname, {type: "text", maxLength: 12, autocomplete: "off", value: sessionStorage.getItem(NICKNAME) || ""})
    nick.append(nickname)
    const button = make("button", "go", w.join); button.type = "submit"
    form.append(label, nick, button)
    if (s.error) { const error = make("p", "error", s.error); error.setAttribute("role", "alert"); form.append(error) }
    form.onsubmit = (event) => {
      event.preventDefault()
      const code = input.value.replace(/[\s-]/g, "").toUpperCase()
      sessionStorage.setItem(NICKNAME, nickname.value.slice(0, 12))
      const url = new URL(window.location.href)
      url.searchParams.set("code", code)
      history.replaceState(null, "", url.toString())     // a reload keeps the code
      model.hello = [code, sessionStorage.getItem(placeKey(code)) || ""]
    }
    root.append(form, language())
  }

  function cardView(s) {
    const nickname = sessionStorage.getItem(NICKNAME)
    if (nickname) { root.append(make("p", "you", w.you + " " + nickname)) }
    root.append(html("p", "heading", s.heading), html("h1", "prompt", s.prompt))
    const revealed = s.phase === "revealed"
    const choices = make("div", "choices")
    choices.setAttribute("role", "group")
    let chosen = s.chosen
    const status = make("p", "status")
    s.choices.forEach((text, i) => {
      const b = html("button", "choice", text)
      b.type = "button"
      b.setAttribute("aria-pressed", String(i === chosen))
      if (revealed) {
        b.disabled = true
        if (i === s.correct) { b.classList.add("correct") }
      }
      b.onclick = () => {
        chosen = i
        for (const other of choices.children) { other.setAttribute("aria-pressed", String(other === b)) }
        status.textContent = w.in
        model.answer = [s.turn, i]
      }
      choices.append(b)
    })
    root.append(choices)
    if (revealed) {
      const right = chosen === s.correct
      const verdict = make("div", "verdict " + (chosen < 0 ? "none" : right ? "right" : "wrong"))
      verdict.append(make("strong", "", chosen < 0 ? w.no_answer : right ? w.right : w.wrong))
      if (!right) {
        verdict.append(" " + w.was + " ")
        verdict.append(html("span", "", s.choices[s.correct]))
      }
      root.append(verdict, html("p", "explain", s.explain || ""))
      root.dataset.verdict = chosen < 0 ? "none" : right ? "right" : "wrong"
    } else {
      status.textContent = s.message || (chosen >= 0 ? w.in : w.tap)
      root.append(status)
      if (s.guess) {
        if (sketched === s.turn) { root.append(make("p", "status", w.sketched)) }
        else {
          root.append(sketchArea(s.guess, w, (points) => {
            model.sketch = [s.turn, ...points]
            sketched = s.turn
            draw()
          }))
        }
      }
    }
  }

  function draw() {
    const s = model.screen || {}
    root.replaceChildren()
    root.dataset.view = s.view || ""
    delete root.dataset.verdict
    if (s.view === "code") { codeView(s) }
    else if (s.view === "wait") { root.append(make("h1", "", w.wait)) }
    else if (s.view === "card") { cardView(s) }
    else if (s.view === "ended") {
      root.append(make("h1", "", w.ended))
      if (s.count) { root.append(make("p", "score", w.score.replace("{right}", s.right).replace("{count}", s.count))) }
    } else if (s.view === "gone") {
      root.append(make("h1", "", w.gone))
      const again = make("a", "go", w.again); again.href = "./join"
      root.append(again)
    }
  }

  model.on("screen", draw)
  model.on("place", () => {
    if (model.place.length === 2) { sessionStorage.setItem(placeKey(model.place[0]), model.place[1]) }
  })
  draw()
  // the link of the QR code carries the code: join at once (coming back to this tab's place after a reload)
  const s = model.screen || {}
  if (s.view === "code" && s.code && !s.error) { model.hello = [s.code, sessionStorage.getItem(placeKey(s.code)) || ""] }
}
