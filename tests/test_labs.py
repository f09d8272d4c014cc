"""lineare.labs: a laboratory on given settings, in its language, refusing bad settings with a clear error."""
import html

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


def test_bad_settings_are_refused_in_pythons_words():
    with pytest.raises(ValueError, match="labs.state\\(\\): variant='../../etc' is not one of 'linear'") as refused:
        labs.state(variant="../../etc")
    assert "instead" not in str(refused.value)                       # not the page's words for a bad link
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'; its settings are mode, variant"):
        labs.state(colour="red")
    with pytest.raises(TypeError, match="heads must be an int, not str '2'"):
        labs.state(heads="2")
    with pytest.raises(ValueError, match="heads=9 is out of range: it goes from 1 to 4"):
        labs.state(heads=9)
    with pytest.raises(ValueError, match="language"):
        labs.state(lang="fr")
    with pytest.raises(ValueError, match="no laboratory 'nope'"):
        labs.lab("nope")
    assert labs.parameters("memory-fails")["d_k"] == "key dimension"


def test_settings_take_python_names_and_the_links_keys():
    assert labs.memory_fails(rule="delta", d_k=16).view.store.d_k == 16
    assert labs.memory_fails(rule="delta", dk=32).view.store.d_k == 32


def test_a_laboratory_in_a_cell_points_to_no_menu():
    lab = labs.transition(lang="it")
    texts = html.unescape(" ".join(str(getattr(m, "text", "")) for m in lab.get_root().select({"type": _html_type()})))
    assert "manopole</strong> a sinistra" in texts and "☰" not in texts


def test_a_laboratory_exports_what_it_shows(tmp_path):
    import pandas as pd
    from PIL import Image

    lab = labs.state(variant="deltanet", preset="overwrite")
    lab.view.store.heads = 2                              # a knob moved in the cell: the export follows it
    gif = lab.export(tmp_path / "deltanet.gif", size="small")
    assert Image.open(gif).size == (960, 540) and Image.open(gif).n_frames == lab.view.store.length()
    table = pd.read_csv(lab.export(tmp_path / "steps.csv"))
    assert len(table) == lab.view.store.length()
    assert "heads=2" in (tmp_path / "steps.about.txt").read_text()
    with pytest.raises(ValueError, match="bmp"):
        lab.export(tmp_path / "x.bmp")


def _html_type():
    from bokeh.models import Markup
    return Markup
