"""app.work: slow work off the event loop, its result (or its error) back on the session's next tick."""
import threading

import pytest

from app import work


class ServedDocument:
    """Stands in for a served Bokeh document: next-tick callbacks wait until `tick()` runs them."""
    session_context = object()

    def __init__(self):
        self.callbacks, self.lock = [], threading.Lock()

    def add_next_tick_callback(self, callback):
        with self.lock:
            self.callbacks.append(callback)

    def tick(self):
        with self.lock:
            callbacks, self.callbacks = self.callbacks, []
        for callback in callbacks:
            callback()


def test_without_a_server_the_work_runs_at_once():
    seen = []
    assert work.Worker("plain").submit(lambda: 6 * 7, seen.append) is True
    assert seen == [42]


def test_served_the_result_comes_back_on_the_next_tick(monkeypatch):
    doc = ServedDocument()
    monkeypatch.setattr(work, "current_document", lambda: doc)
    worker, seen, threads = work.Worker("served"), [], []
    done = threading.Event()
    worker.submit(lambda: threads.append(threading.current_thread().name) or "result",
                  lambda result: (seen.append(result), done.set()))
    for _attempt in range(200):
        doc.tick()
        if done.wait(0.01):
            break
    assert seen == ["result"] and threads[0].startswith("lineare-served")
    assert worker.waiting == 0


def test_an_error_reaches_on_error_with_the_exception(monkeypatch):
    doc = ServedDocument()
    monkeypatch.setattr(work, "current_document", lambda: doc)
    errors, finished = [], threading.Event()

    def fail():
        raise ValueError("broken")

    work.Worker("failing").submit(fail, lambda _result: None, on_error=lambda e: (errors.append(e), finished.set()))
    for _attempt in range(200):
        doc.tick()
        if finished.wait(0.01):
            break
    assert len(errors) == 1 and isinstance(errors[0], ValueError) and str(errors[0]) == "broken"


def test_a_full_queue_refuses_more(monkeypatch):
    doc = ServedDocument()
    monkeypatch.setattr(work, "current_document", lambda: doc)
    release = threading.Event()
    worker = work.Worker("busy", max_waiting=2)
    assert worker.submit(release.wait, lambda _r: None) and worker.submit(release.wait, lambda _r: None)
    assert worker.submit(release.wait, lambda _r: None) is False
    release.set()


def test_shared_computes_each_key_once():
    shared, calls = work.Shared(), []
    assert shared.compute("a", lambda: calls.append(1) or 1) == 1
    assert shared.compute("a", lambda: calls.append(2) or 2) == 1
    assert "a" in shared and shared.get("b") is None and calls == [1]


@pytest.mark.parametrize("closed", [True, False])
def test_on_next_tick_skips_a_closed_session(closed):
    ran = []

    class Closed:
        session_context = object()

        def add_next_tick_callback(self, callback):
            if closed:
                raise RuntimeError("the session is gone")
            callback()

    work.on_next_tick(Closed(), lambda: ran.append(1))
    assert ran == ([] if closed else [1])
