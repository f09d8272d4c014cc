export function render({ model, el }) {
  const box = document.createElement("div")
  el.append(box)
  const frame = () => {
    const shown = document.body.dataset.lineareFrame
    return shown === undefined ? model.value : Number(shown)
  }
  function mark(t) {
    const frames = model.frames
    const slot = model.html ? box.querySelector(".frame-slot") : box
    if (slot) { slot.innerHTML = frames[Math.min(t, frames.length - 1)] ?? "" }
    for (const item of box.querySelectorAll("[data-step]")) {
      const i = Number(item.dataset.step)
      item.classList.toggle("past", i < t)
      item.classList.toggle("current", i === t)
      item.classList.toggle("future", i > t)
    }
  }
  function draw() {
    box.innerHTML = model.html
    mark(frame())
  }
  // its words at this frame, for the player's one live region (app/js/components/player.js), which reads them
  // after the step: a caption's, a slot's; a strip drawn once (html, no slot) is not read again at every step
  function words() {
    const slot = model.html ? box.querySelector(".frame-slot") : box
    return slot && el.getClientRects().length ? slot.textContent.trim() : ""
  }
  const onFrame = (event) => {
    mark(event.detail.t)
    const said = words()
    if (said && Array.isArray(event.detail.said)) { event.detail.said.push(said) }
  }
  document.addEventListener("lineare:frame", onFrame)
  model.on("html", draw)
  model.on("frames", () => mark(frame()))
  model.on("remove", () => document.removeEventListener("lineare:frame", onFrame))
  draw()
}
