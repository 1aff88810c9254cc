"""The ahp-otlp channels: the host's log lines, its turns' spans and its GenAI metrics, said as
otlp/exportLogs, otlp/exportTraces and otlp/exportMetrics to the connections watching them
(those holding diagnostics:read, grants.SUBSCRIBE), and to a collector where the operator
named one (OTEL_EXPORTER_OTLP_*).

The channels are stateless: a subscribe is answered with no snapshot, nothing said on them
takes a serverSeq or is ringed, so nothing is replayed. What they carry is built only while
somebody wants it: the log handler hangs on the loggers only while a logs channel is watched
(at the level of the lowest watcher) or a collector takes logs, a turn gets spans only while
the traces channel is watched or a collector takes traces, and the metrics channel is read
only while watched. The GenAI histograms are recorded at every turn's and tool call's end
whoever watches, because they are cumulative from the process's start.

`ahp-otlp://logs/{level}` is a template: each of OTLP's severity names (trace, debug, info,
warn, error, fatal, in any case) expands it to a channel of its own, opened the first time a
client names it, which is sent every line at that severity or above.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricReader, MetricsData
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from ..channel import Channel
from ..fanout import Fanout
from . import collector_exporters
from .engine_exporters import LogsToEngine, SpansToEngine
from .genai_metrics import GenAiMetrics
from .log_lines import SEVERITIES, LogLines, python_level
from .otlp_json import logs_payload, metrics_payload, spans_payload
from .turn_tracker import FOLLOWED, SessionOf, TurnTracker

log = logging.getLogger("ahpd.telemetry")

KIND = "otlp"
LOGS_PREFIX = "ahp-otlp://logs/"
LOGS_TEMPLATE = LOGS_PREFIX + "{level}"
TRACES_URI = "ahp-otlp://traces"
METRICS_URI = "ahp-otlp://metrics"
#: InitializeResult.telemetry: where each signal is said.
CAPABILITIES = {"logs": LOGS_TEMPLATE, "traces": TRACES_URI, "metrics": METRICS_URI}

#: What each channel says, and when (said_notifications.py, the README's coverage table).
SAID = {
    "otlp/exportLogs": "the host's log lines, batched, to each `ahp-otlp://logs/{level}` "
    "watcher whose level they reach (diagnostics:read)",
    "otlp/exportTraces": "a turn's span and each of its tool calls' as each ends, to "
    "`ahp-otlp://traces` watchers (diagnostics:read)",
    "otlp/exportMetrics": "the GenAI histograms every OTEL_METRIC_EXPORT_INTERVAL (10 s), "
    "to `ahp-otlp://metrics` watchers (diagnostics:read)",
}

#: How long the log processor gathers lines before it says them (one notification a batch).
LOG_BATCH_MS = 200
#: Signals a collector may be sent.
SIGNALS = ("logs", "traces", "metrics")


@dataclass(frozen=True, slots=True)
class TelemetrySettings:
    #: The loggers whose lines the console writes (the handler hangs beside the console's).
    loggers: tuple[str, ...] = ("ahpd",)
    #: How often the metrics are said (OTEL_METRIC_EXPORT_INTERVAL, in ms there).
    metrics_interval_s: float = 10.0
    #: The signals a collector is sent (those OTEL_EXPORTER_OTLP_*ENDPOINT names one for).
    collector: frozenset[str] = field(default_factory=frozenset)


def logs_level(uri: str) -> int | None:
    """The lowest OTLP severity a logs channel's URI asks for; None for any other URI."""
    if not uri.startswith(LOGS_PREFIX):
        return None
    return SEVERITIES.get(uri[len(LOGS_PREFIX) :].lower())


class Telemetry:
    def __init__(
        self,
        fanout: Fanout,
        settings: TelemetrySettings,
        session_of: SessionOf,
        *,
        service_name: str,
        service_version: str,
    ) -> None:
        self._fanout = fanout
        self.settings = settings
        self._resource = Resource.create(
            {"service.name": service_name, "service.version": service_version}
        )
        self.traces = fanout.open(Channel(TRACES_URI, KIND, None))
        self.metrics = fanout.open(Channel(METRICS_URI, KIND, None))
        #: Every logs channel opened, with the lowest severity it is sent.
        self._logs: dict[str, tuple[Channel, int]] = {}
        #: The watched logs channels, as the log processor's thread reads them (replaced
        #: whole on the loop, never changed in place).
        self._log_watched: tuple[tuple[Channel, int], ...] = ()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._log_provider: LoggerProvider | None = None
        self._log_lines: LogLines | None = None
        self._metrics_task: asyncio.Task[None] | None = None
        #: Whether a turn starting now gets spans.
        self.tracing = "traces" in settings.collector

        # Each is shut down by `stop` (the host's), once: not again at the process's exit.
        self._tracer_provider = TracerProvider(resource=self._resource, shutdown_on_exit=False)
        self._tracer_provider.add_span_processor(
            SimpleSpanProcessor(SpansToEngine(self._spans_ended))
        )
        if "traces" in settings.collector:
            collector_exporters.send_spans(self._tracer_provider)
        self._metric_reader = InMemoryMetricReader()
        readers: list[MetricReader] = [self._metric_reader]
        if "metrics" in settings.collector:
            readers.append(collector_exporters.metrics_reader(settings.metrics_interval_s))
        self._meter_provider = MeterProvider(
            resource=self._resource, metric_readers=readers, shutdown_on_exit=False
        )
        self.turns = TurnTracker(
            self._tracer_provider.get_tracer("ahpd.turns"),
            GenAiMetrics(self._meter_provider),
            session_of,
            lambda: self.tracing,
        )
        fanout.on_joined(self._joined)
        fanout.on_left(self._left)

    # -- life -----------------------------------------------------------------------------

    def start(self) -> None:
        """Begin on the running loop: the turns are followed from here on."""
        self._loop = asyncio.get_running_loop()
        self._fanout.said_types = FOLLOWED
        self._fanout.said = self.turns.said
        if "logs" in self.settings.collector:
            self._moved()

    async def stop(self) -> None:
        """Stop saying anything; what a collector is owed is sent (off the loop)."""
        self._fanout.said = None
        self._fanout.said_types = frozenset()
        if self._metrics_task is not None:
            self._metrics_task.cancel()
            self._metrics_task = None
        providers: list[Any] = [self._tracer_provider, self._meter_provider]
        log_provider = self._let_log_lines_go()
        if log_provider is not None:
            providers.append(log_provider)
        for provider in providers:
            try:
                await asyncio.to_thread(provider.shutdown)
            except Exception:
                log.warning("stopping %s failed", type(provider).__name__, exc_info=True)

    # -- channels -------------------------------------------------------------------------

    def wake(self, uri: str) -> None:
        """A logs channel is opened the first time a URI names it."""
        level = logs_level(uri)
        if level is not None and uri not in self._logs:
            self._logs[uri] = (self._fanout.open(Channel(uri, KIND, None)), level)

    def _joined(self, channel: Channel) -> None:
        if channel.kind == KIND:
            self._moved()

    def _left(self, client_id: str, channels: list[Channel], dropped: bool) -> None:
        if any(channel.kind == KIND for channel in channels):
            self._moved()

    def _moved(self) -> None:
        """Somebody began or stopped watching a telemetry channel: build what is wanted now,
        and nothing else."""
        watched = tuple(
            (channel, level) for channel, level in self._logs.values() if channel.subscribers
        )
        self._log_watched = watched
        lowest = min((level for _, level in watched), default=None)
        if "logs" in self.settings.collector:
            lowest = SEVERITIES["trace"]
        self._hang_log_lines(lowest)
        self.tracing = bool(self.traces.subscribers) or "traces" in self.settings.collector
        if self.metrics.subscribers and self._metrics_task is None:
            self._metrics_task = asyncio.get_running_loop().create_task(
                self._say_metrics(), name="ahpd-otlp-metrics"
            )
        elif not self.metrics.subscribers and self._metrics_task is not None:
            self._metrics_task.cancel()
            self._metrics_task = None
        log.debug(
            "telemetry watched now: %s",
            ", ".join(
                channel.uri
                for channel in (self.traces, self.metrics, *(c for c, _ in watched))
                if channel.subscribers
            )
            or "nothing",
        )

    # -- logs -----------------------------------------------------------------------------

    def _hang_log_lines(self, lowest: int | None) -> None:
        """Hang the handler on the console's loggers at the level `lowest` asks for, or take
        it off them and let its processor's thread go (None)."""
        if lowest is None:
            gone = self._let_log_lines_go()
            if gone is not None:
                # Off the loop: a shutdown joins the processor's thread, and says what it holds.
                asyncio.get_running_loop().run_in_executor(None, gone.shutdown)
            return
        loggers = [logging.getLogger(name) for name in self.settings.loggers]
        if self._log_lines is None:
            provider = LoggerProvider(resource=self._resource, shutdown_on_exit=False)
            provider.add_log_record_processor(
                BatchLogRecordProcessor(
                    LogsToEngine(self._lines_batched), schedule_delay_millis=LOG_BATCH_MS
                )
            )
            if "logs" in self.settings.collector:
                collector_exporters.send_logs(provider)
            self._log_provider = provider
            self._log_lines = LogLines(provider)
        self._log_lines.setLevel(python_level(lowest))
        for logger in loggers:
            if self._log_lines not in logger.handlers:
                logger.addHandler(self._log_lines)

    def _let_log_lines_go(self) -> LoggerProvider | None:
        """Take the handler off the loggers; the provider it fed, to be shut down."""
        lines, provider = self._log_lines, self._log_provider
        self._log_lines = self._log_provider = None
        if lines is not None:
            for name in self.settings.loggers:
                logging.getLogger(name).removeHandler(lines)
        return provider

    def _lines_batched(self, batch: Sequence[ReadableLogRecord]) -> None:
        """On the log processor's thread: each watched level's lines written once, off the
        loop, and said on it."""
        for channel, level in self._log_watched:
            lines = [
                record
                for record in batch
                if record.log_record.severity_number is not None
                and record.log_record.severity_number.value >= level
            ]
            if lines:
                self._say_soon(channel, "otlp/exportLogs", logs_payload(lines))

    def _say_soon(self, channel: Channel, method: str, payload: dict[str, Any]) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            loop.call_soon_threadsafe(self._say, channel, method, payload)
        except RuntimeError:
            pass  # the loop closed between the look and the call: nobody is left to tell

    # -- traces and metrics ---------------------------------------------------------------

    def _spans_ended(self, spans: Sequence[ReadableSpan]) -> None:
        if self.traces.subscribers:
            self._say(self.traces, "otlp/exportTraces", spans_payload(spans))

    async def _say_metrics(self) -> None:
        while True:
            await asyncio.sleep(self.settings.metrics_interval_s)
            data = self._metric_reader.get_metrics_data()
            if data is not None and _any_points(data):
                self._say(self.metrics, "otlp/exportMetrics", metrics_payload(data))

    def _say(self, channel: Channel, method: str, payload: dict[str, Any]) -> None:
        if channel.subscribers:
            self._fanout.notify(channel, method, {"channel": channel.uri, "payload": payload})


def _any_points(data: MetricsData) -> bool:
    return any(
        scope.metrics for resource in data.resource_metrics for scope in resource.scope_metrics
    )
