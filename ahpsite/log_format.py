"""AHPD_LOG_FORMAT=json's lines: python-json-logger's, their `time` ISO 8601 with the zone's
offset (`2026-12-06T17:27:53.123+00:00`), which a log shipper reads as one instant wherever
it runs; logging's own asctime has neither the `T` nor a zone."""

from __future__ import annotations

import logging
from datetime import datetime

from pythonjsonlogger.json import JsonFormatter


class JsonLines(JsonFormatter):
    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802
        return (
            datetime.fromtimestamp(record.created).astimezone().isoformat(timespec="milliseconds")
        )
