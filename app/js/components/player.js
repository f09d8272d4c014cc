const FRAME = "lineare-frame", TEXT = "lineare-text", OUTER = "lineare-outer", DELTA = "lineare-delta",
      PREFIX = "lineare-prefix", UPDATE = "lineare-update"

// a run whose frames came as changes from the frame before (mod 256), all in one flat array
// (plots.HeatMap.show_frames): add them up into frames, once per run
function undelta(source) {
  const tags = source.tags || [], data = source.data
  if (tags[0] !== DELTA || !data.steps || !data.steps.length) { return }
  const steps = data.steps[0], first = data.image[0], size = first.length, frames = []
  for (let t = 0, before = null; t * size < steps.length; t++) {
    const frame = new first.constructor(size, first.shape)                       // Bokeh's NDArray
    for (let i = 0; i < size; i++) { frame[i] = ((before ? before[i] : 0) + steps[t * size + i]) & 255 }
    frames.push(frame)
    before = frame
  }
  const {steps: _sent, ...rest} = data
  source.data = {...rest, image: frames}
}

// columns that came as int16 codes (plots.packed): back to numbers, once per run
function unpack(source) {
  const data = source.data, names = data.packed ? data.packed[0] : null
  if (!names || !names.length) { return }
  const scales = data.scales[0], numbers = {}
  names.forEach((name, i) => {
    const codes = data[name][0], values = new Float64Array(codes.length)
    for (let k = 0; k < codes.length; k++) { values[k] = codes[k] * scales[i] }
    numbers[name] = [values]
  })
  source.data = {...data, ...numbers, packed: [[]]}
}

// a state picture's matrix at frame s, as numbers: from its colour codes (index / 127 − 1 of its
// range; 255, an empty cell, is 0) or from its two factors when it travels as u wᵀ
function stateAt(state, s, rows, cols, limit) {
  const values = new Float64Array(rows * cols)
  if (s < 0) { return values }
  if ((state.tags || [])[0] === OUTER) {
    const u = state.data.u[0], w = state.data.w[0]
    for (let i = 0; i < rows; i++) {
      for (let j = 0; j < cols; j++) { values[i * cols + j] = u[s * rows + i] * w[s * cols + j] }
    }
    return values
  }
  const codes = state.data.image[s]
  for (let k = 0; k < values.length; k++) { values[k] = codes[k] === 255 ? 0 : (codes[k] / 127 - 1) * limit }
  return values
}

// S_{t-1}(A_t − I), plus the write u wᵀ for the whole change, with A_t = diag + a bᵀ (see plots.show_update)
function updateAt(owner, state, writer, t, rows, cols, limit, withWrite) {
  const before = stateAt(state, t - 1, rows, cols, limit), d = owner.data
  const diag = d.diag[0], a = d.a[0], b = d.b[0], scalar = owner.tags[8] === "scalar"
  const source = withWrite ? (writer || owner).data : null
  const u = source ? source.u[0] : [], w = source ? source.w[0] : []
  const values = new Float64Array(rows * cols)
  for (let i = 0; i < rows; i++) {
    let along = 0
    if (a.length) { for (let m = 0; m < cols; m++) { along += before[i * cols + m] * a[t * cols + m] } }
    for (let j = 0; j < cols; j++) {
      let v = before[i * cols + j] * ((scalar ? diag[t] : diag[t * cols + j]) - 1)
      if (a.length) { v += along * b[t * cols + j] }
      if (withWrite && u.length) { v += u[t * rows + i] * w[t * cols + j] }
      values[i * cols + j] = v
    }
  }
  return values
}

export function render({ model, el }) {
  const words = model.labels
  let length = model.length, t = Math.min(model.value, length - 1), speed = model.speed
  let playing = false, clock = null, request = null

  const button = (text, title) => {
    const b = document.createElement("button"); b.textContent = text; b.title = title; return b
  }
  const back = button("◀ " + words.back, words.back_tip)
  const play = button("", words.play_tip)
  const forward = button(words.forward + " ▶", words.forward_tip)
  const slider = document.createElement("input")
  Object.assign(slider, {type: "range", min: 0.5, max: 8, step: 0.5, value: speed})
  const speedLabel = document.createElement("label")
  const speedText = document.createElement("span")
  speedLabel.append(speedText, slider)
  const where = document.createElement("span"); where.className = "where"
  // the page's one live region for its steps: a step taken, a pause, the last step of a play, and a new run are
  // read aloud with the texts that follow the frame (FrameText), once; the frames while playing are not
  const spoken = document.createElement("span"); spoken.className = "spoken"; spoken.setAttribute("role", "status")
  const bar = document.createElement("div"); bar.className = "player"
  bar.append(back, play, forward, speedLabel, where, spoken)
  el.append(bar)

  function models() { return model.document ? [...model.document.all_models] : [] }

  // decode a delta-coded run as soon as it arrives, before it is painted
  const watched = new WeakSet()
  function watchSources() {
    for (const m of models()) {
      if (m.properties && "data" in m.properties && "selected" in m.properties && !watched.has(m)) {
        watched.add(m)
        m.properties.data.change.connect(() => { undelta(m); unpack(m) })
        undelta(m)
        unpack(m)
      }
    }
  }

  // the address bar after the frame's paint: history.replaceState mostly takes 0.1 ms but now and then
  // ~15 ms (measured in Chromium), which a step's picture need not wait for; stopping writes it at once
  let urlPending = false
  function writeUrlSoon() {
    if (urlPending) { return }
    urlPending = true
    requestAnimationFrame(() => setTimeout(flushUrl, 0))
  }
  function flushUrl() {
    if (urlPending) { urlPending = false; writeUrl() }
  }

  function writeUrl() {
    const url = new URL(window.location.href)
    url.searchParams.set("t", String(t))
    url.searchParams.set("speed", String(speed))
    if (url.href !== window.location.href) { window.history.replaceState(window.history.state, "", url) }
  }

  // a picture off the screen is brought to frame t when it scrolls into view (within a margin), not at
  // every step: with 4 heads a step then redraws the few pictures one sees, not 28
  // Bokeh's painting of such a figure is paused as well (PlotView.pause), so a new run repaints only
  // the figures near the screen; the others repaint when they come into view
  const plotOf = new Map()                    // tagged model → the element of the figure showing it
  const viewOf = new WeakMap(), paused = new WeakSet()
  const onScreen = new WeakSet(), stale = new Set()
  const observer = new IntersectionObserver((entries) => {
    for (const e of entries) {
      const view = viewOf.get(e.target)
      if (e.isIntersecting) {
        onScreen.add(e.target)
        if (view && paused.has(view)) { paused.delete(view); view.unpause() }
        if (view && withLegends.includes(view)) { paintLegends(view) }
      } else {
        onScreen.delete(e.target)
        if (view && !paused.has(view) && view.pause) { paused.add(view); view.pause() }
      }
    }
    if (stale.size && entries.some(e => e.isIntersecting)) { freshen() }
  }, {rootMargin: "300px 0px"})
  let withLegends = []                        // the figures' views that have a legend (see repaintLegends)
  function mapPictures() {
    const index = window.Bokeh && window.Bokeh.index
    if (!index || !index.query) { return }
    const views = [...index.query(v => v.renderer_views !== undefined && v.el)]
    withLegends = views.filter(v => [...v.renderer_views.values()].some(r => r.model.type === "Legend"))
    for (const view of views) {
      if (plotOf.get(view.model) === view.el) { continue }
      const figure = view.model, list = (x) => Array.isArray(x) ? x : []
      const owned = [figure, figure.title, ...list(figure.above), ...list(figure.below)]
      for (const r of list(figure.renderers)) { owned.push(r.data_source, r.view && r.view.filter) }
      for (const m of owned) { if (m) { plotOf.set(m, view.el) } }
      viewOf.set(view.el, view)
      observer.observe(view.el)
      measureOnlyWhenNeeded(view)
    }
  }
  // Bokeh measures every axis's tick labels again before each repaint of a figure, to see whether its
  // layout must change (about 3 ms a figure, most of a step's work). A figure whose ranges are fixed
  // numbers and whose titles and axis names are as they were at its last full measure cannot need a
  // new layout: that check is skipped. Anything else (a resize, a new run's ranges, a title that
  // appears, the page's font arriving) measures as before.
  let fontsReady = false
  if (document.fonts && document.fonts.ready) { document.fonts.ready.then(() => { fontsReady = true }) }
  const fixed = (range) => range && (range.type === "Range1d" || range.type === "FactorRange")
  function looks(view) {                      // what the layout of a fixed-range figure depends on
    const f = view.model, r = [f.x_range, f.y_range], text = (x) => x && x.text ? "+" : ""
    const plain = (x) => x instanceof Map ? [...x] : x ?? null
    const parts = [...(f.above || []), ...(f.below || []), ...(f.left || []), ...(f.right || [])]
    const part = (p) => [p.type, p.visible, text(p), plain(p.axis_label), plain(p.major_label_overrides),
                         p.ticker ? plain(p.ticker.ticks) : null, p.major_label_text_font_size ?? null,
                         p.axis_label_text_font_size ?? null, p.text_font_size ?? null,
                         p.color_mapper ? [p.color_mapper.low, p.color_mapper.high] : null]
    return JSON.stringify([r.map(x => [x.start, x.end, plain(x.factors)]), text(f.title),
                           f.title ? plain(f.title.text_font_size) : null, parts.map(part)])
  }
  function measureOnlyWhenNeeded(view) {
    const check = view._invalidate_layout_if_needed
    if (view.lineareQuick || typeof check !== "function") { return }
    view.lineareQuick = true
    let measured = null
    view._invalidate_layout_if_needed = function () {
      const f = this.model
      if (!fontsReady || this._needs_layout || !fixed(f.x_range) || !fixed(f.y_range)) {
        measured = null
        return check.call(this)
      }
      const now = looks(this)
      if (now === measured) { return }
      measured = now
      return check.call(this)
    }
  }

  const waits = (m) => { const el = plotOf.get(m); return el !== undefined && !onScreen.has(el) }
  function freshen() {
    const all = models()
    for (const m of [...stale]) { if (!waits(m)) { stale.delete(m); draw(m, all) } }
  }

  function show() {
    if (plotOf.size === 0) { mapPictures() }
    const all = models()
    for (const m of all) {
      if ((m.tags || []).length === 0) { continue }
      if (waits(m)) { stale.add(m) } else { stale.delete(m); draw(m, all) }
    }
    repaintLegends()
    document.body.dataset.lineareFrame = String(t)
    const detail = {t, length, said: []}
    document.dispatchEvent(new CustomEvent("lineare:frame", {detail}))
    where.textContent = words.step.replace("{t}", t + 1).replace("{n}", length)
    heard = detail.said.reduce((all, text) => all + (/[.!?…:]$/.test(all) ? " " : ". ") + text, where.textContent)
    if (!playing && speaking) { say() }
    writeUrlSoon()
  }
  let heard = "", speaking = false               // what a step says; false until the page has opened
  function say() { if (spoken.textContent !== heard) { spoken.textContent = heard } }

  // Bokeh paints a legend's glyphs only when the legend itself is repainted, from its series as they
  // are then: a glyph painted while its series was being replaced stayed blank (the markers of the two
  // bills' legends went after Play). The legends of the figures on screen are repainted with each frame.
  // The list is made with the map of pictures (at each new run), not at each frame: walking every view of
  // the page took ~5 ms a step with 4 heads.
  // A figure coming on screen gets its legends repainted too (one painted off screen, or before its series,
  // stayed blank), and figures made after the page (a section made when scrolled to) are mapped when the
  // page's tidying pass first sees them (`lineare:pictures`, app/components/plots.py).
  function repaintLegends() {
    for (const view of withLegends) {
      if (!view.is_destroyed && onScreen.has(view.el)) { paintLegends(view) }
    }
  }
  function paintLegends(view) {
    const legends = [...view.renderer_views.values()].filter(r => r.model.type === "Legend")
    if (legends.length) { view.request_paint(...legends) }
  }
  const newPictures = () => { mapPictures(); repaintLegends() }
  document.addEventListener("lineare:pictures", newPictures)

  function draw(m, all) {                   // one picture's part at frame t
    const tags = m.tags || []
    if (tags[0] === FRAME) {
      const n = tags[1], start = tags[2] === "upto" ? 0 : t * n
      const indices = []
      for (let i = start; i < (t + 1) * n; i++) { indices.push(i) }
      m.indices = indices
    } else if (tags[0] === TEXT) {
      m.text = tags[1][t] ?? ""
    } else if (tags[0] === PREFIX) {          // a line up to frame t: a gap (NaN) after it
      const all = m.data.y_all, y = new Float64Array(all.length)
      for (let i = 0; i < all.length; i++) { y[i] = i <= t ? all[i] : NaN }
      m.data = {...m.data, y}
    } else if (tags[0] === UPDATE) {          // a state's change, from the state's frames
      const [, rows, cols, stateId, limit, part, ownerId, writerId] = tags
      const state = all.find(x => x.id === stateId)
      const owner = part === "change" ? m : all.find(x => x.id === ownerId)
      const writer = writerId ? all.find(x => x.id === writerId) : null
      if (!state || !owner || (writerId && !writer)) { return }
      const values = updateAt(owner, state, writer, t, rows, cols, limit, part === "change")
      m.data = {...m.data, image: [new m.data.image[0].constructor(values, [rows, cols])]}
    } else if (tags[0] === OUTER) {           // a rank-one picture: u[t] w[t]ᵀ
      const [, rows, cols] = tags, u = m.data.u[0], w = m.data.w[0], image = m.data.image[0]
      const values = new Float64Array(rows * cols)
      for (let i = 0; i < rows; i++) {
        const a = u[t * rows + i]
        for (let j = 0; j < cols; j++) { values[i * cols + j] = a * w[t * cols + j] }
      }
      m.data = {...m.data, image: [new image.constructor(values, [rows, cols])]}   // Bokeh's own NDArray
    }
  }

  function label() {
    play.textContent = playing ? "❚❚ " + words.pause : "▶ " + words.play
    speedText.textContent = words.speed.replace("{speed}", speed.toLocaleString(words.locale))
  }

  function go(frame) {
    const next = Math.min(Math.max(frame, 0), length - 1)
    if (next !== t) { t = next; show() }
  }

  function stop(quiet) {
    const was = playing
    playing = false
    if (request !== null) { cancelAnimationFrame(request); request = null }
    flushUrl()
    label()
    if (was && !quiet) { say() }               // a pause, or the last step of a play: where it stopped
  }

  function tick() {
    // the frame the clock asks for: skip frames that could not be drawn in time
    const due = clock.first + Math.floor((performance.now() - clock.started) / 1000 * speed)
    if (due >= length - 1) { go(length - 1); stop(); return }
    go(due)
    request = requestAnimationFrame(tick)
  }

  function start() {
    if (t >= length - 1) { go(0) }               // play again from the start
    playing = true
    clock = {started: performance.now(), first: t}
    request = requestAnimationFrame(tick)
    label()
  }

  // no animation starts by itself: a reader who asked for less motion gets none before pressing Play
  const toggle = () => playing ? stop() : start()
  const step = (delta) => { stop(true); go(t + delta); say() }
  back.onclick = () => step(-1)
  forward.onclick = () => step(+1)
  play.onclick = toggle
  slider.oninput = () => {
    speed = Number(slider.value)
    if (playing) { clock = {started: performance.now(), first: t} }
    label(); writeUrl()
  }

  let pointed = []                             // what the last click landed on, until a Tab moves on
  const onPointer = (event) => { pointed = event.composedPath() }
  document.addEventListener("pointerdown", onPointer, true)

  function onKey(event) {
    if (event.key === "Tab") { pointed = [] }
    if (event.ctrlKey || event.metaKey || event.altKey) { return }
    const target = event.composedPath()[0] || event.target
    const tag = (target.tagName || "").toLowerCase()
    const role = target.getAttribute ? target.getAttribute("role") : null
    // a focused scrolling region (a wide table's box) scrolls with its arrows
    if (["input", "textarea", "select"].includes(tag) || target.isContentEditable || role === "slider"
        || role === "region") { return }
    if (event.code === "Space" || event.key === " ") {
      // a button reached by keyboard (Tab) reacts to Space itself; one that was clicked, and a lesson's
      // chosen prediction, hand Space on to the player
      const clicked = pointed.includes(target)
      if (tag === "button" && !clicked && !(target.dataset && target.dataset.keys === "player")) { return }
      event.preventDefault(); toggle()
    } else if (event.key === "ArrowLeft") {
      event.preventDefault(); step(-1)
    } else if (event.key === "ArrowRight") {
      event.preventDefault(); step(+1)
    }
  }
  document.addEventListener("keydown", onKey)
  document.body.dataset.lineareKeys = "ready"

  // a new run from the server: keep the frame (within the new length) and draw it once the whole
  // update has arrived (the sources and texts of the same message)
  function newRun() {
    setTimeout(() => {                          // once every property of the message is in
      watchSources()                            // a new run can bring new pictures
      mapPictures()
      hookLocation()
      length = model.length
      if (model.jump >= 0) { t = model.jump }
      if (t > length - 1) { t = length - 1 }
      if (playing && t >= length - 1) { stop() }
      show()
    }, 0)
  }
  model.on("run", newRun)
  model.on("length", newRun)
  model.on("jump", () => {})                    // read on a new run (a watcher keeps Panel from re-rendering)

  // the server rewrites the address bar when a knob changes (without this page's frame): put the
  // frame back. Panel makes its Location model when the server first writes the URL, so look for it
  // again until it is there.
  let location = null
  const restore = () => setTimeout(writeUrl, 0)
  function hookLocation() {
    if (location) { return }
    location = models().find(m => m.properties && "search" in m.properties && "pathname" in m.properties) || null
    if (location) { location.properties.search.change.connect(restore) }
  }

  model.on("remove", () => {
    stop()
    observer.disconnect()
    for (const el of plotOf.values()) {
      const view = viewOf.get(el)
      if (view && paused.has(view)) { paused.delete(view); view.unpause() }
    }
    document.removeEventListener("keydown", onKey)
    document.removeEventListener("lineare:pictures", newPictures)
    document.removeEventListener("pointerdown", onPointer, true)
    if (location) { location.properties.search.change.disconnect(restore) }
    delete document.body.dataset.lineareKeys
  })
  label()
  watchSources()
  hookLocation()
  show()
  setTimeout(() => { mapPictures(); show(); speaking = true }, 0)   // the figures' views exist once the page has rendered
}
