"""The host's log lines as OpenTelemetry log records: a logging handler, put beside the console's
on the loggers that write it, that emits each record it is handed into an OpenTelemetry
`LoggerProvider` (its processors batch them for the ahp-otlp logs channels and a collector).

A line is the record the console prints: its time, its level (as OTLP's severity), its logger
(the instrumentation scope), its message (with the traceback the console prints after it) and
what the record carries besides (`extra=`: the turn, the chat, the peer), as attributes.
"""

from __future__ import annotations

import logging
from typing import Any

from opentelemetry._logs import SeverityNumber
from opentelemetry.sdk._logs import LoggerProvider

#: OTLP's severity bands by their short names, each its lowest number (logs/{level}).
SEVERITIES: dict[str, int] = {
    "trace": SeverityNumber.TRACE.value,
    "debug": SeverityNumber.DEBUG.value,
    "info": SeverityNumber.INFO.value,
    "warn": SeverityNumber.WARN.value,
    "error": SeverityNumber.ERROR.value,
    "fatal": SeverityNumber.FATAL.value,
}

#: Python's levels, highest first, with the OTLP severity and text each begins.
_BANDS: tuple[tuple[int, SeverityNumber, str], ...] = (
    (logging.CRITICAL, SeverityNumber.FATAL, "FATAL"),
    (logging.ERROR, SeverityNumber.ERROR, "ERROR"),
    (logging.WARNING, SeverityNumber.WARN, "WARN"),
    (logging.INFO, SeverityNumber.INFO, "INFO"),
    (logging.DEBUG, SeverityNumber.DEBUG, "DEBUG"),
    (logging.NOTSET, SeverityNumber.TRACE, "TRACE"),
)

#: What every LogRecord has: the rest of its attributes are what its caller gave (`extra=`).
_STANDARD = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName"}


def severity(levelno: int) -> tuple[SeverityNumber, str]:
    """The OTLP severity (number and text) of a Python log level."""
    for floor, number, text in _BANDS:
        if levelno >= floor:
            return number, text
    return SeverityNumber.TRACE, "TRACE"


def python_level(lowest: int) -> int:
    """The Python level a handler must take to be handed every record of OTLP severity
    `lowest` and above."""
    for floor, number, _ in reversed(_BANDS):
        if number.value >= lowest:
            return floor
    return logging.CRITICAL


def _attribute(value: Any) -> Any:
    """A value OpenTelemetry takes as an attribute: as it is, or as the console prints it."""
    if isinstance(value, str | bool | int | float):
        return value
    return str(value)


class LogLines(logging.Handler):
    """Hands every record it is given to `provider`, under the record's logger's name."""

    def __init__(self, provider: LoggerProvider) -> None:
        super().__init__()
        self.provider = provider
        # The message and, after it, the traceback and stack the console prints.
        self.setFormatter(logging.Formatter("%(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            number, text = severity(record.levelno)
            attributes = {
                key: _attribute(value)
                for key, value in vars(record).items()
                if key not in _STANDARD and value is not None
            }
            self.provider.get_logger(record.name).emit(
                timestamp=int(record.created * 1e9),
                severity_number=number,
                severity_text=text,
                body=self.format(record),
                attributes=attributes,
            )
        except Exception:
            self.handleError(record)
