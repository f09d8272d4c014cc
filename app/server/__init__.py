"""What `python -m lineare.app` adds to Panel's server, one concern a module (each module's docstring says what it
keeps):

- `patches`: the list of every replacement of a Panel, Bokeh, param or Tornado internal made here (`python -m
  lineare.app --patches`), installed only on a tested set of versions and only where each target is what it expects;
- `building`: pages built on a thread of their own, the cap on builds waiting (all and per address);
- `speedups`: cheaper page builds (the same documents for less CPU);
- `websocket`: what a visitor's websocket may change (the allow-list), idle and too-old connections closed;
- `limits`: what one page, connection or address may hold or ask (websockets and pulls per page, new sessions per
  address, half-sent requests, builds and pulls taking turns address by address);
- `security`: signed session ids, refused client-chosen script addresses, the security headers
  (`security-headers.conf`, which the hosted mode's nginx includes too);
- `memory`: memory given back once visitors leave;
- `panel_setup`: the `panel serve --setup` script of every multi-process server (kept pages per page and
  frame, stylesheets served locally for sessions built for a websocket).

Plain `panel serve app/pages/*.py` runs without any of them.
"""
