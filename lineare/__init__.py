"""Lineare from Python: the `lineare` command (lineare/cli.py) and the laboratories in a notebook (lineare.labs).

    from lineare import labs
    labs.state(variant="deltanet", preset="overwrite", lang="it")     # the live laboratory, in the cell
"""
from importlib import metadata

try:
    __version__ = metadata.version("lineare")
except metadata.PackageNotFoundError:          # run from a checkout that was never installed
    __version__ = "0.1.0+checkout"
