// What a screen reader and a keyboard need from Bokeh's and Panel's widgets and pictures that they do not say
// themselves, kept in step with them (app/components/access.py):
// - a button group (Bokeh's RadioButtonGroup, CheckboxButtonGroup) is a named group of toggle buttons, each saying
//   whether it is pressed: Bokeh marks the chosen one only with its `bk-active` class. The group's name comes
//   from the server as the CSS custom property --lineare-name of the widget (accessible_widgets);
// - a Panel Card's header button says whether the card is open (aria-expanded);
// - a picture's event layer, which Bokeh puts in the Tab order for its tools' keys, leaves it (no tool of ours
//   uses a key); on a picture with a tap tool ("click one") it becomes a slider: the arrow keys pick the row
//   before or after, Home and End the first and last, and the row's hover text is its value.
// Run every second by the page's tidy pass, before each Tab, and at once when a group or a card changes. Settings:
// {words}.
(function () {
  var words = JSON.parse(document.getElementById("lineare-access-settings").textContent);
  var list = function (x) { return Array.isArray(x) ? x : []; };
  var hooked = new WeakSet();

  function groupName(view) {
    var raw = getComputedStyle(view.el).getPropertyValue("--lineare-name").trim();
    try { return raw ? JSON.parse(raw) : ""; } catch (error) { return ""; }
  }

  function setAttr(el, name, value) {
    if (el.getAttribute(name) !== value) { el.setAttribute(name, value); }
  }

  function group(view) {
    var buttons = list(view._buttons), box = buttons.length ? buttons[0].parentElement : null;
    if (!box) { return; }
    var active = view.model.active, name = groupName(view);
    setAttr(box, "role", "group");
    if (name) { setAttr(box, "aria-label", name); }
    buttons.forEach(function (button, i) {
      var on = Array.isArray(active) ? active.indexOf(i) >= 0 : active === i;
      setAttr(button, "aria-pressed", on ? "true" : "false");
    });
  }

  function card(view) {
    setAttr(view.button_el, "aria-expanded", view.model.collapsed ? "false" : "true");
  }

  // a row's words as its picture's hover shows them: "query 3, match 0.94"
  function rowText(figure, source, i) {
    var hover = list(figure.toolbar && figure.toolbar.tools).find(function (tool) { return tool.tooltips; });
    var data = source.data, parts = [];
    list(hover && hover.tooltips).forEach(function (pair) {
      var found = /^@\{?([A-Za-z_0-9]+)\}?/.exec(pair[1] || ""), column = found && data[found[1]];
      if (!column) { return; }
      var value = column[i];
      parts.push(pair[0] + " " + (typeof value === "number" ? write(value) : String(value)));
    });
    return parts.length ? parts.join(", ") : words.row.replace("{n}", i + 1);
  }
  function write(x) {
    return Number.isFinite(x) ? x.toLocaleString(words.locale, {maximumFractionDigits: 3}) : "—";
  }

  // the rows a tap picks: the first renderer of the figure that draws rows of its own (not a text's)
  function pickable(figure) {
    return list(figure.renderers).find(function (r) {
      var data = r.data_source && r.data_source.data, glyph = r.glyph;
      if (!data || !glyph || glyph.type === "Text" || !r.data_source.selected) { return false; }
      var first = Object.keys(data)[0];
      return first !== undefined && data[first].length > 0;
    });
  }
  function rows(source) {
    var first = Object.keys(source.data)[0];
    return first === undefined ? 0 : source.data[first].length;
  }

  function picker(view, events) {
    var figure = view.model, renderer = pickable(figure);
    if (!renderer) { setAttr(events, "aria-hidden", "true"); return; }
    var source = renderer.data_source, n = rows(source), at = list(source.selected.indices)[0];
    var title = window.lineareTitle ? window.lineareTitle(figure.title) : "";
    events.removeAttribute("aria-hidden");
    setAttr(events, "role", "slider");
    setAttr(events, "aria-label", (title || words.picture) + " · " + words.pick);
    setAttr(events, "aria-valuemin", "1");
    setAttr(events, "aria-valuemax", String(Math.max(n, 1)));
    setAttr(events, "aria-valuenow", String(at === undefined ? 0 : at + 1));
    setAttr(events, "aria-valuetext", at === undefined || at >= n ? words.none : rowText(figure, source, at));
    if (hooked.has(events)) { return; }
    hooked.add(events);
    events.addEventListener("keydown", function (event) {
      var source = pickable(view.model) && pickable(view.model).data_source;
      if (!source || event.ctrlKey || event.metaKey || event.altKey) { return; }
      var count = rows(source), now = list(source.selected.indices)[0], next;
      now = now === undefined ? -1 : now;
      var moves = {ArrowRight: now + 1, ArrowUp: now + 1, ArrowLeft: now - 1, ArrowDown: now - 1,
                   PageUp: now + 10, PageDown: now - 10, Home: 0, End: count - 1};
      if (!(event.key in moves) || !count) { return; }
      event.preventDefault();
      event.stopPropagation();                // the player's ← → step its run: not here
      next = Math.min(Math.max(moves[event.key], 0), count - 1);
      if (next !== now) { source.selected.indices = [next]; }    // sent to the server: what a tap does
      picker(view, events);
    });
    // its ring, inside the picture's edge (the layer is in the canvas's own shadow root, which no stylesheet of ours
    // reaches): dark on a white ring, as every control's
    var ring = {outline: "3px solid #102a43", outlineOffset: "-3px", boxShadow: "inset 0 0 0 6px #ffffff"};
    events.addEventListener("focus", function () { picker(view, events); Object.assign(events.style, ring); });
    events.addEventListener("blur", function () {
      Object.assign(events.style, {outline: "", outlineOffset: "", boxShadow: ""});
    });
  }

  function figure(view) {
    var events = view.canvas_view && view.canvas_view.events_el;
    if (!events) { return; }
    var tap = list(view.model.toolbar && view.model.toolbar.tools).some(function (tool) {
      return tool.type === "TapTool";
    });
    if (tap) { picker(view, events); return; }
    if (events.tabIndex !== -1) { events.tabIndex = -1; }
  }

  function pass() {
    var index = window.Bokeh && window.Bokeh.index;
    if (!index || !index.query) { return; }
    Array.from(index.query(function (v) { return v.el && v.model; })).forEach(function (view) {
      if (Array.isArray(view._buttons) && "active" in view.model.properties) {
        group(view);
        if (!hooked.has(view)) {
          hooked.add(view);            // after Bokeh's own handler: its buttons are new after a change of labels
          view.model.change.connect(function () { setTimeout(function () { group(view); }, 0); });
        }
      } else if (view.button_el && "collapsed" in view.model.properties) {
        card(view);
        if (!hooked.has(view)) {
          hooked.add(view);
          view.model.properties.collapsed.change.connect(function () { card(view); });
        }
      } else if (view.renderer_views !== undefined && "toolbar" in view.model.properties) {
        figure(view);
      }
    });
  }
  window.lineareAccess = pass;
  // before the Tab key moves the focus: a picture that has just come (a section made as the focus reached it) is out
  // of the Tab order already, not a second later
  document.addEventListener("keydown", function (event) { if (event.key === "Tab") { pass(); } }, true);
})();
