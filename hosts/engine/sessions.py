"""Sessions and chats: their channels, their records, their agents and their turns.

Held state moves only by the protocol's reducers over the actions this host says; a record is
what the store keeps, written behind. A chat's conversation with its backend is opened on the
chat's first turn (after a restart, resumed by the backend's own id).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..backends.base import Agent, AgentChat
from ..protocol.reducers._common import (
    STATUS_IDLE,
    STATUS_IN_PROGRESS,
    STATUS_IS_ARCHIVED,
    STATUS_IS_READ,
)
from ..protocol.uris import ROOT_URI
from .channel import Channel
from .clock import now_ms
from .presence import PresenceMixin
from .records import (
    ChatRecord,
    SessionRecord,
    chat_record_from_json,
    chat_state,
    chat_summary,
    derived_default_chat_uri,
    iso,
    opaque_chat_uri,
    status_bits,
)
from .session_turns import TurnsMixin, save_turn_later
from .turns import TurnRunner

if TYPE_CHECKING:
    from .host import Host

log = logging.getLogger("ahpd.sessions")

INTERRUPTED = "The agent was interrupted before this request finished."


@dataclass(eq=False)
class LiveChat:
    record: ChatRecord
    channel: Channel
    session: LiveSession
    agent_chat: AgentChat | None = None
    runner: TurnRunner | None = None
    task: asyncio.Task[None] | None = None
    opening: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def host(self) -> Host:
        return self.session.service.host

    @property
    def busy(self) -> bool:
        """A turn runs (a stopped one, whose backend is still letting go, does not count)."""
        return self.runner is not None and not self.runner.ended

    def say(self, action: dict[str, Any]) -> None:
        self.host.emit(self.channel, action)

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
        call = self.tool_call_state(turn_id, call_id)
        if call is None:
            return
        self.host.emit(
            self.session.channel,
            {
                "type": "session/inputNeededSet",
                "request": {
                    "kind": "toolConfirmation",
                    "id": input_needed_id(self.record.uri, turn_id, call_id),
                    "chat": self.record.uri,
                    "turnId": turn_id,
                    "toolCall": call,
                },
            },
        )

    def settle_input_needed(self, turn_id: str, call_id: str) -> None:
        request_id = input_needed_id(self.record.uri, turn_id, call_id)
        if any(
            r.get("id") == request_id for r in self.session.channel.state.get("inputNeeded", [])
        ):
            self.host.emit(
                self.session.channel, {"type": "session/inputNeededRemoved", "id": request_id}
            )


def input_needed_id(chat: str, turn_id: str, call_id: str) -> str:
    return f"toolConfirmation:{chat}:{turn_id}:{call_id}"


@dataclass(eq=False)
class LiveSession:
    record: SessionRecord
    channel: Channel
    service: Sessions
    chats: dict[str, LiveChat] = field(default_factory=dict)

    @property
    def running(self) -> bool:
        return any(chat.busy for chat in self.chats.values())


class Sessions(PresenceMixin, TurnsMixin):
    """Every session this host holds, by URI, and every chat, by URI."""

    def __init__(self, host: Host, agents: Mapping[str, Agent], state_dir: Path | None) -> None:
        self.host = host
        self.agents = dict(agents)
        self.state_dir = state_dir
        self.sessions: dict[str, LiveSession] = {}
        self.chats: dict[str, LiveChat] = {}
        self._active_count = 0

    # -- start and shapes -----------------------------------------------------------------

    async def restore(self) -> None:
        """Open every session the store keeps; a turn the last process left running is ended."""
        for data in await self.host.store.load_sessions():
            record = SessionRecord.from_json(data["session"])
            chats = [chat_record_from_json(c) for c in data["chats"]]
            for chat in chats:
                if chat.turns and chat.turns[-1].get("state") == "running":
                    chat.turns[-1] = interrupted(chat.turns[-1])
                    save_turn_later(self.host, chat.uri, len(chat.turns) - 1, chat.turns[-1])
            self._open(record, chats)

    def _open(self, record: SessionRecord, chats: list[ChatRecord]) -> LiveSession:
        agent = self.agents.get(record.provider)
        state: dict[str, Any] = {
            "provider": record.provider,
            "title": record.title,
            "status": status_bits(1, is_read=record.is_read, is_archived=record.is_archived),
            "lifecycle": "ready" if record.announced else "creating",
            "activeClients": [],
            "chats": [chat_summary(c, self._chat_modified(c, record)) for c in chats],
            "defaultChat": record.default_chat,
            "workingDirectories": list(record.working_directories),
            **({"_meta": {"ahpd.owner": record.owner}} if record.owner else {}),
            "config": {
                "schema": agent.session_config_schema()
                if agent
                else {"type": "object", "properties": {}},
                "values": dict(record.config),
            },
        }
        session = LiveSession(record, Channel(record.uri, "session", state), self)
        self.host.channels[record.uri] = session.channel
        self.sessions[record.uri] = session
        for chat in chats:
            channel = Channel(chat.uri, "chat", chat_state(chat, self._chat_modified(chat, record)))
            live = LiveChat(chat, channel, session)
            session.chats[chat.uri] = live
            self.chats[chat.uri] = live
            self.host.channels[chat.uri] = channel
        return session

    @staticmethod
    def _chat_modified(chat: ChatRecord, session: SessionRecord) -> int:
        return session.modified_ms if chat.turns else chat.created_ms

    def summary(self, session: LiveSession) -> dict[str, Any]:
        record = session.record
        state = session.channel.state
        summary: dict[str, Any] = {
            "resource": record.uri,
            "provider": record.provider,
            "title": state["title"],
            "status": self._summary_status(session),
            "createdAt": iso(record.created_ms),
            "modifiedAt": iso(record.modified_ms),
            "workingDirectories": list(record.working_directories),
            "chats": [
                {"resource": c["resource"], "title": c["title"], "status": c["status"]}
                for c in state["chats"]
            ],
            "defaultChat": record.default_chat,
        }
        if record.owner:
            summary["_meta"] = {"ahpd.owner": record.owner}
        return summary

    def _summary_status(self, session: LiveSession) -> int:
        activity = STATUS_IN_PROGRESS if session.running else STATUS_IDLE
        flags = int(session.channel.state["status"]) & (STATUS_IS_READ | STATUS_IS_ARCHIVED)
        return activity | flags

    # -- commands -------------------------------------------------------------------------

    def create(
        self,
        owner: str,
        uri: str,
        provider: str,
        working_directories: list[str],
        config: dict[str, Any],
        active_client: dict[str, Any] | None,
        *,
        derived_chat_uri: bool = False,
    ) -> LiveSession:
        """A fresh session and its default chat (a derived chat URI for an older VS Code)."""
        created = now_ms()
        chat_uri = derived_default_chat_uri(uri) if derived_chat_uri else opaque_chat_uri()
        record = SessionRecord(
            uri=uri,
            provider=provider,
            created_ms=created,
            modified_ms=created,
            default_chat=chat_uri,
            working_directories=working_directories,
            config=config,
            chats=[chat_uri],
            owner=owner,
        )
        chat = ChatRecord(chat_uri, uri, created)
        session = self._open(record, [chat])
        if active_client is not None:
            self.host.emit(
                session.channel, {"type": "session/activeClientSet", "activeClient": active_client}
            )
        self.save_session(session)
        self.save_chat(session.chats[chat_uri])
        return session

    def add_chat(
        self,
        session: LiveSession,
        uri: str,
        *,
        title: str,
        turns: list[dict[str, Any]],
        origin: dict[str, Any] | None,
    ) -> LiveChat:
        """A chat beside the default one: said with session/chatAdded, kept, opened read."""
        record = ChatRecord(uri, session.record.uri, now_ms(), title=title, is_read=True)
        record.turns = list(turns)
        state = chat_state(record, record.created_ms)
        if origin is not None:
            state["origin"] = origin
        chat = LiveChat(record, Channel(uri, "chat", state), session)
        session.chats[uri] = chat
        self.chats[uri] = chat
        self.host.channels[uri] = chat.channel
        summary = chat_summary(record, record.created_ms)
        if origin is not None:
            summary["origin"] = origin
        self.host.emit(session.channel, {"type": "session/chatAdded", "summary": summary})
        session.record.chats.append(uri)
        self.save_session(session)
        self.save_chat(chat)
        for position, turn in enumerate(record.turns):
            save_turn_later(self.host, uri, position, turn)
        return chat

    def stop_turn(self, chat: LiveChat, *, said: bool) -> str | None:
        """Stop the chat's running turn for every client at once, then its backend.

        `said` when a client's chat/turnCancelled was said already; otherwise this host says
        one. Pending steering goes with the stop and starts nothing behind it. The stopped
        turn's id, or None when none ran.
        """
        runner = chat.runner
        if runner is None or runner.ended:
            return None
        if not said:
            self.host.emit(
                chat.channel,
                {
                    "type": "chat/turnCancelled",
                    "turnId": runner.turn_id,
                    "duration": runner.duration(),
                },
            )
        runner.stop()
        self.drop_steering(chat)
        self.chat_row_moved(chat)
        self.update_active_count()
        agent_chat = chat.agent_chat
        if agent_chat is not None:
            asyncio.get_running_loop().create_task(_cancel(chat.record.uri, agent_chat))
        return runner.turn_id

    async def remove_chat(self, chat: LiveChat) -> None:
        """Close a chat that is not its session's default: said with session/chatRemoved."""
        session = chat.session
        if self.chats.get(chat.record.uri) is not chat:
            return  # removed already
        self.chats.pop(chat.record.uri, None)
        session.chats.pop(chat.record.uri, None)
        await self._close_chat(chat, cancel=True)
        self._drop_channel(chat.channel)
        self.host.emit(session.channel, {"type": "session/chatRemoved", "chat": chat.record.uri})
        session.record.chats.remove(chat.record.uri)
        self.save_session(session)
        uri = chat.record.uri
        self.host.writes.later(f"chat:{uri}", lambda: self.host.store.delete_chat(uri))
        self.update_active_count()

    def announce(self, session: LiveSession, *, failure: str | None = None) -> None:
        """A fresh session's first message, handed to its backend, makes it real: announced,
        listed, ready. One whose backend could not be had is said failed, then announced; a
        message sent again tries again."""
        if failure is not None and session.channel.state["lifecycle"] == "creating":
            self.host.emit(
                session.channel,
                {
                    "type": "session/creationFailed",
                    "error": {"errorType": "backendUnavailable", "message": failure},
                },
            )
        elif failure is None and session.channel.state["lifecycle"] != "ready":
            self.host.emit(session.channel, {"type": "session/ready"})
        if session.record.announced:
            return
        session.record.announced = True
        self.save_session(session)
        self.host.notify(
            self.host.channels[ROOT_URI],
            "root/sessionAdded",
            {"channel": ROOT_URI, "summary": self.summary(session)},
        )

    async def dispose(self, session: LiveSession) -> None:
        if self.sessions.get(session.record.uri) is not session:
            return  # disposed already (two callers raced)
        # Out of the tables before anything awaits, so nothing said meanwhile keeps it.
        del self.sessions[session.record.uri]
        for chat in session.chats.values():
            self.chats.pop(chat.record.uri, None)
        for chat in list(session.chats.values()):
            await self._close_chat(chat, cancel=True)
            self.chats.pop(chat.record.uri, None)
            self._drop_channel(chat.channel)
        self._drop_channel(session.channel)
        if session.record.announced:
            self.host.notify(
                self.host.channels[ROOT_URI],
                "root/sessionRemoved",
                {"channel": ROOT_URI, "session": session.record.uri},
            )
        self.update_active_count()
        uri = session.record.uri
        self.host.writes.later(f"session:{uri}", lambda: self.host.store.delete_session(uri))

    def _drop_channel(self, channel: Channel) -> None:
        self.host.channels.pop(channel.uri, None)
        for conn in list(channel.subscribers):
            self.host.unsubscribe(conn, channel)

    async def _close_chat(self, chat: LiveChat, *, cancel: bool) -> None:
        if chat.runner is not None and cancel:
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

    def listing(self) -> list[dict[str, Any]]:
        """Every announced session, most recently modified first."""
        live = [s for s in self.sessions.values() if s.record.announced]
        live.sort(key=lambda s: (s.record.modified_ms, s.record.uri), reverse=True)
        return [self.summary(s) for s in live]

    # -- persistence ----------------------------------------------------------------------

    def save_session(self, session: LiveSession) -> None:
        data = session.record.to_json()
        self.host.writes.later(
            f"session:{session.record.uri}", lambda: self.host.store.save_session(data)
        )

    def save_chat(self, chat: LiveChat) -> None:
        data = chat.record.to_json()
        self.host.writes.later(f"chat:{chat.record.uri}", lambda: self.host.store.save_chat(data))

    def touch(self, session: LiveSession) -> None:
        if self.sessions.get(session.record.uri) is not session:
            return  # disposed: a late turn end keeps nothing
        session.record.modified_ms = now_ms()
        self.save_session(session)
        if session.record.announced:
            summary = self.summary(session)
            changes = {k: summary[k] for k in ("title", "status", "modifiedAt", "chats")}
            self.host.notify(
                self.host.channels[ROOT_URI],
                "root/sessionSummaryChanged",
                {"channel": ROOT_URI, "session": session.record.uri, "changes": changes},
            )

    def chat_row_moved(self, chat: LiveChat) -> None:
        """Mirror a chat's row into its session's catalogue where it moved."""
        state = chat.state()
        row = next(
            (c for c in chat.session.channel.state["chats"] if c["resource"] == chat.record.uri),
            None,
        )
        if row is None:
            return
        changes = {
            key: state[key]
            for key in ("title", "status", "modifiedAt")
            if key in state and row.get(key) != state[key]
        }
        if changes:
            self.host.emit(
                chat.session.channel,
                {"type": "session/chatUpdated", "chat": chat.record.uri, "changes": changes},
            )

    def update_active_count(self) -> None:
        count = sum(1 for s in self.sessions.values() if s.running)
        root = self.host.channels[ROOT_URI]
        if root.state.get("activeSessions") != count:
            self.host.emit(root, {"type": "root/activeSessionsChanged", "activeSessions": count})

    async def shutdown(self) -> None:
        """Stop the turns still running (each ends, and is written, as a stop) and let every
        backend go."""
        tasks = [chat.task for chat in self.chats.values() if chat.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for chat in list(self.chats.values()):
            await self._close_chat(chat, cancel=False)


async def _cancel(chat: str, agent_chat: AgentChat) -> None:
    try:
        await agent_chat.cancel()
    except Exception:
        log.exception("cancelling the backend of %s failed", chat)


def interrupted(turn: dict[str, Any]) -> dict[str, Any]:
    """A turn the last process left running, read back ended in error."""
    ended = dict(turn)
    ended["state"] = "error"
    ended["responseParts"] = [
        *turn.get("responseParts", []),
        {"kind": "error", "error": {"errorType": "executionInterrupted", "message": INTERRUPTED}},
    ]
    ended.setdefault("duration", 0)
    return ended
