"""The landing page: what Lineare is, where to start, the chapter's words, and two sentences for each
dashboard."""
import html

import panel as pn

from lineare.app.components.text import TEXT_CSS, inline_html
from lineare.app.dashboards import DASHBOARDS, Page
from lineare.app.i18n import N_, _

CARD_CSS = """
:host { width: 100%; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(320px, 1fr)); gap: 16px; }
.card { border: 1px solid #d9e2ec; border-radius: 10px; padding: 14px 18px; background: #fbfcfe; }
.card h2 { font-size: 21px; margin: 0 0 8px 0; }
.card h2 a { color: #1d4f7a; text-decoration: none; }
.card p { font-size: 16px; line-height: 1.45; margin: 0; color: #323f4b; }
.card .soon { font-size: 13px; color: #616e7c; font-weight: normal; margin-left: 6px; }
h1 { font-size: 32px; margin: 4px 0 6px 0; color: #102a43; }
.lead { font-size: 19px; line-height: 1.5; max-width: 960px; color: #243b53; margin-bottom: 8px; }
.start { font-size: 18px; color: #243b53; margin: 0 0 10px 0; }
.start a { color: #1d4f7a; font-weight: 700; }
h2.section { font-size: 22px; color: #102a43; margin: 6px 0 6px 0; }
ol.lessons { font-size: 18px; margin: 0 0 12px 0; }
ol.lessons a { color: #1d4f7a; font-weight: 700; }
ol.lessons .count { color: #616e7c; font-size: 16px; margin-left: 6px; }
"""
# collapsed by default, so that the cards stay on the first screen
GLOSSARY_CSS = """
:host { width: 100%; }
details { border: 1px solid #d9e2ec; border-radius: 10px; background: #fbfcfe; padding: 6px 14px;
          margin: 0 0 14px 0; max-width: 960px; }
summary { cursor: pointer; font-size: 18px; font-weight: 700; color: #1d4f7a; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 8px 0 4px 0; }
dt { font-weight: 700; color: #102a43; }
dd { margin: 0; color: #323f4b; }
"""

# The chapter's words: (word, its meaning in plain words, the term with its symbol, its meaning with formulas).
# Elementare uses the chapter's word and names the technical term in brackets; Superiore the term.
GLOSSARY = (
    (N_("word (token)"), N_("a piece of text; the model reads one at a time."),
     N_("token $x_t$"), N_("position $t$ of the sequence, $t = 1, \\dots, T$.")),
    (N_("summary (state)"), N_("the small grid of numbers a linear-attention model keeps instead of the text; "
                               "it never grows."),
     N_("state $S_t$"), N_("$S_t \\in \\mathbb{R}^{d_v \\times d_k}$, fixed size, rewritten at every token: "
                           "$S_t = S_{t-1} A_t + W_t$.")),
    (N_("label (key)"), N_("what a word files its information under, like a name in a phone book."),
     N_("key $k_t$"), N_("$k_t \\in \\mathbb{R}^{d_k}$, a learned projection of the token.")),
    (N_("information (value)"), N_("what a word stores under its label, like the number next to the name."),
     N_("value $v_t$"), N_("$v_t \\in \\mathbb{R}^{d_v}$; the write is usually $W_t = v_t k_t^\\top$.")),
    (N_("question (query)"), N_("what a word asks; it is compared with the labels to find the information."),
     N_("query $q_t$"), N_("$q_t \\in \\mathbb{R}^{d_k}$; the read-out is $o_t = S_t q_t$.")),
    (N_("notebook of notes (KV cache)"), N_("what softmax attention keeps instead of a summary: the label and "
                                            "the information of every word read so far. It grows with every "
                                            "word."),
     N_("KV cache"), N_("$\\{(k_i, v_i)\\}_{i \\le t}$, kept by softmax attention: $O(t)$ memory per layer.")),
    (N_("softmax"), N_("turns the question's scores against every label into shares of one whole, like slices "
                       "of a pie: the label that fits best gets the biggest slice."),
     N_("softmax attention"), N_("$o_t = \\sum_{i \\le t} \\mathrm{softmax}_i(q_t^\\top k_i / \\sqrt{d_k})\\, v_i$.")),
    (N_("transition"), N_("what happens to the old summary at each word: kept, faded or corrected."),
     N_("transition $A_t$"), N_("right-multiplies $S_{t-1}$: $I$, $\\gamma I$, $\\alpha_t I$, "
                                "$\\mathrm{diag}(\\alpha_t)$, $I - \\beta_t k_t k_t^\\top$…")),
    (N_("gate"), N_("a number the model computes from each word to decide how much to forget or to write."),
     N_("gate"), N_("a data-dependent factor of the transition or the write: $\\alpha_t$, $\\beta_t$, $f_t$, "
                    "$i_t$.")),
    (N_("knob"), N_("on the transition knob page, turns one model into another: forget α, correct β."),
     N_("transition knob"), N_("$S_t = S_{t-1} D_t (I - \\beta k_t k_t^\\top) + v_t k_t^\\top$, with $D_t$ set "
                               "by α and the gate.")),
)


def glossary_html(superiore):
    """The glossary as a collapsed <details> block, in the words of the level."""
    rows = []
    for word, plain, term, formula in GLOSSARY:
        name, meaning = (term, formula) if superiore else (word, plain)
        rows.append(f"<dt>{inline_html(_(name))}</dt><dd>{inline_html(_(meaning))}</dd>")
    title = html.escape(_("The chapter's words (glossary)"))
    return f"<details><summary>{title}</summary><dl>{''.join(rows)}</dl></details>"


def build(session):
    query = f"?lang={session.language}&level={session.level}"
    cards = []
    for dashboard in DASHBOARDS:
        title = html.escape(_(dashboard.title))
        soon = '<span class="soon">(%s)</span>' % html.escape(_("coming soon")) if dashboard.build is None else ""
        cards.append(f'<div class="card"><h2><a href="./{dashboard.slug}{query}">{title}</a>{soon}</h2>'
                     f"<p>{html.escape(_(dashboard.summary))}</p></div>")
    heading = html.escape(_("Lineare"))
    lead = html.escape(_("A laboratory for the linear-attention family: models that keep a fixed-size summary "
                         "(a state) instead of a note of every word read (a KV cache). Each laboratory shows "
                         "one idea, word by word, in pictures you can play, pause and step through."))
    first = DASHBOARDS[0]
    start = html.escape(_("Where to start: {page}, then the laboratories in order; each one uses the words of "
                          "the one before.")).format(
        page=f'<a href="{html.escape("./" + first.slug + query)}">{html.escape(_(first.title))}</a>')
    top = pn.pane.HTML(f'<h1>{heading}</h1><p class="lead">{lead}</p><p class="start">{start}</p>',
                       stylesheets=[TEXT_CSS, CARD_CSS], sizing_mode="stretch_width", margin=(5, 10, 0, 10))
    glossary = pn.pane.HTML(stylesheets=[TEXT_CSS, GLOSSARY_CSS], sizing_mode="stretch_width", margin=(0, 10))

    def draw_glossary(*_events):
        glossary.object = glossary_html(session.level == "superiore")

    session.param.watch(draw_glossary, "level")
    draw_glossary()
    labs = html.escape(_("Laboratories, to explore freely"))
    grid = pn.pane.HTML(f'<h2 class="section">{labs}</h2><div class="cards">{"".join(cards)}</div>',
                        stylesheets=[TEXT_CSS, CARD_CSS], sizing_mode="stretch_width", margin=(0, 10))
    return Page(main=pn.Column(top, lessons_html(session), glossary, grid, sizing_mode="stretch_width"))


def lessons_html(session):
    """The lessons in the chapter's order: one link each to its first card."""
    from lineare.app.lessons import LESSONS, TITLES, link

    items = []
    for slug, cards in LESSONS.items():
        count = html.escape(_("{n} cards").format(n=len(cards)))
        items.append(f'<li><a href="{html.escape(link(slug, 1, session))}">{html.escape(_(TITLES[slug]))}</a> '
                     f'<span class="count">{count}</span></li>')
    heading = html.escape(_("Lessons, in order"))
    intro = html.escape(_("Guided lessons: on each card, guess first, then press and see whether you were right."))
    return pn.pane.HTML(f'<h2 class="section" id="lessons">{heading}</h2><p class="start">{intro}</p>'
                        f'<ol class="lessons">{"".join(items)}</ol>', stylesheets=[TEXT_CSS, CARD_CSS],
                        sizing_mode="stretch_width", margin=(0, 10))
