"""lineare.labs: a laboratory on given settings, in its language, refusing bad settings with a clear error."""
import pytest
from bokeh.document import Document
from panel.io.state import set_curdoc

from lineare import labs


def test_a_laboratory_is_built_on_its_settings_in_its_language():
    lab = labs.state(variant="gla", preset="overwrite", lang="it", level="superiore")
    view = lab.view
    assert view.store.variant == "gla" and view.store.preset == "overwrite"
    assert view.session.language == "it" and view.session.level == "superiore"
    root = lab.get_root()
    texts = " ".join(str(getattr(model, "text", "")) for model in root.select({"type": _html_type()}))
    assert "La memoria si riempie" in texts and "The state fills up" not in texts


def test_a_knob_moved_later_still_speaks_the_laboratorys_language():
    lab = labs.state(variant="deltanet", lang="it")
    doc = Document()                                # what a notebook renders the cell's output into
    lab.get_root(doc)
    view = lab.view
    with set_curdoc(doc):                           # as Panel runs a browser's change in a notebook
        view.store.heads = 2
    assert "Testa 2" in view.head_titles[1].object


def test_bad_settings_are_refused_with_the_reason():
    with pytest.raises(ValueError, match="variant.*../../etc"):
        labs.state(variant="../../etc")
    with pytest.raises(TypeError, match="its settings are mode, variant"):
        labs.state(colour="red")
    with pytest.raises(ValueError, match="language"):
        labs.state(lang="fr")
    with pytest.raises(ValueError, match="no laboratory 'nope'"):
        labs.lab("nope")
    assert labs.parameters("memory-fails")["dk"] == "d_k"


def _html_type():
    from bokeh.models import Markup
    return Markup
