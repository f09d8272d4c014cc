// Every picture's text alternative, built in the browser from the numbers it draws at the shown step: a name
// (its title), a sentence (what it shows: its size and range, or its points) and a "numbers" button
// (keyboard-reachable, on the picture's corner) that opens a table of those numbers in a dialog
// (app/components/access.py). Settings: the words, in the page's language.
(function () {
  var words = JSON.parse(document.getElementById("lineare-numbers-settings").textContent), list = function (x) { return Array.isArray(x) ? x : []; };
  function isPlot(v) { return v.renderer_views !== undefined && v.el && "toolbar" in v.model.properties; }
  // a number as the page writes it; a tiny one (a difference of 7.6 · 10⁻⁶) with its power of ten, not as 0
  var write = function (x) {
    if (!Number.isFinite(x)) { return "—"; }
    if (x === 0 || Math.abs(x) >= 0.001) { return x.toLocaleString(words.locale, {maximumFractionDigits: 3}); }
    var power = Math.floor(Math.log10(Math.abs(x))), supers = "⁰¹²³⁴⁵⁶⁷⁸⁹";
    var mantissa = (x / Math.pow(10, power)).toLocaleString(words.locale, {maximumFractionDigits: 1});
    return mantissa + " · 10⁻" + String(-power).split("").map(function (c) { return supers[Number(c)]; }).join("");
  };
  // a coordinate as the picture shows it: a category's name ("RetNet", or "RetNet · β = 2"), else its number
  var place = function (x) {
    if (Array.isArray(x)) { return x.join(" · "); }
    return typeof x === "number" ? write(x) : String(x);
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
  var isFactor = function (x) { return typeof x === "string" || Array.isArray(x); };
  var present = function (x) { return isFactor(x) ? String(x) !== "" : Number.isFinite(Number(x)); };
  // the server's words of an axis (its name, unwrapped) and its label at a coordinate (a category, the word a
  // fixed tick shows there, or the number)
  function axisOf(figure, dimension) {
    var sides = dimension === 0 ? list(figure.below).concat(list(figure.above))
                                : list(figure.left).concat(list(figure.right));
    return sides.find(function (m) { return "axis_label" in m.properties; }) || null;
  }
  function axisName(figure, dimension) {
    var axis = axisOf(figure, dimension), text = axis && axis.axis_label;
    return typeof text === "string" ? text.replace(/\n/g, " ") : "";
  }
  function labelAt(figure, dimension, value) {
    if (isFactor(value)) { return place(value); }
    var axis = axisOf(figure, dimension), overrides = axis && axis.major_label_overrides;
    var found = overrides && overrides.get ? (overrides.get(value) !== undefined ? overrides.get(value)
                                                                                 : overrides.get(String(value))) : null;
    if (found !== null && found !== undefined) { return typeof found === "string" ? found : String(found.text); }
    return null;
  }
  // legend names of the renderers: {renderer id: name}
  function legendNames(figure) {
    var names = {};
    [].concat(list(figure.center), list(figure.below), list(figure.above), list(figure.right), list(figure.left))
      .filter(function (m) { return m.type === "Legend"; }).forEach(function (legend) {
        list(legend.items).forEach(function (item) {
          var label = item.label, text = label && typeof label === "object" ? label.value : label;
          if (typeof text !== "string" || !text) { return; }
          list(item.renderers).forEach(function (r) { if (!(r.id in names)) { names[r.id] = text; } });
        });
      });
    return names;
  }
  // a glyph's rows as [where, how much] pairs, or null: a line's or a dot's (x, y), a bar's place and height, a
  // patch's corners; `swap`: the category is on the vertical axis (a horizontal bar, dots in named rows)
  function pointsOf(glyph, data, rows) {
    var type = glyph.type, out = [], swap = false, xs, ys;
    if (type === "Patches") {
      xs = data[field(glyph.xs)]; ys = data[field(glyph.ys)];
      if (!xs || !ys) { return null; }
      rows.forEach(function (k) {
        Array.from(xs[k] || []).forEach(function (x, i) { out.push([x, ys[k][i]]); });
      });
      return {points: out, swap: false};
    }
    if (type === "HBar") {
      ys = data[field(glyph.y)]; xs = data[field(glyph.right)];
      swap = true;
    } else {
      xs = data[field(glyph.x)]; ys = data[field(glyph.y) || field(glyph.top)];
    }
    if (!xs || !ys) { return null; }
    rows.forEach(function (k) {
      var a = xs[k], b = ys[k];
      if (swap) { out.push([b, Number(a)]); }
      else if (isFactor(b) && !isFactor(a)) { swap = true; out.push([b, Number(a)]); }  // dots in named rows
      else { out.push([a, isFactor(b) ? b : Number(b)]); }
    });
    return {points: out, swap: swap};
  }
  // the cells of a grid drawn as rectangles or quads: each cell's centre and its value (the number its colour is
  // mapped from, else the words written in it, else its source's `said` column: the words of cells too small to
  // write in); rectangles with none are marks over a picture, not data
  function cellsOf(renderer, texts) {
    var glyph = renderer.glyph, data = renderer.data_source.data, rows = shown(renderer, lengthOf(data));
    var alpha = glyph.fill_alpha;
    if (alpha && typeof alpha === "object" && alpha.value === 0) { return null; }       // an outline: a mark
    var fill = glyph.fill_color, numbers = fill && fill.field && fill.transform ? data[fill.field] : null;
    var cx, cy;
    if (glyph.type === "Rect") {
      cx = data[field(glyph.x)]; cy = data[field(glyph.y)];
    } else {
      var l = data[field(glyph.left)], r = data[field(glyph.right)], t = data[field(glyph.top)];
      var b = data[field(glyph.bottom)];
      if (!l || !r || !t || !b) { return null; }
      cx = Array.from(l, function (v, k) { return (v + r[k]) / 2; });
      cy = Array.from(t, function (v, k) { return (v + b[k]) / 2; });
    }
    if (!cx || !cy) { return null; }
    var cells = [];
    rows.forEach(function (k) {
      var written = texts.get(key(cx[k], cy[k]));
      if (written === undefined && data.said) { written = data.said[k]; }
      var value = numbers ? Number(numbers[k]) : written;
      if (value !== undefined && value !== "") { cells.push({x: cx[k], y: cy[k], value: value}); }
    });
    return cells.length ? cells : null;
  }
  var key = function (x, y) { return JSON.stringify([x, y]); };
  var lengthOf = function (data) { var first = Object.keys(data)[0]; return first ? data[first].length : 0; };
  // the words written at each place by the text glyphs of a figure, as drawn now
  function written(figure) {
    var at = new Map();
    list(figure.renderers).forEach(function (r) {
      var glyph = r.glyph, data = r.data_source && r.data_source.data;
      if (!glyph || glyph.type !== "Text" || !data || r.visible === false) { return; }
      var xs = data[field(glyph.x)], ys = data[field(glyph.y)], tf = field(glyph.text);
      var texts = tf ? data[tf] : null, fixed = glyph.text && glyph.text.value;
      if (!xs || !ys) { return; }
      shown(r, xs.length).forEach(function (k) {
        var text = texts ? texts[k] : fixed;
        if (typeof text === "string" && text.trim()) { at.set(key(xs[k], ys[k]), text.trim()); }
      });
    });
    return at;
  }
  // whether a point lies within the figure's ranges (a legend's key drawn off the picture is no data)
  function inside(figure, point, swap) {
    var within = function (range, v) {
      if (!range || typeof range.start !== "number" || typeof v !== "number") { return true; }
      return v >= Math.min(range.start, range.end) && v <= Math.max(range.start, range.end);
    };
    return swap ? within(figure.x_range, point[1]) && within(figure.y_range, point[0])
                : within(figure.x_range, point[0]) && within(figure.y_range, point[1]);
  }
  // what a glyph looks like in a legend: a series with no entry of its own takes the name of the entry drawn alike
  // (a prompt's area beside the run's, dots whose key is a grey sample)
  function look(glyph) {
    var plain = function (spec) { return spec && typeof spec === "object" && "value" in spec ? spec.value : spec; };
    var colour = function (spec) { return spec && typeof spec === "object" && "value" in spec ? spec.value : null; };
    return {type: glyph.type, marker: plain(glyph.marker), hatch: plain(glyph.hatch_pattern),
            dash: JSON.stringify(plain(glyph.line_dash)), fill: colour(glyph.fill_color), line: colour(glyph.line_color)};
  }
  function alike(a, b) {
    // the colour that fills it (a line's own where nothing fills), when both have one of their own
    var colour = a.type === "Line" ? "line" : "fill";
    var colours = a[colour] === null || b[colour] === null || a[colour] === b[colour];
    return a.type === b.type && a.marker === b.marker && a.hatch === b.hatch && a.dash === b.dash && colours;
  }
  // whether every point of `few` is one of `many`
  function within(few, many) {
    var all = new Set(many.map(function (p) { return JSON.stringify(p); }));
    return few.every(function (p) { return all.has(JSON.stringify(p)); });
  }
  // {kind: "grid", rows, cols, values, rowNames, colNames} (a heat map, or cells drawn as rectangles),
  // {kind: "cells", items: [[row, column, value]], heads} (cells whose columns differ from row to row) or
  // {kind: "points", series: [{name, points: [[where, how much]]}], axes: [where, how much]}
  function numbersOf(figure) {
    var series = [], cells = [], texts = written(figure), names = legendNames(figure), swapped = false;
    var keys = list(figure.renderers).filter(function (r) { return names[r.id] && r.glyph; })
      .map(function (r) { return {look: look(r.glyph), name: names[r.id]}; });
    for (var r of list(figure.renderers)) {
      var glyph = r.glyph, data = r.data_source && r.data_source.data;
      if (!glyph || !data || r.visible === false) { continue; }
      if (data.image && field(glyph.image) === "image") {
        var at = shown(r, data.image.length), frame = data.image[at[at.length - 1]];
        if (!frame) { continue; }
        return imageGrid(figure, frame);
      }
      if (glyph.type === "Text") { continue; }
      if (glyph.type === "Rect" || glyph.type === "Quad") {
        var found = cellsOf(r, texts);
        if (found) { cells = cells.concat(found); }
        continue;
      }
      var got = pointsOf(glyph, data, shown(r, lengthOf(data)));
      if (!got) { continue; }
      var points = got.points.filter(function (p) {
        return present(p[0]) && present(p[1]) && inside(figure, p, got.swap);
      });
      if (!points.length) { continue; }
      swapped = swapped || got.swap;
      var key = keys.find(function (k) { return alike(k.look, look(glyph)); });
      var name = r.name || names[r.id] || (key ? key.name : "");
      // a line and its dots, or the few markers along a line: one series (the line's points)
      var known = series.find(function (s) { return s.name === name && (!name ? same(s.points, points)
                                                                               : within(points, s.points)); });
      var wider = name ? series.find(function (s) { return s.name === name && within(s.points, points); }) : null;
      if (wider) { wider.points = points; } else if (!known) { series.push({name: name, points: points}); }
    }
    if (cells.length) { return cellGrid(figure, cells); }
    var axes = [axisName(figure, 0), axisName(figure, 1)];
    axes = swapped ? [axes[1], axes[0]] : axes;
    series.forEach(function (s, i) {                  // one series alone is what its axis says it is
      if (!s.name) { s.name = series.length === 1 && axes[1] ? axes[1] : words.series.replace("{n}", i + 1); }
    });
    return {kind: "points", series: series, axes: axes};
  }
  function imageGrid(figure, frame) {
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
    // row i is drawn between i and i + 1 on the vertical axis (row 0 at the top), column j likewise
    var names = function (count, dimension, word) {
      var out = [];
      for (var k = 0; k < count; k++) { out.push(labelAt(figure, dimension, k + 0.5) || word + " " + (k + 1)); }
      return out;
    };
    return {kind: "grid", rows: rows, cols: cols, values: values, rowNames: names(rows, 1, words.row),
            colNames: names(cols, 0, words.column)};
  }
  var same = function (a, b) { return JSON.stringify(a) === JSON.stringify(b); };
  function cellGrid(figure, cells) {
    // a category with an offset, [name, 0.22] (a long row wrapped onto lines of its own): the row is the name, and
    // its cells are counted along it in the order they were written
    var wrapped = cells.some(function (c) { return Array.isArray(c.y) && typeof c.y[c.y.length - 1] === "number"; });
    if (wrapped) {
      var along = new Map();
      cells = cells.map(function (c) {
        var row = Array.isArray(c.y) ? c.y.slice(0, -1) : c.y, name = place(row), n = (along.get(name) || 0) + 1;
        along.set(name, n);
        return {x: n, y: row.length === 1 ? row[0] : row, value: c.value};
      });
    }
    var distinct = function (values, descending) {
      var seen = [];
      values.forEach(function (v) { if (!seen.some(function (s) { return same(s, v); })) { seen.push(v); } });
      if (seen.every(function (v) { return typeof v === "number"; })) {
        seen.sort(function (a, b) { return descending ? b - a : a - b; });
      }
      return seen;
    };
    var range = function (r) { return r && typeof r.start === "number" && r.start > r.end; };
    // rows in the order the picture shows them from the top, columns from the left
    var ys = distinct(cells.map(function (c) { return c.y; }), !range(figure.y_range));
    var xs = distinct(cells.map(function (c) { return c.x; }), range(figure.x_range));
    var order = function (values, factors, descending) {        // a categorical axis lists its factors bottom up
      var at = function (v) { return factors.findIndex(function (f) { return same(f, v); }); };
      values.sort(function (a, b) { return descending ? at(b) - at(a) : at(a) - at(b); });
    };
    if (ys.some(isFactor) && Array.isArray(figure.y_range.factors)) { order(ys, figure.y_range.factors, true); }
    if (xs.some(isFactor) && Array.isArray(figure.x_range.factors)) { order(xs, figure.x_range.factors, false); }
    var rowName = function (y, i) { return labelAt(figure, 1, y) || words.row + " " + (i + 1); };
    var colName = function (x) { return wrapped ? String(x) : labelAt(figure, 0, x) || place(x); };
    var index = function (list, v) { return list.findIndex(function (s) { return same(s, v); }); };
    if (cells.length < 0.5 * xs.length * ys.length) {           // columns that differ from row to row: a list
      var items = cells.slice().sort(function (a, b) {
        return index(ys, a.y) - index(ys, b.y) || index(xs, a.x) - index(xs, b.x);
      }).map(function (c) { return [rowName(c.y, index(ys, c.y)), colName(c.x), c.value]; });
      return {kind: "cells", items: items, heads: [axisName(figure, 1), axisName(figure, 0), words.value]};
    }
    var values = ys.map(function () { return xs.map(function () { return ""; }); });
    cells.forEach(function (c) { values[index(ys, c.y)][index(xs, c.x)] = c.value; });
    return {kind: "grid", rows: ys.length, cols: xs.length, values: values, rowNames: ys.map(rowName),
            colNames: xs.map(colName)};
  }
  // a written cell's number, read in the page's number format (12,5 %), or NaN (a ✓, a word)
  var parts = new Intl.NumberFormat(words.locale).formatToParts(12345.6);
  var group = (parts.find(function (p) { return p.type === "group"; }) || {value: ","}).value;
  var decimal = (parts.find(function (p) { return p.type === "decimal"; }) || {value: "."}).value;
  function read(text) {
    if (typeof text === "number") { return text; }
    var plain = String(text).replace(/[%\s]/g, "").split(group).join("").replace(decimal, ".").replace("−", "-");
    return /^-?\d+(\.\d+)?$/.test(plain) ? Number(plain) : NaN;
  }
  // the values of a grid or a list of cells: their range, or how many of each mark (✓ 40, ✗ 8)
  function summary(values) {
    var low = Infinity, high = -Infinity, counts = new Map();
    values.forEach(function (v) {
      if (v === "" || v === undefined || v === null) { return; }
      var x = read(v);
      if (Number.isFinite(x)) { low = Math.min(low, x); high = Math.max(high, x); }
      else if (typeof v === "string") { counts.set(v, (counts.get(v) || 0) + 1); }
    });
    return {low: low, high: high, counts: counts, empty: low === Infinity && !counts.size};
  }
  function describe(figure, found) {
    if (found.kind === "grid" || found.kind === "cells") {
      var all = found.kind === "grid" ? [].concat.apply([], found.values) : found.items.map(function (i) { return i[2]; });
      var got = summary(all);
      var size = function (text) {
        return text.replace("{rows}", found.rows).replace("{cols}", found.cols).replace("{n}", all.length);
      };
      if (got.empty) { return size(found.kind === "grid" ? words.grid_empty : words.nothing); }
      if (got.counts.size) {
        var each = Array.from(got.counts.entries()).map(function (e) { return e[0] + " " + e[1]; }).join(", ");
        return size(found.kind === "grid" ? words.grid_marks : words.cells_marks).replace("{marks}", each);
      }
      return size(found.kind === "grid" ? words.grid : words.cells).replace("{low}", write(got.low))
        .replace("{high}", write(got.high));
    }
    var points = found.series.reduce(function (n, s) { return n + s.points.length; }, 0);
    if (!points) { return words.nothing; }
    var named = [];
    found.series.forEach(function (s) { if (named.indexOf(s.name) < 0) { named.push(s.name); } });
    return words.points.replace("{n}", points).replace("{series}", named.join("; "));
  }
  function table(found) {
    var t = document.createElement("table"), head = document.createElement("tr"), cell;
    var add = function (tr, tag, text) { cell = document.createElement(tag); cell.textContent = text; tr.append(cell);
                                        return cell; };
    var show = function (v) { return typeof v === "number" ? write(v) : String(v); };
    var row = function (texts) {
      var tr = document.createElement("tr");
      texts.forEach(function (text, i) { add(tr, i === 0 ? "th" : "td", text); if (i === 0) { cell.scope = "row"; } });
      t.append(tr);
    };
    if (found.kind === "grid") {
      add(head, "th", "");
      found.colNames.forEach(function (name) { add(head, "th", name).scope = "col"; });
      t.append(head);
      found.values.forEach(function (values, i) { row([found.rowNames[i]].concat(values.map(show))); });
      return t;
    }
    var heads = found.kind === "cells" ? found.heads : [words.series_head].concat(found.axes);
    heads.forEach(function (name) { add(head, "th", name).scope = "col"; });
    t.append(head);
    if (found.kind === "cells") {
      found.items.forEach(function (item) { row([item[0], item[1], show(item[2])]); });
    } else {
      found.series.forEach(function (s) { s.points.forEach(function (p) { row([s.name, place(p[0]), show(p[1])]); }); });
    }
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
          "min-width: calc(40px * var(--lineare-scale, 1)); min-height: calc(30px * var(--lineare-scale, 1)); " +
          "font-size: calc(16px * var(--lineare-scale, 1)); padding: 0 4px; " +
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
