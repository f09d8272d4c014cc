"""The frame of every page: template, language and level switches, navigation, notices.

    pn.serve({"state": page("state")})      # page(slug) builds a fresh page for each session

Language switches reload the page with ?lang= changed (every string is drawn in the new language,
and the rest of the view comes back from the URL); the level switches in place.
"""
import html

import panel as pn

from app.components.browser import callback
from app.components.access import FOCUS, FRAME_CSS, VIEWPORT, PageFrame, accessible_widgets
from app.components.later import when_built
from app.components.presence import Presence
from app.components.text import TEXT_CSS
from app.dashboards import BY_SLUG, DASHBOARDS, Page
from app.i18n import _
from app.lessons import apply_setup, card_of, lesson_card
from app.session import Session

HEADER = "#1d4f7a"
ACCENT = "#f0b429"

NAV_CSS = """
:host { font-size: calc(16px * var(--lineare-scale, 1)); width: 100%; }
nav a { display: block; padding: 6px 10px; margin: 2px 0; border-radius: 6px; color: #1d4f7a;
        text-decoration: none; }
nav a:hover { background: #e6eef6; }
nav a[aria-current="page"] { background: #1d4f7a; color: white; font-weight: 600; }
nav .soon { font-size: 13px; color: #616e7c; margin-left: 4px; }
nav a[aria-current="page"] .soon { color: #d9e2ec; }
""" + f"nav a:focus-visible {{ {FOCUS} }}\n"
NOTICE_CSS = """
:host { width: 100%; }
div.notice { background: #fff8e1; border-left: 6px solid #f0b429; padding: 8px 12px; margin: 0 0 6px 0;
             font-size: calc(16px * var(--lineare-scale, 1)); color: #3e2c00; border-radius: 4px; }
"""
# the sidebar's toggle (☰) folds it away and gives its width back to the page
SHELL_CSS = """
#sidebar.collapse:not(.show) { display: none; }
"""
# presenter mode: the sidebar starts folded and the texts are a quarter larger (a projector at the back of a
# classroom; our stylesheets scale their type by --lineare-scale); the ☰ button still opens the sidebar, a
# quarter wider too (its 20 px choices fit)
PRESENT_CSS = SHELL_CSS + """
:root { --lineare-scale: 1.25; }
html:root { --sidebar-width: 425px; }     /* over the template's own :root, which comes later */
"""
LANGUAGE_NAMES = {"it": "Italiano", "en": "English"}     # each in its own language: not translated


def page(slug=None):
    """The page factory for `slug` (None: the landing page); called once per browser session."""
    def build():
        session = Session.start()
        if slug is None:
            from app.dashboards.home import build as build_home
            content = build_home(session)
        else:
            dashboard = BY_SLUG[slug]
            found = card_of(session) if session.lesson == slug else None
            if found is not None:
                apply_setup(pn.state.session_args, found[2])      # the card opens on its own settings
            content = dashboard.build(session) if dashboard.build else coming_soon(dashboard)
            card = lesson_card(session, session.stores.get(slug), content.main) if found is not None else None
            return shell(session, slug, content, card)
        return shell(session, slug, content)
    return build


def shell(session, slug, content: Page, card=None):
    """The template around `content`; a lesson's `card` goes above the page's main area."""
    title = _("Lineare")
    if slug is not None:
        title = f"{title} · {_(BY_SLUG[slug].title)}"
    # no busy indicator: Panel keeps one "busy" flag for the whole process and sets it on every open
    # page's spinner at each callback, so each knob move would send a message to every other visitor
    template = pn.template.BootstrapTemplate(title=title, header_background=HEADER, sidebar_width=340,
                                             collapsed_sidebar=session.present, busy_indicator=None,
                                             meta_viewport=VIEWPORT)
    template.template = PageFrame.of(template.template, session.language)
    template.config.raw_css.extend([PRESENT_CSS if session.present else SHELL_CSS, FRAME_CSS])
    header = presenter_buttons(session)
    template.header.append(header)
    codes = list(LANGUAGE_NAMES)
    language = pn.widgets.RadioButtonGroup(options=[LANGUAGE_NAMES[c] for c in codes],
                                           value=LANGUAGE_NAMES[session.language], label=_("Language"),
                                           color="primary", variant="outline",
                                           sizing_mode="stretch_width")
    language.jscallback(args={"codes": codes}, value=callback("reload_with_language"))
    level = pn.widgets.RadioButtonGroup.from_param(
        session.param.level, options={_("Elementare"): "elementare", _("Superiore"): "superiore"},
        name=_("Level"), color="primary", variant="outline", sizing_mode="stretch_width")
    nav = pn.pane.HTML(stylesheets=[NAV_CSS], sizing_mode="stretch_width", margin=(0, 5))

    def draw_nav(*_events):
        nav.object = navigation(session, slug)

    session.param.watch(draw_nav, "level")
    draw_nav()
    label = lambda text: pn.pane.HTML(f"<b>{html.escape(text)}</b>", margin=(8, 10, 0, 10),
                                      stylesheets=[":host { font-size: calc(16px * var(--lineare-scale, 1)); }"])
    sidebar = [label(_("Language")), language, label(_("Level")), level, label(_("Laboratories")), nav]
    without_doc_tooltips(session, [level])
    if content.controls:
        sidebar += [pn.layout.Divider(), *content.controls]
    # one root, not one per widget: the template's conversion pays per root (about 15 % of a page)
    template.sidebar.append(pn.Column(*sidebar, sizing_mode="stretch_width", margin=0))
    # the card in the same column as the page, not in one of its own: Bokeh lays out a figure inside a
    # FlexBox only when at most two laid-out columns hold it (a third left every picture of
    # "Where memory fails" at zero size)
    main = pn.Column(notices(session), *([card] if card is not None else []), content.main,
                     Presence(height=0, width=0, margin=0),
                     sizing_mode="stretch_width")
    template.main.append(main)
    without_doc_tooltips(session, [*content.controls, main])
    accessible_widgets([header, language, level, *content.controls, main])
    when_built(pn.state.curdoc, lambda section: (without_doc_tooltips(session, [section]),
                                                 accessible_widgets([section])))
    return template


def presenter_buttons(session):
    """Two header buttons that work in the browser alone: presenter mode on or off, and full screen."""
    words = _("Leave presenter mode") if session.present else _("Presenter mode")
    presenter = pn.widgets.Button(label=words, color="light", variant="outline", margin=(0, 6))
    presenter.js_on_click(args={"present": session.present}, code=callback("toggle_presenter"))
    full_screen = pn.widgets.Button(label=_("Full screen"), color="light", variant="outline",
                                    margin=(0, 6))
    full_screen.js_on_click(code=callback("toggle_full_screen"))
    return pn.Row(presenter, full_screen, margin=0)


def without_doc_tooltips(session, parts):
    """`from_param` turns a parameter's doc (a note for developers, in English) into a "?" tooltip:
    drop those, anywhere on the page, and keep the tooltips a dashboard wrote itself (translated)."""
    from app.components.player import Player

    docs = {p.doc for owner in (session, Player, *session.stores.values())
            for p in owner.param.objects().values() if p.doc}
    for widget in pn.Column(*parts).select(pn.widgets.Widget):
        if getattr(widget, "description", None) in docs:
            widget.description = None


def navigation(session, current):
    query = f"?lang={session.language}&level={session.level}" + ("&present=1" if session.present else "")
    items = [("./" + query, _("Home"), current is None, False)]
    for dashboard in DASHBOARDS:
        items.append((f"./{dashboard.slug}{query}", _(dashboard.title), current == dashboard.slug,
                      dashboard.build is None))
    links = []
    for href, text, is_current, soon in items:
        mark = ' aria-current="page"' if is_current else ""
        badge = '<span class="soon">(%s)</span>' % html.escape(_("coming soon")) if soon else ""
        links.append(f'<a href="{html.escape(href)}"{mark}>{html.escape(text)}{badge}</a>')
    name = html.escape(_("Laboratories"), quote=True)
    return f'<nav aria-label="{name}">' + "".join(links) + "</nav>"


def notices(session):
    """The session's notices (bad URL values, rejected input), as text: never as markup."""
    pane = pn.pane.HTML(stylesheets=[NOTICE_CSS], sizing_mode="stretch_width", margin=(0, 10))

    def draw(*_events):
        pane.object = "".join(f'<div class="notice" role="alert">{html.escape(message)}</div>'
                              for _source, message in session.notices)
        pane.visible = bool(session.notices)

    session.param.watch(draw, "notices")
    draw()
    return pane


def coming_soon(dashboard):
    title, summary = html.escape(_(dashboard.title)), html.escape(_(dashboard.summary))
    soon = html.escape(_("This laboratory is coming: it is not built yet."))
    text = f"<h1>{title}</h1><p>{summary}</p><p><em>{soon}</em></p>"
    return Page(main=pn.pane.HTML(text, stylesheets=[TEXT_CSS, ":host { max-width: 900px; }"],
                                  sizing_mode="stretch_width"))
