"""Every sentence true: what the pages say about the models, checked against the engine's numbers
(issue 21). Each test recomputes a number or a formula a page states, from the engine, and compares."""
import numpy as np
import torch

from app.dashboards.memory_fails.lesson import CARDS as MEMORY_CARDS
from app.dashboards.memory_fails.model import MemoryStore, recall
from app.i18n import language
from app.urlstate import read_query


def memory_store(setup):
    return MemoryStore(**read_query(MemoryStore, MemoryStore.URL, {k: [v.encode()] for k, v in setup.items()})[0])


def test_a_tie_is_a_miss_on_where_memory_fails():
    """Orthogonal keys, 8 of 16 names rewritten, sum rule: every rewritten name reads back v_old + v_new,
    an exact tie between its two numbers. The page counts it as a miss, as engine.capacity.measure does."""
    run = recall("sum", 16, "orthogonal", 16, 8, 0)
    cosines = run.values @ run.readouts.T                                     # [W, N]
    rewritten = run.targets >= 16                                             # the latest write of a changed name
    assert rewritten.sum() == 8
    for q in np.flatnonzero(rewritten):                                       # old and new number equally close
        old = int(np.flatnonzero(run.key_of == run.key_of[run.targets[q]])[0])
        assert old != run.targets[q] and abs(cosines[old, q] - cosines[run.targets[q], q]) < 1e-12
    assert run.right.sum() == 8 and not run.right[rewritten].any() and run.right[~rewritten].all()
    card = MEMORY_CARDS[3]
    store = memory_store(card.setup)
    assert int(store.run.right.sum()) == 8 and card.correct(store) == 1       # "some, not all"
    for lang in ("en", "it"):
        with language(lang):
            assert card.observe(store).startswith("8 ")
