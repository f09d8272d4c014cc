// while the page is visible in its tab, tell the server once a minute (app/components/presence.py)
const BEAT_MS = 60000

export function render({ model }) {
  const beat = () => { if (document.visibilityState === "visible") { model.seen = model.seen + 1 } }
  const timer = setInterval(beat, BEAT_MS)
  model.on("remove", () => clearInterval(timer))
}
