"""app/building.py without a server: Bokeh's stack of current documents, one per thread."""
import threading

import bokeh.io.doc
from bokeh.document import Document

from app.building import PerThread


def test_a_build_and_the_event_loop_never_see_each_others_current_document(monkeypatch):
    monkeypatch.setattr(bokeh.io.doc, "_PATCHED_CURDOCS", PerThread())
    loop_doc, built_doc, seen = Document(), Document(), {}
    pushed, release = threading.Event(), threading.Event()

    def build():
        with bokeh.io.doc.patch_curdoc(built_doc):          # as Panel's run_app does around a page script
            pushed.set()
            release.wait(10)
            seen["build"] = bokeh.io.doc.curdoc()

    thread = threading.Thread(target=build)
    with bokeh.io.doc.patch_curdoc(loop_doc):                # a session callback on the loop, and meanwhile
        thread.start()                                       # a build begins
        pushed.wait(10)
        seen["loop"] = bokeh.io.doc.curdoc()
    release.set()
    thread.join(10)
    assert seen == {"build": built_doc, "loop": loop_doc}
    assert len(bokeh.io.doc._PATCHED_CURDOCS) == 0
