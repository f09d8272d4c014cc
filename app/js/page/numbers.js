// Every picture's text alternative, built in the browser from the numbers it draws at the shown step: a name
// (its title), a sentence (what it shows: its size and range, or its points) and a "numbers" button
// (keyboard-reachable, on the picture's corner) that opens a table of those numbers in a dialog
// (app/components/access.py). Settings: the words, in the page's language.
(function () {
  var words = JSON.parse(document.getElementById("lineare-numbers-settings").textContent), list = function (x) { return Array.isArray(x) ? x : []; };
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
