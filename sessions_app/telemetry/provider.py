"""The process's OpenTelemetry tracer: built once, lazily, when an OTLP
endpoint is set (``settings.WINK_OTEL_TRACES_ENDPOINT``), never otherwise.

Spans go to the SDK's ``BatchSpanProcessor``: ``span.end()`` only queues
them; a background thread sends them in batches over OTLP/HTTP (protobuf).
A slow or dead collector costs that thread its export timeout, never a run;
a full queue drops spans (the SDK logs it). The provider is the project's
own (not installed as OpenTelemetry's global one), so an application's own
instrumentation keeps its provider.

Trace and span ids are chosen by the caller (``RowIds``): the exporter
derives them from the session and its rows, so a session exported twice
(a crash before the process noted it, a retry) lands on the same trace
with the same spans.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator

logger = logging.getLogger(__name__)

#: Spans the exporter queues before dropping: several long sessions' worth (a
#: session exports at most 4 x ``rows.MAX_ROWS`` + 1 spans).
QUEUE_SIZE = 16_384

#: the instrumentation scope of every span the project exports
SCOPE = "wink_catalog.sessions"

_next_ids: contextvars.ContextVar[tuple[int, int] | None] = contextvars.ContextVar(
    "wink_otel_next_ids", default=None
)


class RowIds(IdGenerator):
    """Ids set by ``using(trace_id, span_id)`` for the span started inside
    it; random ones otherwise."""

    def __init__(self) -> None:
        self._random = RandomIdGenerator()

    def generate_trace_id(self) -> int:
        ids = _next_ids.get()
        return ids[0] if ids is not None else self._random.generate_trace_id()

    def generate_span_id(self) -> int:
        ids = _next_ids.get()
        return ids[1] if ids is not None else self._random.generate_span_id()


@contextlib.contextmanager
def using(trace_id: int, span_id: int) -> Iterator[None]:
    """The span started inside gets these ids (a child keeps its parent's
    trace id whatever ``trace_id`` says)."""
    token = _next_ids.set((trace_id, span_id))
    try:
        yield
    finally:
        _next_ids.reset(token)


_lock = threading.Lock()
# the configuration it was built for, the provider and its exporter
_built: tuple[tuple[Any, ...], TracerProvider, OTLPSpanExporter] | None = None


def _config() -> tuple[Any, ...]:
    return (settings.WINK_OTEL_TRACES_ENDPOINT, settings.WINK_OTEL_SERVICE_NAME)


def enabled() -> bool:
    return bool(settings.WINK_OTEL_TRACES_ENDPOINT)


def tracer_provider() -> TracerProvider | None:
    """The process's provider for the configured endpoint (built on first
    use; another endpoint, as tests set, replaces it); ``None`` when no
    endpoint is set: nothing is built, nothing exported."""
    global _built
    if not enabled():
        return None
    config = _config()
    with _lock:
        if _built is not None and _built[0] == config:
            return _built[1]
        old = _built
        endpoint, service_name = config
        provider = TracerProvider(
            resource=Resource.create({"service.name": service_name}),
            id_generator=RowIds(),
        )
        # headers, timeout, compression and certificates: the exporter reads
        # the standard OTEL_EXPORTER_OTLP_* variables itself
        exporter = OTLPSpanExporter(endpoint=endpoint)
        # room for a whole session's spans (4 kinds of MAX_ROWS rows and its
        # root) and more: a full queue drops the oldest, other sessions' too
        provider.add_span_processor(
            BatchSpanProcessor(exporter, max_queue_size=QUEUE_SIZE)
        )
        _built = (config, provider, exporter)
    if old is not None:
        _shut(old[1], old[2], drop=False)
    # scheme and host only: a URL may carry credentials (user:token@)
    parts = urlsplit(endpoint)
    logger.info(
        "Exporting sessions as OpenTelemetry traces to %s://%s",
        parts.scheme,
        parts.hostname or "",
    )
    return provider


def built() -> TracerProvider | None:
    """The provider built so far, if any (without building one)."""
    return _built[1] if _built is not None else None


def force_flush(timeout_millis: int = 10_000) -> bool:
    """Send the spans queued so far; whether that finished in time."""
    provider = built()
    return provider.force_flush(timeout_millis) if provider is not None else True


def shutdown(*, drop: bool = False) -> None:
    """Flush and stop the built provider, which is then forgotten (the next
    export builds a new one). ``drop``: stop sending first, dropping what a
    dead collector holds up (the flush would wait out the exporter's
    retries, up to ``OTEL_EXPORTER_OTLP_TIMEOUT``)."""
    global _built
    with _lock:
        old, _built = _built, None
    if old is not None:
        _shut(old[1], old[2], drop=drop)


def _shut(provider: TracerProvider, exporter: OTLPSpanExporter, *, drop: bool) -> None:
    try:
        if drop:
            exporter.shutdown()  # ends its retries at once
        provider.shutdown()
    except Exception:
        logger.warning("Could not shut the OpenTelemetry exporter down", exc_info=True)
