"""The offline provider on a loopback socket: a stdlib HTTP/1.1 server.

Tuned for per-turn latency, since benchmarks compare loop overhead against
it: keep-alive connections, one thread per connection, ``TCP_NODELAY``, one
buffered write per response (headers and body leave in a single flush) and
no per-request logging unless ``verbose``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from .model import ScriptedModel
from .transport import route

__all__ = ["OfflineServer", "Served"]


@dataclasses.dataclass(frozen=True, slots=True)
class Served:
    """One reply the server sent: what it answered, and the response's id."""

    method: str
    path: str
    status: int
    response_id: str | None
    at: float


class ClientGone(Exception):
    """The client's connection ended before its request's body came whole."""


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    model: ScriptedModel
    verbose: bool
    counter: itertools.count[int]
    delay: float
    served: list[Served]
    lock: threading.Lock

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hung up (a killed worker, an abandoned request) is not
        # a server error worth a traceback.
        error = sys.exc_info()[1]
        if isinstance(error, ConnectionResetError | BrokenPipeError):
            return
        super().handle_error(request, client_address)


class _HTTPServer6(_HTTPServer):
    address_family = socket.AF_INET6


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "WinkOfflineProvider/1.0"
    sys_version = ""
    wbufsize = 1 << 16  # flushed once per request by handle_one_request()
    timeout = 120  # close idle keep-alive connections eventually
    server: _HTTPServer
    arrived = 0.0

    def setup(self) -> None:
        super().setup()
        with contextlib.suppress(OSError):  # not a TCP socket
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self) -> None:
        self._dispatch()

    def do_GET(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    def _read_body(self) -> bytes:
        """The request's body; ``ClientGone`` if the connection ended before
        all of it came (a client killed while it sent)."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                line = self.rfile.readline()
                if not line:
                    raise ClientGone
                size = int(line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunk = self.rfile.read(size)
                if len(chunk) < size:
                    raise ClientGone
                chunks.append(chunk)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        if len(body) < length:
            raise ClientGone
        return body

    def parse_request(self) -> bool:
        self.arrived = time.monotonic()  # its request line was just read
        return super().parse_request()

    def _dispatch(self) -> None:
        # A provider that answers in ``delay`` answers ``delay`` after the
        # request arrived: its own work is part of that time, not added to it.
        arrived = self.arrived
        try:
            body = self._read_body()
        except ClientGone:
            # nobody to answer, and nothing was asked: neither answered nor
            # served (as a real server never sees a request cut short)
            self.close_connection = True
            return
        reply = route(self.server.model, self.command, self.path, body)
        response_id = self._response_id(reply)
        if self.server.delay and self.command == "POST":
            time.sleep(max(0.0, arrived + self.server.delay - time.monotonic()))
        # served once it is answered: a client that gave up during the hold
        # (a deadline) was not
        entry = Served(self.command, self.path, reply.status, response_id, time.time())
        with self.server.lock:
            self.server.served.append(entry)
        self.send_response_only(reply.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply.body)))
        self.send_header("x-request-id", f"req_offline_{next(self.server.counter)}")
        for name, value in reply.headers:
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(reply.body)
        if self.server.verbose:
            self.log_request(reply.status, len(reply.body))

    def _response_id(self, reply: Any) -> str | None:
        if reply.status == 200 and self.path.rstrip("/").endswith("/responses"):
            with contextlib.suppress(ValueError, AttributeError):
                return json.loads(reply.body).get("id")
        return None

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            sys.stderr.write(f"offline-provider: {format % args}\n")


class OfflineServer:
    """The offline Responses API on ``http://host:port/v1``.

    ``port=0`` picks a free port. ``start()`` serves from a daemon thread (and
    returns ``self``), ``stop()`` shuts down; ``serve_forever()`` serves in
    the foreground. Also a context manager: ``with OfflineServer() as s:``.

    ``delay``: every ``POST`` is answered that many seconds after its request
    line arrived (a slow model; the server's own work is part of the delay,
    as a real provider's is part of its latency); ``served`` lists every reply
    sent, with the response id (tests use it to
    check that no response was requested twice).
    """

    def __init__(
        self,
        model: ScriptedModel | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        verbose: bool = False,
        delay: float = 0.0,
    ) -> None:
        if delay < 0:
            raise ValueError("delay must not be negative.")
        server_class = _HTTPServer6 if ":" in host else _HTTPServer
        self.httpd = server_class((host, port), _Handler)
        self.httpd.model = model if model is not None else ScriptedModel()
        self.httpd.verbose = verbose
        self.httpd.counter = itertools.count(1)
        self.httpd.delay = delay
        self.httpd.served = []
        self.httpd.lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def served(self) -> list[Served]:
        """A copy of the replies sent so far, oldest first."""
        with self.httpd.lock:
            return list(self.httpd.served)

    @property
    def host(self) -> str:
        """The bound address (``127.0.0.1`` when bound to every interface)."""
        host = str(self.httpd.server_address[0])
        if host in ("0.0.0.0", "::"):
            return "127.0.0.1"
        return f"[{host}]" if ":" in host else host

    @property
    def port(self) -> int:
        """The bound port (useful after ``port=0``)."""
        return int(self.httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """The ``base_url`` for ``openai.OpenAI``: ``http://host:port/v1``."""
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> OfflineServer:
        """Serve from a background daemon thread; returns ``self``."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self.httpd.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=f"offline-provider:{self.port}",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the listening socket."""
        if self._thread is not None:
            self.httpd.shutdown()
            self._thread.join()
            self._thread = None
        self.httpd.server_close()

    def serve_forever(self) -> None:
        """Serve in the foreground until interrupted, then close the socket."""
        try:
            self.httpd.serve_forever(poll_interval=0.2)
        finally:
            self.httpd.server_close()

    def __enter__(self) -> OfflineServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
