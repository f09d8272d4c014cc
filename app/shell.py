"""The frame of every page: template, language and level switches, navigation, notices.

    pn.serve({"state": page("state")})      # page(slug) builds a fresh page for each session

What depends only on the page, its language and presenter mode — the header's buttons, the language switch, the
navigation, the sidebar's labels — is HTML in the page's template (`frame_html`), not Panel objects: a kept page's
HTML is keyed by exactly these (app/server/panel_setup.py), and the browser does the rest (app/js/page/frame.js:
the language switch and presenter mode reload the page with ?lang= or ?present= changed, keeping the rest of the
URL; a link to another laboratory keeps the level). The level switches in place, on the server: a widget.
"""
import html

import panel as pn

from lineare.app.classroom.projector import class_panel, page_reveal
from lineare.app.components.access import FOCUS, FRAME_CSS, VIEWPORT, PageFrame, accessible_widgets, every_part
from lineare.app.components.later import when_built
from lineare.app.components.presence import Presence
from lineare.app.components.text import TEXT_CSS
from lineare.app.dashboards import BY_SLUG, DASHBOARDS, Page
from lineare.app.i18n import _
from lineare.app.lessons import apply_setup, card_of, lesson_card
from lineare.app.session import Session

HEADER = "#1d4f7a"
ACCENT = "#f0b429"

# the frame's own HTML (frame_html): the sidebar's labels, language switch and navigation, the header's buttons
FRAME_HTML_CSS = """
.lineare-side { width: 100%; padding: 0 10px; font-size: calc(16px * var(--lineare-scale, 1)); }
.lineare-side-label { font-weight: bold; margin: 8px 0 4px 0; }
.lineare-languages { display: flex; width: 100%; margin-bottom: 4px; }
.lineare-languages .btn { flex: 1 1 0; font-size: inherit; }
.lineare-side nav a { display: block; padding: 6px 10px; margin: 2px 0; border-radius: 6px; color: #1d4f7a;
                      text-decoration: none; }
.lineare-side nav a:hover { background: #e6eef6; }
.lineare-side nav a[aria-current="page"] { background: #1d4f7a; color: white; font-weight: 600; }
.lineare-side nav .soon { font-size: 13px; color: #616e7c; margin-left: 4px; }
.lineare-side nav a[aria-current="page"] .soon { color: #d9e2ec; }
.lineare-header-buttons { display: flex; gap: 12px; margin: 0 8px 0 auto; }
.lineare-header-buttons .btn { font-size: calc(16px * var(--lineare-scale, 1)); white-space: nowrap; }
""" + f"""
/* the browser's thin ring is hard to see: the page's double ring on the links and buttons of the frame */
.lineare-side nav a:focus-visible, .lineare-side .btn:focus-visible, .lineare-header-buttons .btn:focus-visible {{
  {FOCUS} }}
"""
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
PRESENTER_SCALE = 1.25          # presenter mode's type, and the pictures' widths with it (PRESENT_CSS, `grown`)
PRESENTER_TALLER = 1.1          # and their heights
PRESENT_CSS = SHELL_CSS + """
:root { --lineare-scale: 1.25; }
html:root { --sidebar-width: 425px; }     /* over the template's own :root, which comes later */
"""
LANGUAGE_NAMES = {"it": "Italiano", "en": "English"}     # each in its own language: not translated


def serve(slug=None):
    """Build the page of `slug` (None: the landing page) for this session and hand it to the server: what each of
    app/pages/*.py runs. Bokeh walks a document's whole model graph again after each change that may add a model (a
    root, a list of children); frozen here, it walks once, at the end of the build (its public `freeze()`)."""
    with pn.state.curdoc.models.freeze():
        page(slug)().servable()


def page(slug=None):
    """The page factory for `slug` (None: the landing page); called once per browser session."""
    def build():
        session = Session.start()
        if slug is None:
            from lineare.app.dashboards.home import build as build_home
            content = build_home(session)
        else:
            dashboard = BY_SLUG[slug]
            found = card_of(session) if session.lesson == slug else None
            if found is not None:
                apply_setup(pn.state.session_args, found[2])      # the card opens on its own settings
            content = dashboard.build(session) if dashboard.build else coming_soon(dashboard)
            card = lesson_card(session, session.stores.get(slug), content.main) if found is not None else None
            # a live class's panel: Reveal runs the card's action on the page, as a student's acting would
            live = class_panel(session, *found, session.stores.get(slug), content.main,
                               page_reveal(card, found[2])) if found is not None else None
            if live is not None:         # the card holds the button that starts a class (its panel is hidden till then)
                card.words = {**card.words, "class_start": live.words["start"], "class_hint": live.words["start_hint"]}
            return shell(session, slug, content, card, live)
        return shell(session, slug, content)
    return build


def shell(session, slug, content: Page, card=None, live=None):
    """The template around `content`; a lesson's `card` goes above the page's main area, and the panel of a live
    class (`live`: a lesson card's page in presenter mode) at its right edge."""
    title = _("Lineare")
    if slug is not None:
        title = f"{title} · {_(BY_SLUG[slug].title)}"
    # no busy indicator: Panel keeps one "busy" flag for the whole process and sets it on every open
    # page's spinner at each callback, so each knob move would send a message to every other visitor
    template = pn.template.BootstrapTemplate(title=title, header_background=HEADER, sidebar_width=340,
                                             collapsed_sidebar=session.present, busy_indicator=None,
                                             meta_viewport=VIEWPORT)
    template.template = PageFrame.of(template.template, session.language, frame_html(session, slug))
    template.config.raw_css.extend([PRESENT_CSS if session.present else SHELL_CSS, FRAME_CSS, FRAME_HTML_CSS])
    level = pn.widgets.RadioButtonGroup.from_param(
        session.param.level, options={_("Elementare"): "elementare", _("Superiore"): "superiore"},
        name=_("Level"), color="primary", variant="outline", sizing_mode="stretch_width")
    sidebar = [level]              # below the frame's language switch, navigation and the level's label
    if content.controls:
        sidebar += [pn.layout.Divider(), *content.controls]
    # one root, not one per widget: the template's conversion pays per root (about 15 % of a page)
    template.sidebar.append(pn.Column(*sidebar, sizing_mode="stretch_width", margin=0))
    # the card in the same column as the page, not in one of its own: Bokeh lays out a figure inside a
    # FlexBox only when at most two laid-out columns hold it (a third left every picture of
    # "Where memory fails" at zero size)
    main = pn.Column(notices(session), *([card] if card is not None else []), content.main,
                     Presence(height=0, width=0, margin=0), *([live] if live is not None else []),
                     sizing_mode="stretch_width")
    template.main.append(main)
    without_doc_tooltips(session, [level, *content.controls, main])
    accessible_widgets([level, *content.controls, main])
    if session.present:
        grown([main])
    when_built(pn.state.curdoc, lambda section: (without_doc_tooltips(session, [section]),
                                                 accessible_widgets([section]),
                                                 grown([section]) if session.present else None))
    return template


def frame_html(session, slug):
    """{place in Panel's template: HTML} of what depends only on the page, its language and presenter mode: the
    header's buttons (presenter mode on or off, full screen), and at the sidebar's top the language switch, the
    navigation and the level's label (app/js/page/frame.js makes them work)."""
    present = _("Leave presenter mode") if session.present else _("Presenter mode")
    full_screen, language, laboratories, level = _("Full screen"), _("Language"), _("Laboratories"), _("Level")
    header = (f'<div class="lineare-header-buttons"><button type="button" class="btn btn-outline-light" '
              f'data-lineare-present="{0 if session.present else 1}">{html.escape(present)}</button>'
              f'<button type="button" class="btn btn-outline-light" data-lineare-full-screen>'
              f'{html.escape(full_screen)}</button></div>')
    languages = "".join(
        f'<button type="button" class="btn {"btn-primary" if code == session.language else "btn-outline-primary"}" '
        f'lang="{code}" data-lineare-lang="{code}" aria-pressed="{str(code == session.language).lower()}">'
        f'{html.escape(name)}</button>' for code, name in LANGUAGE_NAMES.items())
    side = (f'<div class="lineare-side"><p class="lineare-side-label" id="lineare-language-label">'
            f'{html.escape(language)}</p><div class="lineare-languages btn-group" role="group" '
            f'aria-labelledby="lineare-language-label">{languages}</div>'
            f'<p class="lineare-side-label" id="lineare-laboratories-label">{html.escape(laboratories)}</p>'
            f'{navigation(session, slug)}<p class="lineare-side-label">{html.escape(level)}</p></div>')
    return {"header": header, "sidebar": side}


def grown(parts, wider=PRESENTER_SCALE, taller=PRESENTER_TALLER):
    """Presenter mode: every fixed width of the page's parts as much larger as its type (its pictures, and the
    columns and texts laid out beside them), so that a picture's words still fit it and the pictures use the width
    the folded sidebar leaves; heights a little larger (a picture a lesson card asks about, under the card, still
    fits a projector's 768 px)."""
    from bokeh.models import Legend, Plot

    scale = {"width": wider, "min_width": wider, "max_width": wider, "height": taller}
    # a picture with a legend of one column under it (its labels wrap into lines as much larger as the type): as
    # much taller, or the legend's lines take the room of the curves
    listed = {**scale, "height": wider}
    for part in every_part(parts):
        figure = part.object if isinstance(part, pn.pane.Bokeh) else None
        for owner in (part, figure) if isinstance(figure, Plot) else (part,):
            one_column = isinstance(owner, Plot) and any(legend.ncols == 1 for legend in owner.below
                                                         if isinstance(legend, Legend))
            times_of = listed if one_column else scale
            sizes = {name: round(getattr(owner, name) * times) for name, times in times_of.items()
                     if isinstance(getattr(owner, name, None), (int, float)) and getattr(owner, name) > 0}
            if sizes:
                owner.update(**sizes) if isinstance(owner, Plot) else owner.param.update(**sizes)


def without_doc_tooltips(session, parts):
    """`from_param` turns a parameter's doc (a note for developers, in English) into a "?" tooltip:
    drop those, anywhere on the page, and keep the tooltips a dashboard wrote itself (translated)."""
    from lineare.app.components.player import Player

    docs = {p.doc for owner in (session, Player, *session.stores.values())
            for p in owner.param.objects().values() if p.doc}
    for widget in every_part(parts):
        if isinstance(widget, pn.widgets.Widget) and getattr(widget, "description", None) in docs:
            widget.description = None


def navigation(session, current):
    """The links to every laboratory, in the frame's language and presenter mode; the level the visitor has chosen
    goes along when one is followed (app/js/page/frame.js): the frame is the same for every level."""
    query = f"?lang={session.language}" + ("&present=1" if session.present else "")
    items = [("./" + query, _("Home"), current is None, False)]
    for dashboard in DASHBOARDS:
        items.append((f"./{dashboard.slug}{query}", _(dashboard.title), current == dashboard.slug,
                      dashboard.build is None))
    links = []
    for href, text, is_current, soon in items:
        mark = ' aria-current="page"' if is_current else ""
        badge = '<span class="soon">(%s)</span>' % html.escape(_("coming soon")) if soon else ""
        links.append(f'<a href="{html.escape(href)}"{mark}>{html.escape(text)}{badge}</a>')
    return '<nav aria-labelledby="lineare-laboratories-label">' + "".join(links) + "</nav>"


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
