// The page frame's own buttons and links (app/shell.py frame_html): the language switch and presenter mode reload
// the page with ?lang= or ?present= changed, keeping the rest of its URL (every string is drawn again, the rest
// of the view comes back from the URL); full screen is the browser's own; a link to another laboratory takes the
// level the visitor has now (the server keeps it in the address bar).
(function () {
  function reloadWith(name, value) {
    const url = new URL(window.location.href);
    url.searchParams.set(name, value);
    window.location.assign(url.toString());
  }
  document.addEventListener("click", function (event) {
    const target = event.target instanceof Element ? event.target : null;
    const language = target && target.closest("[data-lineare-lang]");
    const present = target && target.closest("[data-lineare-present]");
    const full = target && target.closest("[data-lineare-full-screen]");
    const link = target && target.closest(".lineare-side nav a");
    if (language) {
      reloadWith("lang", language.dataset.lineareLang);
    } else if (present) {
      reloadWith("present", present.dataset.linearePresent);
    } else if (full) {
      if (document.fullscreenElement) { document.exitFullscreen(); } else { document.documentElement.requestFullscreen(); }
    } else if (link) {
      const level = new URL(window.location.href).searchParams.get("level");
      if (level) {
        const url = new URL(link.href);
        url.searchParams.set("level", level);
        link.href = url.toString();
      }
    }
  });
})();
