// A lesson file's player: play on at `fps` until the last frame, or pause. Args: toggle, slider, fps, words.
if (window.lineareClock) { clearInterval(window.lineareClock); window.lineareClock = null }
if (!toggle.active) { toggle.label = "▶ " + words.play; return }
toggle.label = "❚❚ " + words.pause
if (slider.value >= slider.end) { slider.value = slider.start }
window.lineareClock = setInterval(() => {
  if (slider.value >= slider.end) { toggle.active = false; return }
  slider.value = slider.value + 1
}, 1000 / fps)
