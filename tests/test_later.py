"""Sections below the first screen (app/components/later.py): not built with the page, built when the
browser says its marker came near the window, and then in the page's document like any other part."""
import types

from tests.italian_pages import model_texts, visible


def page_document(slug, arguments=None):
    """A session's document of the page `slug` as the server builds it (no section opened)."""
    from bokeh.document import Document
    from panel.io.state import set_curdoc

    from lineare.app.shell import page

    doc = Document()
    request = types.SimpleNamespace(arguments={"lang": [b"en"], **(arguments or {})}, headers={}, cookies={})
    context = types.SimpleNamespace(request=request, id="later", server_context=None)
    doc._session_context = lambda: context
    with set_curdoc(doc):
        template = page(slug)()
        template.server_doc(doc)
    return doc, template


def texts(doc):
    return " ".join(visible(text) for _where, text in model_texts(doc))


def test_a_section_below_the_first_screen_is_built_when_the_browser_comes_near():
    import panel as pn
    from panel.io.state import set_curdoc

    from lineare.app.components.access import WIDGET_FOCUS_CSS
    from lineare.app.components.later import Near, build_all

    doc, template = page_document("memory-fails")
    before = len(doc.models)
    assert len(figures(doc)) == 2                                  # the first screen's two curves, no more
    assert "One query taken apart" in texts(doc)                   # the headings stay with the page
    lower = ("Answered wrong", "The trained models of the lab", "One trained answer taken apart",
             "Every key size at once")
    assert not [text for text in lower if text in texts(doc)]
    markers = list(template.main[0].select(Near))
    assert len(markers) == 4 and not any(m.seen for m in markers)

    with set_curdoc(doc):
        markers[0].seen = True                                     # what the browser sends when it scrolls near
    assert "Answered wrong" in texts(doc) and len(figures(doc)) == 2 + 3
    assert not [text for text in lower[1:] if text in texts(doc)]
    assert len(doc.models) > before + 50                           # its pictures are in the document now
    with set_curdoc(doc):
        markers[2].seen = True
    assert "One trained answer taken apart" in texts(doc)
    assert "Every key size at once" not in texts(doc)

    with set_curdoc(doc):
        build_all(doc)                                             # what tests that read a whole page do
    assert "Every key size at once" in texts(doc)
    assert not list(template.main[0].select(Near))                 # the markers gave their place to the sections
    sliders = [w for w in template.main[0].select(pn.widgets.FloatSlider) if "α" in w.label]
    assert sliders and all(WIDGET_FOCUS_CSS in w.stylesheets for w in sliders)   # the frame's focus ring, too


def figures(doc):
    from bokeh.models import Plot

    return [model for model in doc.models if isinstance(model, Plot)]


def test_parallel_recurrent_makes_its_lower_sections_and_their_pictures_when_scrolled_to():
    """The difference strip and table, the mask, the cost: neither their panes nor their pictures are made
    with the page (a section put off with its pictures made anyway would save nothing)."""
    from panel.io.state import set_curdoc

    from lineare.app.components.later import SECTIONS, Near

    doc, template = page_document("parallel-recurrent")
    assert len(figures(doc)) == 3                                  # the three strips of the first screen
    assert "The mask and the chunks" in texts(doc)                  # the headings stay with the page
    assert "How far apart the three answers are" not in texts(doc)
    markers = list(template.main[0].select(Near))
    laters = vars(doc)[SECTIONS]
    assert len(markers) == 3 and not any(later._section for later in laters)

    for marker, count, text in zip(markers, (4, 5, 7), ("How far apart the three answers are",
                                                        "RetNet fades every step by the same fixed factor",
                                                        "Not measured yet for RetNet, chunks of 16.")):
        assert text not in texts(doc)
        with set_curdoc(doc):
            marker.seen = True                                     # scrolled near
        assert len(figures(doc)) == count and text in texts(doc)   # one section and its pictures, no more
    difference, mask, cost = (later.section() for later in laters)
    shown = {figure.id for figure in figures(doc)}
    assert {difference.difference.figure.id, mask.picture.figure.id, cost.cost_picture.figure.id} <= shown
    assert not list(template.main[0].select(Near))


def test_the_state_pages_second_row_of_pictures_is_made_when_scrolled_to_and_gets_the_run():
    """Each head's second row (how the change is made: the write, what fades, what is kept, the correction) is
    made when its marker comes near the window; then the run already sent goes to its pictures and the player
    is told of it, so that the browser draws them at the frame it shows (the server does not know it)."""
    from panel.io.state import set_curdoc

    from lineare.app.components.later import Near
    from lineare.app.components.player import Player

    doc, template = page_document("state", {"variant": [b"deltanet"], "preset": [b"crowd"], "heads": [b"2"],
                                            "t": [b"4"]})
    player = next(iter(template.main[0].select(Player)))
    updates = lambda part: [m for m in doc.models if m.tags[:1] == ["lineare-update"] and m.tags[5] == part]
    writes = lambda: [m for m in doc.models if m.tags[:1] == ["lineare-outer"]]
    assert len(figures(doc)) == 2 * 3                              # per head: the memory, its change, the answer
    assert "What fades or is erased" not in texts(doc) and updates("removed") == [] and writes() == []
    markers = list(template.main[0].select(Near))
    assert len(markers) == 2
    runs = player.run

    with set_curdoc(doc):
        markers[0].seen = True                                     # head 1's second row scrolled near
    assert len(figures(doc)) == 2 * 3 + 4                          # the spectrum, what fades, the write, the correction
    assert "What fades or is erased" in texts(doc)
    removed, = updates("removed")
    change = next(m for m in updates("change") if m.id == removed.tags[6])           # its transition: head 1's change
    assert len(removed.data["image"]) == 1 and change.data["diag"] is not None
    write, = writes()
    length = player.length
    assert length > 4 and len(write.data["u"][0]) == length * 16   # every frame of the run, as its two vectors
    assert player.run == runs + 1 and player.jump == -1            # the browser redraws its own frame

    with set_curdoc(doc):
        markers[1].seen = True
    assert len(figures(doc)) == 2 * (3 + 4) and len(writes()) == 2 and player.run == runs + 2


def test_two_bills_makes_its_measured_times_when_scrolled_to_and_sends_them_the_run():
    """The time per token and the visit's runs: made with their pictures when scrolled to, then given the run on
    the page, and the player told to draw the browser's own frame again."""
    from bokeh.models import ColumnDataSource
    from panel.io.state import set_curdoc

    from lineare.app.components.later import Near
    from lineare.app.components.player import Player

    doc, template = page_document("two-bills", {"tokens": [b"16"], "t": [b"3"]})
    player = next(iter(template.main[0].select(Player)))
    assert len(figures(doc)) == 2                                  # the two bills: memory and work
    assert "How long this server took for each new word" not in texts(doc)
    measured, _calculator = template.main[0].select(Near)
    runs = player.run
    before = {m.id for m in doc.models if isinstance(m, ColumnDataSource)}

    with set_curdoc(doc):
        measured.seen = True
    assert len(figures(doc)) == 4 and "How long this server took for each new word" in texts(doc)
    lines = {m.id for m in doc.models if isinstance(m, ColumnDataSource) and len(m.data.get("y_all", [])) == 16}
    assert len(lines - before) == 2                                # the times' medians, every token of the run
    assert player.run == runs + 1 and player.jump == -1           # the browser redraws its own frame


def test_the_transition_pages_small_multiples_are_made_when_scrolled_to():
    """Three models on the same sequence: their pictures, choices and scores are made when scrolled to, drawn
    from the store's comparisons."""
    from panel.io.state import set_curdoc

    from lineare.app.components.later import Near

    doc, template = page_document("transition")
    assert len(figures(doc)) == 3                                  # the transition, the memory, the answers
    assert "Three models on the same sequence" in texts(doc) and "Model 1" not in texts(doc)
    marker, = template.main[0].select(Near)
    with set_curdoc(doc):
        marker.seen = True
    assert len(figures(doc)) == 6 and "Model 3" in texts(doc)
    titles = [figure.title.text for figure in figures(doc)]
    assert titles.count("Memory S at the end") + titles.count("Value cache (it grows)") >= 3   # drawn


def test_the_architecture_cards_are_made_when_scrolled_to_and_follow_the_lit_model():
    """One card per model: its button, words and links are made when scrolled to, lit for the model in the
    skeleton and written at the page's level; after that they follow both."""
    import panel as pn
    from panel.io.state import set_curdoc

    from lineare.app.components.later import Near

    doc, template = page_document("architectures", {"arch": [b"deltanet"], "level": [b"superiore"]})
    buttons = lambda: [b for b in template.main[0].select(pn.widgets.Button) if b.label == "DeltaNet"]
    assert "One card per model" in texts(doc) and "Open in “The state fills up”" not in texts(doc)
    assert buttons() == []
    marker, = template.main[0].select(Near)
    with set_curdoc(doc):
        marker.seen = True
    assert "Open in “The state fills up”" in texts(doc) and "Yang et al. 2024" in texts(doc)   # at Superiore
    button, = buttons()
    assert button.variant == "solid"
    with set_curdoc(doc):
        next(b for b in template.main[0].select(pn.widgets.Button) if b.label == "GLA").clicks += 1
    lit = [b.label for b in template.main[0].select(pn.widgets.Button) if b.variant == "solid"]
    assert lit == ["GLA"]                                          # a card's name fills the skeleton
