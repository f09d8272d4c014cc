"""The Lineare app: the laboratories as Panel pages (app/README.md)."""
from lineare.data import data_path

__all__ = ["data_path"]
