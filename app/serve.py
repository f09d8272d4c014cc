"""Serve Lineare: `python -m app` (or `python -m app.serve`), then open http://localhost:5006.

Every page is a route of one Panel server; all JavaScript, CSS and fonts come from the server
itself (Bokeh's and Panel's bundles, no CDN), so the app works with the network cut. Options pass
through to `panel serve`'s engine (`pn.serve`): --port, --address, --allow-websocket-origin for a
hosted instance, --num-procs to use several processes (sessions stay independent either way).
"""
import argparse

import panel as pn

import app.dashboards.state_fills_up  # noqa: F401  (imports torch and the engine once, at start-up)
from app.dashboards import DASHBOARDS
from app.i18n import compile_catalogs
from app.shell import page

ROUTES = {"/": page(None), **{f"/{d.slug}": page(d.slug) for d in DASHBOARDS}}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m app", description="Serve the Lineare dashboards.")
    parser.add_argument("--port", type=int, default=5006)
    parser.add_argument("--address", default="localhost", help="interface to listen on (0.0.0.0: all)")
    parser.add_argument("--allow-websocket-origin", action="append", default=None, metavar="HOST[:PORT]",
                        help="hosts allowed to open the websocket (repeat; needed behind a proxy)")
    parser.add_argument("--num-procs", type=int, default=1, help="server processes (0: one per core)")
    parser.add_argument("--show", action="store_true", help="open a browser tab")
    args = parser.parse_args(argv)

    compile_catalogs(only_stale=True)            # a fresh checkout has .po files only
    pn.extension(notifications=False)
    origins = args.allow_websocket_origin or [f"localhost:{args.port}", f"127.0.0.1:{args.port}"]
    pn.serve(ROUTES, port=args.port, address=args.address, websocket_origin=origins,
             num_procs=args.num_procs, show=args.show, title="Lineare", start=True,
             # bounded work per visitor: idle sessions are closed and their stores freed
             check_unused_sessions=10_000, unused_session_lifetime=60_000)


if __name__ == "__main__":
    main()
