"""A real OTLP/HTTP trace receiver for the tests: an HTTP server on
127.0.0.1 (an ephemeral port, in a thread) that accepts ``POST /v1/traces``,
decodes each body as OpenTelemetry's ``ExportTraceServiceRequest``
(``opentelemetry-proto``) and keeps its spans, as a collector would."""

from __future__ import annotations

import dataclasses
import gzip
import threading
import zlib
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


def _value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    if which == "array_value":
        return [_value(item) for item in value.array_value.values]
    if which == "kvlist_value":
        return _attributes(value.kvlist_value.values)
    return getattr(value, which) if which else None


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs}


@dataclasses.dataclass
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    kind: int
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    status_code: int
    scope: str
    resource: dict[str, Any]


class OtlpReceiver:
    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.bodies: list[bytes] = []
        self.requests = 0
        self.condition = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                encoding = (self.headers.get("Content-Encoding") or "").lower()
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                if self.path != "/v1/traces":
                    self.send_response(404)
                    self.end_headers()
                    return
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                receiver._add(body, request)
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def start(self) -> OtlpReceiver:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _add(self, body: bytes, request: ExportTraceServiceRequest) -> None:
        spans = []
        for resource_spans in request.resource_spans:
            resource = _attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    spans.append(
                        ReceivedSpan(
                            name=span.name,
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_span_id=span.parent_span_id.hex(),
                            kind=span.kind,
                            start_ns=span.start_time_unix_nano,
                            end_ns=span.end_time_unix_nano,
                            attributes=_attributes(span.attributes),
                            events=[
                                (event.name, _attributes(event.attributes))
                                for event in span.events
                            ],
                            status_code=span.status.code,
                            scope=scope_spans.scope.name,
                            resource=resource,
                        )
                    )
        with self.condition:
            self.requests += 1
            self.bodies.append(body)
            self.spans.extend(spans)
            self.condition.notify_all()

    def wait_for(
        self, done: Callable[[list[ReceivedSpan]], bool], timeout: float = 10
    ) -> list[ReceivedSpan]:
        """The spans received, once ``done(spans)`` (or the timeout)."""
        with self.condition:
            self.condition.wait_for(lambda: done(self.spans), timeout)
            return list(self.spans)

    def of_trace(self, trace_id: str) -> list[ReceivedSpan]:
        with self.condition:
            return [span for span in self.spans if span.trace_id == trace_id]


__all__ = ["OtlpReceiver", "ReceivedSpan"]
