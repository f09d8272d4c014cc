"""Lineare from Python: the `lineare` command (lineare/cli.py) and the laboratories in a notebook (lineare.labs).

    from lineare import labs
    labs.state(variant="deltanet", preset="overwrite", lang="it")     # the live laboratory, in the cell
"""
__version__ = "0.1.0"          # the one place the version is written (pyproject.toml reads it from here)
