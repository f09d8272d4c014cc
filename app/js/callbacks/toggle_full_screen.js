// Full screen on or off: the browser's own.
if (document.fullscreenElement) { document.exitFullscreen(); }
else { document.documentElement.requestFullscreen(); }
