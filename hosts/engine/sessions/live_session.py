"""A session and its chats as this host holds them while it runs: record, channel, backend.

Held state moves only by the protocol's reducers over the actions said through the fan-out;
a record is what the store keeps, written behind.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...backends.base import AgentChat, McpServerSpec
from ...protocol.reducers.chat_tool_calls import skipped
from ...protocol.shapes import SessionGit, SessionSummary
from ..channel import Channel
from ..fanout import Fanout
from .customizations import SessionCustomizations
from .records import ChatRecord, SessionRecord
from .runner import TurnRunner

if TYPE_CHECKING:
    from .mcp_servers import SessionMcp

log = logging.getLogger("ahpd.sessions")

INTERRUPTED = "The agent was interrupted before this request finished."


@dataclass(eq=False)
class LiveSession:
    record: SessionRecord
    channel: Channel
    fanout: Fanout
    chats: dict[str, LiveChat] = field(default_factory=dict)
    #: The session's last row for listings, with what it was made from (table.summary).
    row: tuple[tuple[Any, bool, int], SessionSummary] | None = None
    #: Its customizations, by source (customizations.py).
    customizations: SessionCustomizations = field(init=False)
    #: The clients whose activeClients entry is their own announcement: only their tools are
    #: offered to an agent (client_tool_calls.py).
    tool_providers: set[str] = field(default_factory=set)
    #: Its MCP servers (mcp_servers.py), from the moment it opened.
    mcp: SessionMcp | None = None
    #: Where its git working tree stood when last read (git_facts.py), None outside git or
    #: before the first read: its `_meta.git` (session_meta.py).
    git: SessionGit | None = None

    def __post_init__(self) -> None:
        self.customizations = SessionCustomizations(self)

    @property
    def uri(self) -> str:
        return self.record.uri

    @property
    def running(self) -> bool:
        for chat in self.chats.values():
            if chat.busy:
                return True
        return False

    def say(self, action: dict[str, Any]) -> None:
        """An action on the session's channel, on this host's own account."""
        self.fanout.emit(self.channel, action)


@dataclass(eq=False)
class LiveChat:
    record: ChatRecord
    channel: Channel
    session: LiveSession
    agent_chat: AgentChat | None = None
    #: The turn the chat holds as its active one (a stopped one, letting go, still ended).
    runner: TurnRunner | None = None
    #: The work the next turn waits for: the task of the turn said before it.
    task: asyncio.Task[None] | None = None
    #: Turns said while another ran, each replaced in the state by the next: they run in
    #: order and a stop of the newest drops them all (the seed's chat/turnStarted row).
    replaced: list[TurnRunner] = field(default_factory=list)
    opening: asyncio.Lock = field(default_factory=asyncio.Lock)
    #: When a turn of the chat last began or ended (the loop's clock): which idle agent is let
    #: go first (running_agents.py).
    used_at: float = 0.0
    #: The timer that lets the chat's agent go once it has been idle sleepAfterMinutes.
    sleep_timer: asyncio.TimerHandle | None = None
    #: The slash commands the chat's agent announced, kept while it is let go.
    kept_commands: list[dict[str, Any]] = field(default_factory=list)
    #: The session's folders its agent was opened in: one opened in others is opened again.
    opened_in: tuple[str, ...] = ()
    #: The MCP servers its agent was handed to start itself when it was opened (ACP, Claude).
    opened_with: tuple[McpServerSpec, ...] = ()

    @property
    def uri(self) -> str:
        return self.record.uri

    @property
    def idle(self) -> bool:
        """No work in the chat: no turn running, being prepared or letting go of its backend,
        and so no tool call waiting for a person's confirmation."""
        return self.task is None or self.task.done()

    def agent_commands(self) -> list[dict[str, Any]]:
        """The slash commands of the chat's agent, running or let go."""
        commands = getattr(self.agent_chat, "commands", None)
        return list(commands) if commands is not None else self.kept_commands

    @property
    def is_default(self) -> bool:
        return self.record.uri == self.session.record.default_chat

    @property
    def busy(self) -> bool:
        """A turn runs (a stopped one, whose backend is still letting go, does not count)."""
        return self.runner is not None and not self.runner.ended

    def say(self, action: dict[str, Any]) -> None:
        """An action on the chat's channel, on this host's own account."""
        self.session.fanout.emit(self.channel, action)

    def say_on_session(self, action: dict[str, Any]) -> None:
        """An action on the chat's session's channel, on this host's own account."""
        self.session.say(action)

    def state(self) -> dict[str, Any]:
        state: dict[str, Any] = self.channel.state
        return state

    def tool_call_state(self, turn_id: str, call_id: str) -> dict[str, Any] | None:
        active = self.state().get("activeTurn")
        if not active or active.get("id") != turn_id:
            return None
        for part in active.get("responseParts", []):
            if part.get("kind") == "toolCall" and part["toolCall"].get("toolCallId") == call_id:
                call: dict[str, Any] = part["toolCall"]
                return call
        return None

    def raise_input_needed(self, turn_id: str, call_id: str) -> None:
        """Mirror a question a person must answer to the session's inputNeeded."""
        call = self.tool_call_state(turn_id, call_id)
        if call is None:
            return
        self.session.say(
            {
                "type": "session/inputNeededSet",
                "request": {
                    "kind": "toolConfirmation",
                    "id": input_needed_id(self.record.uri, turn_id, call_id),
                    "chat": self.record.uri,
                    "turnId": turn_id,
                    "toolCall": call,
                },
            }
        )

    def settle_input_needed(self, turn_id: str, call_id: str) -> None:
        self.remove_input_needed(input_needed_id(self.record.uri, turn_id, call_id))

    def set_input_needed(self, request: dict[str, Any]) -> None:
        """Add (or update) one entry of the session's inputNeeded: a SessionInputRequest."""
        self.session.say({"type": "session/inputNeededSet", "request": request})

    def remove_input_needed(self, request_id: str) -> None:
        """Take one entry of the session's inputNeeded down, if it is listed."""
        if any(
            r.get("id") == request_id for r in self.session.channel.state.get("inputNeeded", [])
        ):
            self.session.say({"type": "session/inputNeededRemoved", "id": request_id})

    def active_client_ids(self) -> set[str]:
        """The clients the session lists as active now."""
        clients = self.session.channel.state.get("activeClients", [])
        return {c["clientId"] for c in clients if isinstance(c.get("clientId"), str)}


def input_needed_id(chat: str, turn_id: str, call_id: str) -> str:
    return f"toolConfirmation:{chat}:{turn_id}:{call_id}"


def interrupted(turn: dict[str, Any]) -> dict[str, Any]:
    """A turn the last process left running, read back ended in error with what it had
    streamed, as a chat/error would have ended it: a tool call still open is cancelled
    (skipped), and VS Code's executionInterrupted part is the last."""
    ended = dict(turn)
    ended["state"] = "error"
    ended["responseParts"] = [
        *(_settled(part) for part in turn.get("responseParts", [])),
        {"kind": "error", "error": {"errorType": "executionInterrupted", "message": INTERRUPTED}},
    ]
    ended.setdefault("duration", 0)
    return ended


def _settled(part: Any) -> Any:
    if not isinstance(part, dict) or part.get("kind") != "toolCall":
        return part
    call = part.get("toolCall")
    return {**part, "toolCall": skipped(call)} if isinstance(call, dict) else part


async def close_chat(chat: LiveChat, *, cancel: bool) -> None:
    """Let a chat's backend go; with `cancel`, its running turn ends as a stop first."""
    if chat.sleep_timer is not None:
        chat.sleep_timer.cancel()
        chat.sleep_timer = None
    if cancel:
        # A turn another replaced is in no client's state: it stops without a word.
        for replaced in chat.replaced:
            replaced.stop()
        chat.replaced.clear()
        if chat.runner is not None:
            chat.runner.end("cancelled")
    if chat.agent_chat is not None:
        agent_chat, chat.agent_chat = chat.agent_chat, None
        try:
            if cancel:
                await agent_chat.cancel()
            await agent_chat.close()
        except Exception:
            log.exception("closing the backend of %s failed", chat.record.uri)
    if chat.task is not None and cancel:
        chat.task.cancel()


async def cancel_backend(chat: str, agent_chat: AgentChat) -> None:
    """Tell a chat's backend its turn is stopped; a backend that fails at it is logged."""
    try:
        await agent_chat.cancel()
    except Exception:
        log.exception("cancelling the backend of %s failed", chat)
