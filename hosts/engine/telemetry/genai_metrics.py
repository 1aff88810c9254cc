"""OpenTelemetry's GenAI histograms for turns and tool calls, with the units and explicit
bucket boundaries the GenAI semantic conventions give them, on a `MeterProvider` whose
readers keep them cumulative from the process's start (a reader arriving late reads totals)."""

from __future__ import annotations

from collections.abc import Mapping

from opentelemetry.sdk.metrics import MeterProvider

#: The end-to-end duration of one agent invocation (a turn): seconds, 0.1 s doubling to 409.6 s.
INVOKE_AGENT_DURATION = "gen_ai.invoke_agent.duration"
INVOKE_AGENT_DURATION_BUCKETS = tuple(round(0.1 * 2**i, 1) for i in range(13))
#: The tool calls one invocation made: 1 doubling to 128.
INVOKE_AGENT_TOOL_CALLS = "gen_ai.invoke_agent.tool_calls"
INVOKE_AGENT_TOOL_CALLS_BUCKETS = tuple(float(2**i) for i in range(8))
#: One tool execution: seconds, 0.01 s doubling to 81.92 s.
EXECUTE_TOOL_DURATION = "gen_ai.execute_tool.duration"
EXECUTE_TOOL_DURATION_BUCKETS = tuple(round(0.01 * 2**i, 2) for i in range(14))


class GenAiMetrics:
    """The three histograms, recorded as turns and tool calls end."""

    def __init__(self, provider: MeterProvider) -> None:
        meter = provider.get_meter("ahpd.turns")
        self._agent_duration = meter.create_histogram(
            INVOKE_AGENT_DURATION,
            unit="s",
            description="The end-to-end duration of a turn.",
            explicit_bucket_boundaries_advisory=INVOKE_AGENT_DURATION_BUCKETS,
        )
        self._tool_calls = meter.create_histogram(
            INVOKE_AGENT_TOOL_CALLS,
            unit="{tool_call}",
            description="The tool calls a turn made.",
            explicit_bucket_boundaries_advisory=INVOKE_AGENT_TOOL_CALLS_BUCKETS,
        )
        self._tool_duration = meter.create_histogram(
            EXECUTE_TOOL_DURATION,
            unit="s",
            description="The duration of a tool call.",
            explicit_bucket_boundaries_advisory=EXECUTE_TOOL_DURATION_BUCKETS,
        )

    def turn_ended(self, seconds: float, tool_calls: int, attributes: Mapping[str, str]) -> None:
        self._agent_duration.record(seconds, attributes)
        self._tool_calls.record(tool_calls, attributes)

    def tool_call_ended(self, seconds: float, attributes: Mapping[str, str]) -> None:
        self._tool_duration.record(seconds, attributes)
