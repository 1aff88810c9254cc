"""The translation of one turn's ACP `session/update` payloads into `TurnEvents` reports.

Plain bookkeeping with no I/O, so it is tested by feeding it payloads. Agents are sloppy (an
update for a tool call never announced, a status said twice), so every tool update is an upsert
and each report is made once: a call is started the first time its id is seen, said running once,
and finished once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from hosts.backends.base import ClientTool, Context, Cost, HostTerminal, TurnEvents

from .json_fields import as_json, block_text, mappings, string


class ClientCalls(Protocol):
    def agent_call(self, call_id: str, update: Mapping[str, Any]) -> tuple[ClientTool, bool] | None:
        """The client tool the agent's tool call is a call to, if it is one, and whether the host
        said the call already under another id (client_tools.py)."""


class ShownTerminals(Protocol):
    def shown(self, terminal_id: str, tool_call_id: str) -> HostTerminal | None:
        """The host terminal the agent's `terminal_id` runs in, claimed for the tool call."""


@dataclass(slots=True)
class ToolCallState:
    """What was reported of one tool call, so that later updates report only what is new."""

    name: str
    title: str
    tool_input: str | None = None
    output: str | None = None
    running: bool = False
    denied: bool = False
    done: bool = False
    #: A call to a tool a client provides: the client runs and completes it, not the agent.
    client: bool = False
    #: The host terminals its content named, which it shows from then on.
    terminals: list[HostTerminal] = field(default_factory=list)


class TurnUpdates:
    """Reports one turn's updates to its `TurnEvents`, in the order they are applied."""

    def __init__(
        self,
        events: TurnEvents,
        model: str | None = None,
        terminals: ShownTerminals | None = None,
        client_calls: ClientCalls | None = None,
    ) -> None:
        self.events = events
        self._terminals = terminals
        self._client_calls = client_calls
        #: The model usage is reported for.
        self.model = model
        self.calls: dict[str, ToolCallState] = {}
        #: The assistant text reported so far, in pieces: what the turn said.
        self.said: list[str] = []
        #: The session's cumulative cost as the turn began (None: not known).
        self.cost_start: float | None = None

    def apply(self, update: Mapping[str, Any]) -> None:
        """Report one update (the `update` object of a `session/update`); others are ignored."""
        kind = update.get("sessionUpdate")
        events = self.events
        if kind == "agent_message_chunk":
            if text := block_text(update.get("content")):
                self.said.append(text)
                events.text(text)
        elif kind == "agent_thought_chunk":
            if text := block_text(update.get("content")):
                events.reasoning(text)
        elif kind in ("tool_call", "tool_call_update"):
            self.tool(update)
        elif kind == "usage_update":
            self.usage(update)

    def usage(self, update: Mapping[str, Any]) -> None:
        """ACP's usage_update is session state, not spending: `used` is how full the context
        window is (what the next request will send, earlier turns included) and `cost` the
        session's cumulative cost. The turn's tokens come with the prompt's answer (chat.py);
        its cost is what the session's grew by since the turn began, unknown while where it
        began is (a loaded session that has said none yet)."""
        used, size = _count(update.get("used")), _count(update.get("size"))
        context = Context(used, size) if used is not None and size is not None else None
        cost = None
        said = said_cost(update)
        if said is not None:
            if self.cost_start is not None:
                # A count the agent started again (it never shrinks otherwise) counts from 0.
                start = self.cost_start if said.amount >= self.cost_start else 0.0
                cost = Cost(round(said.amount - start, 10), said.currency)
        if context is not None or cost is not None:
            self.events.usage(
                input_tokens=None, output_tokens=None, model=self.model, cost=cost, context=context
            )

    def tool(self, update: Mapping[str, Any]) -> ToolCallState | None:
        """A tool_call or tool_call_update, as an upsert: an unknown id starts the call."""
        call_id = string(update.get("toolCallId"))
        if call_id is None:
            return None
        title = string(update.get("title"))
        kind = string(update.get("kind"))
        call = self.calls.get(call_id)
        clients = self._client_calls
        if call is None and clients is not None and (found := clients.agent_call(call_id, update)):
            # Started as the client's: its client runs it, and its completion is the client's.
            tool, said = found
            call = self.calls[call_id] = ToolCallState(
                name=tool.name, title=tool.title or tool.name, client=True
            )
            if not said:
                contributor = {"kind": "client", "clientId": tool.client_id}
                self.events.tool_call(
                    call_id, name=tool.name, title=call.title, contributor=contributor
                )
            return call
        if call is not None and call.client:
            return call  # what the agent says of a client's call is not said again
        if call is None:
            name = title or kind or "tool"
            call = self.calls[call_id] = ToolCallState(name=name, title=title or name)
            self.events.tool_call(call_id, name=name, title=title, kind=kind)
        elif title:
            call.title = title
        if update.get("rawInput") is not None:
            call.tool_input = as_json(update.get("rawInput"))
        named = False
        if update.get("content") is not None:
            call.output = _content_text(update.get("content")) or call.output
            named = self._name_terminals(call_id, call, update.get("content"))
        status = update.get("status")
        if status == "in_progress" and not (call.running or call.denied or call.done):
            call.running = True
            self.events.tool_running(call_id, title=call.title, tool_input=call.tool_input)
            named = bool(call.terminals)
        if status in ("completed", "failed") and not call.done:
            call.done = True
            success = status == "completed"
            shown = _references(call.terminals, ended=True)
            self.events.tool_result(
                call_id,
                success=success,
                message=call.title,
                output=call.output,
                error=None if success else (call.output or f"{call.title} failed"),
                **({"content": shown} if shown else {}),
            )
        elif named and call.running and not call.done:
            self.events.tool_content(call_id, _references(call.terminals))
        return call

    def _name_terminals(self, call_id: str, call: ToolCallState, content: Any) -> bool:
        """Take the host terminals a tool call's content names (ACP's `{"type": "terminal",
        "terminalId"}`, said after the agent created it); whether a new one was named."""
        if self._terminals is None:
            return False
        named = False
        for item in mappings(content):
            terminal_id = string(item.get("terminalId"))
            if item.get("type") != "terminal" or terminal_id is None:
                continue
            terminal = self._terminals.shown(terminal_id, call_id)
            if terminal is not None and all(t.uri != terminal.uri for t in call.terminals):
                call.terminals.append(terminal)
                named = True
        return named


def _count(value: Any) -> int | None:
    """A count of tokens (an int, 0 or more), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def said_cost(update: Mapping[str, Any]) -> Cost | None:
    """A usage_update's `cost` ({amount, currency}, the session's cumulative), if well formed."""
    cost = update.get("cost")
    if not isinstance(cost, Mapping):
        return None
    amount, currency = cost.get("amount"), string(cost.get("currency"))
    if isinstance(amount, bool) or not isinstance(amount, int | float) or currency is None:
        return None
    if not math.isfinite(amount) or amount < 0:
        return None
    return Cost(float(amount), currency.upper())


def _references(terminals: list[HostTerminal], *, ended: bool = False) -> list[dict[str, Any]]:
    """The ToolResultTerminalContent naming each terminal; ended, with how its command ended."""
    shown: list[dict[str, Any]] = []
    for terminal in terminals:
        reference: dict[str, Any] = {
            "type": "terminal",
            "resource": terminal.uri,
            "title": terminal.title,
            "isPty": True,
        }
        status = terminal.exit_status() if ended else None
        if status is not None and status.exit_code is not None:
            reference["result"] = {"exitCode": status.exit_code}
        shown.append(reference)
    return shown


def _content_text(content: Any) -> str | None:
    """The text parts of a tool call's content, joined."""
    parts = [
        text
        for item in mappings(content)
        if item.get("type") == "content" and (text := block_text(item.get("content")))
    ]
    return "\n".join(parts) if parts else None
