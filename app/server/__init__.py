"""What `python -m app` adds to Panel's server, one concern a module (each module's docstring states what it keeps):

- `building`: pages built on a thread of their own, the cap on builds waiting, and the build patches;
- `websocket`: what a visitor's websocket may change (the allow-list), idle and too-old connections closed;
- `limits`: what one page, connection or address may hold or ask (websockets and pulls per page, half-sent requests,
  builds and pulls taking turns address by address);
- `security`: signed session ids, refused client-chosen script addresses, the security headers
  (`security-headers.conf`, which the hosted mode's nginx includes too);
- `memory`: memory given back once visitors leave;
- `panel_setup`: the `panel serve --setup` script of every multi-process server (kept pages per page and
  frame, stylesheets served locally for sessions built for a websocket).

Plain `panel serve app/pages/*.py` runs without any of them.
"""
