export function render({ model }) {
  function read(event) {
    if (!event.composedPath().some(e => e.classList && e.classList.contains("lineare-export"))) { return }
    const shown = document.body.dataset.lineareFrame
    const speed = Number(new URL(window.location.href).searchParams.get("speed"))
    if (shown !== undefined && Number(shown) !== model.frame) { model.frame = Number(shown) }
    if (speed > 0 && speed !== model.speed) { model.speed = speed }
  }
  const key = (event) => { if (event.key === "Enter" || event.key === " ") { read(event) } }
  document.addEventListener("pointerdown", read, true)
  document.addEventListener("keydown", key, true)
  model.on("remove", () => {
    document.removeEventListener("pointerdown", read, true)
    document.removeEventListener("keydown", key, true)
  })
}
