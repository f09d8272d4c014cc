"""Sections below the first screen (app/components/later.py): not built with the page, built when the
browser says its marker came near the window, and then in the page's document like any other part."""
import types

from tests.italian_pages import model_texts, visible


def memory_fails_page():
    """A session's document of /memory-fails as the server builds it (no section opened)."""
    from bokeh.document import Document
    from panel.io.state import set_curdoc

    from app.shell import page

    doc = Document()
    request = types.SimpleNamespace(arguments={"lang": [b"en"]}, headers={}, cookies={})
    context = types.SimpleNamespace(request=request, id="later", server_context=None)
    doc._session_context = lambda: context
    with set_curdoc(doc):
        template = page("memory-fails")()
        template.server_doc(doc)
    return doc, template


def texts(doc):
    return " ".join(visible(text) for _where, text in model_texts(doc))


def test_a_section_below_the_first_screen_is_built_when_the_browser_comes_near():
    import panel as pn
    from panel.io.state import set_curdoc

    from app.components.access import WIDGET_FOCUS_CSS
    from app.components.later import Near, build_all

    doc, template = memory_fails_page()
    before = len(doc.models)
    assert "One query taken apart" in texts(doc)                   # the sections above: built with the page
    assert "One trained answer taken apart" not in texts(doc)
    assert "Every key size at once" not in texts(doc)
    markers = list(template.main[0].select(Near))
    assert len(markers) == 2 and not any(m.seen for m in markers)

    with set_curdoc(doc):
        markers[0].seen = True                                     # what the browser sends when it scrolls near
    assert "One trained answer taken apart" in texts(doc)
    assert "Every key size at once" not in texts(doc)
    assert len(doc.models) > before + 50                           # its pictures are in the document now

    with set_curdoc(doc):
        build_all(doc)                                             # what tests that read a whole page do
    assert "Every key size at once" in texts(doc)
    assert not list(template.main[0].select(Near))                 # the markers gave their place to the sections
    sliders = [w for w in template.main[0].select(pn.widgets.FloatSlider) if "α" in w.label]
    assert sliders and all(WIDGET_FOCUS_CSS in w.stylesheets for w in sliders)   # the frame's focus ring, too
