"""What `python -m lineare.app` adds to the Bokeh server before Panel starts it, for a demo on the internet.

- Signed session ids: `secret_key()` gives the key (from a file shared by every server process, else
  BOKEH_SECRET_KEY, else a new random one) and app/serve.py passes `--session-ids signed`, so a
  client-chosen `?bokeh-session-id=X` is refused (403) instead of joining someone else's document.
- Malformed `bokeh-token`s (in a page's URL or a websocket's subprotocol header) get a 400 page or a
  closed socket and one log line, not an HTTP 500 and a traceback.
- Errors of connections that went away (a closed tab: Tornado's WebSocketClosedError,
  StreamClosedError, a reset socket) are logged as one line, without their traceback.

- The app, not a link, decides where scripts and styles come from: of the `bokeh-*` query arguments
  only `bokeh-token` and `bokeh-session-id` (both checked) reach Bokeh and Panel. Bokeh builds every
  script and style address from `?bokeh-absolute-url=` (and `bokeh-app-path`): a shared link with it
  would load another host's JavaScript into every classmate's page. Embedding a page with Bokeh's
  autoload.js is therefore refused (400): the demo is not meant to be embedded.
- With --reuse-sessions (the hosted mode), the session Panel keeps to render a page for later GETs is
  never handed to a visitor: Panel gives the visitor who made it its own token, so that visitor's
  messages would change the page every later visitor gets. The kept session is made first, and the
  visitor gets a new session like everyone after.
- Every answer carries the hosted mode's security headers (security-headers.conf beside this module: the
  Content-Security-Policy and the others), on `python -m lineare.app` too.

`install()` patches Bokeh's handlers, Tornado's default headers and the logging record factory; plain
`panel serve` runs without.
"""
import logging
import os
import re
import secrets
import tempfile
from pathlib import Path

log = logging.getLogger("lineare")
KEY_BYTES = 48                                   # Bokeh asks for at least 32 characters
HEADERS_FILE = Path(__file__).resolve().parent / "security-headers.conf"
CLIENT_ARGUMENTS = ("bokeh-token", "bokeh-session-id")      # the only bokeh-* arguments a request keeps
CLOSED = ("WebSocketClosedError", "StreamClosedError", "ConnectionResetError", "BrokenPipeError")


class SecretKeyProblem(ValueError):
    """A secret key that cannot be used (too short, unreadable)."""


def secret_key(path=None):
    """The key that signs session ids.

    path: a file holding it, shared by every server process of one demo (made, readable by its
    owner only, when missing). Without a path: BOKEH_SECRET_KEY, else a new key for this start
    (sessions do not outlive a restart anyway)."""
    if path is None:
        key = os.environ.get("BOKEH_SECRET_KEY") or secrets.token_urlsafe(KEY_BYTES)
    else:
        path = Path(path)
        if not path.exists():
            _create_once(path, secrets.token_urlsafe(KEY_BYTES))
        try:
            key = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as error:
            raise SecretKeyProblem(f"cannot read the secret key file {path}: {error}") from None
    if len(key) < 32:
        raise SecretKeyProblem("the secret key must be at least 32 characters long (Bokeh's minimum)")
    return key


def _create_once(path, key):
    """Write `key` to `path` unless another process got there first (several servers may start at once)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")      # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(key + "\n")
        os.link(tmp, path)                        # atomic, and fails if the file exists: the first one wins
    except FileExistsError:
        pass
    finally:
        os.remove(tmp)


def malformed(token):
    """True when `token` is not a Bokeh token at all (its session id cannot even be read)."""
    from bokeh.util.token import get_session_id

    try:
        return not isinstance(get_session_id(token), str)
    except Exception:                              # bad base64, not UTF-8, not JSON, not an object …
        return True


def security_headers(path=HEADERS_FILE):
    """{name: value} of the `add_header NAME "VALUE" always;` lines of nginx's security-headers.conf."""
    headers = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        match = re.fullmatch(r'\s*add_header\s+([\w-]+)\s+("([^"]*)"|(\S+))\s+always;\s*', line)
        if match:
            headers[match.group(1)] = match.group(3) if match.group(3) is not None else match.group(4)
    return headers


def drop_client_bokeh_arguments(request):
    """Remove the `bokeh-*` query arguments other than CLIENT_ARGUMENTS from a Tornado request."""
    for arguments in (request.arguments, request.query_arguments):
        for name in [n for n in arguments if n.startswith("bokeh-") and n not in CLIENT_ARGUMENTS]:
            del arguments[name]


def install():
    """Every patch of this module (app/server/patches.py lists them) and the one-line log of closed connections."""
    refuse_malformed_tokens()
    drop_client_urls()
    keep_kept_sessions()
    send_security_headers()
    one_line_for_closed_connections()


def refuse_malformed_tokens():
    """Patch Bokeh's page and websocket handlers (Panel's inherit them): a malformed token gets a 400 page or a
    closed socket and one log line."""
    from bokeh.protocol.exceptions import ProtocolError
    from bokeh.server.views.session_handler import SessionHandler
    from bokeh.server.views.ws import WSHandler
    from tornado.web import HTTPError

    get_session, open_socket = SessionHandler.get_session, WSHandler.open
    if getattr(get_session, "lineare", False):
        return

    async def checked_get_session(self):
        token = self.get_argument("bokeh-token", default=None)
        if token is not None and malformed(token):
            raise HTTPError(400, reason="Malformed bokeh-token")        # Tornado logs the request: one line
        return await get_session(self)

    def checked_open(self, *args, **kwargs):
        token = getattr(self, "_token", None)
        if token is not None and malformed(token):
            log.warning("websocket %s refused: malformed token", self.request.path)
            self.close(1008, "malformed token")
            return None
        try:
            return open_socket(self, *args, **kwargs)
        except ProtocolError as error:            # expired or unsigned token: Bokeh closed it already
            log.warning("websocket %s refused: %s", self.request.path, error)
            return None

    checked_get_session.lineare = True
    SessionHandler.get_session, WSHandler.open = checked_get_session, checked_open


def drop_client_urls():
    """Patch Bokeh's page handler: the bokeh-* arguments a link may not choose are dropped before Panel copies the
    arguments into the token."""
    from bokeh.server.views.session_handler import SessionHandler

    prepare = SessionHandler.prepare
    if getattr(prepare, "lineare", False):
        return

    async def prepare_without_client_urls(self):
        drop_client_bokeh_arguments(self.request)
        return await prepare(self)

    prepare_without_client_urls.lineare = True
    SessionHandler.prepare = prepare_without_client_urls


def keep_kept_sessions():
    """Patch Panel's page handler. Panel's DocHandler.get makes the kept session on a page's first GET and hands
    that GET its token; later GETs get a new session id. Made here before Panel's get, the first GET is a later one
    too."""
    from panel.config import config
    from panel.io.server import DocHandler
    from panel.io.state import state

    get = DocHandler.get
    if getattr(get, "lineare", False):
        return

    async def get_without_the_kept_session(self, *args, **kwargs):
        path = self.request.path
        key_func = state._session_key_funcs.get(path) or config.session_key_func
        if config.reuse_sessions and (key_func is None or key_func(self.request) not in state._sessions):
            # a session id of the server's own, never one of the visitor's token (that visitor would hold it)
            given = {name: self.request.arguments.pop(name) for name in CLIENT_ARGUMENTS
                     if name in self.request.arguments}
            header = self.request.headers.pop("Bokeh-Session-Id", None)
            try:
                await self.get_session()             # Panel keeps it (and its key function) for the page
            finally:
                self.request.arguments.update(given)
                if header is not None:
                    self.request.headers["Bokeh-Session-Id"] = header
        return await get(self, *args, **kwargs)

    get_without_the_kept_session.lineare = True
    DocHandler.get = get_without_the_kept_session


def send_security_headers():
    """Patch Tornado's base handler: every answer carries security-headers.conf's headers."""
    from tornado.web import RequestHandler

    headers, default = security_headers(), RequestHandler.set_default_headers
    if getattr(default, "lineare", False):
        return

    def set_default_headers(self):
        default(self)
        for name, value in headers.items():
            self.set_header(name, value)

    set_default_headers.lineare = True
    RequestHandler.set_default_headers = set_default_headers


def one_line_for_closed_connections():
    """Errors of connections that went away, in one line (a log record factory: Python's public hook, no patch)."""
    make = logging.getLogRecordFactory()
    if getattr(make, "lineare", False):
        return

    def factory(*args, **kwargs):
        record = make(*args, **kwargs)
        error = record.exc_info[1] if isinstance(record.exc_info, tuple) else None
        if error is not None and type(error).__name__ in CLOSED:
            first = record.getMessage().splitlines()[0] if record.getMessage() else ""
            record.msg, record.args = f"{first} ({type(error).__name__}: the visitor's connection closed)", ()
            record.exc_info = record.exc_text = None
        return record

    factory.lineare = True
    logging.setLogRecordFactory(factory)
