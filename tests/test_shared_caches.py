"""Results kept for the whole process and read by every session are read-only (app/shared.py): a session (or a
client's change that got through the allow-list) writing into one would change what every later visitor sees.
Every container shape a cache returns (lists, tuples, dicts, dataclasses, nested), and every cache in the app:
each is a `shared_cache` whose arrays come back read-only, or a cache listed here whose results hold no array."""
import dataclasses
import importlib
import pkgutil

import numpy as np
import pytest
import torch

import lineare.app
from lineare.app import mechanism
from lineare.app.dashboards.transition import model as transition
from lineare.app.shared import read_only, shared_cache
from lineare.app.work import Shared


def arrays_in(value, seen=None):
    """Every NumPy array and torch tensor reachable in `value` (through lists, tuples, dicts, sets,
    dataclasses and plain objects' attributes)."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return []
    seen.add(id(value))
    if isinstance(value, (np.ndarray, torch.Tensor)):
        return [value]
    if isinstance(value, dict):
        return [a for item in value.values() for a in arrays_in(item, seen)]
    if isinstance(value, (list, tuple, set, frozenset)):
        return [a for item in value for a in arrays_in(item, seen)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [a for f in dataclasses.fields(value) for a in arrays_in(getattr(value, f.name), seen)]
    if hasattr(value, "__dict__") and type(value).__module__.startswith(("lineare.app.", "lineare.engine.")):
        return [a for item in vars(value).values() for a in arrays_in(item, seen)]
    return []


def assert_read_only(value):
    found = arrays_in(value)
    for array in found:
        assert not isinstance(array, torch.Tensor), "a torch tensor kept for every session (it cannot be read-only)"
        assert not array.flags.writeable
        if array.size:
            with pytest.raises(ValueError):
                array.flat[0] = array.flat[0]
    return found


@dataclasses.dataclass
class Record:
    values: np.ndarray
    extras: dict


def one():
    return np.arange(3.0)


SHAPES = {
    "array": lambda: one(),
    "list": lambda: [one(), one()],
    "tuple": lambda: (one(), one()),
    "dict": lambda: {"a": one(), "b": one()},
    "dataclass": lambda: Record(one(), {}),
    "list in a dict": lambda: {"pairs": [one(), one()], "accuracy": [one()]},     # the memory-fails accuracy map
    "dict in a dataclass": lambda: Record(one(), {"m": one()}),
    "dataclasses in lists of lists": lambda: [[Record(one(), {"m": one()})], [Record(one(), {})]],
    "tuple of dicts of tuples": lambda: ({"x": (one(), [one()])},),
}


@pytest.mark.parametrize("shape", SHAPES)
def test_read_only_reaches_every_array_of_every_container_shape(shape):
    value = SHAPES[shape]()
    before = len(arrays_in(value))
    assert read_only(value) is value and len(assert_read_only(value)) == before > 0


@pytest.mark.parametrize("shape", SHAPES)
def test_a_shared_cache_and_a_shared_value_hand_out_read_only_arrays(shape):
    cached = shared_cache(maxsize=2)(SHAPES[shape])
    assert cached() is cached() and assert_read_only(cached())
    kept = Shared()
    assert_read_only(kept.compute("key", SHAPES[shape]))


def app_modules():
    """Every module of the app a server imports (not the page scripts, which serve a page when run)."""
    names = []
    for info in pkgutil.walk_packages(lineare.app.__path__, "lineare.app."):
        if info.name.startswith("lineare.app.pages") or info.name.endswith("__main__"):
            continue
        names.append(info.name)
    return [importlib.import_module(name) for name in names]


def every_cache():
    """{module.name: cache} of every functools cache defined in the app."""
    found = {}
    for module in app_modules():
        for name, value in vars(module).items():
            if hasattr(value, "cache_info") and getattr(value, "__module__", None) == module.__name__:
                found[f"{module.__name__}.{name}"] = value
    return found


# a cheap call of each shared cache
CALLS = {
    "lineare.app.mechanism.shared_run": ("deltanet", tuple(mechanism.parse("Anna:21 Anna?")[0])),
    "lineare.app.dashboards.architectures.model.forgetting_curve": ("retnet",),
    "lineare.app.dashboards.architectures.model.eigenvalues": ("deltanet",),
    "lineare.app.dashboards.memory_fails.model.recall": ("delta", 8, "random", 4, 0, 0),
    "lineare.app.dashboards.memory_fails.model.curve": ("sum", 8, "orthogonal", 0, 0),
    "lineare.app.dashboards.memory_fails.model.accuracy_map": ("sum", "orthogonal", 0, 0, 0.99, 1.0),
    "lineare.app.dashboards.memory_fails.model._accuracy_map": ("sum", "orthogonal", 0, 0, None, None),
    "lineare.app.dashboards.memory_fails.model.trained_example": ("64-8", 0),
    "lineare.app.dashboards.memory_fails.model.stepped": ("deltanet", "64-8", 0),
    "lineare.app.dashboards.memory_fails.model.query_forensics": ("deltanet", "64-8", 0, 1),
    "lineare.app.dashboards.state_fills_up.model.run_trained": ("deltanet", 4, 0),
    "lineare.app.dashboards.take_away_softmax.model.sentence_vectors": (),
}
# caches whose results are texts or fonts: nothing a session could write into
NO_ARRAYS = {
    "lineare.app.dashboards.state_fills_up.view._code_html": ("deltanet", "en"),
    "lineare.app.dashboards.transition.pictures._table_html": (transition.match("scalar", 0.9, 0.0), False, "en"),
    "lineare.app.dashboards.architectures.view._card_html": ("deltanet", False, "en"),
    "lineare.app.export.draw.font": (12,),
    "lineare.app.components.browser.callback": ("number_tick",),          # the pages' JavaScript, read once: text
    "lineare.app.components.browser._page_code": ("busy",),
}


def test_every_cache_of_the_app_is_listed_here():
    caches = every_cache()
    shared = {name for name, cache in caches.items() if getattr(cache, "shared", False)}
    assert shared == set(CALLS), "a shared cache not called here, or one listed that is gone"
    assert set(caches) - shared == set(NO_ARRAYS), "a plain lru_cache: make it a shared_cache, or list it"


@pytest.mark.parametrize("name", sorted(CALLS))
def test_every_shared_cache_hands_out_read_only_arrays_only(name):
    module, function = name.rsplit(".", 1)
    cache = getattr(importlib.import_module(module), function)
    result = cache(*CALLS[name])
    if name.endswith("forgetting_curve") or name.endswith("eigenvalues") or name.endswith("sentence_vectors"):
        assert assert_read_only(result)
    else:
        assert len(assert_read_only(result)) >= 1, f"{name}: no array found to check"


@pytest.mark.parametrize("name", sorted(NO_ARRAYS))
def test_the_other_caches_hold_no_arrays(name):
    module, function = name.rsplit(".", 1)
    cache = getattr(importlib.import_module(module), function)
    assert arrays_in(cache(*NO_ARRAYS[name])) == []


def test_what_a_shared_run_derives_for_its_pages_is_read_only_too():
    from lineare.app.mechanism import shared_run

    run = shared_run(*CALLS["lineare.app.mechanism.shared_run"])
    made = run.derived(("a test", 1), lambda: {"frames": [np.zeros(2), np.ones(2)]})
    assert len(assert_read_only(made)) == 2


def test_the_run_a_two_bills_page_opens_on_is_read_only():
    from lineare.app.dashboards.two_bills.model import opening_run

    settings = {"variant": "linear", "context": 16, "requested": 4, "heads": 1, "dim": 8, "seed": 0}
    assert len(assert_read_only(opening_run(settings))) >= 2
