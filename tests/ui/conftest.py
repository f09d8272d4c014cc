"""A real `python -m lineare.app` server and a real Chromium for the UI tests.

The browser is Debian's /usr/bin/chromium when present, else Playwright's own build. With neither,
the tests are skipped on a developer's machine but fail when the CI environment variable is set; so are the
accessibility tests without axe-core (tests/ui/axe_core.py), which the first of them installs with npm.
Every page opened through the `open_page` fixture records its requests, console errors and dialogs;
a request that leaves localhost fails the test that made it.
"""

import pytest

from tests.needs import unavailable

from lineare.app.devtools import browser, is_local, running_server

DEEP_TEXT = """() => {
  const out = [];
  const walk = (node) => {
    if (node.nodeType === Node.TEXT_NODE) { const t = node.textContent.trim(); if (t) out.push(t); return; }
    if (node.nodeType !== Node.ELEMENT_NODE && node.nodeType !== Node.DOCUMENT_FRAGMENT_NODE) return;
    if (["STYLE", "SCRIPT", "PRE", "CODE"].includes(node.tagName)) return;     // source code is not prose
    if (node.shadowRoot) walk(node.shadowRoot);
    for (const child of node.childNodes) walk(child);
  };
  walk(document.body);
  return out;
}"""


@pytest.fixture(scope="session")
def chromium():
    try:
        with browser() as instance:
            yield instance
    except RuntimeError as error:
        unavailable("a browser for the UI tests", error)


@pytest.fixture(scope="session")
def axe():
    """axe-core's script (tests/ui/axe_core.py), installed from the npm registry when missing."""
    from axe_core import axe_source

    try:
        return axe_source()
    except RuntimeError as error:
        unavailable("axe-core for the accessibility tests", error)


@pytest.fixture(scope="session")
def server(chromium):
    with running_server() as url:
        yield url


class Visit:
    """One browser context (its own cookies and session) and its record of what the page did."""

    def __init__(self, chromium, server, locale, **context):
        self.server = server
        self.context = chromium.new_context(**{"viewport": {"width": 1400, "height": 1000}, "locale": locale,
                                               **context})
        self.page = self.context.new_page()
        self.remote, self.errors, self.dialogs = [], [], []
        self.page.on("request", lambda r: None if is_local(r.url) else self.remote.append(r.url))
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("dialog", self._dialog)

    def _dialog(self, dialog):
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def open(self, path):
        self.page.goto(self.server + path)
        self.page.locator('nav a[aria-current="page"]').wait_for(timeout=30_000)
        # the navigation is in the page's HTML from the start: the tests read Bokeh's document, made later
        self.page.wait_for_function("() => window.Bokeh !== undefined && Bokeh.documents.length > 0",
                                    timeout=30_000)
        return self.page

    def text(self):
        """Every visible text node of the page, shadow roots included."""
        return self.page.evaluate(DEEP_TEXT)


@pytest.fixture
def open_page(chromium, server):
    visits = []

    def make(locale="en-US", **context):
        """A new visit; `context`: Playwright's options of its browser context (a phone's size and touch)."""
        visit = Visit(chromium, server, locale, **context)
        visits.append(visit)
        return visit

    yield make
    try:
        for visit in visits:
            assert visit.remote == [], f"requests left localhost: {visit.remote}"
    finally:
        for visit in visits:
            visit.context.close()
