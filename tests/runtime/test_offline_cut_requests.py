"""The offline provider and a client that dies while it sends: a request whose
body is cut short is neither answered nor counted as served (a real server
never sees it), so a worker killed mid-request leaves no reply behind."""

from __future__ import annotations

import json
import socket

import pytest

from tooling.offline import OfflineServer

BODY = json.dumps({"model": "gpt-5", "input": "hello"}).encode()


def _send(server: OfflineServer, head: bytes, body: bytes) -> bytes:
    """Send ``head`` and ``body``, close our sending side, and read whatever
    comes back until the server closes (b"" when it answers nothing)."""
    with socket.create_connection((server.host, server.port), timeout=60) as sock:
        sock.sendall(head + body)
        sock.shutdown(socket.SHUT_WR)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
        return received


@pytest.mark.parametrize(
    "head, body",
    [
        (
            f"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: "
            f"application/json\r\nContent-Length: {len(BODY)}\r\n\r\n".encode(),
            BODY[: len(BODY) // 2],
        ),
        (
            b"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: "
            b"application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
            f"{len(BODY):x}\r\n".encode() + BODY[:10],
        ),
        (
            b"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: "
            b"application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
            f"{len(BODY):x}\r\n".encode() + BODY + b"\r\n",  # no last chunk
        ),
    ],
    ids=["content-length", "chunk cut", "no last chunk"],
)
def test_a_request_cut_short_is_neither_answered_nor_served(
    head: bytes, body: bytes
) -> None:
    with OfflineServer() as server:
        assert _send(server, head, body) == b""
        assert server.served == []

        whole = (
            f"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: "
            f"application/json\r\nContent-Length: {len(BODY)}\r\n"
            "Connection: close\r\n\r\n"
        ).encode()
        answer = _send(server, whole, BODY)

    assert answer.startswith(b"HTTP/1.1 200")
    assert [entry.status for entry in server.served] == [200]
