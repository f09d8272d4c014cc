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

from app.i18n import _

VIEWPORT = "width=device-width, initial-scale=1"
NARROW = 900            # below this many CSS pixels the sidebar is a drawer over the page, closed when it opens

# focus ring: a dark blue and white double ring shows on white (≥ 3:1 both) and on the blue header and buttons
FOCUS = "outline: 3px solid #102a43 !important; outline-offset: 2px; box-shadow: 0 0 0 5px #ffffff !important;"

FRAME_CSS = f"""
html {{ font-size: 16px; }}
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
  #header {{ flex-wrap: wrap; padding-top: 2px; padding-bottom: 2px; }}
  #header .title {{ font-size: 18px; }}
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
  // a picture wider than the column is shown smaller, whole (a square heat map stays square), never cut off
  // or scrolled sideways: Bokeh draws at its fixed size, CSS zoom scales what it drew
  function fit() {
    var main = document.getElementById("main"), index = window.Bokeh && window.Bokeh.index;
    var room = main ? main.clientWidth - 34 : 0;
    if (!index || !index.query || room <= 0) { return; }
    Array.from(index.query(function (v) { return v.renderer_views !== undefined && v.el; })).forEach(function (view) {
      var width = view.model.width || 0, zoom = width > room ? String(Math.floor(room / width * 1000) / 1000) : "";
      if (view.el.style.zoom !== zoom) { view.el.style.zoom = zoom; }
    });
    // a text or a table of fixed width wider than the column: its lines wrap within the column instead
    Array.from(index.query(function (v) {
      return v.el && v.renderer_views === undefined && v.model.properties && "sizing_mode" in v.model.properties;
    })).forEach(function (view) {
      var wide = Math.max(view.model.width || 0, view.model.min_width || 0) > room, cap = wide ? "100%" : "";
      if (view.el.style.maxWidth !== cap) { view.el.style.maxWidth = cap; view.el.style.minWidth = wide ? "0" : ""; }
      var shadow = view.el.shadowRoot, table = shadow && shadow.querySelector("table");
      if (table && view.el.style.overflowX !== "auto" && table.offsetWidth > view.el.clientWidth + 1) {
        view.el.style.overflowX = "auto";           // a wide table scrolls in its own box, not the page
      }
    });
  }
  // names Bokeh's widgets do not give: a spinner's arrow buttons, a slider's handle (its title; a discrete
  // slider's is in the text above it), a picture (its title); in the page's language
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
        if (handle.hasAttribute("aria-label")) { return; }
        var above = view.el.previousElementSibling, label = title;
        if (!label && above) { label = above.textContent.split(":")[0].trim(); }
        if (label) { handle.setAttribute("aria-label", label); }
      });
      if (view.renderer_views !== undefined && !view.el.hasAttribute("role")) {
        var text = view.model.title && view.model.title.text ? view.model.title.text : words.picture;
        view.el.setAttribute("role", "img");
        view.el.setAttribute("aria-label", text);
      }
    });
  }
  function tidy() { fit(); name(); }
  window.addEventListener("resize", fit);
  setInterval(tidy, 1000);           // pictures and widgets come and go with the page's knobs

  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && narrow.matches && sidebar.classList.contains("show")) { close(); toggle.focus(); }
  });
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
    words = json.dumps({"up": _("Increase"), "down": _("Decrease"), "picture": _("Picture")})
    words = words.replace("<", "\\u003c")
    return [
        ('<html lang="en"', f'<html lang={json.dumps(language)}'),
        ('aria-label="Toggle sidebar"', f'aria-label="{toggle}"'),
        ('aria-label="Close"', f'aria-label="{close}"'),
        ("<body>", f'<body>\n<a class="lineare-skip" href="#main">{skip}</a>'),
        ('<div class="col mh-100 float-left" id="main">',
         _DRAWER_SCRIPT.replace("NARROW", str(NARROW - 0.02)).replace("WORDS", words)
         + '\n<div class="col mh-100 float-left" id="main" tabindex="-1" role="main">'),
    ]


# a visible focus on every widget, the selected button of a group included (Bokeh's own is a faint halo)
WIDGET_FOCUS_CSS = f"""
.bk-btn:focus-visible, .bk-btn.bk-active:focus-visible, .bk-input:focus-visible, select:focus-visible,
.noUi-handle:focus-visible, input:focus-visible {{ {FOCUS} z-index: 2; }}
.noUi-handle {{ min-width: 24px; min-height: 24px; }}
"""


def accessible_widgets(parts):
    """Every widget among `parts` gets a visible focus ring; a discrete slider's handle tells the value it
    shows (1024), not the index of its notch (7)."""
    from bokeh.models import CustomJSTickFormatter
    import panel as pn

    for widget in pn.Column(*parts).select(pn.widgets.Widget):
        if WIDGET_FOCUS_CSS not in widget.stylesheets:
            widget.stylesheets = [*widget.stylesheets, WIDGET_FOCUS_CSS]
        if isinstance(widget, pn.widgets.DiscreteSlider):
            _speak_labels(widget, CustomJSTickFormatter)
            widget.param.watch(lambda event: _speak_labels(event.obj, CustomJSTickFormatter), "options")


def _speak_labels(slider, formatter):
    inner = getattr(slider, "_slider", None)
    if inner is not None:
        inner.format = formatter(args={"labels": list(slider.labels)},
                                 code="return labels[Math.round(tick)] ?? String(tick)")
