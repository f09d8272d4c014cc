// What a student sees and hears on a loaded page, read from the page itself (tests/ui/seeing.py calls these:
// `(<this file>).contrast()` and so on). Colours are parsed and composed here, and the background behind an
// element is found through shadow roots.
(() => {

  const parse = (text) => {
    if (!text) return null;
    let m = /^#([0-9a-f]{6})$/i.exec(text);
    if (m) return [parseInt(m[1].slice(0, 2), 16), parseInt(m[1].slice(2, 4), 16), parseInt(m[1].slice(4, 6), 16), 1];
    m = /^#([0-9a-f]{3})$/i.exec(text);
    if (m) return [...m[1]].map(c => parseInt(c + c, 16)).concat([1]);
    m = /rgba?\(([^)]+)\)/.exec(text);
    if (m) { const p = m[1].split(/[ ,\/]+/).filter(Boolean).map(Number); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; }
    const probe = document.createElement("canvas").getContext("2d");     // a CSS colour name ("white", "navy")
    probe.fillStyle = "#010203"; probe.fillStyle = text;
    return probe.fillStyle === "#010203" && text !== "#010203" ? null : parse(probe.fillStyle);
  };
  const over = (top, under) => {            // `top` (alpha) over an opaque `under`
    const a = top[3];
    return [0, 1, 2].map(i => top[i] * a + under[i] * (1 - a)).concat([1]);
  };
  const luminance = (c) => {
    const [r, g, b] = c.slice(0, 3).map(v => { v /= 255; return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const ratio = (a, b) => { const x = luminance(a), y = luminance(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
  const up = (node) => node.parentNode instanceof ShadowRoot ? node.parentNode.host : node.parentNode;
  const background = (el) => {              // the opaque colour an element is painted on
    const layers = [];
    for (let n = el; n && n.nodeType === 1; n = up(n)) {
      const style = getComputedStyle(n), c = parse(style.backgroundColor);
      if (style.backgroundImage && style.backgroundImage !== "none") return null;       // a gradient, a picture
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    let under = [255, 255, 255, 1];
    for (const c of layers.reverse()) under = over(c, under);
    return under;
  };
  const hex = (c) => "#" + c.slice(0, 3).map(v => Math.round(v).toString(16).padStart(2, "0")).join("");
  function contrast() {


  const found = [];
  // 1. the page's text
  const walk = (node) => {
    if (node.nodeType === Node.TEXT_NODE) {
      const text = node.textContent.trim(), el = node.parentElement;
      if (!text || !el) return;
      const range = document.createRange(); range.selectNodeContents(node);
      const shown = [...range.getClientRects()].some(r => r.width > 1 && r.height > 1);
      if (!shown || !el.checkVisibility({opacityProperty: true, visibilityProperty: true})) return;
      if (el.closest("[disabled], [aria-disabled=true]")) return;           // inactive controls are exempt
      const style = getComputedStyle(el), colour = parse(style.color), ground = background(el);
      if (!colour || !ground) return;
      const size = parseFloat(style.fontSize), bold = Number(style.fontWeight) >= 700;
      const least = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5, got = ratio(over(colour, ground), ground);
      if (got < least - 0.005) found.push(`text «${text.slice(0, 40)}» ${hex(colour)} on ${hex(ground)}: ${got.toFixed(2)}:1`);
      return;
    }
    if (node.nodeType !== Node.ELEMENT_NODE && node.nodeType !== Node.DOCUMENT_FRAGMENT_NODE) return;
    if (["STYLE", "SCRIPT", "NOSCRIPT", "TEMPLATE"].includes(node.tagName)) return;
    if (node.shadowRoot) walk(node.shadowRoot);
    for (const child of node.childNodes) walk(child);
  };
  walk(document.body);
  // 2. the pictures, from their models
  const list = (x) => Array.isArray(x) ? x : [];
  const value = (spec) => spec && typeof spec === "object" && "value" in spec ? spec.value : spec;
  const px = (size) => { const s = String(value(size)); return parseFloat(s) * (/pt$/.test(s) ? 4 / 3 : 1); };
  const plots = window.Bokeh && Bokeh.index ? Array.from(Bokeh.index.query(v =>
    v.renderer_views !== undefined && v.el && "toolbar" in v.model.properties)) : [];
  for (const view of plots) {
    if (view.el.getClientRects().length === 0) continue;
    const figure = view.model, name = figure.title && figure.title.text ? figure.title.text.replace(/\n/g, " ") : "a picture";
    const ground = parse(value(figure.border_fill_color) || "#ffffff") || [255, 255, 255, 1];
    const inside = over(parse(value(figure.background_fill_color) || "#ffffff") || [255, 255, 255, 1], ground);
    const text = (what, colour, alpha, size, bold, on) => {
      const c = parse(value(colour)); if (!c) return;
      c[3] = c[3] * (alpha === undefined || alpha === null ? 1 : value(alpha));
      const least = px(size) >= 24 || (bold && px(size) >= 18.66) ? 3 : 4.5, got = ratio(over(c, on), on);
      if (got < least - 0.005) found.push(`«${name}»: ${what} ${hex(c)} on ${hex(on)}: ${got.toFixed(2)}:1`);
    };
    // words around the frame: titles, axes, legends, colour bars, labels
    const parts = [figure.title, ...list(figure.above), ...list(figure.below), ...list(figure.left),
                   ...list(figure.right), ...list(figure.center)].filter(Boolean);
    for (const part of parts) {
      const on = list(figure.center).includes(part) ? inside : ground;
      if (part.visible === false) continue;
      if ("text_color" in part.properties && typeof part.text === "string" && part.text)
        text("title", part.text_color, part.text_alpha, part.text_font_size, part.text_font_style === "bold", on);
      if ("major_label_text_color" in part.properties)
        text("tick labels", part.major_label_text_color, part.major_label_text_alpha, part.major_label_text_font_size, false, on);
      if ("axis_label_text_color" in part.properties && part.axis_label)
        text("axis name", part.axis_label_text_color, part.axis_label_text_alpha, part.axis_label_text_font_size, false, on);
      if ("label_text_color" in part.properties && part.type === "Legend" && list(part.items).length)
        text("legend", part.label_text_color, part.label_text_alpha, part.label_text_font_size, false,
             over(parse(value(part.background_fill_color) || "#ffffff"), on));
    }
    // what is drawn in the frame
    const rowsOf = (r) => {
      const data = r.data_source.data, first = Object.values(data)[0];
      return r.view && r.view.filter && r.view.filter.indices ? Array.from(r.view.filter.indices) :
        [...Array(first ? first.length : 0).keys()];
    };
    const colourAt = (r, glyph, prefix, k) => {           // the colour a glyph draws row k with, alpha included
      const spec = glyph[prefix + "_color"], alpha = glyph[prefix + "_alpha"], data = r.data_source.data;
      if (spec === null || spec === undefined) return null;
      const at = (s) => s && typeof s === "object" && s.field ? data[s.field] && data[s.field][k] : value(s);
      let c;
      if (spec && spec.transform && spec.transform.rgba_mapper) {
        const rgba = spec.transform.rgba_mapper.v_compute([at(spec)]); c = [rgba[0], rgba[1], rgba[2], rgba[3] / 255];
      } else { c = parse(at(spec)); }
      if (!c) return null;
      const a = at(alpha); c[3] = c[3] * (a === undefined || a === null ? 1 : Number(a));
      return c;
    };
    const written = new Set(list(figure.renderers).filter(r => r.glyph && r.glyph.type === "Text").map(r => r.data_source));
    const cells = new Map();             // where a filled rectangle is: its colour, for the words written on it
    const place = (x, y) => JSON.stringify([x, y]);
    for (const r of list(figure.renderers)) {
      const glyph = r.glyph;
      if (!glyph || r.visible === false || !r.data_source || r.level === "underlay" || glyph.type === "Image") continue;
      const data = r.data_source.data, mapped = (s) => s && typeof s === "object" && !!s.transform;
      if (glyph.type === "Text") continue;                      // below, on their cells
      if (glyph.type === "Rect" || glyph.type === "Quad") {
        for (const k of rowsOf(r)) {
          const c = colourAt(r, glyph, "fill", k);
          if (!c || c[3] === 0) continue;
          const at = glyph.type === "Rect" ? place(data[glyph.x.field][k], data[glyph.y.field][k])
                                           : place((data.left[k] + data.right[k]) / 2, (data.top[k] + data.bottom[k]) / 2);
          cells.set(at, over(c, inside));
        }
        // a grid of cells with words in them: its colours are a scale, its words are checked on them
        if (written.has(r.data_source)) continue;
      }
      if (mapped(glyph.fill_color) || mapped(glyph.line_color)) continue;      // a colour scale: data, not marks
      const seen = new Map();
      for (const k of rowsOf(r)) {
        const fill = "fill_color" in glyph.properties ? colourAt(r, glyph, "fill", k) : null;
        const line = "line_color" in glyph.properties ? colourAt(r, glyph, "line", k) : null;
        const shows = (c) => c && c[3] > 0.02;
        const mark = shows(fill) ? fill : line;
        if (!shows(mark)) continue;
        const key = hex(mark) + mark[3] + (line ? hex(line) + line[3] : "");
        if (seen.has(key)) continue;
        seen.set(key, true);
        const got = ratio(over(mark, inside), inside);
        const outline = shows(line) && value(glyph.line_width) >= 2 && ratio(over(line, inside), inside) >= 3;
        // a line in the background's own colour is a halo around another (a double line on dark and light)
        if (got < 1.01 && hex(over(mark, inside)) === hex(inside)) continue;
        if (got < 2.995 && !outline)
          found.push(`«${name}»: ${glyph.type} ${hex(mark)} (alpha ${mark[3].toFixed(2)}) on ${hex(inside)}: ${got.toFixed(2)}:1`);
      }
    }
    for (const r of list(figure.renderers)) {                  // the words written in the picture
      const glyph = r.glyph;
      if (!glyph || glyph.type !== "Text" || r.visible === false) continue;
      const data = r.data_source.data, xs = data[glyph.x.field] || [], ys = data[glyph.y.field] || [];
      const texts = glyph.text && glyph.text.field ? data[glyph.text.field] : null;
      const size = px(glyph.text_font_size), bold = value(glyph.text_font_style) === "bold";
      const least = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
      for (const k of rowsOf(r)) {
        if (texts && !(String(texts[k] || "").trim())) continue;
        const colour = colourAt(r, glyph, "text", k);
        if (!colour) continue;
        const on = cells.get(place(xs[k], ys[k])) || inside, got = ratio(over(colour, on), on);
        if (got < least - 0.005)
          found.push(`«${name}»: words «${texts ? texts[k] : value(glyph.text)}» ${hex(colour)} on ${hex(on)}: ${got.toFixed(2)}:1`);
      }
    }
  }
  return [...new Set(found)];
}
  function canvasTexts() {
  const list = (x) => Array.isArray(x) ? x : [];
  const value = (spec) => spec && typeof spec === "object" && "value" in spec ? spec.value : spec;
  const px = (size) => { const s = String(value(size)); return parseFloat(s) * (/pt$/.test(s) ? 4 / 3 : 1); };
  const out = [];
  const plots = window.Bokeh && Bokeh.index ? Array.from(Bokeh.index.query(v =>
    v.renderer_views !== undefined && v.el && "toolbar" in v.model.properties)) : [];
  for (const view of plots) {
    if (view.el.getClientRects().length === 0) continue;
    const figure = view.model, name = figure.title && figure.title.text ? figure.title.text.replace(/\n/g, " ") : "";
    const add = (what, size) => out.push({picture: name, what, px: px(size)});
    const parts = [figure.title, ...list(figure.above), ...list(figure.below), ...list(figure.left),
                   ...list(figure.right), ...list(figure.center)].filter(p => p && p.visible !== false);
    for (const part of parts) {
      if ("text_font_size" in part.properties && typeof part.text === "string" && part.text.trim())
        add(part.type === "Title" ? "title" : "label «" + part.text.slice(0, 30) + "»", part.text_font_size);
      const ticks = "major_label_text_font_size" in part.properties &&
                    (part.type === "ColorBar" || (part.ticker && (part.ticker.ticks === undefined || list(part.ticker.ticks).length)));
      if (ticks) add(part.type === "ColorBar" ? "colour bar labels" : "tick labels", part.major_label_text_font_size);
      if ("axis_label_text_font_size" in part.properties && part.axis_label) add("axis name", part.axis_label_text_font_size);
      if (part.type === "Legend" && list(part.items).length) add("legend", part.label_text_font_size);
    }
    for (const r of list(figure.renderers)) {
      const glyph = r.glyph, data = r.data_source && r.data_source.data;
      if (!glyph || glyph.type !== "Text" || r.visible === false || !data) continue;
      const texts = glyph.text && glyph.text.field ? data[glyph.text.field] : [value(glyph.text)];
      const rows = r.view && r.view.filter && r.view.filter.indices ? Array.from(r.view.filter.indices) : [...texts.keys()];
      const shown = rows.map(k => texts[k]).find(t => typeof t === "string" && t.trim());
      if (shown && (glyph.text && glyph.text.field ? rows.length : Object.values(data)[0] && Object.values(data)[0].length))
        add("words in it «" + shown.slice(0, 12) + "»", glyph.text_font_size);
    }
  }
  return out;
}
  function controls() {
  const found = [], named = new Set(["A", "BUTTON", "INPUT", "SELECT", "TEXTAREA", "SUMMARY"]);
  const deepText = (el) => {
    let text = "";
    const walk = (n) => {
      if (n.nodeType === Node.TEXT_NODE) { text += n.textContent; return; }
      if (n.nodeType !== 1 && n.nodeType !== 11) return;
      if (["STYLE", "SCRIPT"].includes(n.tagName)) return;
      if (n.nodeType === 1 && n.getAttribute("aria-hidden") === "true") return;
      if (n.nodeType === 1 && n.getAttribute("aria-label")) { text += " " + n.getAttribute("aria-label"); return; }
      if (n.shadowRoot) walk(n.shadowRoot);
      for (const c of n.childNodes) walk(c);
    };
    walk(el);
    return text.trim();
  };
  const walk = (root) => {
    for (const el of root.querySelectorAll("*")) {
      if (el.shadowRoot) walk(el.shadowRoot);
      if (el.tabIndex < 0 || el.disabled || el.getClientRects().length === 0) continue;
      if (!el.checkVisibility({visibilityProperty: true}) || el.closest("[inert]")) continue;
      const role = el.getAttribute("role");
      let name = el.getAttribute("aria-label") || "";
      if (!name && el.labels && el.labels.length) name = [...el.labels].map(l => l.textContent).join(" ");
      if (!name && el.getAttribute("aria-labelledby")) {
        name = el.getAttribute("aria-labelledby").split(/\s+/).map(id => {
          const t = el.getRootNode().getElementById ? el.getRootNode().getElementById(id) : null; return t ? t.textContent : ""; }).join(" ");
      }
      if (!name && el.tagName === "INPUT" && el.getRootNode() !== document) {
        // Bokeh's own fields: their <label> holds the title and the field (a box of its own, one shadow root)
        const label = el.closest("label"); if (label) name = label.textContent;
      }
      if (!name && !["INPUT", "SELECT", "TEXTAREA"].includes(el.tagName)) name = deepText(el) || el.getAttribute("title") || "";
      if (!name && el.tagName === "SELECT") name = el.getAttribute("title") || "";
      const what = `${el.tagName.toLowerCase()}${role ? "[role=" + role + "]" : ""}.${String(el.className).slice(0, 40)}`;
      if (!named.has(el.tagName) && !role) found.push(`${what}: a Tab stop with no role («${name.slice(0, 30)}»)`);
      else if (!name.trim()) found.push(`${what}: a Tab stop with no name`);
    }
  };
  walk(document);
  return found;
}
  function pictures() {
  const list = (x) => Array.isArray(x) ? x : [];
  const value = (spec) => spec && typeof spec === "object" && "value" in spec ? spec.value : spec;
  const found = [];
  const plots = Array.from(Bokeh.index.query(v => v.renderer_views !== undefined && v.el && "toolbar" in v.model.properties));
  for (const view of plots) {
    if (view.el.getClientRects().length === 0) continue;
    const figure = view.model, name = view.el.getAttribute("aria-label") || "";
    const title = figure.title && figure.title.text ? figure.title.text.replace(/\n/g, " ") : "a picture";
    const numbers = window.lineareNumbers(view.el);
    if (!numbers) { found.push(`«${title}»: no numbers`); continue; }
    const legends = new Map();
    for (const legend of [...list(figure.center), ...list(figure.below), ...list(figure.above), ...list(figure.right)]) {
      if (legend.type !== "Legend") continue;
      for (const item of list(legend.items)) for (const r of list(item.renderers)) legends.set(r, value(item.label));
    }
    const inRange = (range, v) => typeof v !== "number" || !range || typeof range.start !== "number" ||
      (v >= Math.min(range.start, range.end) && v <= Math.max(range.start, range.end));
    // what the models draw: rows shown, within the ranges
    let drawn = 0, image = null, texts = [];
    const names = [];
    for (const r of list(figure.renderers)) {
      const glyph = r.glyph, data = r.data_source && r.data_source.data;
      if (!glyph || !data || r.visible === false) continue;
      const length = Object.values(data)[0] ? Object.values(data)[0].length : 0;
      const rows = r.view && r.view.filter && r.view.filter.indices ? Array.from(r.view.filter.indices) : [...Array(length).keys()];
      if (glyph.type === "Image") { image = data.image[rows[rows.length - 1]]; continue; }
      if (glyph.type === "Text") {
        const field = glyph.text && glyph.text.field;
        for (const k of rows) { const t = field ? data[field][k] : value(glyph.text); if (typeof t === "string" && t.trim()) texts.push(t.trim()); }
        continue;
      }
      const outline = value(glyph.fill_alpha) === 0;
      if ((glyph.type === "Rect" || glyph.type === "Quad") && outline) continue;        // marks over the picture
      const xs = glyph.x && glyph.x.field ? data[glyph.x.field] : null, ys = glyph.y && glyph.y.field ? data[glyph.y.field] : null;
      const shown = rows.filter(k => !xs || !ys || (inRange(figure.x_range, xs[k]) && inRange(figure.y_range, ys[k])));
      if (shown.length) { drawn += shown.length; if (legends.has(r)) names.push(legends.get(r)); }
    }
    const says = name.split(". ").slice(1).join(". ");
    if (image) {
      if (numbers.kind !== "grid") { found.push(`«${title}»: a heat map read as ${numbers.kind}`); continue; }
      const shape = image.shape || [1, image.length];
      if (numbers.rows !== shape[0] || numbers.cols !== shape[1]) found.push(`«${title}»: ${numbers.rows} × ${numbers.cols} of a ${shape} grid`);
      continue;
    }
    if (!drawn) continue;
    if (!says) found.push(`«${title}» draws ${drawn} rows and says nothing of them`);
    if (numbers.kind === "points") {
      const total = numbers.series.reduce((n, s) => n + (s.points || []).length, 0);
      if (!total) found.push(`«${title}» draws ${drawn} rows but its table is empty («${says}»)`);
      for (const legend of names) {
        if (legend && !numbers.series.some(s => s.name === legend)) found.push(`«${title}»: no series named «${legend}»`);
      }
      if (numbers.series.some(s => /^(series|serie) \d+$/.test(s.name)) && names.length)
        found.push(`«${title}»: a series without its legend's name`);
    } else {
      const cells = numbers.kind === "grid" ? [].concat(...numbers.values) : numbers.items.map(i => i[2]);
      const filled = cells.filter(v => v !== "" && v !== null && v !== undefined && !(typeof v === "number" && isNaN(v)));
      if (!filled.length) found.push(`«${title}» draws ${drawn} rows but its grid has no values («${says}»)`);
      const written = new Set(filled.filter(v => typeof v === "string"));
      const missing = texts.filter(t => !written.has(t) && numbers.kind === "grid" && written.size);
      if (missing.length) found.push(`«${title}»: words drawn in it not in its table: ${[...new Set(missing)].slice(0, 5)}`);
    }
  }
  return found;
}
  function focus() {


  let el = document.activeElement;
  while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
  if (!el || el === document.body) return null;
  for (const running of el.getAnimations()) running.finish();        // a halo that fades in: as it ends
  const style = getComputedStyle(el), around = background(up(el) || el) || [255, 255, 255, 1];
  const what = `${el.tagName.toLowerCase()}.${String(el.className).slice(0, 30)} «${(el.getAttribute("aria-label") ||
                el.textContent || "").trim().slice(0, 30)}»`;
  const rings = [];
  if (style.outlineStyle !== "none" && style.outlineStyle !== "auto" && parseFloat(style.outlineWidth) >= 2) {
    const c = parse(style.outlineColor); if (c) rings.push(ratio(over(c, around), around));
  }
  for (const shadow of style.boxShadow === "none" ? [] : style.boxShadow.split(/,(?![^(]*\))/)) {
    const c = parse((/rgba?\([^)]*\)/.exec(shadow) || [""])[0]), sizes = shadow.replace(/rgba?\([^)]*\)/, "").trim().split(/\s+/).map(parseFloat);
    if (c && sizes.length >= 4 && sizes[3] >= 2) rings.push(ratio(over(c, around), around));
  }
  return {what, best: rings.length ? Math.max(...rings) : 0, outline: style.outlineStyle, around: hex(around)};
}
  return {contrast, canvasTexts, controls, pictures, focus};
})()
