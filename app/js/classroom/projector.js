// The projector's panel of a live class (app/classroom/projector.py). Off: hidden; the lesson card's own button
// "Start a class" (app/js/components/lesson.js) sends its press here, and hears back the view and any note. On: a
// column at the right of the page with the address to open, its QR code and the code, how many joined and
// answered, the teacher's buttons and, once shown, the distribution of the choices as bars; at the end, the
// lesson's summary and the results as CSV. The room's secret (`grant`) is kept in this tab and written back as
// `key` when the lesson's next page opens here: it never goes into a link.

const KEY = "lineare-class"

function make(tag, className, text) {
  const node = document.createElement(tag)
  if (className) { node.className = className }
  if (text !== undefined) { node.textContent = text }
  return node
}

export function render({ model, el }) {
  const w = model.words
  const panel = make("aside", "class")
  panel.setAttribute("aria-label", w.start)
  el.append(panel)
  let presses = 0
  const send = (name) => { model.command = [name, ++presses] }

  // the panel lies over the page's right edge, the page's main column making room for it (a class of its own on
  // <body>, so that the page's pictures are laid out again narrower)
  if (!document.getElementById("lineare-class-style")) {
    const style = make("style")
    style.id = "lineare-class-style"
    style.textContent = "body.lineare-class #main { padding-right: var(--lineare-class-width, 360px) !important; }"
    document.head.append(style)
  }

  function button(name, text, main) {
    const b = make("button", main ? "go" : "", text)
    b.type = "button"
    b.dataset.command = name
    b.onclick = () => send(name)
    return b
  }

  function bars(room) {
    const box = make("div", "bars")
    box.setAttribute("role", "list")
    const most = Math.max(1, ...room.counts)
    room.choices.forEach((text, i) => {
      const row = make("div", "bar" + (room.correct === i ? " correct" : ""))
      row.setAttribute("role", "listitem")
      const label = make("span", "label"); label.innerHTML = text
      const track = make("span", "track")
      const fill = make("span", "fill"); fill.style.width = (100 * room.counts[i] / most) + "%"
      track.append(fill)
      row.append(label, track, make("span", "count", String(room.counts[i])))
      box.append(row)
    })
    return box
  }

  function summary(room) {
    const box = make("div", "summary")
    box.append(make("h2", "", w.summary))
    if (!room.summary.length) { box.append(make("p", "", w.nobody)) }
    const list = make("ol")
    for (const row of room.summary) {
      const item = make("li")
      const head = make("div", "heading"); head.innerHTML = row.heading
      const prompt = make("div", "prompt"); prompt.innerHTML = row.prompt
      const score = make("div", "score", row.score)
      item.append(head, prompt, score)
      list.append(item)
    }
    box.append(list)
    const download = make("a", "go", w.csv)
    download.href = URL.createObjectURL(new Blob([room.csv], {type: "text/csv"}))
    download.download = "lineare-class-" + room.code + ".csv"
    box.append(download)
    return box
  }

  // the card's Start button
  const onStart = () => send("start")
  document.addEventListener("lineare:class-start", onStart)
  model.on("remove", () => document.removeEventListener("lineare:class-start", onStart))

  function draw() {
    const room = model.room || {}
    panel.replaceChildren()
    panel.dataset.view = room.view || ""
    panel.dataset.phase = room.phase || ""
    const on = room.view === "on"
    panel.hidden = !on
    document.body.classList.toggle("lineare-class", on)
    // the card shows its Start button while no class is on here, with a note on why the last one is not
    document.body.dataset.lineareClass = room.view || ""
    const note = room.busy ? w.busy : room.view === "gone" ? w.gone : ""
    document.dispatchEvent(new CustomEvent("lineare:class", {detail: {view: room.view, note}}))
    const header = document.getElementById("header")          // the panel starts under the page's header
    panel.style.top = on ? Math.max(0, header ? header.getBoundingClientRect().bottom : 0) + "px" : ""
    if (!on) { return }
    const join = make("div", "join")
    const qr = make("div", "qr"); qr.innerHTML = room.qr
    qr.setAttribute("role", "img"); qr.setAttribute("aria-label", w.qr)
    const where = make("div", "where")
    // the address as host and path, each kept whole (a port number is never split over two lines)
    const address = new URL(room.link)
    const link = make("div", "link")
    link.append(make("span", "", address.host), make("span", "", address.pathname))
    where.append(make("div", "open", w.open), link, make("div", "what", w.code), make("div", "letters", room.code))
    join.append(qr, where)
    panel.append(join)
    if (!room.reachable) { panel.append(make("p", "warn", w.unreachable)) }
    const counts = make("div", "counts")
    const count = (n, what, name) => {
      const box = make("div", name)
      box.append(make("span", "what", what), make("span", "n", n))
      return box
    }
    counts.append(count(String(room.joined), w.joined, "joined"),
                  count(`${room.answered}/${room.joined}`, w.answered, "answered"))
    panel.append(counts)
    if (room.phase === "ended") { panel.append(summary(room), button("close", w.close)); return }
    if (room.counts) { panel.append(bars(room)) }
    const buttons = make("div", "buttons")
    if (room.phase === "asking") { buttons.append(button("show", w.show, true)) }
    if (room.phase === "asking" || room.phase === "showing") { buttons.append(button("reveal", w.reveal, room.phase === "showing")) }
    if (room.phase === "revealed") { buttons.append(button("next", room.last ? w.end : w.next + " →", true)) }
    buttons.append(button("end", w.end))
    panel.append(buttons)
    if (room.go) { window.location.assign(room.go) }
  }

  model.on("room", draw)
  model.on("grant", () => {
    if (model.grant) { sessionStorage.setItem(KEY, model.grant) } else { sessionStorage.removeItem(KEY) }
  })
  draw()
  const kept = sessionStorage.getItem(KEY)
  if (kept) { model.key = kept }
}
