"""A local alert webhook for the flow tests: an HTTP server on 127.0.0.1 that records every JSON body POSTed
to it, so a test can assert which alerts the flows sent."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer


class WebhookReceiver:
    """``start()`` serves on a free port (``url``); ``received`` lists the decoded POST bodies in arrival order."""

    def __init__(self) -> None:
        self.received: list = []
        self._server: HTTPServer | None = None

    def start(self) -> str:
        received = self.received

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self._server = HTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self.url

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}/alerts"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
