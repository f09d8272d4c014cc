"""Benchmarks: scripts that print tables (`python -m lineare.bench.engine | bench.pages | bench.load | bench.app`)."""
import time


class _Point:
    def __init__(self, x, y):
        self.x, self.y = x, y


def python_speed(repeats=5):
    """CPU seconds (best of `repeats`) that this machine takes for a fixed piece of plain Python: objects
    made, attributes and dicts read, small strings formatted, as a page build does. The development
    machines run the same code up to 2× apart from one day to the next although nothing else runs
    on them; printed beside a table, it says what kind of day the table was measured on (lower: faster)."""
    best = float("inf")
    for _ in range(repeats):
        started, total = time.thread_time(), 0
        for i in range(200_000):
            point = _Point(i, i + 1)
            fields = {"x": point.x, "y": point.y, "name": f"p{i}"}
            total += fields["x"] + len(fields["name"])
        best = min(best, time.thread_time() - started)
    return best
