"""Lineare: an interactive laboratory for the linear-attention family of sequence models.

An installed Lineare owns this one top-level name; its parts are subpackages (in a checkout, the folders of
the same names beside this one: pyproject.toml's package-dir installs them here):

    lineare.engine     the PyTorch engine: every variant in three forms, token-by-token records
    lineare.app        the laboratories as Panel pages (`lineare serve`)
    lineare.labs       the laboratories in a notebook: labs.state(variant="deltanet", lang="it")
    lineare.cli        the `lineare` command
    lineare.bench, lineare.deploy    the benchmarks and the hosted mode
"""
__version__ = "0.1.0"          # the one place the version is written (pyproject.toml reads it from here)
