"""Sessions and chats: their channels, their records, their agents and their turns.

Held state moves only by the protocol's reducers over the actions this host says; a record is
what the store keeps, written behind. A chat's conversation with its backend is opened on the
chat's first turn (after a restart, resumed by the backend's own id).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..backends.base import Agent, AgentChat, BackendError, ChatContext, TurnRequest
from ..protocol.uris import ROOT_URI
from .channel import Channel
from .clock import now_ms
from .records import (
    IDLE,
    IN_PROGRESS,
    IS_ARCHIVED,
    IS_READ,
    ChatRecord,
    SessionRecord,
    chat_record_from_json,
    chat_state,
    chat_summary,
    iso,
    status_bits,
)
from .turns import TurnRunner

if TYPE_CHECKING:
    from .connection import Connection
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


class Sessions:
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
                    self.host.writes.later(
                        f"turn:{chat.uri}:{chat.turns[-1]['id']}",
                        _save_turn(self.host, chat.uri, len(chat.turns) - 1, chat.turns[-1]),
                    )
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
        return summary

    def _summary_status(self, session: LiveSession) -> int:
        activity = IN_PROGRESS if session.running else IDLE
        flags = int(session.channel.state["status"]) & (IS_READ | IS_ARCHIVED)
        return activity | flags

    # -- commands -------------------------------------------------------------------------

    def create(
        self,
        conn: Connection,
        uri: str,
        provider: str,
        working_directories: list[str],
        config: dict[str, Any],
        active_client: dict[str, Any] | None,
    ) -> None:
        created = now_ms()
        chat_uri = self.default_chat_uri(conn, uri)
        record = SessionRecord(
            uri=uri,
            provider=provider,
            created_ms=created,
            modified_ms=created,
            default_chat=chat_uri,
            working_directories=working_directories,
            config=config,
            chats=[chat_uri],
        )
        chat = ChatRecord(chat_uri, uri, created)
        session = self._open(record, [chat])
        if active_client is not None:
            self.host.emit(
                session.channel, {"type": "session/activeClientSet", "activeClient": active_client}
            )
        self.save_session(session)
        self.save_chat(session.chats[chat_uri])

    def default_chat_uri(self, conn: Connection, session_uri: str) -> str:
        from .records import derived_default_chat_uri, opaque_chat_uri

        if conn.legacy_vscode_chat_uris:
            return derived_default_chat_uri(session_uri)
        return opaque_chat_uri()

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
            self.host.writes.later(
                f"turn:{uri}:{turn['id']}", _save_turn(self.host, uri, position, turn)
            )
        return chat

    async def remove_chat(self, chat: LiveChat) -> None:
        """Close a chat that is not its session's default: said with session/chatRemoved."""
        session = chat.session
        await self._close_chat(chat, cancel=True)
        session.chats.pop(chat.record.uri, None)
        self.chats.pop(chat.record.uri, None)
        self._drop_channel(chat.channel)
        self.host.emit(session.channel, {"type": "session/chatRemoved", "chat": chat.record.uri})
        session.record.chats.remove(chat.record.uri)
        self.save_session(session)
        uri = chat.record.uri
        self.host.writes.later(f"chat:{uri}", lambda: self.host.store.delete_chat(uri))
        self.update_active_count()

    def start_host_turn(self, chat: LiveChat, message: dict[str, Any]) -> None:
        """A turn this host starts (a new chat's first message): said, then run."""
        action = {
            "type": "chat/turnStarted",
            "turnId": str(uuid.uuid4()),
            "startedAt": iso(now_ms()),
            "message": message,
        }
        self.host.emit(chat.channel, action)
        self.turn_began(chat)
        self.start_turn(chat, action)

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
        for chat in list(session.chats.values()):
            await self._close_chat(chat, cancel=True)
            self.chats.pop(chat.record.uri, None)
            self._drop_channel(chat.channel)
        self.sessions.pop(session.record.uri, None)
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

    # -- turns ----------------------------------------------------------------------------

    def start_turn(self, chat: LiveChat, action: dict[str, Any]) -> None:
        """A turnStarted has been said on the chat: run it with the chat's backend."""
        session = chat.session
        turn_id: str = action["turnId"]
        started = now_ms()
        runner = TurnRunner(chat, turn_id, started, self.host.settings.delta_window_ms)
        chat.runner = runner
        text = str(action.get("message", {}).get("text", ""))
        if not session.channel.state["title"] and text.strip():
            # An untitled row is one nobody can find again: name it after its first message.
            title = " ".join(text.split())[:80]
            self.host.emit(session.channel, {"type": "session/titleChanged", "title": title})
            session.record.title = title
        self.touch(session)
        self.update_active_count()
        position = len(chat.record.turns)
        running: dict[str, Any] = {
            "id": turn_id,
            "startedAt": action.get("startedAt") or iso(started),
            "message": action.get("message"),
            "responseParts": [],
            "state": "running",
        }
        self.host.writes.later(
            f"turn:{chat.record.uri}:{turn_id}",
            _save_turn(self.host, chat.record.uri, position, running),
        )
        previous = chat.task
        chat.task = asyncio.get_running_loop().create_task(
            self._run(chat, runner, TurnRequest(turn_id, text, _model(action)), position, previous)
        )

    async def _run(
        self,
        chat: LiveChat,
        runner: TurnRunner,
        request: TurnRequest,
        position: int,
        previous: asyncio.Task[None] | None,
    ) -> None:
        completed = False
        try:
            if previous is not None and not previous.done():
                # A turn said while a stopped one's backend lets it go runs once that is done.
                await asyncio.wait([previous])
            if runner.ended:
                return
            try:
                agent_chat = await self._agent_chat(chat)
            except Exception as exc:
                message = str(exc) if isinstance(exc, BackendError) else f"The agent failed: {exc}"
                if not isinstance(exc, BackendError):
                    log.exception("opening the agent of %s failed", chat.record.uri)
                runner.end("error", message)
                self.announce(chat.session, failure=message)
                return
            self.announce(chat.session)
            end = await agent_chat.run_turn(request, runner)
            completed = end.state == "complete" and not runner.ended
            runner.end(end.state, end.message)
        except BackendError as exc:
            runner.end("error", str(exc))
        except asyncio.CancelledError:
            runner.end("cancelled")
            raise
        except Exception as exc:
            log.exception("turn %s of %s failed", request.turn_id, chat.record.uri)
            runner.end("error", f"The agent failed: {exc}")
        finally:
            self._finish(chat, runner, position, take_queued=completed)

    async def _agent_chat(self, chat: LiveChat) -> AgentChat:
        async with chat.opening:
            if chat.agent_chat is not None:
                return chat.agent_chat
            record = chat.session.record
            agent = self.agents.get(record.provider)
            if agent is None:
                raise BackendError(f"No agent is configured for provider {record.provider!r}")
            history = [
                {"user": t["message"].get("text", ""), "assistant": _assistant_text(t)}
                for t in chat.record.turns
                if t.get("state") == "complete"
            ]
            state_dir = None
            if self.state_dir is not None:
                state_dir = self.state_dir / "agents" / record.provider
            context = ChatContext(
                chat=chat.record.uri,
                working_directories=[_path(u) for u in record.working_directories] or [Path.cwd()],
                backend_id=chat.record.backend_id,
                history=history,
                config=dict(chat.session.channel.state["config"]["values"]),
                state_dir=state_dir,
            )
            chat.agent_chat = await agent.open_chat(context)
            if chat.agent_chat.backend_id != chat.record.backend_id:
                chat.record.backend_id = chat.agent_chat.backend_id
                self.save_chat(chat)
            return chat.agent_chat

    def _finish(
        self, chat: LiveChat, runner: TurnRunner, position: int, *, take_queued: bool
    ) -> None:
        if chat.runner is runner:
            chat.runner = None
            chat.task = None
        turns = chat.state().get("turns", [])
        finished = next((t for t in reversed(turns) if t.get("id") == runner.turn_id), None)
        if finished is not None:
            chat.record.turns.append(finished)
            self.host.writes.later(
                f"turn:{chat.record.uri}:{runner.turn_id}",
                _save_turn(self.host, chat.record.uri, position, finished),
            )
        session = chat.session
        self._mark_unread(chat)
        self.touch(session)
        self.update_active_count()
        self.chat_row_moved(chat)
        # A stopped or failed turn leaves the queue waiting for the client's next move.
        if take_queued:
            self.take_queued(chat)

    def steer(self, chat: LiveChat) -> None:
        """Hand the chat's steering message to the running turn, or run it as a turn of its own.

        A backend that cannot take steering into a running turn has it run next, as a turn of
        its own, once the running one completes.
        """
        held = chat.state().get("steeringMessage")
        if not held:
            return
        if not chat.busy:
            self._start_pending(chat, "steering", held)
            return
        steer = getattr(chat.agent_chat, "steer", None)
        if steer is not None and steer(str(held["message"].get("text", ""))):
            self.host.emit(
                chat.channel,
                {"type": "chat/pendingMessageRemoved", "kind": "steering", "id": held["id"]},
            )

    def drop_steering(self, chat: LiveChat) -> None:
        held = chat.state().get("steeringMessage")
        if held:
            self.host.emit(
                chat.channel,
                {"type": "chat/pendingMessageRemoved", "kind": "steering", "id": held["id"]},
            )

    def _mark_unread(self, chat: LiveChat) -> None:
        """A turn's end is something new to read: the chat says unread, and a read session too."""
        self.host.emit(chat.channel, {"type": "chat/isReadChanged", "isRead": False})
        if chat.record.is_read:
            chat.record.is_read = False
            self.save_chat(chat)
        session = chat.session
        if session.record.is_read and session.record.uri in self.sessions:
            self.host.emit(session.channel, {"type": "session/isReadChanged", "isRead": False})
            session.record.is_read = False

    def take_queued(self, chat: LiveChat) -> None:
        """Steering left over, then the head of the queue, starts a turn when none runs."""
        if chat.busy or chat.session.record.uri not in self.sessions:
            return
        held = chat.state().get("steeringMessage")
        if held:
            self._start_pending(chat, "steering", held)
            return
        queued = chat.state().get("queuedMessages") or []
        if queued:
            self._start_pending(chat, "queued", queued[0])

    def _start_pending(self, chat: LiveChat, kind: str, head: dict[str, Any]) -> None:
        self.host.emit(
            chat.channel, {"type": "chat/pendingMessageRemoved", "kind": kind, "id": head["id"]}
        )
        action = {
            "type": "chat/turnStarted",
            "turnId": str(uuid.uuid4()),
            "startedAt": iso(now_ms()),
            "message": head["message"],
            "queuedMessageId": head["id"],
        }
        self.host.emit(chat.channel, action)
        self.turn_began(chat)
        self.start_turn(chat, action)

    def touch(self, session: LiveSession) -> None:
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

    # -- presence -------------------------------------------------------------------------

    def _sessions_of(self, channels: list[Channel]) -> set[str]:
        uris = set()
        for channel in channels:
            if channel.kind == "session":
                uris.add(channel.uri)
            elif channel.kind == "chat" and channel.uri in self.chats:
                uris.add(self.chats[channel.uri].session.record.uri)
        return uris

    def _present(self, client_id: str, session: LiveSession) -> bool:
        """A subscription to the session or to any chat it holds keeps a client in."""
        watched = {session.record.uri, *session.chats}
        return any(
            conn.client_id == client_id and not conn.closed and watched & conn.subscriptions.keys()
            for conn in self.host.connections
        )

    def left(self, client_id: str, channels: list[Channel]) -> None:
        """Take a client out of each session it no longer watches (said as this host's)."""
        for uri in self._sessions_of(channels):
            session = self.sessions.get(uri)
            if session is None or self._present(client_id, session):
                continue
            clients = session.channel.state.get("activeClients", [])
            if any(c.get("clientId") == client_id for c in clients):
                self.host.emit(
                    session.channel,
                    {"type": "session/activeClientRemoved", "clientId": client_id},
                )

    def left_later(self, client_id: str, channels: list[Channel]) -> None:
        if not self._sessions_of(channels):
            return
        asyncio.get_running_loop().call_later(
            self.host.settings.presence_grace_s, self.left, client_id, channels
        )

    def update_active_count(self) -> None:
        count = sum(1 for s in self.sessions.values() if s.running)
        root = self.host.channels[ROOT_URI]
        if root.state.get("activeSessions") != count:
            self.host.emit(root, {"type": "root/activeSessionsChanged", "activeSessions": count})

    def turn_began(self, chat: LiveChat) -> None:
        """After a client's turnStarted is said: its row, then the run."""
        self.chat_row_moved(chat)

    async def shutdown(self) -> None:
        for chat in list(self.chats.values()):
            await self._close_chat(chat, cancel=False)


def _save_turn(host: Host, chat: str, position: int, turn: dict[str, Any]) -> Any:
    async def write() -> None:
        await host.store.save_turn(chat, position, turn)

    return write


def _assistant_text(turn: Mapping[str, Any]) -> str:
    return "".join(
        p.get("content", "") for p in turn.get("responseParts", []) if p.get("kind") == "markdown"
    )


def _model(action: Mapping[str, Any]) -> str | None:
    model = action.get("message", {}).get("model")
    if isinstance(model, dict) and isinstance(model.get("id"), str):
        return str(model["id"])
    return None


def _path(uri: str) -> Path:
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(uri)
    return Path(unquote(parts.path)) if parts.scheme == "file" else Path(uri)


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
