"""app/server/memory.py: what `python -m lineare.app` does to Python's collector (the RSS it gives back is measured in
tests/test_security.py::test_memory_comes_back_after_hostile_loads)."""
import json
import subprocess
import sys

from lineare.app.server import memory

INSTALLED = """
import gc, json
from lineare.app.server import memory
before = gc.get_threshold()
memory.install()
print(json.dumps([before, gc.get_threshold()]))
"""


def test_the_server_looks_at_the_oldest_generation_less_often_and_keeps_the_rest():
    # in a process of its own: install() patches this process's collector and Panel's session hooks
    printed = subprocess.run([sys.executable, "-c", INSTALLED], capture_output=True, text=True, check=True,
                             timeout=120).stdout
    before, after = json.loads(printed)
    assert after == [before[0], before[1], memory.FULL_EVERY]
    assert memory.FULL_EVERY > before[2]                 # less often than Python's own


SETTLED = """
import gc, json
import panel as pn
from lineare.app.server import memory
memory.install()
class Page:                                   # a discarded page is a web of cycles
    def __init__(self):
        self.me = self
page = Page()
assert memory.settle in pn.state._on_session_created     # Panel's list behind its public hook
memory.settle()                               # a new session comes
settled = gc.get_freeze_count()
scanned = len(gc.get_objects(generation=2))
del page
memory.collect()                              # what follows a discarded session
freed = sum(1 for o in gc.get_objects() if type(o).__name__ == "Page")
print(json.dumps([settled, scanned, gc.get_freeze_count() > 0, freed]))
"""


def test_pages_built_leave_the_collectors_sight_and_come_back_when_a_session_is_discarded():
    """A full collection scanned every open page (40–60 from one address: up to 1.4 s holding the interpreter): a new
    session settles what was built before it (gc.freeze), and the collection after a discarded session frees it."""
    printed = subprocess.run([sys.executable, "-c", SETTLED], capture_output=True, text=True, check=True,
                             timeout=120).stdout
    settled, scanned, settled_again, freed = json.loads(printed.splitlines()[-1])
    assert settled > 1000 and scanned < 1000     # out of sight: an automatic full collection does not scan them
    assert settled_again and freed == 0
