"""Turns and tool calls followed from the actions said on chat channels: each turn's span and
its tool calls' spans (while anyone wants traces), and the GenAI histograms (always, since
they are cumulative from the process's start).

A turn is an `invoke_agent` span of kind SERVER, from its chat/turnStarted to its
chat/turnComplete, chat/turnCancelled or chat/error; each tool call an `execute_tool` span
of kind CLIENT under it, from its chat/toolCallStart to its chat/toolCallComplete (or the
turn's end). A turn that ends in chat/error has status Error with the error's message; a
cancelled one is left unset, as OpenTelemetry sets Error only where a convention calls the
outcome one. Nothing here is built for any other action, and nothing for a delta.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer, set_span_in_context

from ..channel import Channel
from .genai_metrics import GenAiMetrics

log = logging.getLogger("ahpd.telemetry")

#: The actions that start or end a turn or a tool call.
TURN_STARTED = "chat/turnStarted"
TOOL_CALL_STARTED = "chat/toolCallStart"
TOOL_CALL_COMPLETE = "chat/toolCallComplete"
TURN_ENDINGS = frozenset({"chat/turnComplete", "chat/turnCancelled", "chat/error"})
FOLLOWED = frozenset({TURN_STARTED, TOOL_CALL_STARTED, TOOL_CALL_COMPLETE, *TURN_ENDINGS})

#: Turns followed at once, at most: one whose chat went without ending it is let go, oldest
#: first, rather than held for ever.
MOST_TURNS = 4096

#: What a session is (its URI and its agent's provider), from a chat's URI; None: unknown.
SessionOf = Callable[[str], tuple[str, str] | None]


def session_id(uri: str) -> str:
    """`ahp.session.id`: the id a session's URI names (its path, without the slashes)."""
    return uri.partition(":")[2].strip("/") or uri


@dataclass(slots=True)
class _Call:
    started_ns: int
    name: str
    span: Span | None


@dataclass(slots=True)
class _Turn:
    started_ns: int
    provider: str
    session_id: str
    turn_id: str
    span: Span | None
    tool_calls: int = 0
    calls: dict[str, _Call] = field(default_factory=dict)


class TurnTracker:
    """Told every action the fan-out says (`said`); follows the ones in FOLLOWED."""

    def __init__(
        self,
        tracer: Tracer,
        metrics: GenAiMetrics,
        session_of: SessionOf,
        tracing: Callable[[], bool],
    ) -> None:
        self._tracer = tracer
        self._metrics = metrics
        self._session_of = session_of
        self._tracing = tracing
        self._turns: dict[tuple[str, str], _Turn] = {}

    def said(self, channel: Channel, action: dict[str, Any]) -> None:
        """An action said on a channel (refusals are not said to here)."""
        kind = action["type"]
        if kind not in FOLLOWED or channel.kind != "chat":
            return
        try:
            self._follow(channel.uri, kind, action)
        except Exception:
            # Telemetry never fails the action it watches.
            log.exception("following %s on %s failed", kind, channel.uri)

    def _follow(self, chat: str, kind: str, action: dict[str, Any]) -> None:
        turn_id = action.get("turnId")
        if not isinstance(turn_id, str):
            return
        key = (chat, turn_id)
        if kind == TURN_STARTED:
            self._turn_started(key)
            return
        turn = self._turns.get(key)
        if turn is None:
            return  # a turn begun before this process, or let go
        if kind == TOOL_CALL_STARTED:
            self._tool_call_started(turn, action)
        elif kind == TOOL_CALL_COMPLETE:
            self._tool_call_complete(turn, action)
        else:
            del self._turns[key]
            self._turn_ended(turn, kind, action)

    def _turn_started(self, key: tuple[str, str]) -> None:
        chat, turn_id = key
        session = self._session_of(chat)
        session_uri, provider = session if session is not None else (chat, "")
        sid = session_id(session_uri)
        now = time.time_ns()
        span = None
        if self._tracing():
            span = self._tracer.start_span(
                f"invoke_agent {provider}".strip(),
                kind=SpanKind.SERVER,
                start_time=now,
                attributes={
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": provider,
                    "ahp.session.id": sid,
                    "ahp.turn.id": turn_id,
                },
            )
        previous = self._turns.pop(key, None)
        if previous is not None and previous.span is not None:
            previous.span.end(end_time=now)
        self._turns[key] = _Turn(now, provider, sid, turn_id, span)
        while len(self._turns) > MOST_TURNS:
            oldest = next(iter(self._turns))
            let_go = self._turns.pop(oldest)
            if let_go.span is not None:
                let_go.span.end(end_time=now)

    def _tool_call_started(self, turn: _Turn, action: dict[str, Any]) -> None:
        call_id = action.get("toolCallId")
        if not isinstance(call_id, str) or call_id in turn.calls:
            return
        name = str(action.get("toolName") or "")
        now = time.time_ns()
        turn.tool_calls += 1
        span = None
        if turn.span is not None:
            span = self._tracer.start_span(
                f"execute_tool {name}".strip(),
                context=set_span_in_context(turn.span),
                kind=SpanKind.CLIENT,
                start_time=now,
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": name,
                    "gen_ai.tool.call.id": call_id,
                    "ahp.session.id": turn.session_id,
                    "ahp.turn.id": turn.turn_id,
                    "ahp.tool_call.id": call_id,
                },
            )
        turn.calls[call_id] = _Call(now, name, span)

    def _tool_call_complete(self, turn: _Turn, action: dict[str, Any]) -> None:
        call = turn.calls.pop(str(action.get("toolCallId")), None)
        if call is None:
            return
        result = _object(action.get("result"))
        error_type = None
        message = ""
        if result.get("success") is False:
            error = _object(result.get("error"))
            error_type = str(error.get("code") or "tool_error")
            message = str(error.get("message") or "the tool failed")
        self._call_ended(call, time.time_ns(), error_type, message)

    def _call_ended(self, call: _Call, now: int, error_type: str | None, message: str) -> None:
        attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.name}
        if error_type is not None:
            attributes["error.type"] = error_type
        if call.span is not None:
            if error_type is not None:
                call.span.set_attribute("error.type", error_type)
                if message:
                    call.span.set_status(Status(StatusCode.ERROR, message))
            call.span.end(end_time=now)
        self._metrics.tool_call_ended((now - call.started_ns) / 1e9, attributes)

    def _turn_ended(self, turn: _Turn, kind: str, action: dict[str, Any]) -> None:
        now = time.time_ns()
        # A call the turn ended under was never completed: it ends with the turn, as the
        # turn's own ending says (a cancelled turn's calls are not errors either).
        for call in turn.calls.values():
            self._call_ended(call, now, None, "")
        attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": turn.provider}
        if kind == "chat/error":
            error = _object(_object(action.get("part")).get("error"))
            error_type = str(error.get("errorType") or "_OTHER")
            attributes["error.type"] = error_type
            if turn.span is not None:
                turn.span.set_attribute("error.type", error_type)
                turn.span.set_status(
                    Status(StatusCode.ERROR, str(error.get("message") or "the turn failed"))
                )
        if turn.span is not None:
            turn.span.end(end_time=now)
        self._metrics.turn_ended((now - turn.started_ns) / 1e9, turn.tool_calls, attributes)


def _object(value: Any) -> dict[str, Any]:
    """A JSON object as said, or an empty one where something else was."""
    return value if isinstance(value, dict) else {}
