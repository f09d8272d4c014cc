"""The hosted mode with the real app (scripts/host: two servers behind nginx, a cap of 3 live
sessions): every page through nginx under its Content-Security-Policy, the demo-is-full page, a
liveness answer that builds nothing, and the load test's viewers (its structure and zero errors;
its timings are never asserted). nginx is required in CI (see tests/test_host.py)."""
import asyncio
import json
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import psutil
import pytest
from test_host import require_nginx

from lineare.app.dashboards import DASHBOARDS
from lineare.app.devtools import is_local
from lineare.bench.load import Viewer
from lineare.deploy import host

ROOT = Path(__file__).resolve().parents[2]
CAP = 3


@pytest.fixture(scope="module")
def hosted(chromium, tmp_path_factory):
    require_nginx()
    run_dir = tmp_path_factory.mktemp("hosted")
    args = host.parse(["--port", str(host.free_port()), "--address", "127.0.0.1", "--first-server-port", "0",
                       "--workers", "2", "--max-sessions", str(CAP), "--per-address", str(CAP),   # all from 127.0.0.1
                       "--run-dir", str(run_dir)])
    with host.Host(args) as running:
        yield running


def sessions_built(running):
    """How many sessions the servers have built so far (app/server/panel_setup.py logs one line each)."""
    return sum((running.run_dir / f"server-{port}.log").read_text().count("session built for")
               for port in running.servers)


def fetch(url):
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.status, response.read().decode()


def visit_once(url, path):
    """One protocol visitor opens `path` and leaves (in a thread: Playwright holds this thread's loop)."""
    async def visit():
        viewer = Viewer(url, path)
        await viewer.open()
        await viewer.close()
    visitor = threading.Thread(target=asyncio.run, args=(visit(),))
    visitor.start()
    visitor.join(120)


def cpu_seconds(running):
    """CPU time the servers have used so far."""
    return sum(sum(psutil.Process(process.pid).cpu_times()[:2]) for process in running.servers.values())


def test_liveness_answers_without_building_a_page(hosted):
    before, cpu = sessions_built(hosted), cpu_seconds(hosted)
    assert fetch(hosted.url + "/transition?lang=it&gate=scalar")[0] == 200
    assert sessions_built(hosted) == before                   # the page of a kept session (primed at start)
    visit_once(hosted.url, "/transition?lang=it&gate=scalar")
    one_visit = cpu_seconds(hosted) - cpu                    # a GET, a session built and sent
    assert sessions_built(hosted) == before + 1               # a visitor's session, when its websocket came
    cpu = cpu_seconds(hosted)
    for path in ["/liveness", "/liveness?endpoint=/state", "/liveness?endpoint=/transition"] * 3:
        assert fetch(hosted.url + path) == (200, json.dumps({"/liveness": True}))
    assert sessions_built(hosted) == before + 1
    # Panel builds a page for ?endpoint= without a session (nothing logged): six of them would cost
    # the servers several visits' worth of CPU, nine bare answers a small part of one
    assert cpu_seconds(hosted) - cpu < one_visit / 2


def test_a_page_from_one_server_opens_its_session_on_another(hosted):
    """nginx may send a page and its websocket to different servers: they share the signing key."""
    first, second = (f"http://127.0.0.1:{port}" for port in hosted.servers)
    viewer = Viewer(second)

    async def visit():
        await viewer.open(page_base=first)
        await viewer.move_knob()
        await viewer.close()
    visitor = threading.Thread(target=asyncio.run, args=(visit(),))
    visitor.start()
    visitor.join(120)
    assert viewer.opened is not None and len(viewer.knob_ms) == 1 and not viewer.dropped


def test_every_page_works_through_nginx_under_its_policy(chromium, hosted):
    context = chromium.new_context(viewport={"width": 1366, "height": 768}, locale="en-US")
    problems, remote = [], []
    try:
        page = context.new_page()
        page.on("request", lambda r: None if is_local(r.url) else remote.append(r.url))
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        for slug, title in [("", "Home")] + [(d.slug, d.title) for d in DASHBOARDS] + [("state?lang=it", None)]:
            response = page.goto(f"{hosted.url}/{slug}")
            assert response.status == 200
            assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
            current = page.locator('nav a[aria-current="page"]')
            current.wait_for(timeout=60_000)
            if title:
                assert current.inner_text().strip() == title
            else:        # the kept page is per language: Italian after the English visits
                assert current.inner_text().strip() == "La memoria si riempie"
                assert page.title() == "Lineare · La memoria si riempie"
            page.wait_for_timeout(500)                        # late stylesheets and modules
        assert problems == [] and remote == []                # a refused resource is a console error
        status, notebook = fetch(hosted.url + "/notebooks/parallel_equals_recurrent.ipynb")   # the state page's link
        assert status == 200 and json.loads(notebook)["cells"]
    finally:
        context.close()


def hold_sessions(url, count, opened, release):
    """Open `count` protocol sessions of the state page and keep them until `release` is set."""
    async def run():
        viewers = [Viewer(url) for _ in range(count)]
        for viewer in viewers:
            await viewer.open()
        opened.set()
        while not release.is_set():
            await asyncio.sleep(0.1)
        for viewer in viewers:
            await viewer.close()
    asyncio.run(run())


def test_a_full_demo_shows_the_busy_page_in_both_languages_then_lets_in(chromium, hosted):
    opened, release = threading.Event(), threading.Event()
    holder = threading.Thread(target=hold_sessions, args=(hosted.url, CAP, opened, release), daemon=True)
    holder.start()
    context = chromium.new_context(viewport={"width": 1366, "height": 768}, locale="it-IT")
    try:
        assert opened.wait(120), "the sessions did not open"
        page = context.new_page()
        response = page.goto(hosted.url + "/state?variant=retnet")
        assert response.status == 503 and response.headers["retry-after"] == "60"
        text = page.locator("main").inner_text()
        assert "La demo è piena" in text and "The demo is full" in text
        release.set()
        holder.join(30)
        page.reload()
        page.locator('nav a[aria-current="page"]').wait_for(timeout=60_000)
    finally:
        release.set()
        context.close()


def run_load(hosted, *options):
    run = subprocess.run([sys.executable, "-m", "lineare.bench.load", *options, "--url", hosted.url,
                          "--run-dir", str(hosted.run_dir), "--json"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout)


def test_the_load_test_runs_viewers_and_a_browser_without_errors(hosted):
    report = run_load(hosted, "crowd", "--viewers", "2", "--browsers", "1", "--knobs", "2", "--ramp", "1")
    result = report["result"]
    assert result["mode"] == "crowd" and result["viewers"] == 2
    assert result["errors"] == [] and result["dropped"] == 0 and result["refused"] == 0
    assert result["page_open_s"]["n"] == 2 and result["knob_ms"]["n"] == 4
    pages = result["browsers"]
    assert pages["pages"] == 1 and pages["errors"] == []
    assert pages["knob_ms"]["n"] == 1 and pages["frame_late_ms"]["n"] > 0
    assert pages["sent_stepping_playing"] == 0                # stepping and playing cost the server nothing
    servers = report["servers"]
    assert {name for name in servers["rss_mib"] if name.startswith("server")} == {f"server:{p}" for p in hosted.servers}
    assert servers["cpu_s"] > 0 and servers["servers_rss_peak_mib"] > 0
    assert [row[0] for row in report["targets"]] == ["errors", "dropped sessions", "page open p95",
                                                     "knob → new frames p95"]
    assert report["targets"][0][3] is True and report["targets"][1][3] is True


def test_the_load_test_heavy_and_churn_modes(hosted):
    heavy = run_load(hosted, "heavy", "--viewers", "2", "--ramp", "1", "--think", "0.5-1", "--before", "3",
                     "--after", "1")["result"]
    assert heavy["errors"] == [] and heavy["heavy_errors"] == [] and heavy["dropped"] == 0
    assert heavy["heavy_open_s"] > 0 and heavy["knob_before_ms"]["n"] > 0
    churn = run_load(hosted, "churn", "--sessions", "4", "--settle", "1")["result"]
    assert churn["errors"] == [] and churn["refused"] == 0
    assert list(churn["rss_mib"]) == ["start", "after 2", "after 4"]
    assert all(size > 0 for size in churn["rss_mib"].values())
