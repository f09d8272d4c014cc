"""The verification notebook runs clean, stays independent of the engine, and speaks IT and EN.

`notebooks/parallel_equals_recurrent.ipynb` asserts, cell by cell, that the parallel, recurrent and
chunked forms agree; executing it is the test. The kernel is pinned to this interpreter
(`sys.executable`), so no kernelspec has to be installed by hand and a stray system-wide "python3"
kernelspec cannot send the notebook to a Python without NumPy.
"""
import ast
import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "parallel_equals_recurrent.ipynb"
ALLOWED_IMPORTS = {"numpy"}
FORBIDDEN_NAMES = {"engine", "torch"}


class _ThisPythonKernelSpecs(KernelSpecManager):
    """Resolves the "python3" kernel to ipykernel running on the interpreter running the tests."""

    def get_kernel_spec(self, kernel_name):
        if kernel_name != "python3":
            return super().get_kernel_spec(kernel_name)
        return KernelSpec(argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                          display_name="Python 3 (tests)", language="python")


def _read():
    return nbformat.read(NOTEBOOK, as_version=4)


def _code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def _imported_modules(source):
    """Top-level module names imported by a cell, plus names passed to __import__/import_module."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.add("." if node.level else node.module.split(".")[0])
        elif isinstance(node, ast.Call):
            fn = node.func
            name = fn.id if isinstance(fn, ast.Name) else getattr(fn, "attr", None)
            if name in ("__import__", "import_module"):
                found.add("<dynamic import>")
    return found


@pytest.fixture(scope="module")
def executed():
    """The notebook executed top to bottom in its own folder (raises on the first failing cell)."""
    nb = _read()
    # one extra, in-memory probe cell: which Python did the kernel run on?
    nb.cells.append(nbformat.v4.new_code_cell("import sys; print(sys.prefix)"))
    km = KernelManager(kernel_name="python3", kernel_spec_manager=_ThisPythonKernelSpecs())
    client = NotebookClient(nb, km=km, timeout=60, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()
    return nb


def test_every_cell_runs_and_every_agreement_holds(executed):
    for cell in _code_cells(executed):
        assert not [o for o in cell.outputs if o.output_type == "error"]
    probe = executed.cells[-1].outputs[0]["text"].strip()
    assert probe == sys.prefix, f"kernel ran on {probe}, tests on {sys.prefix}"
    printed = "".join(o.get("text", "") for c in _code_cells(executed) for o in c.outputs)
    assert printed.count("rel. error") >= 20   # the comparisons really ran and printed


def test_numpy_only_no_engine_no_torch():
    nb = _read()
    imported = set()
    for cell in _code_cells(nb):
        imported |= _imported_modules(cell.source)
        assert not any(f"import {name}" in cell.source for name in FORBIDDEN_NAMES)
    assert "numpy" in imported
    assert imported <= ALLOWED_IMPORTS, f"unexpected imports: {imported - ALLOWED_IMPORTS}"


def test_import_scan_catches_forbidden_imports():
    assert _imported_modules("from engine.ops import forward") == {"engine"}
    assert _imported_modules("import numpy as np, torch") == {"numpy", "torch"}
    assert _imported_modules("import importlib\nm = importlib.import_module('engine')") == {
        "importlib", "<dynamic import>"}


def test_every_markdown_cell_is_bilingual():
    markdown = [c for c in _read().cells if c.cell_type == "markdown"]
    assert markdown
    for cell in markdown:
        assert "**IT**" in cell.source and "**EN**" in cell.source, cell.source[:80]
        assert cell.source.index("**IT**") < cell.source.index("**EN**"), cell.source[:80]


def test_saved_without_outputs():
    for cell in _code_cells(_read()):
        assert cell.outputs == [] and cell.execution_count is None
