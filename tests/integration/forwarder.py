"""A small TCP forwarder standing between a test process and a real broker,
so a test can take the broker away and bring it back (the shared Redis and
RabbitMQ cannot be stopped): ``close()`` stops listening and cuts every open
connection, so a client's next connection is refused as a stopped broker's
would be; ``open()`` listens on the same port again."""

from __future__ import annotations

import contextlib
import socket
import threading
from urllib.parse import urlsplit, urlunsplit


class Forwarder:
    def __init__(self, url: str) -> None:
        """Forward to the host and port of the broker ``url``."""
        parts = urlsplit(url)
        self._url = url
        self.target = (parts.hostname or "127.0.0.1", parts.port or 0)
        self.port = 0
        self._listener: socket.socket | None = None
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        """The broker's URL with this forwarder's port."""
        parts = urlsplit(self._url)
        netloc = parts.netloc.rsplit("@", 1)
        host = f"127.0.0.1:{self.port}"
        netloc[-1] = host
        return urlunsplit(parts._replace(netloc="@".join(netloc)))

    def open(self) -> Forwarder:
        listener = socket.create_server(("127.0.0.1", self.port))  # SO_REUSEADDR
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def close(self) -> None:
        """The broker is gone: no new connection, and the open ones cut."""
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        with self._lock:
            sockets, self._open = self._open, set()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:  # closed
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                if self._listener is not listener:  # closed meanwhile
                    client.close()
                    upstream.close()
                    return
                self._open |= {client, upstream}
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(
                    target=self._pump, args=(source, sink), daemon=True
                ).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
