"""One turn of a Claude chat: what the SDK streams, said through `TurnEvents` as it arrives.

With `include_partial_messages` the CLI forwards the model's own stream (`StreamEvent`: the
Messages API's `content_block_start` / `_delta` / `_stop`), so text, thinking and a tool call's
input reach the person while the model writes them. The whole `AssistantMessage` that follows
each model call repeats what was streamed and is read only for a tool call the stream did not
show. A tool's result comes back as a `UserMessage` holding a `ToolResultBlock`; the turn ends
with a `ResultMessage`, which says what the turn spent.

What a subagent (the Task tool) streams inside a call carries that call's id as its parent and
is not said: its call shows as one call, with the subagent's answer as the result.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    ResultMessage,
    StreamEvent,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

from hosts.backends.base import TurnEvents

#: The protocol's toolKind hint by the CLI's own tool names (what a client draws a row with).
TOOL_KINDS = {
    "Bash": "terminal",
    "BashOutput": "terminal",
    "Read": "read",
    "NotebookRead": "read",
    "Glob": "search",
    "Grep": "search",
    "WebSearch": "search",
    "Task": "subagent",
    "Agent": "subagent",
}
#: How long a title may quote a command or a path.
TITLE_LENGTH = 80


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= TITLE_LENGTH else text[: TITLE_LENGTH - 1] + "…"


def tool_title(name: str, tool_input: Mapping[str, Any] | None) -> str:
    """What the call will do, in a few words, for the person who may be asked about it."""
    given = tool_input or {}

    def said(key: str) -> str:
        value = given.get(key)
        return _short(str(value)) if value not in (None, "") else ""

    verbs = {
        "Write": ("Write", "file_path"),
        "Edit": ("Edit", "file_path"),
        "MultiEdit": ("Edit", "file_path"),
        "NotebookEdit": ("Edit", "notebook_path"),
        "Read": ("Read", "file_path"),
        "Bash": ("Run", "command"),
        "Glob": ("Search for", "pattern"),
        "Grep": ("Search for", "pattern"),
        "WebFetch": ("Fetch", "url"),
        "WebSearch": ("Search the web for", "query"),
        "Task": ("Delegate:", "description"),
        "Agent": ("Delegate:", "description"),
    }
    if name == "AskUserQuestion":
        questions = given.get("questions")
        first = questions[0] if isinstance(questions, list) and questions else None
        if isinstance(first, Mapping) and isinstance(first.get("question"), str):
            return f"Ask: {_short(first['question'])}"
    if name in verbs:
        verb, key = verbs[name]
        if what := said(key):
            return f"{verb} {what}"
    return name


@dataclass(slots=True)
class ToolCall:
    """One tool call the model made in this turn, as far as it has been said."""

    call_id: str
    name: str
    #: Its input as streamed so far (JSON text), until the whole input is known.
    partial: str = ""
    tool_input: dict[str, Any] | None = None
    #: A person was asked about it (their approval made it run, their refusal ended it).
    asked: bool = False
    #: It was said running without anybody being asked.
    running: bool = False
    #: A client runs it: its readiness and result are the client's to say.
    client: bool = False

    @property
    def title(self) -> str:
        return tool_title(self.name, self.tool_input)

    def input_text(self) -> str | None:
        if self.tool_input is not None:
            return json.dumps(self.tool_input, ensure_ascii=False)
        return self.partial or None


@dataclass(slots=True)
class Turn:
    """What one turn has said, and what it waits on."""

    events: TurnEvents
    turn_id: str | None = None
    #: The ToolCallContributor of a call to a tool of this name (a client's, an MCP
    #: server's), or None for the CLI's own.
    contributor_of: Callable[[str], Mapping[str, Any] | None] = lambda name: None
    #: What a call to a tool of this name is shown as, where its provider names it (a client
    #: tool by the name its client announced); None: the CLI's own name and title.
    display_of: Callable[[str], str | None] = lambda name: None
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    #: Questions waiting for a person (a permission, Claude's own); cancel answers them.
    questions: set[asyncio.Future[Any]] = field(default_factory=set)
    calls: dict[str, ToolCall] = field(default_factory=dict)
    #: The CLI's results in this turn, the last its end (an answer to background work that
    #: ended is a result of its own).
    results: list[ResultMessage] = field(default_factory=list)
    #: The model's answer text, for the chat's kept turns.
    said: list[str] = field(default_factory=list)
    #: The model the CLI said it answered with.
    model: str | None = None
    #: The tokens the last model call read and wrote: how full the context window is.
    context_used: int | None = None
    #: How the CLI said a model call of this turn failed (AssistantMessage.error: rate_limit,
    #: server_error, invalid_request, authentication_failed, ...), where one did.
    model_error: str | None = None
    #: Block index -> tool call id, within the model message being streamed.
    _blocks: dict[int, str] = field(default_factory=dict)

    def apply(self, message: Any) -> ResultMessage | None:
        """Say what one SDK message adds to the turn; the `ResultMessage` that ends it is
        handed back."""
        if isinstance(message, ResultMessage):
            return message
        if isinstance(message, UserMessage) and isinstance(message.content, list):
            # Results of the calls this turn said, a subagent's among them where a person
            # was asked about one.
            for block in message.content:
                if isinstance(block, ToolResultBlock):
                    self._result(block)
        if getattr(message, "parent_tool_use_id", None) is not None:
            return None  # a subagent's own work inside a call
        if isinstance(message, StreamEvent):
            self._stream(message.event)
        elif isinstance(message, AssistantMessage):
            self.model = message.model or self.model
            self.model_error = message.error or self.model_error
            for block in message.content:
                if isinstance(block, ToolUseBlock):
                    self._whole_call(block)
        return None

    def call(self, call_id: str, name: str, tool_input: Mapping[str, Any]) -> ToolCall:
        """The call a permission question is about, said started if the stream had not."""
        known = self.calls.get(call_id)
        if known is None:
            known = self._start(call_id, name, tool_title(name, tool_input))
        known.tool_input = dict(tool_input)
        return known

    def _start(self, call_id: str, name: str, title: str) -> ToolCall:
        call = self.calls[call_id] = ToolCall(call_id, name)
        title = self.display_of(name) or title
        contributor = self.contributor_of(name)
        call.client = bool(contributor and contributor.get("kind") == "client")
        self.events.tool_call(
            call_id, name=name, title=title, kind=TOOL_KINDS.get(name), contributor=contributor
        )
        return call

    def running(self, call: ToolCall) -> None:
        """The call runs without anybody having been asked (the session allowed it)."""
        if not call.running and not call.asked:
            call.running = True
            self.events.tool_running(call.call_id, title=call.title, tool_input=call.input_text())

    # -- the model's stream --------------------------------------------------------------------

    def _stream(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        if kind == "message_start":
            self._blocks = {}
            message = event.get("message")
            if isinstance(message, Mapping):
                if isinstance(message.get("model"), str):
                    self.model = message["model"]
                self._count_context(message.get("usage"))
        elif kind == "message_delta":
            self._count_context(event.get("usage"))
        elif kind == "content_block_start":
            block = event.get("content_block")
            index = event.get("index")
            if isinstance(block, Mapping) and block.get("type") == "tool_use":
                call_id, name = str(block.get("id") or ""), str(block.get("name") or "")
                if call_id and name and isinstance(index, int):
                    self._blocks[index] = call_id
                    if call_id not in self.calls:
                        self._start(call_id, name, name)
        elif kind == "content_block_delta":
            delta = event.get("delta")
            if not isinstance(delta, Mapping):
                return
            what = delta.get("type")
            if what == "text_delta" and (text := delta.get("text")):
                self.said.append(str(text))
                self.events.text(str(text))
            elif what == "thinking_delta" and (thinking := delta.get("thinking")):
                self.events.reasoning(str(thinking))
            elif what == "input_json_delta" and isinstance(event.get("index"), int):
                streaming = self._blocks.get(event["index"])
                call = self.calls.get(streaming) if streaming else None
                if call is not None and (piece := delta.get("partial_json")):
                    call.partial += str(piece)
                    self.events.tool_call(call.call_id, name=call.name, partial_input=call.partial)

    def _count_context(self, usage: Any) -> None:
        """A model call's usage (its start says what it read, its end what it wrote)."""
        if not isinstance(usage, Mapping):
            return
        read = sum(
            value
            for key in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
            if isinstance(value := usage.get(key), int)
        )
        wrote = usage.get("output_tokens")
        if read:
            self.context_used = read
        elif isinstance(wrote, int) and self.context_used is not None:
            self.context_used += wrote

    def _whole_call(self, block: ToolUseBlock) -> None:
        call = self.calls.get(block.id)
        if call is None:
            # Not streamed (partial messages missed it): started now, whole.
            call = self._start(block.id, block.name, tool_title(block.name, block.input))
        call.tool_input = dict(block.input)

    def _result(self, block: ToolResultBlock) -> None:
        call = self.calls.get(block.tool_use_id)
        if call is None or call.client:
            # A client's call was completed by that client, whose result the CLI repeats.
            return
        # A call the CLI ran without asking (its own rules allow it: a read, `ls`) is said
        # running only now, when no question can come any more.
        self.running(call)
        text = _result_text(block.content)
        failed = bool(block.is_error)
        self.events.tool_result(
            call.call_id,
            success=not failed,
            message=f"{call.title}: failed" if failed else call.title,
            output=None if failed else text or None,
            error=(text or "the tool failed") if failed else None,
        )


def _result_text(content: Any) -> str:
    """A tool result's text: a string, or the text of its content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(block.get("text", ""))
            for block in content
            if isinstance(block, Mapping) and block.get("type") == "text"
        )
    return ""
