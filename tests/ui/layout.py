"""What a page's layout must hold at any size, read from one loaded page in one call (shared by the UI tests
that already open pages at the phone, tablet and projector sizes, so no page is loaded for it alone):

- nothing scrolls sideways, neither the window nor the page's own scrolling area (#main);
- nothing overlaps: no two visible things (a line of text, a control, a picture, a picture's title drawn on
  its canvas) cover each other where neither holds the other (a button holds its words, a figure its
  numbers button: those are not overlaps; the numbers button over the picture's title is);
- no picture cut off: Bokeh's canvas no wider than the figure's box, and no title or axis name drawn past its
  canvas's edges (a long title on a phone's narrow picture: the page's script wraps it, app/components/plots.py);
  axis names are checked for overlaps too (a numbers button over a vertical axis name), and take two lines at most;
  an axis's tick labels do not overlap; a categorical axis draws every one of its names, none over another;
- touch targets: every control at least 24 × 24 px, except a link inside running text;
- the header's height.

`layout(page)` returns these facts; `problems(facts)` the ones that break the rules, as sentences.
"""
LAYOUT_JS = """async () => {
  // the page's own scripts fit the pictures to the column, wrap their long titles and add their numbers buttons
  // every second or so: do it now (and let the pictures lay themselves out again), so that what is checked is
  // what the student sees after that second
  if (window.lineareTidy) { window.lineareTidy(); await new Promise(done => setTimeout(done, 250)); }
  // a figure far from the screen is not painted (the player pauses it until it is scrolled near): painted now, as
  // it will be then, for the check, and paused again after it
  const plots = window.Bokeh && Bokeh.index && Bokeh.index.query ?
    Array.from(Bokeh.index.query(v => v.renderer_views !== undefined && v.el && "toolbar" in v.model.properties)) : [];
  const held = new Map();
  for (const view of plots) {
    let times = 0;
    while (view.is_paused) { view.unpause(true); times++; }
    if (times) { held.set(view, times); view.repaint(); }
  }
  // read at the top of the page's scrolling area: what is below it is read where scrolling brings it
  const scroller = document.getElementById("main"), scrolled_to = scroller ? scroller.scrollTop : 0;
  if (scroller) { scroller.scrollTop = 0; }
  const up = (node) => node.parentNode instanceof ShadowRoot ? node.parentNode.host : node.parentNode;
  const holds = (a, b) => { for (let n = b; n; n = up(n)) { if (n === a) return true; } return false; };
  const all = [];
  const walk = (root) => {
    for (const el of root.querySelectorAll("*")) { all.push(el); if (el.shadowRoot) walk(el.shadowRoot); }
  };
  walk(document);
  const seen = (el) => el.checkVisibility({opacityProperty: true, visibilityProperty: true});
  // the part of a box that can be seen: cut by every clipping box around it. What a box cuts off sideways is not
  // seen; what is below or above a scrolling box is, once scrolled to (so clipping boxes outside it cut nothing
  // up and down). `region(n)`: where n lets its descendants be seen (null: nowhere), once per element
  const regions = new Map(), clips = (o) => o === "hidden" || o === "clip";
  const region = (n) => {
    if (!n || n.nodeType !== 1) return {left: -Infinity, top: -Infinity, right: Infinity, bottom: Infinity};
    if (regions.has(n)) return regions.get(n);
    const style = getComputedStyle(n), outer = region(up(n));
    let found = null;
    if (outer && style.clipPath === "none" && !(style.clip !== "auto" && style.position === "absolute")) {
      const c = n.getBoundingClientRect(), scrolls = style.overflowY === "auto" || style.overflowY === "scroll";
      found = {...outer};
      if (style.overflowX !== "visible") {
        found.left = Math.max(found.left, c.left); found.right = Math.min(found.right, c.right);
      }
      if (scrolls) {
        found.top = -Infinity; found.bottom = Infinity;
      } else if (clips(style.overflowY)) {
        found.top = Math.max(found.top, c.top); found.bottom = Math.min(found.bottom, c.bottom);
      }
    }
    regions.set(n, found);
    return found;
  };
  const clipped = (el, r) => {
    const outer = region(up(el));
    if (!outer) return null;
    const box = {left: Math.max(r.left, outer.left), top: Math.max(r.top, outer.top),
                 right: Math.min(r.right, outer.right), bottom: Math.min(r.bottom, outer.bottom)};
    return box.right - box.left > 1 && box.bottom - box.top > 1 && box.bottom > 0 && box.right > 0 ? box : null;
  };
  const items = [];
  const add = (kind, el, r, what) => { const box = clipped(el, r); if (box) items.push({kind, el, box, what}); };
  const CONTROLS = "button, input:not([type=hidden]), select, textarea, a[href], [role=slider], .noUi-handle";
  const SKIP = new Set(["STYLE", "SCRIPT", "NOSCRIPT", "TEMPLATE", "OPTION", "TITLE"]);
  const targets = [];
  // text kept for a screen reader only: a box of 1 px that clips it (a live region)
  const spoken = (el) => {
    const style = getComputedStyle(el);
    return style.position === "absolute" && (style.clip !== "auto" || style.clipPath !== "none") &&
           el.getBoundingClientRect().width <= 1;
  };
  for (const el of all) {
    if (SKIP.has(el.tagName) || !seen(el) || spoken(el)) continue;
    // a formula is one block of text: its accents, sub- and superscripts sit over its letters by design
    if (el.tagName.toLowerCase() === "math") { add("text", el, el.getBoundingClientRect(), "formula"); continue; }
    if (el.closest("math")) continue;
    for (const node of el.childNodes) {                      // text: each line of each text node
      if (node.nodeType !== 3 || !node.textContent.trim()) continue;
      const range = document.createRange(); range.selectNodeContents(node);
      for (const r of range.getClientRects()) add("text", el, r, node.textContent.trim().slice(0, 40));
    }
    const r = el.getBoundingClientRect();
    if (el.matches(CONTROLS) && !el.matches(".bk-events")) {        // a picture's event layer: the picture
      const what = (el.getAttribute("aria-label") || el.textContent || el.tagName).trim().slice(0, 40);
      add("control", el, r, what);
      // a link within running text is exempt from the target size (WCAG 2.5.8); Bokeh's spinner arrows are out
      // of the tab order (the box's own arrow keys and typing do the same), but a finger still taps them
      const inline = el.tagName === "A" && getComputedStyle(el).display === "inline";
      const tapped = el.tabIndex >= 0 || el.matches(".bk-spin-btn");
      if (!inline && tapped && clipped(el, r)) targets.push({what, w: r.width, h: r.height});
    }
    // a figure is one picture (its canvases, layers of one drawing, are inside it)
    const layer = el.tagName === "CANVAS" && el.getRootNode() !== document;
    if (!layer && el.matches(".bk-Figure, img, svg:not(svg svg):not(button svg), canvas")) {
      add("picture", el, r, el.getAttribute("aria-label") ? el.getAttribute("aria-label").split(". ")[0] : el.tagName);
    }
  }
  // a Bokeh figure's titles are drawn on its canvas: their boxes, in the page's pixels
  const cut = [], wide = [];
  for (const view of plots) {
    if (!seen(view.el) || !view.canvas_view) continue;
    // the figure's box may be shown smaller (CSS zoom); its canvas may be narrower than the box (cut off there)
    const host = view.el.getBoundingClientRect(), scale = host.width / view.el.offsetWidth;
    const drawn = view.canvas_view.bbox.width;
    if (drawn > view.el.offsetWidth + 1) cut.push(`${view.model.title ? view.model.title.text : "a picture"}: drawn ` +
                                                  `${Math.round(drawn)} px wide in a ${view.el.offsetWidth} px box`);
    for (const model of [view.model.title, ...(view.model.above || [])]) {     // the title, and lines under it
      const title = model && view.renderer_views.get(model), rect = title && title._rect;
      if (!rect || !model.text || !rect.width || !model.visible) continue;      // a hidden title is not drawn
      const start = rect.sx - rect.anchor.x * rect.width;
      if (start < -1 || start + rect.width > drawn + 1) {
        wide.push(`title «${model.text}» spans ${Math.round(start)}…${Math.round(start + rect.width)} px of a ` +
                  `${Math.round(drawn)}-px canvas`);
      }
      const left = host.left + (rect.sx - rect.anchor.x * rect.width) * scale;
      const top = host.top + (rect.sy - rect.anchor.y * rect.height) * scale;
      add("title", view.canvas_view.el,
          {left, top, right: host.left + Math.min(rect.sx - rect.anchor.x * rect.width + rect.width, drawn) * scale,
           bottom: top + rect.height * scale}, model.text);
    }
    for (const legend of ["below", "above"].flatMap(side => view.model[side] || [])) {    // a legend under it
      const box = legend.type === "Legend" && view.renderer_views.get(legend).bbox;
      if (box && box.width > 0 && legend.visible && (box.left < -1 || box.right > drawn + 1)) {
        wide.push(`a legend spans ${Math.round(box.left)}…${Math.round(box.right)} px of a ${Math.round(drawn)}-px ` +
                  `canvas («${view.model.title ? view.model.title.text : ""}»)`);
      }
    }
    // an axis's name, centred along its axis (Bokeh's own measure of its text; across the axis it is the axis's
    // outer part)
    const axes = ["below", "above", "left", "right"].flatMap(side => view.model[side] || []);
    for (const axis of axes) {
      const drawnAxis = view.renderer_views.get(axis), name = drawnAxis && drawnAxis._axis_label_view;
      // a categorical axis's names (the models of a row, the words of a table): every one drawn (a labelling policy
      // that leaves out those that would touch left four of nine models unnamed on a phone), none running into the
      // next; placed and measured as Bokeh places them (CategoricalAxisView._get_factor_info, _draw_oriented_labels)
      if (drawnAxis && axis.visible && /Categorical/.test(axis.type) && drawnAxis._get_factor_info) {
        const [labels, coords, orient, visuals] = drawnAxis._get_factor_info()[0];
        const [sxs, sys] = drawnAxis.scoords(coords);
        const {vertical_align, align} = drawnAxis.panel.get_label_text_heuristics(orient);
        labels.visuals = visuals.values();
        labels.angle = drawnAxis.panel.get_label_angle_heuristic(orient);
        labels.base_font_size = drawnAxis.plot_view.base_font_size;
        labels.items.forEach((label, i) => {
          label.position = {sx: sxs[i], sy: sys[i], x_anchor: align, y_anchor: vertical_align};
        });
        const boxes = labels.items.map(label => label.bbox()), along = drawnAxis.dimension;
        const start = (b) => along === 0 ? b.left : b.top, end = (b) => along === 0 ? b.right : b.bottom;
        const order = [...boxes.keys()].sort((i, j) => start(boxes[i]) - start(boxes[j]));
        const gaps = order.slice(1).map((j, k) => start(boxes[j]) - end(boxes[order[k]]));
        const policy = axis.major_label_policy;
        const least = policy && policy.type === "NoOverlap" ? policy.min_distance : null;
        let kept = boxes.length;
        if (least !== null) {                 // NoOverlap: a label closer than its distance to the last kept one goes
          kept = 0;
          for (let k = 0, last = null; k < order.length; k++) {
            if (last === null || start(boxes[order[k]]) - end(boxes[last]) >= least) { kept++; last = order[k]; }
          }
        }
        const title = view.model.title ? view.model.title.text : "";
        const what = `«${axis.axis_label || "a categorical axis"}» of «${title}»`;
        if (kept < boxes.length) {
          wide.push(`${what}: ${kept} of its ${boxes.length} names drawn`);
        } else if (gaps.length && Math.min(...gaps) < 0) {
          wide.push(`${what}: names run together (${Math.round(Math.min(...gaps))} px)`);
        }
      }
      // its tick labels, placed and measured as Bokeh draws them: a gap between neighbours
      if (drawnAxis && axis.visible && !/Categorical/.test(axis.type) && drawnAxis.tick_coords &&
          drawnAxis.tick_coords.major[0].length > 1) {
        const coords = drawnAxis.tick_coords.major, along = drawnAxis.dimension;
        const at = drawnAxis.scoords(coords)[along], labels = drawnAxis.compute_labels(coords[along]);
        labels.visuals = drawnAxis.visuals.major_label_text.values();
        const sizes = labels.items.map(l => along === 0 ? l.size().width : l.size().height);
        const order = [...at.keys()].sort((i, j) => at[i] - at[j]);
        const gaps = order.slice(1).map((j, k) => at[j] - at[order[k]] - (sizes[j] + sizes[order[k]]) / 2);
        // named ticks (a table's words, a map's questions): a labelling policy that leaves out those that would come
        // closer than its distance drops words a reader must find
        const named = axis.major_label_overrides && axis.major_label_overrides.size > 0 &&
                      axis.ticker && axis.ticker.type === "FixedTicker";
        const policy = axis.major_label_policy, least = policy && policy.type === "NoOverlap" ? policy.min_distance : 0;
        if (Math.min(...gaps) < 0) {      // overlapping (the softmax table's words sit 1 px apart, presenter)
          wide.push(`tick labels of «${axis.axis_label || "an axis"}» run together (${Math.round(Math.min(...gaps))} ` +
                    `px apart, «${view.model.title ? view.model.title.text : ""}»)`);
        } else if (named && Math.min(...gaps) < least) {
          wide.push(`named ticks of «${axis.axis_label || "an axis"}» ${Math.round(Math.min(...gaps))} px apart: ` +
                    `some left out («${view.model.title ? view.model.title.text : ""}»)`);
        }
      }
      if (!name || !axis.visible || !drawnAxis.bbox || typeof axis.axis_label !== "string") continue;
      if (!axis.axis_label) continue;
      const lines = axis.axis_label.split("\\n").length;     // as shown: the page's script wraps it at spaces
      if (lines > 2) wide.push(`axis name «${axis.axis_label.replace(/\\n/g, " ")}» on ${lines} lines, over two`);
      const text = name.graphics();
      text.visuals = drawnAxis.visuals.axis_label_text.values();
      text.angle = 0;
      const length = text.size().width, b = drawnAxis.bbox, outer = drawnAxis.extents.axis_label;
      const flat = drawnAxis.panel.side === "below" || drawnAxis.panel.side === "above";
      const middle = flat ? b.hcenter : b.vcenter, room = flat ? drawn : view.canvas_view.bbox.height;
      if (middle - length / 2 < -1 || middle + length / 2 > room + 1) {
        wide.push(`axis name «${axis.axis_label}» is ${Math.round(length)} px long, on a ${Math.round(room)}-px ` +
                  `side of its picture`);
      }
      const box = flat ? {left: middle - length / 2, right: middle + length / 2,
                          top: drawnAxis.panel.side === "below" ? b.bottom - outer : b.top, bottom: 0}
                       : {top: middle - length / 2, bottom: middle + length / 2,
                          left: drawnAxis.panel.side === "left" ? b.left : b.right - outer, right: 0};
      if (flat) box.bottom = box.top + outer; else box.right = box.left + outer;
      add("axis name", view.canvas_view.el,
          {left: host.left + box.left * scale, right: host.left + box.right * scale,
           top: host.top + box.top * scale, bottom: host.top + box.bottom * scale}, axis.axis_label);
    }
  }
  // a Bokeh spinner's arrows are drawn inside its input box, by design (its own widget, one shadow root)
  const arrows = (a, b) => a.tagName === "INPUT" && b.matches(".bk-spin-btn") && a.getRootNode() === b.getRootNode();
  const overlaps = [];
  for (let i = 0; i < items.length; i++) {
    for (let j = i + 1; j < items.length; j++) {
      const a = items[i], b = items[j];
      // (two axis names are drawn on one canvas: the one element that holds both)
      const names = a.kind === "axis name" && b.kind === "axis name";
      const same = a.el === b.el, nested = !same && (holds(a.el, b.el) || holds(b.el, a.el));
      if ((same && !names) || nested || arrows(a.el, b.el) || arrows(b.el, a.el)) continue;
      const w = Math.min(a.box.right, b.box.right) - Math.max(a.box.left, b.box.left);
      const h = Math.min(a.box.bottom, b.box.bottom) - Math.max(a.box.top, b.box.top);
      // a line of text's box is its glyphs' whole extent (a tight line height, a superscript reach past the
      // ink): 3 px of slack where text is one of the two
      // the two names of a picture's axes keep 12 px apart: at a map's corner, 8 px apart, they read as one
      const slack = names ? -12 : a.kind === "text" || b.kind === "text" ? 3 : 1;
      if (w > slack && h > slack) {
        overlaps.push(`${a.kind} «${a.what}» and ${b.kind} «${b.what}» overlap by ${Math.round(w)}×${Math.round(h)}`);
      }
    }
  }
  if (scroller) { scroller.scrollTop = scrolled_to; }
  for (const [view, times] of held) { for (let i = 0; i < times; i++) view.pause(); }
  const main = document.getElementById("main"), header = document.getElementById("header");
  return {sideways: {page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
                     main: main ? main.scrollWidth - main.clientWidth : 0},
          overlaps: [...new Set(overlaps)], targets, cut, wide, items: items.length,
          header: header ? header.getBoundingClientRect().height : 0, height: innerHeight};
}"""


def layout(page):
    """The layout facts of the loaded page (see LAYOUT_JS). The page's own pass that fits titles and numbers
    buttons runs every second: a problem seen once is read again after that second (a title the server had just
    changed, a figure laid out again after a wrap), and only what is still there counts."""
    facts = page.evaluate(LAYOUT_JS)
    if problems(facts):
        page.wait_for_timeout(1500)
        facts = page.evaluate(LAYOUT_JS)
    return facts


def problems(facts, smallest=24):
    """The facts that break the rules: sideways scroll, overlaps, pictures cut off, titles and axis names wider
    than their picture, controls under `smallest` px."""
    found = []
    if facts["sideways"]["page"] > 0 or facts["sideways"]["main"] > 1:
        found.append(f"scrolls sideways: {facts['sideways']}")
    found += facts["overlaps"]
    found += [f"cut off: {c}" for c in facts["cut"]]
    found += [f"wider than its picture: {w}" for w in facts["wide"]]
    found += [f"control «{t['what']}» is {t['w']:.0f}×{t['h']:.0f} px, under {smallest}" for t in facts["targets"]
              if t["w"] < smallest - 0.5 or t["h"] < smallest - 0.5]
    return found


# every shown table: whether it is wider than the box that shows it, and whether that box is a scrolling region
# a visitor can find and use (named, reachable by the keyboard); the height of its rows
TABLES_JS = r"""() => {
  const up = (node) => node.parentNode instanceof ShadowRoot ? node.parentNode.host : node.parentNode;
  const tables = [];
  const walk = (root) => {
    for (const el of root.querySelectorAll("*")) {
      if (el.tagName === "TABLE") tables.push(el);
      if (el.shadowRoot) walk(el.shadowRoot);
    }
  };
  walk(document);
  const seen = (el) => el.checkVisibility({opacityProperty: true, visibilityProperty: true});
  return tables.filter(seen).map((table) => {
    const width = table.getBoundingClientRect().width;
    // the nearest box around it that cuts or scrolls sideways (none: the window)
    let box = null;
    for (let n = up(table); n && n.nodeType === 1; n = up(n)) {
      if (getComputedStyle(n).overflowX !== "visible") { box = n; break; }
    }
    const room = box ? box.clientWidth : document.documentElement.clientWidth;
    const scrolls = !!box && ["auto", "scroll"].includes(getComputedStyle(box).overflowX);
    // words broken across lines inside a cell ("Attenzion|e"): a word's own characters on two lines
    const broken = [];
    for (const cell of table.querySelectorAll("td, th")) {
      const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        for (const found of node.textContent.matchAll(/[^\s\u00ad-]+/g)) {
          const range = document.createRange();
          range.setStart(node, found.index); range.setEnd(node, found.index + found[0].length);
          const tops = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
          if (tops.size > 1) broken.push(found[0]);
        }
      }
    }
    const caption = table.querySelector("caption, th");
    return {what: caption ? caption.textContent.trim().slice(0, 40) : "a table", width: Math.round(width),
            room, scrolls, region: !!box && box.getAttribute("role") === "region",
            name: box ? (box.getAttribute("aria-label") || "") : "", focusable: !!box && box.tabIndex >= 0, broken,
            rows: Array.from(table.rows).map((row) => Math.round(row.getBoundingClientRect().height))};
  });
}"""


def table_problems(page, tallest=120):
    """The shown tables of the loaded page that a phone cannot read: wider than their box where that box is not a
    scrolling region with a name that the keyboard reaches, with rows over `tallest` px (words wrapped a few
    to a line), or with words broken in the middle across two lines. Sentences, as `problems`."""
    found = []
    for table in page.evaluate(TABLES_JS):
        where = f"table «{table['what']}», {table['width']} px"
        if table["width"] > table["room"] + 1 and not (table["scrolls"] and table["region"] and table["name"]
                                                        and table["focusable"]):
            found.append(f"{where} wide in a {table['room']} px box that is not a named, focusable scrolling "
                         f"region: {table}")
        high = [h for h in table["rows"] if h > tallest]
        if high:
            found.append(f"{where}: rows {high} px high, over {tallest}")
        if table["broken"]:
            found.append(f"{where}: words broken across lines: {table['broken'][:5]}")
    return found
