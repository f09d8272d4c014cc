// On a narrow screen the drawer opens closed (the page is not covered); Escape closes it, and a link followed
// inside it closes it as the next page loads. The script runs before the #main element exists: what needs it
// waits for the page (app/components/access.py). Settings: {narrow: px, words: {up, down}}.
(function () {
  var settings = JSON.parse(document.getElementById("lineare-drawer-settings").textContent);
  var sidebar = document.getElementById("sidebar"), toggle = document.getElementById("sidebar-toggle");
  if (!sidebar || !toggle) { return; }
  var narrow = window.matchMedia("(max-width: " + settings.narrow + "px)");
  function close() { sidebar.classList.remove("show"); toggle.setAttribute("aria-expanded", "false"); }
  if (narrow.matches) { close(); }
  // a picture wider than the column is drawn smaller, whole, never cut off or scrolled sideways: a largest size
  // on its box, which Bokeh measures and draws into (at the same type size; CSS zoom, used before, made Bokeh
  // measure the zoomed box and draw into it: the picture was shrunk twice)
  // a figure's view (not a colour bar's, which is drawn inside it)
  function isPlot(v) { return v.renderer_views !== undefined && v.el && "toolbar" in v.model.properties; }
  // a projector's wide window (1920 px) gives the page's column its room: every box of the column of a fixed width
  // (a picture, the card that holds it, a text beside it) as much wider as the column is wider than on a 1366-px
  // screen with the sidebar open (up to 1.5 times), a picture as much taller too: what is laid out for 1366 px,
  // larger. Not in presenter mode, whose pictures the server sizes itself. In the browser only (never sent)
  var served = new WeakMap();             // a model → {server: its size from the server, shown: ours}
  var DESIGN = 992;                       // px: the column's room at 1366 × 768, sidebar open
  function within(el, main) {
    for (var n = el; n; n = n.parentNode instanceof ShadowRoot ? n.parentNode.host : n.parentNode) {
      if (n === main) { return true; }
    }
    return false;
  }
  function grow(view, times, room) {
    var model = view.model, plot = isPlot(view), kept = served.get(model);
    var now = {width: model.width, height: plot ? model.height : null};
    if (!kept || now.width !== kept.shown.width || now.height !== kept.shown.height) {
      kept = {server: now, shown: now};   // first seen, or a size the server sent since
      served.set(model, kept);
    }
    times = Math.max(1, Math.min(times, room / kept.server.width));      // never wider than the column
    var want = {width: Math.round(kept.server.width * times),
                height: plot && kept.server.height ? Math.round(kept.server.height * times) : now.height};
    if (want.width !== now.width || want.height !== now.height) {
      kept.shown = want;
      // silently: each size set with its change signal laid the whole page out again (a page of four heads' pictures
      // took 20 s and more for one resize); growAll lays each page root out once, after every size is set
      model.setv(plot ? want : {width: want.width}, {silent: true});
      return true;
    }
    return false;
  }
  function layoutRoot(view) {
    var root = view;
    while (root.parent && typeof root.parent.invalidate_layout === "function") { root = root.parent; }
    return root;
  }
  function growAll(index, main, room) {
    var scale = Number(getComputedStyle(document.documentElement).getPropertyValue("--lineare-scale")) || 1;
    var times = scale === 1 && room / DESIGN >= 1.15 ? Math.min(1.5, room / DESIGN) : 1, roots = new Set();
    Array.from(index.query(function (v) {
      var m = v.model;
      return v.el && m && m.properties && "width" in m.properties && "sizing_mode" in m.properties &&
             typeof m.width === "number" && !/stretch|scale/.test(m.sizing_mode || "") &&
             (served.has(m) || times !== 1);
    })).forEach(function (view) {
      if (within(view.el, main) && grow(view, times, room)) { roots.add(layoutRoot(view)); }
    });
    roots.forEach(function (root) { root.invalidate_layout(); });
  }
  function fit() {
    var main = document.getElementById("main"), index = window.Bokeh && window.Bokeh.index;
    var room = main ? main.clientWidth - 34 : 0;
    if (!index || !index.query || room <= 0) { return; }
    growAll(index, main, room);
    Array.from(index.query(isPlot)).forEach(function (view) {
      var width = view.model.width || 0, height = view.model.height || 0, narrow = width > room;
      // as much narrower as it must be; a heat map as much lower too (a square one stays square: the axes and
      // title keep their size); curves and wide strips keep their height
      var most = narrow ? room + "px" : "", high = "";
      var map = (view.model.renderers || []).some(function (r) { return r.glyph && "image" in r.glyph.properties; });
      if (narrow && map && height >= width / 2) {
        high = Math.round(Math.max(height - width + room, height * room / width)) + "px";
      }
      if (view.el.style.maxWidth !== most || view.el.style.maxHeight !== high) {
        view.el.style.maxWidth = most; view.el.style.maxHeight = high;
      }
    });
    // a text or a table of fixed width wider than the column: its lines wrap within the column instead
    Array.from(index.query(function (v) {
      return v.el && v.renderer_views === undefined && v.model.properties && "sizing_mode" in v.model.properties;
    })).forEach(function (view) {
      var wide = Math.max(view.model.width || 0, view.model.min_width || 0) > room, cap = wide ? "100%" : "";
      var shadow = view.el.shadowRoot;
      if (view.el.style.maxWidth !== cap) { view.el.style.maxWidth = cap; view.el.style.minWidth = wide ? "0" : ""; }
      if (shadow) {                             // a text pane's own box inside has the fixed width too
        Array.from(shadow.children).filter(function (d) { return d.tagName === "DIV"; }).forEach(function (d) {
          if (d.style.maxWidth !== cap) { d.style.maxWidth = cap; d.style.minWidth = wide ? "0" : ""; }
        });
      }
      // (a table in a scroll box of its own, components/text.py: that box scrolls, the pane need not)
      var table = shadow && !shadow.querySelector(".scroll-box") && shadow.querySelector("table");
      if (table && view.el.style.overflowX !== "auto" && table.offsetWidth > view.el.clientWidth + 1) {
        view.el.style.overflowX = "auto";           // a wide table scrolls in its own box, not the page,
        view.el.tabIndex = 0;                       // which the keyboard can reach and scroll
      }
    });
  }
  // names Bokeh's widgets do not give: a spinner's arrow buttons, a slider's handle (its title; a discrete
  // slider's is in the text above it); in the page's language
  var words = settings.words;
  function name() {
    var index = window.Bokeh && window.Bokeh.index;
    if (!index || !index.query) { return; }
    Array.from(index.query(function (v) { return v.el && v.el.shadowRoot; })).forEach(function (view) {
      var shadow = view.el.shadowRoot, title = view.model.title || "";
      if (view.btn_up_el && !view.btn_up_el.hasAttribute("aria-label")) {
        view.btn_up_el.setAttribute("aria-label", words.up + (title ? " · " + title : ""));
        view.btn_down_el.setAttribute("aria-label", words.down + (title ? " · " + title : ""));
        view.btn_up_el.tabIndex = view.btn_down_el.tabIndex = -1;     // the arrow keys do the same in the box
      }
      shadow.querySelectorAll(".noUi-handle").forEach(function (handle) {
        var above = view.el.previousElementSibling;
        // the value as the page writes it (0,90; a discrete slider's 1024, not its notch 7), not noUi's own
        var speak = function () {
          var value = shadow.querySelector(".bk-slider-value"), text = value ? value.textContent.trim() : "";
          if (!text && above) {
            var shown = shownText(above), at = shown.indexOf(":");
            text = shown.slice(at + 1).trim();
          }
          if (text && handle.getAttribute("aria-valuetext") !== text) { handle.setAttribute("aria-valuetext", text); }
        };
        speak();
        if (handle.hasAttribute("aria-label")) { return; }
        var label = title;
        if (!label && above) { label = shownText(above).split(":")[0].trim(); }
        if (label) { handle.setAttribute("aria-label", label); }
        var target = shadow.querySelector(".noUi-target");
        if (target && target.noUiSlider) {
          target.noUiSlider.on("update.lineare", function () { setTimeout(speak, 0); });
        }
      });
    });
  }
  function shownText(el) {                  // an element's words, its shadow root's included, not its styles
    var root = el.shadowRoot || el;
    return Array.from(root.childNodes).filter(function (n) { return n.nodeName !== "STYLE" && n.nodeName !== "LINK"; })
      .map(function (n) { return n.textContent; }).join(" ");
  }
  // the pictures' titles and axis names wrapped to their width, their type larger in presenter mode (plots.py); the
  // states and names of groups, cards and pictures (access.js)
  function tidy() {
    fit(); name();
    if (window.lineareFitTitles) { window.lineareFitTitles(); }
    if (window.lineareAccess) { window.lineareAccess(); }
  }
  // the same now, for a test that reads the layout (the interval below does it within a second)
  window.lineareTidy = function () { tidy(); if (window.lineareMark) { window.lineareMark(); } };
  window.addEventListener("resize", function () { fit(); if (window.lineareFitTitles) { window.lineareFitTitles(); } });
  setInterval(tidy, 1000);           // pictures and widgets come and go with the page's knobs

  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && narrow.matches && sidebar.classList.contains("show")) { close(); toggle.focus(); }
  });
})();
