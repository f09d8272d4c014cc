"""notebooks/laboratories.ipynb: every laboratory and the HoloViews examples execute in a kernel, and each cell
that ends in a view shows a Panel/Bokeh view, with no error and no traceback on standard error."""
import ast
import os
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from jupyter_client.manager import KernelManager
from tests.test_notebook import _ThisPythonKernelSpecs

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "laboratories.ipynb"
VIEW = "application/vnd.holoviews_exec.v0+json"         # what Panel and HoloViews display in a notebook


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """The notebook run top to bottom in a folder of its own (its saved HTML and GIF land there), on this tree,
    in a kernel that can reach nothing off this machine."""
    where = tmp_path_factory.mktemp("laboratories")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    km = KernelManager(kernel_name="python3", kernel_spec_manager=_ThisPythonKernelSpecs())
    client = NotebookClient(nb, km=km, timeout=240, kernel_name="python3", resources={"metadata": {"path": str(where)}})
    cut_off = ROOT / "tests" / "no_network"                             # the kernel's sockets: this machine only
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(cut_off), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    client.execute(env=env)
    if os.environ.get("LINEARE_KEEP_NOTEBOOK"):                 # to look at the outputs by hand
        nbformat.write(nb, os.environ["LINEARE_KEEP_NOTEBOOK"])
    return nb, where


def test_every_laboratory_and_chart_shows_a_view_without_errors(executed):
    nb, _where = executed
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    for cell in code:
        assert not [o for o in cell.outputs if o.output_type == "error"], cell.source
        errors = "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stderr")
        assert "Traceback" not in errors and "Error" not in errors, (cell.source, errors[-2000:])
    views = [cell for cell in code[1:] if ends_in_a_view(cell.source)]       # after the one of pn.extension()
    assert len(views) == 11                                  # 7 laboratories, the HoloMap, gates and two sweeps
    for cell in views:
        assert any(VIEW in o.get("data", {}) for o in cell.outputs), cell.source
    assert {cell.source.split("(")[0] for cell in views if cell.source.startswith("labs.")} == {
        "labs.state", "labs.softmax", "labs.two_bills", "labs.transition", "labs.memory_fails",
        "labs.parallel_recurrent", "labs.architectures"}


def ends_in_a_view(source):
    """Whether a cell's last statement is an expression other than print(…): what the cell displays."""
    last = ast.parse(source).body[-1]
    return isinstance(last, ast.Expr) and not (isinstance(last.value, ast.Call)
                                               and getattr(last.value.func, "id", "") == "print")


def test_the_italian_laboratory_is_in_italian_and_the_saved_chart_is_a_file(executed):
    nb, where = executed
    state = next(cell for cell in nb.cells if cell.source.startswith("labs.state"))
    html = "".join(str(o["data"].get("text/html", "")) + str(o["data"].get(VIEW, "")) + str(o["data"])
                   for o in state.outputs if "data" in o)
    assert "La memoria si riempie" in html and "Un numero cambia" in html
    assert "The state fills up" not in html and "A number changes" not in html
    saved = where / "state_over_tokens.html"
    assert saved.exists() and saved.stat().st_size > 100_000
    assert (where / "deltanet.gif").read_bytes().startswith(b"GIF89a")          # lab.export from a cell


def test_panel_and_bokeh_come_with_the_notebook_not_from_a_cdn(executed):
    """The first cell's outputs carry Panel's and Bokeh's JavaScript themselves (pn.extension(inline=True)):
    nothing for the browser to fetch, so the views render with no network."""
    nb, _where = executed
    first = next(cell for cell in nb.cells if cell.cell_type == "code")
    loaded = "".join(str(o.get("data", {}).get("application/javascript", "")) for o in first.outputs)
    assert len(loaded) > 1_000_000                                        # the bundles themselves
    urls = re.findall(r'(?:js_urls|css_urls)\s*=\s*(\[[^\]]*\])', loaded)
    assert urls and all(found.replace(" ", "") == "[]" for found in urls), urls
