// Run in the browser by the page's tidy pass (app/js/page/drawer.js), every second and on a resize:
// - a title or an axis name longer than its picture (a phone's narrow column, a long Italian title) is wrapped
//   onto more lines, at spaces. Only in the browser: the changes are never sent (`sync: false`; the server
//   refuses a browser's changes to its models, app/server/websocket.py), and the server's own text is kept to wrap
//   again when the picture's width changes. The figure then lays itself out again (a taller title pushes the
//   plot down instead of covering it: the player's quick check of a figure's layout counts only whether a
//   title is there, app/components/player.py);
// - in presenter mode (the page's --lineare-scale, 1.25) the pictures' type is as much larger as the page's.
(function () {
  var measure = document.createElement("canvas").getContext("2d");
  var width = function (text, font) { measure.font = font; return measure.measureText(text).width; };
  // the lines of `text` no wider than `room` px, broken at spaces and after hyphens (moltiplicazioni-e-somme);
  // a piece wider than the room has a line of its own
  function wrapped(text, font, room) {
    return text.split("\n").map(function (paragraph) {
      var lines = [], line = null;
      paragraph.split(" ").forEach(function (word) {
        (word.match(/[^-]+-+(?=[^-])|.+/g) || [""]).forEach(function (piece, i) {
          var longer = line === null ? piece : line + (i === 0 ? " " : "") + piece;
          if (line !== null && width(longer, font) > room) { lines.push(line); line = piece; } else { line = longer; }
        });
      });
      lines.push(line);
      return lines.join("\n");
    }).join("\n");
  }
  // a model → {property: {shown: the text shown, server: the server's own, font, room, view: the figure's}}
  var servers = new WeakMap();
  function serverText(model, property) {
    var kept = servers.get(model), fitted = kept && kept[property];
    return fitted && fitted.shown === model[property] ? fitted.server : model[property];
  }
  var lineCount = function (text) { return text.split("\n").length; };
  // show the server's text of model[property] wrapped to `room`; true when that changed what is shown
  function fit(model, property, font, room, view) {
    var original = serverText(model, property);
    if (typeof original !== "string" || original === "" || !(room > 0)) { return false; }
    var kept = servers.get(model) || {};
    if (!kept[property]) {
      // a text changed in the browser (the player's title of each step) is wrapped at once, before it is painted
      model.properties[property].change.connect(function () { refit(model, property); });
    }
    var want = wrapped(original, font, room);
    kept[property] = {shown: want, server: original, font: font, room: room, view: view};
    servers.set(model, kept);
    if (want === model[property]) { return false; }
    var change = {}; change[property] = want;
    model.setv(change, {sync: false});
    return true;
  }
  function refit(model, property) {
    var fitted = servers.get(model)[property], now = model[property];
    if (now === fitted.shown || typeof now !== "string") { return; }
    var want = wrapped(now, fitted.font, fitted.room), before = lineCount(fitted.shown);
    fitted.shown = want;
    fitted.server = now;
    if (want !== now) {
      var change = {}; change[property] = want;
      model.setv(change, {sync: false});
    }
    if (lineCount(want) !== before && !fitted.view.is_destroyed) { fitted.view.request_layout(true); }
  }
  var scaled = new WeakMap();          // a model → {property: [the size shown, the server's own]}
  // model[property] (a "14pt" or {value: "14pt"}) set to the server's size times `times`, not sent
  function setSize(model, property, server, times) {
    var found = /^([0-9.]+)([a-z%]+)$/.exec(server), now = model[property];
    if (!found) { return; }
    var size = (Number(found[1]) * times).toFixed(2).replace(/\.?0+$/, "") + found[2];
    var done = scaled.get(model) || {};
    done[property] = [size, server];
    scaled.set(model, done);
    var change = {};
    change[property] = now !== null && typeof now === "object" ? Object.assign({}, now, {value: size}) : size;
    model.setv(change, {sync: false});
  }
  var sizeOf = function (value) { return value !== null && typeof value === "object" ? value.value : value; };
  // every *_font_size of `model` times `scale`, once (again if the server sends another size)
  function enlarge(model, scale) {
    var done = scaled.get(model) || {}, changed = false;
    Object.keys(model.properties).forEach(function (property) {
      var size = sizeOf(model[property]);
      if (!/font_size$/.test(property) || typeof size !== "string") { return; }
      if (done[property] && done[property][0] === size) { return; }
      setSize(model, property, size, scale);
      changed = true;
    });
    return changed;
  }
  // an axis name enlarged for presenter mode whose longest unbreakable piece is still longer than `room`: its
  // type as much smaller as it must be, down to the server's size
  function shrink(model, property, text, font, room) {
    var done = scaled.get(model), pair = done && done[property];
    if (!pair || pair[0] !== sizeOf(model[property])) { return false; }
    var longest = Math.max.apply(null, text.split("\n").map(function (line) { return width(line, font); }));
    var times = Math.max(1, parseFloat(pair[0]) / parseFloat(pair[1]) * room / longest);
    if (!(longest > room) || times >= parseFloat(pair[0]) / parseFloat(pair[1]) - 0.01) { return false; }
    setSize(model, property, pair[1], times);
    return true;
  }
  // an axis name wrapped onto more than two lines (a 280-px picture's vertical name at a presenter's type, a long
  // Italian one): its type smaller, a step at a time down to three quarters of the server's size but never under
  // 16 px (read from the back of a room), until it takes two, and wrapped again
  function twoLines(model, room, view) {
    var property = "axis_label_text_font_size", text = serverText(model, "axis_label");
    var face = function () {
      return [model.axis_label_text_font_style, sizeOf(model[property]), model.axis_label_text_font].join(" ");
    };
    if (typeof text !== "string" || !(room > 0) || lineCount(wrapped(text, face(), room)) <= 2) { return false; }
    var done = scaled.get(model), pair = done && done[property];
    var server = pair ? pair[1] : sizeOf(model[property]);
    var times = parseFloat(sizeOf(model[property])) / parseFloat(server), changed = false;
    var least = Math.max(0.76, 16 / (parseFloat(server) * (/pt$/.test(server) ? 4 / 3 : 1)) + 0.05);
    while (times > least && lineCount(wrapped(text, face(), room)) > 2) {
      times -= 0.05;
      setSize(model, property, server, times);
      changed = true;
    }
    fit(model, "axis_label", face(), room, view);
    return changed;
  }
  // the room between an axis's neighbouring tick labels as drawn (px; negative: they run together), read as
  // Bokeh places them
  window.lineareTickGaps = function (drawn) {
    var coords = drawn.tick_coords.major, along = drawn.dimension, at = drawn.scoords(coords)[along];
    var labels = drawn.compute_labels(coords[along]);
    labels.visuals = drawn.visuals.major_label_text.values();
    var sizes = labels.items.map(function (label) {
      var size = label.size();
      return along === 0 ? size.width : size.height;
    });
    var order = Array.from(at.keys()).sort(function (i, j) { return at[i] - at[j]; }), gaps = [];
    for (var k = 1; k < order.length; k++) {
      var i = order[k - 1], j = order[k];
      gaps.push(at[j] - at[i] - (sizes[i] + sizes[j]) / 2);
    }
    return gaps;
  };
  // a numeric axis whose tick labels run together (a phone's narrow picture: 20,00040,000…): a tick fewer at each
  // pass until they have 8 px between them; the server's number again when the frame is drawn wider
  var ticking = new WeakMap();         // a ticker → {server: its desired_num_ticks, size: the frame's length}
  function spaceTicks(drawn, view) {
    var ticker = drawn.model.ticker;
    if (!ticker || !("desired_num_ticks" in ticker.properties) || !drawn.tick_coords) { return false; }
    var size = drawn.dimension === 0 ? view.frame.bbox.width : view.frame.bbox.height;
    var kept = ticking.get(ticker);
    if (!kept) {
      kept = {server: ticker.desired_num_ticks, size: size};
      ticking.set(ticker, kept);
    } else if (size > kept.size + 1 && ticker.desired_num_ticks !== kept.server) {
      kept.size = size;
      ticker.setv({desired_num_ticks: kept.server}, {sync: false});
      return true;
    }
    kept.size = size;
    var gaps = window.lineareTickGaps(drawn);
    if (!gaps.length || Math.min.apply(null, gaps) >= 8 || ticker.desired_num_ticks <= 2) { return false; }
    ticker.setv({desired_num_ticks: ticker.desired_num_ticks - 1}, {sync: false});
    return true;
  }
  var list = function (x) { return Array.isArray(x) ? x : []; };
  function isPlot(v) { return v.renderer_views !== undefined && v.el && "toolbar" in v.model.properties; }
  var seen = new WeakSet();
  window.lineareFitTitles = function () {
    var index = window.Bokeh && window.Bokeh.index;
    if (!index || !index.query) { return; }
    var scale = Number(getComputedStyle(document.documentElement).getPropertyValue("--lineare-scale")) || 1;
    var plots = Array.from(index.query(isPlot));
    // a picture not seen before (made with a section after the page): the player maps it (app/components/player.py)
    if (plots.some(function (view) { return !seen.has(view); })) {
      plots.forEach(function (view) { seen.add(view); });
      document.dispatchEvent(new CustomEvent("lineare:pictures"));
    }
    plots.forEach(function (view) {
      if (!view.canvas_view || view.el.getClientRects().length === 0) { return; }
      // nothing painted until the figure is laid out again: a wrapped title painted in the old layout's
      // one-line place reached above the canvas, and a sliver of it stayed there
      view.pause();
      var changed = false;
      try {
        changed = adjust(view, scale);
      } finally {
        if (changed) {
          // a title's new lines are measured once its text is drawn anew (a moment later); then the picture's
          // numbers button finds its corner again (app/components/access.py)
          setTimeout(function () { view.unpause(true); view.request_layout(true); }, 50);
          setTimeout(function () { if (window.lineareMark) { window.lineareMark(); } }, 150);
        } else {
          view.unpause(true);
        }
      }
    });
  };
  // how far from the canvas's edge the name of the axis on that side reaches (its band; 0 if it has no name), and 4 px
  function nameBand(view, side) {
    var axis = list(side).find(function (part) { return part && "axis_label" in part.properties && part.axis_label; });
    var drawn = axis && view.renderer_views.get(axis), extent = drawn && drawn.extents && drawn.extents.axis_label;
    return extent > 0 ? extent + 4 : 0;
  }
  // the type of a figure's words enlarged for presenter mode, its titles, axis names and legends fitted to its
  // canvas; true when anything changed
  function adjust(view, scale) {
    var figure = view.model, changed = false;
    var parts = [figure.title].concat(list(figure.above), list(figure.below), list(figure.left),
                                      list(figure.right));
    if (scale !== 1) {         // the words on the picture too (a crossing's, a cell's number, a ✓), not its shapes
      var texts = list(figure.renderers).map(function (r) { return r.glyph; }).filter(function (glyph) {
        return glyph && "text_font_size" in glyph.properties;
      });
      parts.concat(list(figure.center), texts).forEach(function (part) {
        if (part && enlarge(part, scale)) { changed = true; }
      });
    }
    var canvas = view.canvas_view.bbox.width;
    parts.forEach(function (part) {
      var drawn = part && view.renderer_views.get(part), box = drawn && drawn.layout && drawn.layout.bbox;
      var under = drawn && drawn.panel && /above|below/.test(drawn.panel.side);
      if (part && part.type === "Legend" && under && drawn.bbox) {
        // a legend of several columns wider than the canvas (cut at both sides): a column fewer at each pass
        // until it fits (straight to one, a presenter's Italian nine rows took the frame's height)
        var outside = drawn.bbox.left < -1 || drawn.bbox.right > canvas + 1;
        if (drawn.bbox.width > 0 && outside && part.ncols !== 1) {
          part.setv({ncols: typeof part.ncols === "number" ? part.ncols - 1 : 1}, {sync: false});
          changed = true;
        }
      } else if (!box) {
        return;
      } else if (typeof part.text === "string" && under) {
        // a title starts at its panel's left edge, and ends before the numbers button in the canvas's top right
        // corner. Leaving that corner free always keeps the button there: a title that took it sent the button
        // to the top left, the vertical axis's name wrapped away from it, the frame moved right, the title
        // wrapped, the button went back… and the picture changed at every pass of the page's tidying
        var left = box.left + (part.align === "left" ? part.offset || 0 : 0);
        var font = [part.text_font_style, part.text_font_size, part.text_font].join(" ");
        var numbers = view.el.shadowRoot && view.el.shadowRoot.querySelector(".lineare-numbers-button");
        var corner = numbers && numbers.offsetWidth > 0 ? numbers.offsetWidth + 4 : 0;
        if (fit(part, "text", font, canvas - left - 4 - corner, view)) { changed = true; }
      } else if ("axis_label" in part.properties) {
        // an axis name is centred on its axis: it must reach neither edge of the canvas, nor, up the vertical
        // axis, the numbers button when it is in the top left corner. Measured on the canvas, not the frame: a
        // wrapped name makes the frame smaller, and the other axis's name would wrap again, and this one (at
        // 1.25× type a 280-px picture shrank to nothing). Nor does it reach into the band of the other axis's name
        // at the picture's edge: the two names of a phone's map met at its corner and read as one
        var flat = /above|below/.test(drawn.panel.side), middle = flat ? box.hcenter : box.vcenter;
        var button = view.el.shadowRoot && view.el.shadowRoot.querySelector(".lineare-numbers-button");
        var atLeft = button && button.style.left === "0px";
        var corner = atLeft ? (parseFloat(button.style.top) || 0) + button.offsetHeight + 4 : 0;
        var band = nameBand(view, flat ? figure.left : figure.below);
        var room = flat ? 2 * Math.min(middle - band, canvas - middle)
                        : 2 * Math.min(middle - corner, view.canvas_view.bbox.height - band - middle);
        var face = [part.axis_label_text_font_style, part.axis_label_text_font_size,
                    part.axis_label_text_font].join(" ");
        if (fit(part, "axis_label", face, room - 8, view)) { changed = true; }
        if (shrink(part, "axis_label_text_font_size", part.axis_label, face, room - 8)) { changed = true; }
        if (twoLines(part, room - 8, view)) { changed = true; }
        if (spaceTicks(drawn, view)) { changed = true; }
      }
    });
    return changed;
  }
  // the words a text alternative reads: the server's own title, its lines joined again
  window.lineareTitle = function (model) {
    return model && typeof model.text === "string" ? serverText(model, "text").replace(/\n/g, " ") : "";
  };
})();
