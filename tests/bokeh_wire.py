"""A raw Bokeh protocol client for tests: it opens a page's websocket as a browser does and sends what a
hostile client could (any PATCH-DOC event, any message type), then reads the server's answers.

    async with Wire.open(server_url, "/state") as wire:
        document = await wire.pull()                        # the session's Document, as Bokeh's client has it
        reply = await wire.patch([{"kind": "TitleChanged", "title": "evil"}])      # "OK" or "ERROR"
"""
import asyncio
import json
import re
import urllib.request
from collections import Counter

from bokeh.document import Document
from bokeh.protocol import Protocol
from bokeh.protocol.receiver import Receiver
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

import lineare.app.components.later  # noqa: F401  (our components' model types, to read a pulled Document;
import lineare.app.components.lesson  # noqa: F401   Panel's come with them)
import lineare.app.components.player  # noqa: F401
import lineare.app.components.presence  # noqa: F401

PROTOCOL = Protocol()


def page_token(url):
    """The session token of the page at `url` (a GET, as a browser's first request)."""
    with urllib.request.urlopen(url, timeout=120) as response:
        page = response.read().decode("utf-8", "replace")
    return re.search(r'"token":\s*"([^"]+)"', page).group(1)


class Wire:
    def __init__(self, connection):
        self.connection = connection
        self.receiver = Receiver(PROTOCOL)

    @classmethod
    def open(cls, server_url, path, query="", token=None):
        """A connection to a new session of the page (a GET first), or to the session of `token`."""
        return _Opened(cls, server_url, path, query, token)

    async def read(self, timeout=60):
        """The next whole message from the server, or None once the connection is closed."""
        while True:
            fragment = await asyncio.wait_for(self.connection.read_message(), timeout)
            if fragment is None:
                return None
            message = await self.receiver.consume(fragment)
            if message is not None:
                return message

    async def send(self, message):
        await self.send_raw(message.header_json, message.metadata_json, message.content_json)

    async def send_raw(self, *fragments):
        for fragment in fragments:
            await self.connection.write_message(fragment, binary=isinstance(fragment, bytes))

    @classmethod
    async def connect(cls, server_url, path, token):
        """An open connection to the session of `token` (close it with `.connection.close()`)."""
        return await _Opened(cls, server_url, path, "", token).__aenter__()

    async def reply(self, timeout=60):
        """The next OK or ERROR (skipping the PATCH-DOCs the server sends of its own), or None if closed."""
        while True:
            message = await self.read(timeout)
            if message is None or message.msgtype in ("OK", "ERROR"):
                return message

    async def pull(self):
        await self.send(PROTOCOL.create("PULL-DOC-REQ"))
        while True:
            message = await self.read()
            if message.msgtype == "PULL-DOC-REPLY":
                document = Document()
                message.push_to_document(document)
                return document

    async def pull_whole(self):
        """The document with every section made (app/components/later.py): as a browser that scrolled to the
        end, it says each marker came near, then pulls again."""
        document = await self.pull()
        markers = [model for model in document.models   # Panel names Near's Bokeh model Near1, Near2, …
                   if re.fullmatch(r"Near\d*", type(model).__name__) and not model.seen]
        for marker in markers:
            assert await self.patch([{"kind": "ModelChanged", "model": {"id": marker.id}, "attr": "seen",
                                      "new": True}]) == ("OK", None)
        # the server may answer the patch before it has put the section in the marker's place: pull until
        # no marker is left (a browser sees the section when it comes)
        for _attempt in range(100):
            if not markers:
                return document
            document = await self.pull()
            markers = [model for model in document.models if re.fullmatch(r"Near\d*", type(model).__name__)]
            if markers:
                await asyncio.sleep(0.1)
        raise AssertionError(f"sections not made after their markers were seen: {len(markers)}")

    def message(self, msgtype, content):
        """A message of any type with any content (what a browser would never send)."""
        kind = PROTOCOL._messages[msgtype] if msgtype in PROTOCOL._messages else PROTOCOL._messages["PATCH-DOC"]
        header = kind.create_header()
        header["msgtype"] = msgtype
        return kind(header, {}, content)

    async def patch(self, events):
        """Send a PATCH-DOC with these JSON events; the server's reply ("OK", "ERROR") and its text."""
        await self.send(self.message("PATCH-DOC", {"events": events}))
        reply = await self.reply()
        return (None, None) if reply is None else (reply.msgtype, reply.content.get("text"))


class _Opened:
    def __init__(self, wire, server_url, path, query, token):
        self.wire, self.url, self.path, self.query, self.token = wire, server_url, path, query, token

    async def __aenter__(self):
        token = self.token or await asyncio.to_thread(page_token, f"{self.url}{self.path}{self.query}")
        host = self.url.split("//")[1]
        request = HTTPRequest(f"ws://{host}{self.path.rstrip('/')}/ws", headers={"Origin": f"http://{host}"})
        connection = await websocket_connect(request, subprotocols=["bokeh", token])
        self.opened = self.wire(connection)
        ack = await self.opened.read()
        assert ack is not None and ack.msgtype == "ACK", ack
        return self.opened

    async def __aexit__(self, *_exc):
        self.opened.connection.close()


def fingerprint(document):
    """What a visitor sees of a document's data: the title, the number of roots, and every data source's
    columns as (name, JSON text) pairs."""
    from bokeh.models import ColumnDataSource

    columns = []
    for model in document.models:
        if isinstance(model, ColumnDataSource):
            for name in sorted(model.data):
                columns.append((name, json.dumps(_plain(model.data[name]), default=str)))
    return {"title": document.title, "roots": len(document.roots), "columns": Counter(columns)}


def stable(before, again):
    """The columns two fresh sessions both show (not a page's measured times, nor a count being made)."""
    return before["columns"] & again["columns"]


def changed(before, again, after):
    """What `after` shows differently from `before`, among what two fresh sessions `before` and `again`
    both showed: a title, a number of roots, the names of the columns it lacks."""
    if (before["title"], before["roots"]) != (after["title"], after["roots"]):
        return [("title and roots", after["title"], after["roots"])]
    return sorted(name for name, _text in stable(before, again) - after["columns"])


def normalized(document_json):
    """A document's JSON (a PULL-DOC reply's content) with what differs between two builds of the same page named
    in order of appearance: Bokeh's ids (p1234, counted through the process), Panel's model names (Column00225,
    from a counter), Python ids in a template's root names, and the order of a set's entries (subscribed events)."""
    ids, names = {}, {}
    text = re.sub(r'(?<=[":])p\d+(?=")', lambda m: ids.setdefault(m.group(0), f"id{len(ids)}"), document_json)
    text = re.sub(r'(?<=")([A-Z][A-Za-z]*)\d{5}(?=")',
                  lambda m: names.setdefault(m.group(0), f"{m.group(1)}#{len(names)}"), text)
    text = re.sub(r'(?<="type":"set","entries":\[)[^\[\]]*(?=\])',        # a Python set's order: its process's hashes
                  lambda m: ",".join(sorted(m.group(0).split(","))), text)
    return re.sub(r"\d{9,}", "N", text)


def _plain(values):
    try:
        return [_plain(v) for v in values] if not isinstance(values, (str, bytes)) else values
    except TypeError:
        return values if not isinstance(values, float) else round(values, 9)
