"""Every student, every device: what the page frame adds for phones, screen readers and keyboards.

    template.template = PageFrame.of(template.template, language)    # once, when the shell builds the page
    template.config.raw_css.append(FRAME_CSS)

Panel's page template hard-codes `<html lang="en">` and an English "Toggle sidebar" on the ☰ button,
and has no viewport width of its own for phones below ~900 px. `PageFrame` rewrites those few places of
the page Panel renders (once per visit, before it is sent) and adds a skip link to the content and a
script that opens the sidebar as a drawer, closed, on narrow screens.
"""
import html
import json

import jinja2

from app.components.plots import TITLE_SCRIPT
from app.i18n import _

VIEWPORT = "width=device-width, initial-scale=1"
NARROW = 900            # below this many CSS pixels the sidebar is a drawer over the page, closed when it opens
SHORT = 480             # at most this many CSS pixels high (a laptop at 200 %), the header is one short row

# focus ring: a dark blue and white double ring shows on white (≥ 3:1 both) and on the blue header and buttons
FOCUS = "outline: 3px solid #102a43 !important; outline-offset: 2px; box-shadow: 0 0 0 5px #ffffff !important;"

FRAME_CSS = f"""
html {{ font-size: 16px; }}
dialog.lineare-numbers {{ max-width: min(96vw, 1100px); max-height: 90vh; overflow: auto; font-size: 16px;
                          color: #102a43; }}
dialog.lineare-numbers h2 {{ font-size: 20px; margin: 0 0 6px 0; }}
dialog.lineare-numbers table {{ border-collapse: collapse; font-variant-numeric: tabular-nums; margin: 8px 0; }}
dialog.lineare-numbers th, dialog.lineare-numbers td {{ border: 1px solid #bcccdc; padding: 2px 6px;
                                                        text-align: right; }}
dialog.lineare-numbers button {{ min-height: 44px; min-width: 88px; font-size: 16px; }}
.lineare-skip {{ position: absolute; left: 8px; top: -60px; z-index: 2000; background: #ffffff; color: #102a43;
                 padding: 10px 16px; border-radius: 6px; font-size: 18px; text-decoration: underline; }}
.lineare-skip:focus {{ top: 8px; {FOCUS} }}
#sidebar-toggle {{ min-width: 44px; min-height: 44px; }}
#sidebar-toggle:focus-visible, #header a:focus-visible {{ {FOCUS} }}
#main:focus {{ outline: none; }}
@media (max-width: {NARROW - 0.02}px) {{
  #content {{ position: relative; }}
  #sidebar {{ position: absolute; z-index: 1000; top: 0; left: 0; height: 100%; width: min(340px, 88vw) !important;
              max-width: 88vw !important; background: #ffffff; box-shadow: 4px 0 16px rgba(16, 42, 67, 0.35); }}
  #main {{ padding: 8px 14px 16px 4px; }}      /* Panel panes are 100 % wide plus a 10 px margin */
}}
/* a phone, a tablet, a window at 200 %: the header is one short row (it took a quarter of the height), the
   projector's buttons (presenter mode, full screen) left out; ?present=1 still works */
@media (max-width: {NARROW - 0.02}px), (max-height: {SHORT}px) {{
  #header {{ flex-wrap: nowrap; justify-content: flex-start; padding: 2px 8px; min-height: 0; }}
  #header-items {{ display: none !important; }}
  #header .title {{ font-size: 18px; line-height: 1.4; white-space: normal; flex: 1 1 0; min-width: 0; }}
}}
@media (prefers-reduced-motion: reduce) {{
  *, *::before, *::after {{ transition: none !important; animation: none !important;
                            scroll-behavior: auto !important; }}
}}
"""

# on a narrow screen the drawer opens closed (the page is not covered); Escape closes it, and a link
# followed inside it closes it as the next page loads. The script runs before the #main element exists:
# what needs it waits for the page
_DRAWER_SCRIPT = """<script>
(function () {
  var sidebar = document.getElementById("sidebar"), toggle = document.getElementById("sidebar-toggle");
  if (!sidebar || !toggle) { return; }
  var narrow = window.matchMedia("(max-width: NARROWpx)");
  function close() { sidebar.classList.remove("show"); toggle.setAttribute("aria-expanded", "false"); }
  if (narrow.matches) { close(); }
  // a picture wider than the column is drawn smaller, whole, never cut off or scrolled sideways: a largest size
  // on its box, which Bokeh measures and draws into (at the same type size; CSS zoom, used before, made Bokeh
  // measure the zoomed box and draw into it: the picture was shrunk twice)
  // a figure's view (not a colour bar's, which is drawn inside it)
  function isPlot(v) { return v.renderer_views !== undefined && v.el && "toolbar" in v.model.properties; }
  function fit() {
    var main = document.getElementById("main"), index = window.Bokeh && window.Bokeh.index;
    var room = main ? main.clientWidth - 34 : 0;
    if (!index || !index.query || room <= 0) { return; }
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
  var words = WORDS;
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
  // the pictures' titles and axis names wrapped to their width, their type larger in presenter mode (plots.py)
  function tidy() { fit(); name(); if (window.lineareFitTitles) { window.lineareFitTitles(); } }
  // the same now, for a test that reads the layout (the interval below does it within a second)
  window.lineareTidy = function () { tidy(); if (window.lineareMark) { window.lineareMark(); } };
  window.addEventListener("resize", function () { fit(); if (window.lineareFitTitles) { window.lineareFitTitles(); } });
  setInterval(tidy, 1000);           // pictures and widgets come and go with the page's knobs

  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && narrow.matches && sidebar.classList.contains("show")) { close(); toggle.focus(); }
  });
})();
</script>"""

# every picture's text alternative, built in the browser from the numbers it draws at the shown step:
# a name (its title), a sentence (what it shows: its size and range, or its points) and a "numbers"
# button (keyboard-reachable, on the picture's corner) that opens a table of those numbers in a dialog
_NUMBERS_SCRIPT = """<script>
(function () {
  var words = WORDS, list = function (x) { return Array.isArray(x) ? x : []; };
  function isPlot(v) { return v.renderer_views !== undefined && v.el && "toolbar" in v.model.properties; }
  var write = function (x) {
    return Number.isFinite(x) ? x.toLocaleString(words.locale, {maximumFractionDigits: 3}) : "—";
  };
  function shown(renderer, length) {                   // the row indices a renderer draws now
    var filter = renderer.view && renderer.view.filter, indices = filter && filter.indices;
    if (indices && indices.length !== undefined) { return Array.from(indices); }
    var all = []; for (var i = 0; i < length; i++) { all.push(i); } return all;
  }
  function colourBar(figure) {
    var bar = list(figure.right).find(function (m) { return m.color_mapper; });
    return bar ? bar.color_mapper : null;
  }
  function field(spec) { return spec && spec.field ? spec.field : null; }
  // {kind: "grid", rows, cols, values} or {kind: "points", series: [{name, x, y}]}
  function numbersOf(figure) {
    var series = [];
    for (var r of list(figure.renderers)) {
      var glyph = r.glyph, data = r.data_source && r.data_source.data;
      if (!glyph || !data || r.visible === false) { continue; }
      if (data.image && field(glyph.image) === "image") {
        var at = shown(r, data.image.length), frame = data.image[at[at.length - 1]];
        if (!frame) { continue; }
        var shape = frame.shape || [1, frame.length], rows = shape[0], cols = shape[1], values = [];
        var codes = frame instanceof Uint8Array, scale = colourBar(figure), limit = scale ? scale.high : 1;
        for (var i = 0; i < rows; i++) {
          var row = [];
          for (var j = 0; j < cols; j++) {
            var v = frame[i * cols + j];
            row.push(codes ? (v === 255 ? NaN : (v / 127 - 1) * limit) : v);
          }
          values.push(row);
        }
        return {kind: "grid", rows: rows, cols: cols, values: values};
      }
      var xf = field(glyph.x), yf = field(glyph.y) || field(glyph.top);
      if (!xf || !yf || !data[xf] || !data[yf]) { continue; }
      var rowsShown = shown(r, data[yf].length), xs = [], ys = [];
      for (var k of rowsShown) {
        var y = Number(data[yf][k]);
        if (Number.isFinite(y)) { xs.push(data[xf][k]); ys.push(y); }
      }
      if (xs.length) { series.push({name: r.name || words.series.replace("{n}", series.length + 1), x: xs, y: ys}); }
    }
    return {kind: "points", series: series};
  }
  function describe(figure, found) {
    if (found.kind === "grid") {
      var low = Infinity, high = -Infinity;
      found.values.forEach(function (row) { row.forEach(function (v) {
        if (Number.isFinite(v)) { low = Math.min(low, v); high = Math.max(high, v); } }); });
      if (low === Infinity) { return words.grid_empty.replace("{rows}", found.rows).replace("{cols}", found.cols); }
      return words.grid.replace("{rows}", found.rows).replace("{cols}", found.cols)
        .replace("{low}", write(low)).replace("{high}", write(high));
    }
    var points = found.series.reduce(function (n, s) { return n + s.x.length; }, 0);
    return words.points.replace("{n}", points).replace("{lines}", found.series.length);
  }
  function table(found) {
    var t = document.createElement("table"), head = document.createElement("tr"), cell;
    var add = function (tr, tag, text) { cell = document.createElement(tag); cell.textContent = text; tr.append(cell);
                                        return cell; };
    if (found.kind === "grid") {
      add(head, "th", "");
      for (var j = 0; j < found.cols; j++) { add(head, "th", words.column + " " + (j + 1)).scope = "col"; }
      t.append(head);
      found.values.forEach(function (row, i) {
        var tr = document.createElement("tr"); add(tr, "th", words.row + " " + (i + 1)).scope = "row";
        row.forEach(function (v) { add(tr, "td", write(v)); }); t.append(tr);
      });
      return t;
    }
    add(head, "th", words.series_head).scope = "col"; add(head, "th", "x").scope = "col";
    add(head, "th", "y").scope = "col"; t.append(head);
    found.series.forEach(function (s) { s.x.forEach(function (x, k) {
      var tr = document.createElement("tr"); add(tr, "td", s.name);
      add(tr, "td", typeof x === "number" ? write(x) : String(x)); add(tr, "td", write(s.y[k])); t.append(tr);
    }); });
    return t;
  }
  var dialog = null, opener = null;
  // a picture's name: its title as the server wrote it (the browser may show it on more lines: plots.py)
  function titleOf(figure) {
    var title = window.lineareTitle ? window.lineareTitle(figure.title) : (figure.title && figure.title.text);
    return title || words.picture;
  }
  function open(view) {
    if (!dialog) {
      dialog = document.createElement("dialog"); dialog.className = "lineare-numbers";
      dialog.addEventListener("close", function () { if (opener) { opener.focus(); } });
      document.body.append(dialog);
    }
    var figure = view.model, title = titleOf(figure);
    var found = numbersOf(figure), heading = document.createElement("h2"), text = document.createElement("p");
    var close = document.createElement("button");
    heading.textContent = title; heading.id = "lineare-numbers-title";
    text.textContent = describe(figure, found) + " " + words.step.replace("{t}", frameShown() + 1);
    close.type = "button"; close.textContent = words.close; close.onclick = function () { dialog.close(); };
    dialog.replaceChildren(heading, text, table(found), close);
    dialog.setAttribute("aria-labelledby", heading.id);
    dialog.showModal();
  }
  function frameShown() { var t = Number(document.body.dataset.lineareFrame); return Number.isFinite(t) ? t : 0; }
  function label(view) {
    var figure = view.model;
    return titleOf(figure) + ". " + describe(figure, numbersOf(figure));
  }
  function mark() {
    var index = window.Bokeh && window.Bokeh.index;
    if (!index || !index.query) { return; }
    for (var view of Array.from(index.query(isPlot))) {
      var el = view.el, shadow = el.shadowRoot;
      if (el.getClientRects().length === 0) { continue; }            // not shown (another mode's picture)
      el.setAttribute("role", "figure");         // a figure, not an img: its numbers button stays reachable
      el.setAttribute("aria-label", label(view));
      if (shadow && !shadow.querySelector(".lineare-numbers-button")) {
        var b = document.createElement("button"), style = document.createElement("style");
        b.type = "button"; b.className = "lineare-numbers-button"; b.textContent = "123";
        // the name starts with the words it shows (WCAG 2.5.3, label in name: a voice user says "123")
        b.setAttribute("aria-label", b.textContent + " · " +
                       words.numbers.replace("{title}", el.getAttribute("aria-label").split(". ")[0]));
        b.title = words.numbers_tip;
        style.textContent = ".lineare-numbers-button { position: absolute; top: 0; right: 0; z-index: 10; " +
          "min-width: calc(32px * var(--lineare-scale, 1)); min-height: calc(28px * var(--lineare-scale, 1)); " +
          "font-size: calc(13px * var(--lineare-scale, 1)); padding: 0 4px; " +
          "border: 1px solid #52606d; border-radius: 4px; " +
          "background: #ffffff; color: #102a43; cursor: pointer; opacity: 0.85; }" +
          ".lineare-numbers-button:focus-visible { outline: 3px solid #102a43; box-shadow: 0 0 0 5px #ffffff; " +
          "opacity: 1; }";
        b.onclick = (function (v) { return function (event) { opener = event.currentTarget; open(v); }; })(view);
        shadow.append(style, b);
      }
      var button = shadow && shadow.querySelector(".lineare-numbers-button");
      if (button) { place(view, button); }
    }
  }
  // the button goes where no title is: the top right corner, else the top left one (over the vertical axis),
  // else under the titles on the right (a title is drawn on the canvas: Bokeh's own box of it tells where)
  function place(view, button) {
    // in the figure's pixels; a title longer than the canvas is cut off at its edge
    var titles = [], width = view.el.offsetWidth, gap = 4;
    var drawn = view.canvas_view ? view.canvas_view.bbox.width : width;
    [view.model.title].concat(list(view.model.above)).forEach(function (model) {   // the title, and lines under it
      if (!model) { return; }
      var title = view.renderer_views && view.renderer_views.get(model), r = title && title._rect;
      if (!r || !model.text || !r.width) { return; }
      var left = r.sx - r.anchor.x * r.width, top = r.sy - r.anchor.y * r.height;
      titles.push({left: left, right: Math.min(left + r.width, drawn), top: top, bottom: top + r.height});
    });
    var w = button.offsetWidth, h = button.offsetHeight;
    var clear = function (from, to) {
      return titles.every(function (t) { return t.right + gap <= from || t.left - gap >= to || t.top >= h; });
    };
    var top = 0, side = "right";
    if (!clear(width - w, width)) {
      if (clear(0, w)) { side = "left"; }
      else { top = Math.ceil(Math.max.apply(null, titles.map(function (t) { return t.bottom; }))) + 2; }
    }
    var spot = [top + "px", side === "left" ? "0px" : "auto", side === "right" ? "0px" : "auto"];
    if (button.style.top !== spot[0] || button.style.left !== spot[1] || button.style.right !== spot[2]) {
      button.style.top = spot[0]; button.style.left = spot[1]; button.style.right = spot[2];
    }
  }
  // after the frame's paint: a step's picture does not wait for its text alternative (~5-40 ms of script)
  document.addEventListener("lineare:frame", function () {
    requestAnimationFrame(function () { setTimeout(mark, 0); });
  });
  setInterval(mark, 1500);
  window.lineareMark = mark;
  window.lineareNumbers = function (el) {           // for the tests: the numbers a picture shows now
    var index = window.Bokeh.index;
    var view = Array.from(index.query(function (v) { return v.el === el; }))[0];
    return view ? numbersOf(view.model) : null;
  };
})();
</script>"""


class PageFrame(jinja2.Template):
    """Panel's page template, with the page's language, names in that language, a skip link and a drawer;
    everything else is Panel's own (Bokeh accepts only a jinja2 Template: this one is Panel's, copied)."""

    @classmethod
    def of(cls, template, language):
        frame = object.__new__(cls)
        frame.__dict__.update(template.__dict__)
        frame.replacements = replacements(language)       # translated now: pages render outside the session
        return frame

    def render(self, *args, **kwargs):
        page = super().render(*args, **kwargs)
        for old, new in self.replacements:
            page = page.replace(old, new, 1)
        return page


def replacements(language):
    skip = html.escape(_("Skip to the content"))
    toggle = html.escape(_("Show or hide the menu"), quote=True)
    close = html.escape(_("Close"), quote=True)
    # inside a <script>: JSON, with "<" escaped so no text can close the script
    words = json.dumps({"up": _("Increase"), "down": _("Decrease")})
    words = words.replace("<", "\\u003c")
    from app.server.building import busy_script
    from app.i18n import browser_locale
    picture_words = json.dumps({
        "locale": browser_locale(language), "picture": _("Picture"), "close": _("Close"), "row": _("row"),
        "column": _("column"), "series": _("line {n}"), "series_head": _("line"), "step": _("(step {t})"),
        "grid": _("A grid of {rows} × {cols} numbers, from {low} to {high}."),
        "grid_empty": _("A grid of {rows} × {cols} cells, all empty."),
        "points": _("Points: {n}; lines: {lines}."),
        "numbers": _("Numbers of the picture: {title}"),
        "numbers_tip": _("Show the numbers of this picture as a table")}).replace("<", "\\u003c")
    return [
        ('<html lang="en"', f'<html lang={json.dumps(language)}'),
        ('aria-label="Toggle sidebar"', f'aria-label="{toggle}"'),
        ('aria-label="Close"', f'aria-label="{close}"'),
        ("<body>", f'<body>\n<a class="lineare-skip" href="#main">{skip}</a>'),
        # Panel's sidebar is a list whose items are not list items: a plain box
        ('<ul class="nav flex-column">', '<div class="nav flex-column">'),
        ("</ul>", "</div>"),
        ('<div class="col mh-100 float-left" id="main">',
         _DRAWER_SCRIPT.replace("NARROW", str(NARROW - 0.02)).replace("WORDS", words)
         + _NUMBERS_SCRIPT.replace("WORDS", picture_words) + TITLE_SCRIPT + busy_script()
         + '\n<div class="col mh-100 float-left" id="main" tabindex="-1" role="main">'),
    ]


# a visible focus on every widget, the selected button of a group included (Bokeh's own is a faint halo);
# names and values at 16 px at least (Bokeh's 12-13 px cannot be read on a projector), more in presenter mode
WIDGET_FOCUS_CSS = f"""
.bk-btn:focus-visible, .bk-btn.bk-active:focus-visible, .bk-input:focus-visible, select:focus-visible,
.noUi-handle:focus-visible, input:focus-visible {{ {FOCUS} z-index: 2; }}
.noUi-handle {{ min-width: 24px; min-height: 24px; }}
input[type="checkbox"], input[type="radio"] {{ width: 24px; height: 24px; }}
label, .bk-slider-title, .bk-clearfix, .bk-btn, .bk-input {{ font-size: calc(16px * var(--lineare-scale, 1)); }}
label, .bk-slider-title {{ overflow-wrap: anywhere; white-space: normal; }}
"""


def accessible_widgets(parts):
    """Every widget among `parts` gets a visible focus ring (the names and values are set in the browser)."""
    import panel as pn

    for widget in pn.Column(*parts).select(pn.widgets.Widget):
        if WIDGET_FOCUS_CSS not in widget.stylesheets:
            widget.stylesheets = [*widget.stylesheets, WIDGET_FOCUS_CSS]
