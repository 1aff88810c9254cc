"""A running turn: what a backend reports, said as the protocol's chat actions.

The protocol's rules live here so no backend has to know them: a response part is opened before
it streams and thinking goes in a part of its own; text is coalesced per part within the delta
window; a tool call is started before it is ready, and is ready with `confirmed: 'not-needed'`
unless a person was asked; a question a person must answer is mirrored to the session's
`inputNeeded`; and a turn has exactly one ending.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from ...backends.base import (
    ClientTool,
    Context,
    Cost,
    InputAnswer,
    PermissionAnswer,
    PermissionOption,
)
from ..clock import now_ms
from .call_sign_ins import CallSignIns, SignInSink
from .client_tool_calls import TURN_ENDED, ClientCallSink, ClientToolCalls, failure
from .questions import Questions, QuestionSink
from .turn_usage import TurnUsage, continued

log = logging.getLogger("ahpd.turns")

#: What the operator counts a turn as, by the action that ended it.
_OUTCOMES = {"chat/turnComplete": "complete", "chat/turnCancelled": "cancelled"}

_part_numbers = itertools.count(1)


class TurnSink(QuestionSink, ClientCallSink, SignInSink, Protocol):
    """Where a turn's actions go: its chat (sessions/live_session.py's LiveChat)."""

    def say(self, action: dict[str, Any]) -> None: ...


class TurnRunner:
    """Implements the backends' TurnEvents for one turn of one chat."""

    def __init__(self, chat: TurnSink, turn_id: str, started_ms: int, window_ms: int) -> None:
        self.chat = chat
        self.turn_id = turn_id
        self.started_ms = started_ms
        self.window_ms = window_ms
        #: Set once the turn has its ending; every later report is dropped.
        self.ended = False
        #: Set once a turn sent after it took its place: nobody can see its questions.
        self.superseded = False
        #: How it ended (complete, cancelled, error), its errorType and its duration then.
        self.outcome: str | None = None
        self.error_type: str | None = None
        self.duration_ms = 0
        #: Who sent it (`user:<id>`, `root:<host>`), where known.
        self.sender: str | None = None
        self._kind: str | None = None  # "markdown" | "reasoning" | None: the part being filled
        self._part_id: str | None = None
        self._part_opened = False
        self._buffer: list[str] = []
        self._flush_handle: asyncio.TimerHandle | None = None
        #: toolCallId -> "streaming" | "pending-confirmation" | "running" | "done"
        self.calls: dict[str, str] = {}
        self._titles: dict[str, str] = {}
        self._questions: dict[str, tuple[asyncio.Future[PermissionAnswer], list[str]]] = {}
        #: What it asks a person (questions.py) and the calls its clients run
        #: (client_tool_calls.py).
        self.asked = Questions(chat, self._say)
        self.client_calls = ClientToolCalls(chat, turn_id, self._say)
        #: Its calls waiting for a person to sign in to an MCP server (call_sign_ins.py).
        self.sign_ins = CallSignIns(chat, turn_id, self._say)
        #: Called after each action said (the turn's progress is kept, written behind).
        self.on_said: Callable[[], None] | None = None
        #: Called with each usage report's figures (sessions/metered.py writes them down).
        self.on_usage: Callable[[dict[str, Any]], None] | None = None
        self._usage = TurnUsage.empty()
        #: What the turn's earlier run used (UsageInfo), for a turn run again (`continuing`).
        self._earlier_usage: dict[str, Any] | None = None
        #: Run again by a chat/turnResume: its time is across both its runs, the earlier
        #: run's `earlier_ms` of it metered already.
        self.resumed = False
        self.earlier_ms = 0

    def continuing(self, earlier_ms: int, usage: dict[str, Any] | None) -> None:
        """A resumed turn runs again: its duration and its usage go on from its earlier run."""
        self.earlier_ms = max(0, earlier_ms)
        self.started_ms -= self.earlier_ms
        self._earlier_usage = usage
        self.resumed = True

    # -- saying actions -------------------------------------------------------------------

    def _say(self, action: dict[str, Any]) -> None:
        if not self.ended:
            self.chat.say(action)
            if self.on_said is not None:
                self.on_said()

    def duration(self) -> int:
        return max(0, now_ms() - self.started_ms)

    # -- streamed text --------------------------------------------------------------------

    def text(self, content: str) -> None:
        self._append("markdown", content)

    def reasoning(self, content: str) -> None:
        self._append("reasoning", content)

    def _append(self, kind: str, content: str) -> None:
        if self.ended or not content:
            return
        if self._kind != kind:
            self._close_part()
            self._kind = kind
            self._part_id = f"{kind}-{next(_part_numbers)}"
            self._part_opened = False
        self._buffer.append(content)
        if not self.window_ms:
            self.flush()
        elif self._flush_handle is None:
            self._flush_handle = asyncio.get_running_loop().call_later(
                self.window_ms / 1000, self.flush
            )

    def flush(self) -> None:
        """Say what the current part has gathered: the part itself, or one delta."""
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        if not self._buffer or self._kind is None or self._part_id is None:
            return
        content = "".join(self._buffer)
        self._buffer.clear()
        if not self._part_opened:
            self._part_opened = True
            self._say(
                {
                    "type": "chat/responsePart",
                    "turnId": self.turn_id,
                    "part": {"kind": self._kind, "id": self._part_id, "content": content},
                }
            )
        else:
            action_type = "chat/delta" if self._kind == "markdown" else "chat/reasoning"
            self._say(
                {
                    "type": action_type,
                    "turnId": self.turn_id,
                    "partId": self._part_id,
                    "content": content,
                }
            )

    def _close_part(self) -> None:
        self.flush()
        self._kind = None
        self._part_id = None
        self._part_opened = False

    # -- tool calls -----------------------------------------------------------------------

    def tool_call(
        self,
        call_id: str,
        *,
        name: str,
        title: str | None = None,
        kind: str | None = None,
        partial_input: str | None = None,
        contributor: Mapping[str, Any] | None = None,
    ) -> None:
        if self.ended:
            return
        if call_id not in self.calls:
            self._close_part()
            self.calls[call_id] = "streaming"
            self._titles[call_id] = title or name
            action: dict[str, Any] = {
                "type": "chat/toolCallStart",
                "turnId": self.turn_id,
                "toolCallId": call_id,
                "toolName": name,
                "displayName": title or name,
            }
            if contributor:
                action["contributor"] = dict(contributor)
            if kind:
                # Not protocol: the key the reference client routes a row's renderer by.
                action["_meta"] = {"toolKind": kind}
            self._say(action)
        elif title:
            self._titles[call_id] = title
        if partial_input and self.calls[call_id] == "streaming":
            self._say(
                {
                    "type": "chat/toolCallDelta",
                    "turnId": self.turn_id,
                    "toolCallId": call_id,
                    "content": partial_input,
                }
            )

    async def permission(
        self,
        call_id: str,
        *,
        title: str,
        tool_input: str | None,
        options: Sequence[PermissionOption] = (),
    ) -> PermissionAnswer:
        if self.ended or self.superseded:
            return PermissionAnswer(False)
        self.tool_call(call_id, name=title, title=title)
        if self.calls[call_id] != "streaming":
            log.warning("permission asked for call %s in state %s", call_id, self.calls[call_id])
        self._titles[call_id] = title
        ready: dict[str, Any] = {
            "type": "chat/toolCallReady",
            "turnId": self.turn_id,
            "toolCallId": call_id,
            "invocationMessage": title,
        }
        if tool_input is not None:
            ready["toolInput"] = tool_input
        if options:
            ready["options"] = [
                {"id": o.option_id, "label": o.label, "kind": o.kind} for o in options
            ]
        self.calls[call_id] = "pending-confirmation"
        self._say(ready)
        future: asyncio.Future[PermissionAnswer] = asyncio.get_running_loop().create_future()
        self._questions[call_id] = (future, [o.option_id for o in options])
        self.chat.raise_input_needed(self.turn_id, call_id)
        try:
            return await future
        finally:
            self._questions.pop(call_id, None)
            self.chat.settle_input_needed(self.turn_id, call_id)

    def answer(self, call_id: str, approved: bool, option_id: str | None) -> bool:
        """A person's answer, said already; hands it to the backend waiting on it."""
        question = self._questions.get(call_id)
        if question is None or question[0].done():
            return False
        self.calls[call_id] = "running" if approved else "done"
        question[0].set_result(PermissionAnswer(approved, option_id))
        return True

    async def ask(self, request: Mapping[str, Any]) -> InputAnswer:
        if self.ended or self.superseded:
            # chat/inputRequested names no turn: said now, it would land in another's.
            return InputAnswer("cancel")
        self._close_part()
        return await self.asked.ask(request)

    async def run_client_tool(
        self, call_id: str, tool: ClientTool, *, title: str, tool_input: str
    ) -> Mapping[str, Any]:
        """Hand a call to the client that provides its tool. Ready with `confirmed:
        'not-needed'`: the client runs its own tool in the person's own window, under that
        window's own confirmation, and a result it wants a person to review it completes with
        requiresResultConfirmation; asking here too would ask twice for one call."""
        if self.ended or self.superseded:
            return failure(TURN_ENDED, title)
        contributor = {"kind": "client", "clientId": tool.client_id}
        self.tool_call(call_id, name=tool.name, title=title, contributor=contributor)
        if self.calls.get(call_id) != "streaming":
            # Ready or run already: no client was handed it, and nothing waits on one.
            log.warning("client tool %s run in state %s", call_id, self.calls.get(call_id))
            result = failure(f"Tool call {call_id} is not waiting to run.", title)
            self.tool_result(
                call_id,
                success=False,
                message=result["pastTenseMessage"],
                error=result["error"]["message"],
            )
            return result
        self._titles[call_id] = title
        self.calls[call_id] = "running"
        self._say(
            {
                "type": "chat/toolCallReady",
                "turnId": self.turn_id,
                "toolCallId": call_id,
                "invocationMessage": title,
                "toolInput": tool_input,
                "confirmed": "not-needed",
            }
        )
        try:
            return await self.client_calls.run(call_id, tool.client_id, title)
        finally:
            self.calls[call_id] = "done"

    def tool_running(
        self, call_id: str, *, title: str | None = None, tool_input: str | None = None
    ) -> None:
        if self.ended:
            return
        if call_id not in self.calls:
            self.tool_call(call_id, name=title or call_id, title=title)
        if self.calls[call_id] != "streaming":
            return
        self.calls[call_id] = "running"
        action: dict[str, Any] = {
            "type": "chat/toolCallReady",
            "turnId": self.turn_id,
            "toolCallId": call_id,
            "invocationMessage": title or self._titles.get(call_id, call_id),
            "confirmed": "not-needed",
        }
        if tool_input is not None:
            action["toolInput"] = tool_input
        self._say(action)

    def tool_result(
        self,
        call_id: str,
        *,
        success: bool,
        message: str,
        output: str | None = None,
        error: str | None = None,
        content: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        if self.ended:
            return
        state = self.calls.get(call_id)
        if state in (None, "streaming"):
            self.tool_running(call_id, title=message)
        elif state == "done":
            return
        self.calls[call_id] = "done"
        result: dict[str, Any] = {"success": success, "pastTenseMessage": message}
        items = [{"type": "text", "text": output}] if output else []
        items += [dict(item) for item in content]
        if items:
            result["content"] = items
        if error:
            result["error"] = {"message": error}
        self._say(
            {
                "type": "chat/toolCallComplete",
                "turnId": self.turn_id,
                "toolCallId": call_id,
                "result": result,
            }
        )

    def tool_auth_required(self, call_id: str, auth: Mapping[str, Any]) -> None:
        if self.ended or self.calls.get(call_id) != "running":
            return
        self.calls[call_id] = "auth-required"
        self.sign_ins.required(call_id, auth)

    def tool_auth_resolved(self, call_id: str) -> None:
        if self.ended or self.calls.get(call_id) != "auth-required":
            return
        self.calls[call_id] = "running"
        self.sign_ins.resolved(call_id)

    def tool_content(self, call_id: str, content: Sequence[Mapping[str, Any]]) -> None:
        if self.ended or self.calls.get(call_id) != "running":
            return
        self._say(
            {
                "type": "chat/toolCallContentChanged",
                "turnId": self.turn_id,
                "toolCallId": call_id,
                "content": [dict(item) for item in content],
            }
        )

    def usage(
        self,
        *,
        input_tokens: int | None,
        output_tokens: int | None,
        model: str | None,
        cache_read_tokens: int | None = None,
        cache_write_tokens: int | None = None,
        cost: Cost | None = None,
        context: Context | None = None,
    ) -> None:
        figures = {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_read_tokens": cache_read_tokens,
            "cache_write_tokens": cache_write_tokens,
        }
        if self.ended or not self._usage.add(figures, model, cost, context):
            return
        info = continued(self._earlier_usage, self._usage.info())
        self._say({"type": "chat/usage", "turnId": self.turn_id, "usage": info})
        if self.on_usage is not None:
            self.on_usage(self._usage.figures())

    # -- the ending -----------------------------------------------------------------------

    def end(self, state: str, message: str = "", error_type: str = "backendError") -> None:
        """Say the turn's one ending (complete, cancelled or error) unless it has one."""
        if not self.ended:
            self.end_with(self.ending(state, message, error_type))

    def ending(
        self,
        state: str,
        message: str = "",
        error_type: str = "backendError",
        *,
        resumable: bool = False,
    ) -> dict[str, Any]:
        """The turn's ending action (complete, cancelled or error), not said yet; the text
        gathered so far is said first, so the ending is the last of the turn's actions. An
        error its backend can run the turn again from says `resumable: true`."""
        self._close_part()
        ending: dict[str, Any] = {"turnId": self.turn_id, "duration": self.duration()}
        if state == "complete":
            ending["type"] = "chat/turnComplete"
        elif state == "cancelled":
            ending["type"] = "chat/turnCancelled"
        else:
            ending["type"] = "chat/error"
            ending["part"] = {
                "kind": "error",
                "error": {"errorType": error_type, "message": message or "The turn failed."},
            }
            if resumable:
                ending["part"]["resumable"] = True
        return ending

    def end_with(self, ending: dict[str, Any]) -> None:
        """Say an ending made by `ending`, unless the turn has had one meanwhile."""
        if self.ended:
            return
        outcome = _OUTCOMES.get(ending["type"], "error")
        if outcome == "error":
            self.error_type = ending["part"]["error"]["errorType"]
        self._say(ending)
        self.stop(outcome)

    def supersede(self) -> None:
        """A turn sent after this one took its place in every client's state: it runs on, but
        a question of its own could never be answered, so each is declined."""
        self.superseded = True
        self._decline_questions()

    def stop(self, outcome: str = "cancelled") -> None:
        """The turn has its ending (said here or by a client): drop whatever comes after."""
        if not self.ended:
            self.outcome, self.duration_ms = outcome, self.duration()
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        self._buffer.clear()
        self.ended = True
        self._decline_questions()

    def _decline_questions(self) -> None:
        for future, _ in list(self._questions.values()):
            if not future.done():
                future.set_result(PermissionAnswer(False))
        self.asked.cancel_all()
        self.client_calls.fail_all()
        if self.ended:
            self.sign_ins.settle_all()


def sender_of(action: Mapping[str, Any]) -> str | None:
    """Who sent a turn, as its start (or its message) names them."""
    for meta in (action.get("_meta"), (action.get("message") or {}).get("_meta")):
        if isinstance(meta, dict) and isinstance(meta.get("ahpd.sender"), str):
            return str(meta["ahpd.sender"])
    return None
