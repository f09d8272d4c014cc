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
