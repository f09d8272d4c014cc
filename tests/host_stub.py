"""A stand-in for a Lineare server behind the hosted mode's nginx (tests/test_host.py): it answers in
a second what nginx should pass, and tells what it received.

    python tests/host_stub.py PORT

GET /liveness, GET a page (/, /state, …), /admin, /static/… answer JSON: this server's port, the
path, the query arguments, the headers and the client address as Tornado sees them with xheaders
(as `panel serve --use-xheaders`). A websocket at /ws or /<page>/ws sends the port, then echoes.
"""
import json
import sys

import tornado.ioloop
import tornado.web
import tornado.websocket

PORT = int(sys.argv[1]) if __name__ == "__main__" else 0


class Echo(tornado.web.RequestHandler):
    def get(self, *_parts):
        self.set_header("Content-Type", "application/json")
        self.write(json.dumps({"port": PORT, "path": self.request.path,
                               "args": {k: [v.decode() for v in vs] for k, vs in self.request.arguments.items()},
                               "headers": dict(self.request.headers), "remote_ip": self.request.remote_ip,
                               "protocol": self.request.protocol}))


class Socket(tornado.websocket.WebSocketHandler):
    def check_origin(self, origin):
        return True

    def open(self, *_parts):
        self.write_message(str(PORT))

    def on_message(self, message):
        self.write_message(message)


if __name__ == "__main__":
    app = tornado.web.Application([(r"/(?:[\w-]+/)?ws", Socket), (r"/.*", Echo)])
    app.listen(PORT, address="127.0.0.1", xheaders=True)
    tornado.ioloop.IOLoop.current().start()
