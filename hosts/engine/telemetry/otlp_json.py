"""OTLP/JSON: what the OpenTelemetry SDK hands an exporter, as the `payload` of an otlp/export*
notification (an `ExportLogsServiceRequest`, `ExportTraceServiceRequest` or
`ExportMetricsServiceRequest` value).

The records are encoded by OpenTelemetry's own protobuf encoders (the ones its OTLP exporters
send), then written in the OTLP/JSON mapping: protobuf's JSON mapping with field names in
lowerCamelCase and enums as integers, except that trace and span ids are hex strings rather
than base64, as the OTLP specification requires of JSON.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk.metrics.export import MetricsData
from opentelemetry.sdk.trace import ReadableSpan

#: The fields OTLP/JSON writes as hex: every id of a span, a link, a log record, an exemplar.
_HEX_IDS = frozenset({"traceId", "spanId", "parentSpanId"})


def logs_payload(records: Sequence[ReadableLogRecord]) -> dict[str, Any]:
    """An `ExportLogsServiceRequest` of these log records."""
    return _json(encode_logs(records))


def spans_payload(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """An `ExportTraceServiceRequest` of these ended spans."""
    return _json(encode_spans(spans))


def metrics_payload(data: MetricsData) -> dict[str, Any]:
    """An `ExportMetricsServiceRequest` of one collection."""
    return _json(encode_metrics(data))


def _json(message: Message) -> dict[str, Any]:
    value: dict[str, Any] = MessageToDict(message, use_integers_for_enums=True)
    _hex_ids(value)
    return value


def _hex_ids(value: Any) -> None:
    """Rewrite, in place, every id protobuf's mapping wrote in base64 as OTLP's hex."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in _HEX_IDS and isinstance(item, str):
                value[key] = base64.b64decode(item).hex()
            else:
                _hex_ids(item)
    elif isinstance(value, list):
        for item in value:
            _hex_ids(item)
