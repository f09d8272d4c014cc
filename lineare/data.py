"""Where Lineare's data files are: the catalogs (i18n), the shipped checkpoints (assets/checkpoints) and the
notebooks. In a checkout they are its own folders; `pip install .` copies them to <prefix>/share/lineare
(pyproject.toml's data-files), where an installed Lineare finds them."""
import site
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]          # the checkout, when run from one


def data_path(name):
    """A data folder (i18n, assets, notebooks): the checkout's when run from one, else the installed copy."""
    here = ROOT / name
    if here.exists():
        return here
    for prefix in (sys.prefix, site.USER_BASE or ""):
        installed = Path(prefix) / "share" / "lineare" / name
        if installed.exists():
            return installed
    return here
