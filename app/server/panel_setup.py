"""`panel serve --setup` script of the hosted mode (scripts/host): runs once in each server process.

The hosted servers run with `--reuse-sessions`: a GET renders a page from one kept session per page
and language (cheap: no page is built for a bare request, a probe or a link preview), and the
visitor's own session is built when its websocket connects, on whichever server nginx chose. Two
things then need help:

- Panel points a component's stylesheets at the server's own copy only while rendering a page; a
  session built for a websocket never is rendered, so its stylesheets would point at cdn.holoviz.org
  (unstyled buttons offline, and refused by the hosted mode's Content-Security-Policy). Every new
  document gets the local path before the page is built.
- The kept session's HTML carries its template: the page title in its language, presenter mode's type and
  folded sidebar. It is kept per page, language and presenter mode.

It also logs one line per session built, for the operator.
"""
import logging

import panel as pn
from panel.io.resources import LOCAL_DIST

from lineare.app.session import Session

log = logging.getLogger("lineare.host")
if not log.handlers:                  # `panel serve` sets up Bokeh's loggers only: the same format here
    _handler = logging.StreamHandler()
    _handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    log.addHandler(_handler)
    log.setLevel(logging.INFO)
    log.propagate = False


def session_key(request):
    """Which kept session renders the page of `request` (Panel's default key is the path alone): one per
    page and frame (language, presenter mode), since a kept session's HTML carries its template."""
    return (request.path, *Session.frame_of(request.arguments, request.headers.get("Accept-Language", "")))


def local_stylesheets(session_context):
    document = session_context._document
    rel_path = pn.state.rel_path
    document._template_variables["dist_url"] = f"{rel_path}/{LOCAL_DIST}" if rel_path else LOCAL_DIST
    request = session_context.request
    log.info("session built for %s", getattr(request, "path", "?"))


pn.config.session_key_func = session_key
pn.state.on_session_created(local_stylesheets)
