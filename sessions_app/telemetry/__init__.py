"""Sessions exported as OpenTelemetry traces (docs/opentelemetry.md): when
``OTEL_EXPORTER_OTLP_ENDPOINT`` is set, each session that ends is sent, once
its end committed, to an OTLP/HTTP collector, read from its recorded rows.
Off by default; never blocks or fails a run. ``apps.py`` connects
``on_session_ended`` to the store's ``session_ended`` signal."""

from .exporting import export_session, forget_exported, on_session_ended
from .provider import built, enabled, force_flush, shutdown, tracer_provider

__all__ = [
    "built",
    "enabled",
    "export_session",
    "force_flush",
    "forget_exported",
    "on_session_ended",
    "shutdown",
    "tracer_provider",
]
