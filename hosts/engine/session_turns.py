"""The turns of a session's chats: started, run by the chat's backend, ended, and followed.

Mixed into `Sessions` (sessions.py), whose tables and records these methods read and write.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..backends.base import Agent, AgentChat, BackendError, ChatContext, TurnRequest
from .clock import now_ms
from .records import file_path, iso
from .turns import TurnRunner

if TYPE_CHECKING:
    from .host import Host
    from .sessions import LiveChat, LiveSession

log = logging.getLogger("ahpd.sessions")


class TurnsMixin:
    if TYPE_CHECKING:
        host: Host
        agents: dict[str, Agent]
        sessions: dict[str, LiveSession]
        chats: dict[str, LiveChat]
        state_dir: Path | None

        def announce(self, session: LiveSession, *, failure: str | None = None) -> None: ...
        def touch(self, session: LiveSession) -> None: ...
        def save_chat(self, chat: LiveChat) -> None: ...
        def chat_row_moved(self, chat: LiveChat) -> None: ...
        def update_active_count(self) -> None: ...

    def start_host_turn(self, chat: LiveChat, message: dict[str, Any]) -> str:
        """A turn this host starts (a new chat's first message): said, then run; its id."""
        action = with_sender(
            {
                "type": "chat/turnStarted",
                "turnId": str(uuid.uuid4()),
                "startedAt": iso(now_ms()),
                "message": message,
            }
        )
        self.host.emit(chat.channel, action)
        self.turn_began(chat)
        self.start_turn(chat, action)
        return str(action["turnId"])

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
        # Where the turn will stand: after every turn the chat holds, a stopped one still
        # letting go of its backend included.
        position = len(chat.state().get("turns", []))
        running: dict[str, Any] = {
            "id": turn_id,
            "startedAt": action.get("startedAt") or iso(started),
            "message": action.get("message"),
            "responseParts": [],
            "state": "running",
        }
        save_turn_later(self.host, chat.record.uri, position, running)
        previous = chat.task
        chat.task = asyncio.get_running_loop().create_task(
            self._run(chat, runner, TurnRequest(turn_id, text, _model(action)), previous)
        )

    async def _run(
        self,
        chat: LiveChat,
        runner: TurnRunner,
        request: TurnRequest,
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
            self._finish(chat, runner, take_queued=completed)

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
                working_directories=[file_path(u) for u in record.working_directories]
                or [Path.cwd()],
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

    def _finish(self, chat: LiveChat, runner: TurnRunner, *, take_queued: bool) -> None:
        if chat.runner is runner:
            chat.runner = None
            chat.task = None
        if chat.record.uri not in self.chats:
            return  # disposed meanwhile: nothing of it is kept or said any more
        turns = chat.state().get("turns", [])
        chat.record.turns = list(turns)
        finished = next((t for t in reversed(turns) if t.get("id") == runner.turn_id), None)
        if finished is not None:
            save_turn_later(self.host, chat.record.uri, turns.index(finished), finished)
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

    def rewind(self, chat: LiveChat) -> None:
        """After a truncation: keep what the chat holds, and start its backend again on it.

        A backend that keeps a conversation of its own (an ACP agent) cannot be cut; it is let
        go, and the next turn opens a new conversation on the turns kept (the openai loop is
        handed them as history; an ACP agent's new session gets them on its first prompt).
        """
        kept = list(chat.state().get("turns", []))
        chat.record.turns = kept
        chat.record.backend_id = None
        self.save_chat(chat)
        uri = chat.record.uri

        async def write() -> None:
            await self.host.store.truncate_turns(uri, len(kept))

        self.host.writes.later(f"truncate:{uri}", write)
        agent_chat, chat.agent_chat = chat.agent_chat, None
        if agent_chat is not None:
            asyncio.get_running_loop().create_task(agent_chat.close())

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
        action = with_sender(
            {
                "type": "chat/turnStarted",
                "turnId": str(uuid.uuid4()),
                "startedAt": iso(now_ms()),
                "message": head["message"],
                "queuedMessageId": head["id"],
            }
        )
        self.host.emit(chat.channel, action)
        self.turn_began(chat)
        self.start_turn(chat, action)

    def turn_began(self, chat: LiveChat) -> None:
        """After a client's turnStarted is said: its row, then the run."""
        self.chat_row_moved(chat)


def with_sender(action: dict[str, Any]) -> dict[str, Any]:
    """A host-said turnStarted carries, on the action too, who sent the message it runs."""
    sender = ((action.get("message") or {}).get("_meta") or {}).get("ahpd.sender")
    if sender:
        action["_meta"] = {"ahpd.sender": sender}
    return action


def save_turn_later(host: Host, chat: str, position: int, turn: dict[str, Any]) -> None:
    """Write one turn of a chat, behind; a later write of the same turn replaces it."""

    async def write() -> None:
        await host.store.save_turn(chat, position, turn)

    host.writes.later(f"turn:{chat}:{turn['id']}", write)


def _assistant_text(turn: Mapping[str, Any]) -> str:
    return "".join(
        p.get("content", "") for p in turn.get("responseParts", []) if p.get("kind") == "markdown"
    )


def _model(action: Mapping[str, Any]) -> str | None:
    model = action.get("message", {}).get("model")
    if isinstance(model, dict) and isinstance(model.get("id"), str):
        return str(model["id"])
    return None
