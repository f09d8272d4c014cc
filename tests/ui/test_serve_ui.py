"""The README's plain Panel command serves every page, the same pages as `python -m lineare.app`."""
import pytest

from lineare.app.dashboards import DASHBOARDS
from lineare.app.devtools import running_server

PANEL_SERVE = ("panel serve app/pages/*.py --index home --port {port} --address 127.0.0.1 "
               "--allow-websocket-origin 127.0.0.1:{port}")


@pytest.fixture(scope="module")
def panel_server(chromium):
    with running_server(shell_command=PANEL_SERVE) as url:
        yield url


def test_panel_serve_serves_every_page_with_navigation_languages_and_url_state(chromium, panel_server):
    context = chromium.new_context(viewport={"width": 1366, "height": 768}, locale="it-IT")
    errors = []
    try:
        page = context.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(panel_server + "/")
        page.locator('nav a[aria-current="page"]').wait_for(timeout=60_000)
        links = page.locator('nav a[href^="./"]')                                        # our navigation
        assert links.count() == len(DASHBOARDS) + 1, links.all_inner_texts()          # home + every page
        assert "La memoria si riempie" in links.all_inner_texts()                      # Italian, from the browser
        for dashboard in DASHBOARDS:
            page.goto(f"{panel_server}/{dashboard.slug}?lang=en")
            current = page.locator('nav a[aria-current="page"]')
            current.wait_for(timeout=60_000)
            assert current.inner_text().strip() == dashboard.title                     # English, from the URL
        page.goto(panel_server + "/state?lang=en&variant=deltanet&t=3")
        page.locator(".bk-Figure").first.wait_for(timeout=60_000)
        page.wait_for_function("() => new URL(location.href).searchParams.get('variant') === 'deltanet'")
        assert errors == []
    finally:
        context.close()
