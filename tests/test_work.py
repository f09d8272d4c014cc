"""app.work: slow work off the event loop, its result (or its error) back on the session's next tick."""
import threading
from types import SimpleNamespace

import pytest

from lineare.app import work


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


class Visitor(ServedDocument):
    """A served document of one session, from one address."""

    def __init__(self, session, address="10.0.0.1"):
        super().__init__()
        self.session_context = SimpleNamespace(id=session, request=SimpleNamespace(remote_ip=address))


def served(monkeypatch):
    """Makes `work.current_document()` the document set in the returned holder (`holder[0] = doc`)."""
    holder = [None]
    monkeypatch.setattr(work, "current_document", lambda: holder[0])
    return holder


def test_a_full_queue_refuses_more_and_says_why(monkeypatch):
    current, release, busy = served(monkeypatch), threading.Event(), []
    worker = work.Worker("busy", max_waiting=2, per_address=None)
    for session in ("a", "b"):
        current[0] = Visitor(session)
        assert worker.submit(release.wait, lambda _r: None)
    current[0] = Visitor("c")
    assert worker.submit(release.wait, lambda _r: None, on_error=busy.append) is False
    current[0].tick()
    assert len(busy) == 1 and isinstance(busy[0], work.Busy)
    release.set()


def test_one_job_in_flight_per_session_and_a_bounded_share_per_address(monkeypatch):
    current, release = served(monkeypatch), threading.Event()
    worker = work.Worker("shares", max_waiting=10, per_address=2)
    current[0] = Visitor("a", "10.0.0.1")
    assert worker.submit(release.wait, lambda _r: None)
    assert worker.submit(release.wait, lambda _r: None) is False              # the same session: refused
    current[0] = Visitor("b", "10.0.0.1")
    assert worker.submit(release.wait, lambda _r: None)
    current[0] = Visitor("c", "10.0.0.1")
    assert worker.submit(release.wait, lambda _r: None) is False              # a third from that address
    current[0] = Visitor("d", "10.0.0.2")
    assert worker.submit(release.wait, lambda _r: None)                       # another address still gets in
    release.set()
    for _attempt in range(200):
        if worker.waiting == 0:
            break
        threading.Event().wait(0.01)
    current[0] = Visitor("a", "10.0.0.1")
    assert worker.waiting == 0 and worker.submit(lambda: None, lambda _r: None)    # done: its turn again


def test_jobs_take_turns_address_by_address_then_session_by_session(monkeypatch):
    """One address with five sessions queues first; another visitor's job runs second, not sixth."""
    current, order, gate, done = served(monkeypatch), [], threading.Event(), threading.Event()
    worker = work.Worker("turns", max_waiting=None, per_address=None, threads=1)
    current[0] = Visitor("first", "10.0.0.9")
    worker.submit(gate.wait, lambda _r: None)                     # holds the thread while the others queue
    for i in range(5):
        current[0] = Visitor(f"crowd{i}", "10.0.0.1")
        worker.submit(lambda i=i: order.append(f"crowd{i}"), lambda _r: None)
    current[0] = Visitor("victim", "10.0.0.2")
    worker.submit(lambda: order.append("victim"), lambda _r: None)
    current[0] = Visitor("last", "10.0.0.3")
    worker.submit(lambda: (order.append("last"), done.set()), lambda _r: None)
    gate.set()
    assert done.wait(5)
    assert order[:3] == ["crowd0", "victim", "last"] and sorted(order[3:]) == [f"crowd{i}" for i in range(1, 5)]


def test_a_fair_queue_rotates_addresses_then_sessions():
    queue = work.FairQueue()
    for address, session, job in [("A", 1, "A1a"), ("A", 1, "A1b"), ("A", 2, "A2a"), ("B", 3, "B3a"), ("A", 2, "A2b"),
                                  ("C", 4, "C4a")]:
        queue.put(address, session, job)
    assert len(queue) == 6 and queue.count("A") == 4 and queue.count("A", 2) == 2
    assert [queue.pop() for _ in range(7)] == ["A1a", "B3a", "C4a", "A2a", "A1b", "A2b", None]
    assert len(queue) == 0


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


# what a knob computes, page by page: (store, its module, the function the work is in, the knob and a new value)
KNOBS = [("lineare.app.dashboards.state_fills_up.model", "StateStore", {"mode": "trained"}, "run_trained", "example",
          3),
         ("lineare.app.dashboards.state_fills_up.model", "StateStore", {"mode": "trained"}, "run_trained", "pairs", 5),
         ("lineare.app.dashboards.memory_fails.model", "MemoryStore", {}, "trained_example", "example", 3),
         ("lineare.app.dashboards.memory_fails.model", "MemoryStore", {}, "curve_and_run", "seed", 3),
         ("lineare.app.dashboards.parallel_recurrent.model", "FormsStore", {}, "compared", "length", 32),
         ("lineare.app.dashboards.two_bills.model", "GenerationStore", {}, "generate", "seed", 3)]


@pytest.mark.parametrize("module, store, opened, function, knob, value", KNOBS,
                         ids=[f"{s}.{k}" for _m, s, _o, _f, k, _v in KNOBS])
def test_what_a_knob_computes_runs_off_the_event_loop(monkeypatch, module, store, opened, function, knob, value):
    """In a served session the computation a knob starts runs on a worker's thread, and its result comes back on
    the session's next tick (three visitors turning the trained example every 0.3 s on the event loop moved every
    other visitor's knob p50 from 23 to 645 ms)."""
    import importlib

    models = importlib.import_module(module)
    page = getattr(models, store)(**opened)                         # built as a page is: computed at once
    threads, compute = [], getattr(models, function)

    def recorded(*args, **kwargs):
        threads.append(threading.current_thread().name)
        return compute(*args, **kwargs)

    monkeypatch.setattr(models, function, recorded)
    doc = Visitor(f"{store}.{knob}")
    monkeypatch.setattr(work, "current_document", lambda: doc)
    page = getattr(models, store)(**opened)                         # its knobs' work bound to the recorded one
    threads.clear()
    setattr(page, knob, value)
    for _attempt in range(3000):
        doc.tick()
        if threads:
            break
        threading.Event().wait(0.01)
    assert threads and all(name.startswith("lineare-") for name in threads), threads
    assert threading.current_thread().name not in threads


def test_a_sessions_next_job_can_be_asked_for_from_its_last_answer(monkeypatch):
    """A store asks again, for the settings of now, as its job's answer comes back (app.work.Latest): the worker
    has let that job go by then, or the new one would be refused as the session's second."""
    class Immediate(Visitor):
        def add_next_tick_callback(self, callback):        # the answer at once, from the worker's thread
            callback()

    doc = Immediate("latest")
    monkeypatch.setattr(work, "current_document", lambda: doc)
    settings, results, failures, started = [1], [], [], threading.Event()

    def compute(value):
        started.set()
        threading.Event().wait(0.05)
        return value * 10

    latest = work.Latest(work.Worker("again"), lambda: (settings[0],), compute, results.append, failures.append)
    latest.ask()
    assert started.wait(5)
    settings[0] = 2                                         # changed while the first job runs
    for _attempt in range(500):
        if results or failures:
            break
        threading.Event().wait(0.01)
    assert results == [20] and failures == []


def test_an_address_that_just_had_a_turn_waits_behind_one_that_comes_after_it():
    queue = work.FairQueue()
    queue.ran("crowd", 1)                                  # its first job runs at once, queue empty
    queue.put("crowd", 2, "crowd-2")
    queue.put("crowd", 3, "crowd-3")
    queue.put("visitor", 9, "visitor")                     # comes last, has had no turn yet
    assert [queue.pop() for _ in range(3)] == ["visitor", "crowd-2", "crowd-3"]
    queue.idle()                                           # a new spell: earlier turns no longer count
    queue.put("crowd", 4, "crowd-4")
    queue.put("visitor", 9, "visitor-again")
    assert [queue.pop(), queue.pop()] == ["crowd-4", "visitor-again"]


def test_a_visitors_job_starts_beside_a_crowds_and_an_address_runs_one_at_a_time(monkeypatch):
    current, gate, started = served(monkeypatch), threading.Event(), []
    worker = work.Worker("beside", max_waiting=None, per_address=None, threads=2)
    current[0] = Visitor("crowd-1", "10.0.0.1")
    worker.submit(lambda: (started.append("crowd-1"), gate.wait(5)), lambda _r: None)
    current[0] = Visitor("crowd-2", "10.0.0.1")
    worker.submit(lambda: started.append("crowd-2"), lambda _r: None)
    current[0] = Visitor("visitor", "10.0.0.2")
    arrived = threading.Event()
    worker.submit(lambda: (started.append("visitor"), arrived.set()), lambda _r: None)
    assert arrived.wait(5)                                   # ran while the crowd's first job still runs
    assert "crowd-2" not in started                          # the crowd's address: one job at a time
    gate.set()
    for _attempt in range(500):
        if "crowd-2" in started:
            break
        threading.Event().wait(0.01)
    assert started == ["crowd-1", "visitor", "crowd-2"]


def test_a_busy_addresss_long_job_pauses_while_a_less_busy_visitors_runs(monkeypatch):
    """Jobs of one process share one interpreter: the crowd's running job gives way between its steps while another
    address's job runs (the crowd has used more lately), and goes on alone when nobody else runs."""
    current, steps = served(monkeypatch), []
    worker = work.Worker("give-way", max_waiting=None, per_address=None, threads=2)
    crowd_done, visitor_done, stop = threading.Event(), threading.Event(), threading.Event()

    def job(who, count, done):
        def run():
            for _ in range(count):
                if stop.is_set():
                    break
                work.give_way()
                steps.append(who)
                threading.Event().wait(0.005)
            done.set()
        return run

    current[0] = Visitor("crowd-1", "10.0.0.1")
    worker.submit(job("crowd", 1000, crowd_done), lambda _r: None)
    for _attempt in range(500):                              # the crowd has worked a while alone
        if steps.count("crowd") >= 20:
            break
        threading.Event().wait(0.01)
    assert work.SHARES.used("10.0.0.1") > 0.05
    current[0] = Visitor("visitor", "10.0.0.2")
    worker.submit(job("visitor", 30, visitor_done), lambda _r: None)
    assert visitor_done.wait(10)
    during = steps[steps.index("visitor"):len(steps) - steps[::-1].index("visitor")]
    assert during.count("crowd") <= 1, during               # at most the step it was in when the visitor came
    crowd_before = steps.count("crowd")
    threading.Event().wait(0.3)                              # alone again, it goes on without pausing
    stop.set()
    assert crowd_done.wait(5) and steps.count("crowd") > crowd_before + 10


def test_shares_no_pause_outside_a_job_and_the_least_used_address_never_waits():
    shares = work.Shares()
    shares.give_way()                                        # not a worker's job: returns at once
    shares._used = {"crowd": (30.0, work.time.monotonic()), "visitor": (0.5, work.time.monotonic())}
    with shares._lock:
        assert not shares._behind("visitor")
        shares._active = {1: ("visitor", work.time.monotonic()), 2: ("crowd", work.time.monotonic())}
        assert shares._behind("crowd") and not shares._behind("visitor")
