"""OpenTelemetry exporters that export into this process: each hands the batch the SDK's
processor gives it to a function of the engine's (which writes it as OTLP/JSON and says it on
the ahp-otlp channels), where an OTLP exporter would send it to a collector."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult


class LogsToEngine(LogRecordExporter):
    """Called on the batch processor's own thread: `hand` must be safe to call there."""

    def __init__(self, hand: Callable[[Sequence[ReadableLogRecord]], None]) -> None:
        self._hand = hand

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        self._hand(batch)
        return LogRecordExportResult.SUCCESS

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class SpansToEngine(SpanExporter):
    """Called where a span ends (a simple processor): on the engine's loop."""

    def __init__(self, hand: Callable[[Sequence[ReadableSpan]], None]) -> None:
        self._hand = hand

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self._hand(spans)
        return SpanExportResult.SUCCESS
