"""Caches kept for the whole process, whose results every session reads: their arrays are read-only.

A cached curve handed to a picture is the same NumPy array in every session that shows it; were one
session's code (or a client's change that got through, see app/server/websocket.py) to write into it, every
later visitor would see the change. `shared_cache(maxsize)` is `functools.lru_cache` whose results have
every NumPy array in them (in tuples, lists, dicts, dataclasses) made read-only: writing raises.
"""
import dataclasses
import functools

import numpy as np


def read_only(value):
    """`value` with every NumPy array inside it made read-only (in place), returned for convenience."""
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    elif isinstance(value, dict):
        for item in value.values():
            read_only(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            read_only(item)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            read_only(getattr(value, field.name))
    return value


def shared_cache(maxsize=128):
    """functools.lru_cache(maxsize) for results shared by every session: their arrays read-only."""
    def decorate(function):
        @functools.lru_cache(maxsize=maxsize)
        @functools.wraps(function)
        def cached(*args, **kwargs):
            return read_only(function(*args, **kwargs))
        cached.shared = True                # tests/test_shared_caches.py tells these caches from others
        return cached
    return decorate
