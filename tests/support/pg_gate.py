"""A PostgreSQL server that can go away and come back at the same address: a TCP forwarder on a fixed local port
in front of the real server. Closed, nothing listens on the port (a refused connection: an outage); open, every
connection is passed through to the server. Tests of the spool need this: a payload spooled during an outage
is meant for that address, and only that address may take it."""

from __future__ import annotations

import socket
import threading
import urllib.parse


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresGate:
    """``url``: the server's URL with its host and port replaced by the gate's (query kept). Starts closed."""

    def __init__(self, server_url: str):
        parts = urllib.parse.urlsplit(server_url)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 5432)
        self.port = free_port()
        netloc = (parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else "") + f"127.0.0.1:{self.port}"
        self.url = urllib.parse.urlunsplit(parts._replace(netloc=netloc))
        self._listener: socket.socket | None = None
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()

    def open(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def close(self) -> None:
        """Stops listening and cuts every connection passed through."""
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        with self._lock:
            for s in self._open:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
            self._open.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed
            try:
                server = socket.create_connection(self.upstream, timeout=10)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            with self._lock:
                self._open += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
