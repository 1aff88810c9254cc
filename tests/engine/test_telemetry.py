"""The ahp-otlp channels on the fan-out alone: what is built while somebody watches, and
nothing while nobody does (no host, no sessions, no ASGI)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from opentelemetry.sdk.trace import SpanProcessor

from hosts.engine.channel import Channel
from hosts.engine.telemetry import Telemetry, TelemetrySettings
from hosts.engine.telemetry.log_lines import LogLines
from hosts.engine.telemetry.otlp_channels import TRACES_URI, logs_level
from tests.engine.test_fanout import drained, fanout, watcher

CHAT = "ahp-chat:/telemetry-test"
SESSION = "ahp-session:/0b7c3a52-telemetry"
LOGGER = "ahpd.telemetry-test"


class CountedSpans(SpanProcessor):
    def __init__(self) -> None:
        self.started = 0

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        self.started += 1


def made() -> tuple[Any, Telemetry, Channel]:
    core = fanout()
    core.start()
    telemetry = Telemetry(
        core,
        TelemetrySettings(loggers=(LOGGER,), metrics_interval_s=60),
        lambda uri: (SESSION, "local") if uri == CHAT else None,
        service_name="ahpd",
        service_version="test",
    )
    telemetry.start()
    chat = core.open(Channel(CHAT, "chat", {"turns": [], "activeTurn": None}))
    return core, telemetry, chat


def a_turn(core: Any, chat: Channel, turn_id: str) -> None:
    """A turn with one tool call, said as the runner says it (reduced state left alone)."""
    for action in (
        {"type": "chat/turnStarted", "turnId": turn_id},
        {"type": "chat/delta", "turnId": turn_id, "partId": "p", "content": "x"},
        {
            "type": "chat/toolCallStart",
            "turnId": turn_id,
            "toolCallId": f"{turn_id}-call",
            "toolName": "read_file",
            "displayName": "Read",
        },
        {
            "type": "chat/toolCallComplete",
            "turnId": turn_id,
            "toolCallId": f"{turn_id}-call",
            "result": {"success": True, "pastTenseMessage": "Read"},
        },
        {"type": "chat/turnComplete", "turnId": turn_id, "duration": 1},
    ):
        core.emit(chat, action, reduce_state=False)


def histogram_counts(telemetry: Telemetry) -> dict[str, int]:
    data = telemetry._metric_reader.get_metrics_data()
    assert data is not None
    return {
        metric.name: sum(point.count for point in metric.data.data_points)
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
    }


def hung(name: str = LOGGER) -> list[logging.Handler]:
    return [h for h in logging.getLogger(name).handlers if isinstance(h, LogLines)]


async def test_nothing_is_built_while_nobody_watches_but_the_histograms():
    core, telemetry, chat = made()
    spans = CountedSpans()
    telemetry._tracer_provider.add_span_processor(spans)
    a_turn(core, chat, "t1")
    assert spans.started == 0 and not telemetry.tracing
    assert not hung() and telemetry._log_provider is None
    # The histograms count from the start, watched or not.
    assert histogram_counts(telemetry) == {
        "gen_ai.invoke_agent.duration": 1,
        "gen_ai.invoke_agent.tool_calls": 1,
        "gen_ai.execute_tool.duration": 1,
    }
    await telemetry.stop()


async def test_a_traces_watcher_gets_a_turn_and_its_call_and_spans_stop_when_it_goes():
    core, telemetry, chat = made()
    spans = CountedSpans()
    telemetry._tracer_provider.add_span_processor(spans)
    conn, transport = watcher(core, telemetry.traces, "w")
    a_turn(core, chat, "t2")
    await drained(core)
    said = [f for f in transport.sent if f.get("method") == "otlp/exportTraces"]
    assert spans.started == 2 and len(said) == 2  # the call as it ends, then the turn
    assert {f["params"]["channel"] for f in said} == {TRACES_URI}
    core.unsubscribe(conn, telemetry.traces)
    a_turn(core, chat, "t3")
    assert spans.started == 2 and not telemetry.tracing
    await telemetry.stop()


async def test_the_log_handler_hangs_at_the_lowest_watched_level_and_only_while_watched():
    core, telemetry, _ = made()
    telemetry.wake("ahp-otlp://logs/Warn")
    telemetry.wake("ahp-otlp://logs/debug")
    warn = core.channel("ahp-otlp://logs/Warn")
    debug = core.channel("ahp-otlp://logs/debug")
    assert warn is not None and debug is not None
    warned, warn_transport = watcher(core, warn, "warn")
    (handler,) = hung()
    assert handler.level == logging.WARNING
    debugged, debug_transport = watcher(core, debug, "debug")
    assert handler.level == logging.DEBUG
    logger = logging.getLogger(LOGGER)
    logger.setLevel(logging.DEBUG)
    logger.debug("a debug line")
    logger.warning("a warning line")
    telemetry._log_provider.force_flush()
    for _ in range(100):
        await drained(core)
        if [f for f in warn_transport.sent if f.get("method") == "otlp/exportLogs"]:
            break
        await asyncio.sleep(0.01)

    def bodies(transport: Any) -> list[str]:
        return [
            record["body"]["stringValue"]
            for frame in transport.sent
            if frame.get("method") == "otlp/exportLogs"
            for resource in frame["params"]["payload"]["resourceLogs"]
            for scope in resource["scopeLogs"]
            for record in scope["logRecords"]
        ]

    assert bodies(warn_transport) == ["a warning line"]
    assert bodies(debug_transport)[-2:] == ["a debug line", "a warning line"]
    core.unsubscribe(warned, warn)
    assert hung() == [handler] and handler.level == logging.DEBUG
    core.unsubscribe(debugged, debug)
    # Nobody watches: no handler, and the processor's thread is let go (it woke every 200 ms).
    assert not hung() and telemetry._log_provider is None
    await telemetry.stop()


def test_only_otlps_severity_names_make_a_logs_channel():
    assert logs_level("ahp-otlp://logs/INFO") == logs_level("ahp-otlp://logs/info") == 9
    assert logs_level("ahp-otlp://logs/fatal") == 21
    assert logs_level("ahp-otlp://logs/verbose") is None
    assert logs_level("ahp-otlp://traces") is None
