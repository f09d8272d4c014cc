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
  #main {{ padding: 8px 6px 16px 6px; }}
  #header {{ flex-wrap: wrap; padding-top: 2px; padding-bottom: 2px; }}
  #header .title {{ font-size: 18px; }}
}}
@media (prefers-reduced-motion: reduce) {{
  *, *::before, *::after {{ transition: none !important; animation: none !important; scroll-behavior: auto !important; }}
}}
"""

# on a narrow screen the drawer opens closed (the page is not covered); Escape closes it, and a link
# followed inside it closes it as the next page loads
_DRAWER_SCRIPT = """<script>
(function () {
  var sidebar = document.getElementById("sidebar"), toggle = document.getElementById("sidebar-toggle");
  if (!sidebar || !toggle) { return; }
  var narrow = window.matchMedia("(max-width: %(narrow)spx)");
  function close() { sidebar.classList.remove("show"); toggle.setAttribute("aria-expanded", "false"); }
  if (narrow.matches) { close(); }
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
    return [
        ('<html lang="en"', f'<html lang={json.dumps(language)}'),
        ('aria-label="Toggle sidebar"', f'aria-label="{toggle}"'),
        ('aria-label="Close"', f'aria-label="{close}"'),
        ("<body>", f'<body>\n<a class="lineare-skip" href="#main">{skip}</a>'),
        ('<div class="col mh-100 float-left" id="main">',
         _DRAWER_SCRIPT % {"narrow": NARROW - 0.02} + '\n<div class="col mh-100 float-left" id="main" '
         'tabindex="-1" role="main">'),
    ]
