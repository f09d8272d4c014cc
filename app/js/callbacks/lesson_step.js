// A lesson file's player: one frame back or forward, paused. Args: toggle, slider, delta.
toggle.active = false; slider.value = Math.min(Math.max(slider.value + delta, slider.start), slider.end)
