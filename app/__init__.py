"""The Lineare app: the laboratories as Panel pages (app/README.md)."""
import site
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def data_path(name):
    """A data folder of the repository (i18n, assets, notebooks): the checkout's when run from one, else
    the copy `pip install .` put under <prefix>/share/lineare (pyproject.toml's data-files)."""
    here = ROOT / name
    if here.exists():
        return here
    for prefix in (sys.prefix, site.USER_BASE or ""):
        installed = Path(prefix) / "share" / "lineare" / name
        if installed.exists():
            return installed
    return here
