"""A page's URL (or its query alone) → a session and that page's export adapter, from untrusted text.

The values go through the same code as a page opened in the browser: `Session`'s URL mapping for the
language and level, the page view's `open_store` for its store, the `Player`'s for the frame and the
speed. Bad values become notices (the caller shows them), never errors; an unknown page is refused.
"""
from urllib.parse import parse_qs, urlsplit

from lineare.app.export.files import ExportRefused
from lineare.app.export.pages import PAGES
from lineare.app.i18n import _, language
from lineare.app.session import Session
from lineare.app.urlstate import MAX_TEXT, read_query

MAX_URL = 4 * MAX_TEXT            # characters of a link read at all


def split(url):
    """(page slug, query args as the server hands them: {key: [bytes]}) of a URL, path or query."""
    url = str(url).strip()[:MAX_URL]
    parts = urlsplit(url if "?" in url or "/" in url else "?" + url)
    slug = parts.path.rstrip("/").rsplit("/", 1)[-1]
    args = {key: [value.encode("utf-8") for value in values]
            for key, values in parse_qs(parts.query, keep_blank_values=False).items()}
    return slug, args


def open_page(url, slug=None):
    """(page adapter, its session's notices) of a URL; the adapter knows the URL's frame and speed."""
    from lineare.app.components.player import Player

    found, args = split(url)
    slug = slug or found
    values, notices = read_query(Session, Session.URL, args)
    session = Session(notices=[("url", n) for n in notices], **values)
    with language(session.language):
        if slug not in PAGES:
            raise ExportRefused(_("“{page}” is not a page with something to export: try one of {pages}.").format(
                page=slug[:40], pages=", ".join(f"/{s}" for s in PAGES)))
        page = PAGES[slug].open(session, args)
        player, more = read_query(Player, Player.URL, args)
        session.add_notices("url", more)
        page.frame, page.speed = player.get("value"), player.get("speed")
        if page.frame is not None and page.frame >= page.length():       # a step past the run: the last one
            session.add_notices("url", [_("The link asked for step {t}, but this run has {n} steps: the last one "
                                          "is shown.").format(t=page.frame + 1, n=page.length())])
    return page, [message for _source, message in session.notices]
