"""A lesson in one file: the page's title, its explanation, its run as frames and a player, in one
self-contained HTML file (Bokeh's standalone output with its JavaScript inline: no server, no network).

The frames are the PNG pictures of the export (the same as the GIF's, before its palette), embedded as
data URLs; the player (Bokeh buttons and a slider with CustomJS) swaps them in the browser, with the
step's caption under them. It plays in any browser, from a USB stick or an e-mail attachment.
"""
import base64
import html

from bokeh.embed import file_html
from bokeh.layouts import column, row
from bokeh.models import Button, CustomJS, Div, Slider, Toggle
from bokeh.resources import Resources
from PIL import Image

from lineare.app.components.browser import callback
from lineare.app.components.text import to_html
from lineare.app.i18n import _

class OwnScripts(Resources):
    """Bokeh's JavaScript inline and nothing else: the scripts other loaded libraries declare for their
    own models (Panel's module shims, as relative links) would be missing requests in a file on its own."""

    @property
    def js_files(self):
        return []

    @property
    def css_files(self):
        return []

    def clone(self, *, components=None):         # Bokeh clones it to drop the components a page leaves out
        return OwnScripts(mode="inline", components=components if components is not None else list(self.components))


STYLE = """<style>
body { font-family: "DejaVu Sans", sans-serif; color: #1f2933; margin: 16px; }
</style>"""

# the player's picture (its code: app/js/callbacks/lesson_*.js)
IMAGE = '<img src="{src}" alt="{alt}" style="width:100%;height:auto;display:block" data-frame="{t}">'


def data_url(image):
    from lineare.app.export.files import png_bytes

    return "data:image/png;base64," + base64.b64encode(png_bytes(Image.fromarray(image))).decode("ascii")


def lesson_html(page, images, fps, budget):
    """The HTML of a lesson of `page` whose frames are `images` ([H, W, 3] uint8 each), played at fps."""
    frames = []
    for image in images:
        frames.append(data_url(image))
        budget.tick()
    n = len(frames)
    captions = ["".join(f"<p>{html.escape(line)}</p>" for line in page.captions(t)) for t in range(n)]
    width = images[0].shape[1]
    heading = Div(text=f"<h1 style='margin:0'>{html.escape(page.title())}</h1>", width=width)
    text = page.explanation()
    explanation = Div(text=to_html(text) if text else "", width=width, styles={"font-size": "17px"})
    first = min(page.default_frame(), n - 1)          # drawn here; the player's code draws the others
    picture = Div(text=IMAGE.format(src=frames[first], alt=html.escape(page.title()), t=first), width=width,
                  height=images[0].shape[0])
    caption = Div(text=captions[first], width=width, styles={"font-size": "17px"})
    where = Div(text=html.escape(_("Step {t} of {n}").format(t=first + 1, n=n)),
                styles={"font-size": "15px", "color": "#52606d"})
    slider = Slider(start=0, end=max(n - 1, 1), value=first, step=1,
                    title=_("Step"), width=min(width, 420), disabled=n == 1, show_value=False)
    words = {"play": _("Play"), "pause": _("Pause")}
    toggle = Toggle(label="▶ " + words["play"], button_type="primary", width=140, disabled=n == 1)
    back = Button(label="◀ " + _("Back"), width=120)
    forward = Button(label=_("Forward") + " ▶", width=120)
    show = CustomJS(args=dict(slider=slider, picture=picture, caption=caption, where=where, frames=frames,
                              captions=captions, step_text=_("Step {t} of {n}"),
                              image=IMAGE.replace("{alt}", html.escape(page.title()))), code=callback("lesson_show"))
    slider.js_on_change("value", show)
    play, step = callback("lesson_play"), callback("lesson_step")
    toggle.js_on_change("active", CustomJS(args=dict(toggle=toggle, slider=slider, fps=fps, words=words), code=play))
    back.js_on_event("button_click", CustomJS(args=dict(toggle=toggle, slider=slider, delta=-1), code=step))
    forward.js_on_event("button_click", CustomJS(args=dict(toggle=toggle, slider=slider, delta=1), code=step))
    layout = column(heading, explanation, row(back, toggle, forward, slider, where), picture, caption)
    document = file_html(layout, resources=OwnScripts(mode="inline"), title=f"Lineare · {page.title()}")
    document = document.replace('<html lang="en">', f'<html lang="{page.language}">', 1)
    end = document.rfind("</head>")             # the last: Bokeh's inline scripts above may hold the text too
    return (document[:end] + STYLE + document[end:]).encode("utf-8")
