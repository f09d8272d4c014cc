"""The landing page: what Lineare is, and two sentences for each dashboard."""
import html

import panel as pn

from app.components.text import TEXT_CSS
from app.dashboards import DASHBOARDS, Page
from app.i18n import _

CARD_CSS = """
:host { width: 100%; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(320px, 1fr)); gap: 16px; }
.card { border: 1px solid #d9e2ec; border-radius: 10px; padding: 14px 18px; background: #fbfcfe; }
.card h2 { font-size: 21px; margin: 0 0 8px 0; }
.card h2 a { color: #1d4f7a; text-decoration: none; }
.card p { font-size: 16px; line-height: 1.45; margin: 0; color: #323f4b; }
.card .soon { font-size: 13px; color: #7b8794; font-weight: normal; margin-left: 6px; }
h1 { font-size: 32px; margin: 4px 0 6px 0; color: #102a43; }
.lead { font-size: 19px; line-height: 1.5; max-width: 960px; color: #243b53; margin-bottom: 18px; }
"""


def build(session):
    query = f"?lang={session.language}&level={session.level}"
    cards = []
    for dashboard in DASHBOARDS:
        title = html.escape(_(dashboard.title))
        soon = '<span class="soon">(%s)</span>' % html.escape(_("coming soon")) if dashboard.build is None else ""
        cards.append(f'<div class="card"><h2><a href="./{dashboard.slug}{query}">{title}</a>{soon}</h2>'
                     f"<p>{html.escape(_(dashboard.summary))}</p></div>")
    heading = html.escape(_("Lineare"))
    lead = html.escape(_("A laboratory for the linear-attention family: models that keep a fixed-size "
                         "memory instead of every past token. Each dashboard shows one idea, token by "
                         "token, in pictures you can play, pause and step through."))
    text = f'<h1>{heading}</h1><p class="lead">{lead}</p><div class="cards">{"".join(cards)}</div>'
    return Page(main=pn.pane.HTML(text, stylesheets=[TEXT_CSS, CARD_CSS], sizing_mode="stretch_width"))
