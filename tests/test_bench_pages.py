"""bench/pages.py: thread CPU time split among nested phases, and one real page build measured in-process."""
import os
import time

import pytest

from lineare.app.serve import BOKEH_CHECKS
from lineare.app.server import patches
from lineare.bench import pages


@pytest.fixture(autouse=True)
def nothing_left_installed():
    """bench.pages measures builds as the server makes them (its patches, Bokeh's checks off), and undoes that
    afterwards: the tests after these see the libraries and the environment as before."""
    before = ({name: os.environ.get(name) for name in BOKEH_CHECKS}, patches.installed_names())
    yield
    assert ({name: os.environ.get(name) for name in BOKEH_CHECKS}, patches.installed_names()) == before


def busy(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_time_goes_to_the_innermost_phase_open():
    phases = pages.Phases()
    inner = phases.wrap(lambda: busy(0.05), "models")
    with phases.phase("template"):
        busy(0.05)
        inner()                                  # a model made inside the template's work: models' time
    phases._switch()
    assert phases.totals["models"] >= 0.05 and 0.05 <= phases.totals["template"] < 0.09
    assert phases.totals["json"] == 0.0


def test_a_page_is_built_written_and_split(capsys):
    rows = pages.in_process(["home"], ["it"], reps=1)
    row = rows[0]
    assert (row["route"], row["language"]) == ("home", "it")
    assert row["models_count"] > 10 and row["json_bytes"] > 1000
    assert all(row["phases"][p] >= 0 for p in pages.PHASES) and row["phases"]["json"] > 0
    assert abs(row["total"] - sum(row["phases"].values())) < 1e-9
    pages.print_table(rows, server=False)
    out = capsys.readouterr().out
    assert "home" in out and "JSON kB" in out


def test_the_sidebar_is_one_root_of_the_document():
    """Panel's template pays for each root it renders (its design switched on and off, the root's own
    bookkeeping): the sidebar's thirty-odd widgets are one column, not thirty roots."""
    with pages.as_served():
        assert os.environ["BOKEH_PERFORM_ERROR_DIAGNOSTICS"] == "false"   # measured as served (app/serve.py)
        assert patches.installed_names() == list(patches.SPEED_PATCHES)
        built = pages.build_once("state", pages.PAGES["state"], "en")
    # Panel's own four (location, js area, actions, browser info), the sidebar, the page (the header's buttons are
    # the template's HTML)
    assert built["roots"] == 6


def test_a_server_page_is_judged_on_its_usual_opening_and_the_rare_collection_is_spread(capsys):
    rows = [pages.server_row("state", "it", [0.25, 0.26, 1.1]),       # one opening paid for a collection
            pages.server_row("softmax", "en", [0.31, 0.32, 0.30])]
    pages.print_table(rows, server=True)
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[:3] == ["state", "it", "0.260"] and lines[1].endswith("ok")
    assert lines[2].split()[2] == "0.310" and lines[2].endswith("over")
    assert lines[3].startswith("all 6 openings: 2.54 s of server CPU, 0.423 s per page opened on average")


def test_the_report_says_how_fast_the_machine_was_that_day(capsys, monkeypatch):
    speeds = iter([0.1234, 0.2345])                  # at the start, then just after the one row
    monkeypatch.setattr(pages, "python_speed", lambda repeats=5: next(speeds))
    assert pages.main(["--pages", "home", "--languages", "it", "--reps", "1"]) == 0
    captured = capsys.readouterr()
    assert "plain-Python speed 0.123 s" in captured.out and "home" in captured.out
    assert "plain-Python speed 0.123 s" in captured.err             # also before the pages are measured
    row = next(line for line in captured.out.splitlines() if line.startswith("home"))
    assert row.split()[-1] == "0.234" and "speed: the machine's plain-Python speed" in captured.out
