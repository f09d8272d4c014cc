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
  // a caption (frames only) is read aloud as it changes; a strip drawn once (html) is not
  function draw() {
    box.innerHTML = model.html
    box.setAttribute("aria-live", model.html ? "off" : "polite")
    mark(frame())
  }
  const onFrame = (event) => mark(event.detail.t)
  document.addEventListener("lineare:frame", onFrame)
  model.on("html", draw)
  model.on("frames", () => mark(frame()))
  model.on("remove", () => document.removeEventListener("lineare:frame", onFrame))
  draw()
}
