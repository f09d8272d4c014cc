"""bench/load.py without a server: its arguments, its arithmetic and its report. The load test itself
runs against the hosted mode in tests/ui/test_host_ui.py (structure and zero errors, never timings)."""
import pytest

from lineare.bench import load


def test_arguments_and_defaults():
    args = load.parse_args([])
    assert (args.mode, args.viewers, args.browsers, args.workers) == ("crowd", 50, 2, 2)
    assert args.think == (2.0, 6.0) and args.ramp > 0
    assert args.settle >= 60                         # Bokeh's unused-session lifetime and its checks
    heavy = load.parse_args(["heavy"])
    assert heavy.viewers == 20 and heavy.browsers == 0
    assert load.parse_args(["churn", "--sessions", "8"]).sessions == 8
    assert load.parse_args(["--think", "1-3"]).think == (1.0, 3.0)
    with pytest.raises(SystemExit):
        load.parse_args(["stampede"])


def test_played_frames_lateness_and_skips():
    on_time = [(1000.0 + 500 * i, 3 + i) for i in range(5)]             # 2 frames per second, from t = 3
    assert load.lateness(on_time) == ([0.0, 0.0, 0.0, 0.0], 0)
    late = [(0.0, 0), (520.0, 1), (1700.0, 3), (1800.0, 4)]             # frame 2 never shown
    delays, skipped = load.lateness(late)
    assert delays == pytest.approx([20.0, 200.0, 0.0]) and skipped == 1
    assert load.lateness([(0.0, 0)]) == ([], 0)


def test_summary():
    stats = load.summary(list(range(1, 101)))
    assert stats["n"] == 100 and stats["max"] == 100 and stats["p50"] == pytest.approx(50.5)
    assert stats["p95"] == pytest.approx(95.05)
    assert load.summary([]) is None


def crowd_result(**changes):
    result = {"mode": "crowd", "path": load.STATE_PAGE, "ramp_s": 60.0, "knobs_per_viewer": 3, "think_s": [2, 6],
              "concurrent_at_end": 50, "viewers": 50, "page_open_s": load.summary([1.0, 2.0, 2.5]),
              "knob_ms": load.summary([100.0, 200.0, 400.0]), "errors": [], "dropped": 0, "refused": 0,
              "received_mib": 12.5, "cpu_per_open_s": 1.2, "cpu_per_knob_s": 0.08,
              "knob_first_ms": load.summary([400.0]), "knob_later_ms": load.summary([100.0, 200.0]),
              "browsers": load.browser_summary([{"errors": [], "open_s": 2.0, "knob_ms": 150.0,
                                                 "sent_stepping_playing": 0,
                                                 "frames": [(0.0, 0), (500.0, 1), (1010.0, 2)]}])}
    return {**result, **changes}


def test_targets_pass_and_miss():
    rows = load.targets(crowd_result())
    assert [r[0] for r in rows] == ["errors", "dropped sessions", "page open p95", "knob → new frames p95"]
    assert all(r[3] for r in rows)
    missed = load.targets(crowd_result(errors=["TimeoutError"], dropped=2, page_open_s=load.summary([9.0]),
                                       knob_ms=None))
    assert [r[3] for r in missed] == [False, False, False, False]
    heavy = {"mode": "heavy", "knob_during_ms": load.summary([100.0, 900.0])}
    assert load.targets(heavy)[0][3] is False
    churn = {"mode": "churn", "rss_growth": 0.04}
    assert load.targets(churn)[0][3] is True and load.targets({**churn, "rss_growth": 0.2})[0][3] is False


def test_report_prints_every_number(capsys):
    report = {"machine": {"cpus": 2, "load_before": [1, 1, 1], "load_after": [2, 2, 2], "url": "http://x",
                          "workers": 2, "python_speed_s": 0.117},
              "servers": {"wall_s": 100.0, "cpu_s": 120.0, "cpu_cores": 1.2, "load_generator_cpu_s": 5.0,
                          "rss_mib": {"server:1": 500.0, "server:2": 510.0, "nginx": 17.0},
                          "servers_rss_peak_mib": 1100.0},
              "result": crowd_result()}
    report["targets"] = load.targets(report["result"])
    load.print_report(report)
    out = capsys.readouterr().out
    for words in ("plain-Python speed 0.117 s", "page open", "knob → frames", "first moves", "later moves",
                  "dropped sessions",
                  "1.20 s per page opened", "80 ms per knob",
                  "browser pages", "played frames late", "messages sent while stepping and playing: 0",
                  "1.20 cores", "PASS"):
        assert words in out, words


def test_burst_mode_arguments_targets_and_report(capsys):
    args = load.parse_args(["burst", "--app", "--app-arg=--one-process"])
    assert (args.viewers, args.ramp, args.think, args.knobs, args.browsers) == (30, 10.0, (2.5, 3.5), 3, 0)
    assert args.app and args.app_arg == ["--one-process"]
    assert load.parse_args(["burst", "--viewers", "60"]).viewers == 60
    result = {"mode": "burst", "path": load.STATE_PAGE, "ramp_s": 10.0, "knobs_per_viewer": 3, "think_s": [2.5, 3.5],
              "viewers": 30, "page_open_s": load.summary([1.0, 2.0, 3.5]), "knob_ms": load.summary([90.0, 120.0]),
              "errors": [], "dropped": 0, "refused": 0, "received_mib": 9.0, "opened": 30, "knob_moves": 90}
    rows = load.targets(result)
    assert [r[0] for r in rows][:3] == ["errors", "dropped sessions", "page open p95"]
    assert rows[2][3] is False and rows[3][3] is True          # p95 3.35 s > 3 s; knob p95 well under
    report = {"machine": {"cpus": 2, "load_before": [1, 1, 1], "load_after": [2, 2, 2], "url": "http://x",
                          "workers": 2, "app": True, "python_speed_s": 0.117},
              "servers": {"wall_s": 40.0, "cpu_s": 45.0, "cpu_cores": 1.1, "load_generator_cpu_s": 2.0,
                          "rss_mib": {"server:1": 400.0, "server:2": 410.0}, "servers_rss_peak_mib": 820.0},
              "result": result, "targets": rows}
    load.print_report(report)
    out = capsys.readouterr().out
    for words in ("python -m lineare.app (2 server processes)", "arriving at random within 10 s", "30 pages opened",
                  "90 knob moves", "p95 3.35 s", "MISS"):
        assert words in out, words


def test_class_mode_arguments_targets_and_report(capsys):
    args = load.parse_args(["class", "--app"])
    assert (args.viewers, args.cards, args.browsers, args.lesson) == (60, 2, 0, load.CLASS_LESSON)
    result = {"mode": "class", "path": args.lesson, "viewers": 60, "cards": 2, "think_s": 6.0, "errors": [],
              "dropped": 0, "joined_s": load.summary([1.0, 2.0]), "tally_ms": load.summary([150.0, 1200.0]),
              "reveal_ms": load.summary([400.0]), "next_ms": load.summary([600.0])}
    rows = load.targets(result)
    assert [r[0] for r in rows] == ["errors", "answer → the projector's tally p95"]
    assert rows[0][3] is True and rows[1][3] is False                  # p95 1,147 ms > 1 s
    assert load.targets({**result, "tally_ms": load.summary([150.0, 300.0])})[1][3] is True
    report = {"machine": {"cpus": 2, "load_before": [1, 1, 1], "load_after": [2, 2, 2], "url": "http://x",
                          "workers": 2, "app": True, "python_speed_s": 0.117},
              "servers": {"wall_s": 40.0, "cpu_s": 9.0, "cpu_cores": 0.2, "load_generator_cpu_s": 1.0,
                          "rss_mib": {"server:1": 400.0}, "servers_rss_peak_mib": 400.0},
              "result": result, "targets": rows}
    load.print_report(report)
    out = capsys.readouterr().out
    for words in ("60 phones, 2 cards", "answer → tally    p50 675.00 ms  p95 1147.50 ms", "reveal → phones",
                  "next card → phones", "MISS"):
        assert words in out, words


def test_plain_reads_bokehs_maps():
    assert load.plain({"type": "map", "entries": [["a", {"type": "map", "entries": [["b", [1, 2]]]}]]}) == \
        {"a": {"b": [1, 2]}}
    assert load.plain({"type": "number", "value": "nan"}) != load.plain({"type": "number", "value": "nan"})   # NaN


def test_the_server_processes_are_counted_once_all_are_forked():
    """The port answers before python -m lineare.app has forked all its processes: they are counted once their number
    has settled, not at the first look (which once found one of two and left the other's CPU out)."""
    class Parent:
        def __init__(self, counts):
            self.counts = iter(counts)

        def children(self):
            return list(range(next(self.counts, 2)))

    assert load.forked(Parent([1, 1, 2]), settle_s=0.3) == [0, 1]     # the second forked after a first look
    alone = Parent([0] * 100)
    assert load.forked(alone, settle_s=0.2) == [alone]                  # --one-process: the server itself
