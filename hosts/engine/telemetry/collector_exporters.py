"""What an operator's collector is sent, where the standard OTEL_EXPORTER_OTLP_* variables
name one: OpenTelemetry's own OTLP exporters (HTTP, protobuf), which read those variables
themselves (endpoint, headers, timeout, compression, certificates), each behind the SDK's
batching processor or periodic reader so that no export waits on the engine's loop."""

from __future__ import annotations

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor


def send_spans(provider: TracerProvider) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))


def send_logs(provider: LoggerProvider) -> None:
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter

    provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))


def metrics_reader(interval_s: float) -> MetricReader:
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    return PeriodicExportingMetricReader(
        OTLPMetricExporter(), export_interval_millis=interval_s * 1000
    )
