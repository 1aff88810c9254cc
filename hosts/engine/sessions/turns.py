"""The turns of a session's chats: begun, run by the chat's backend, ended, and followed.

One sequence begins every turn, whoever asked (a client's chat/turnStarted, a REST message, a
new chat's first message, a queued or steering message taken up): the start is said, the
chat's row moves, and the backend runs it once the work in front of it is done. A turn sent
while another runs takes its place in every client's state (the protocol's reducer replaces
the active turn); the one replaced runs on, in no history, and a stop drops them all.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from pathlib import Path
from typing import Any

from ...backends.base import BackendError, ResumableChat, TurnEnd, TurnRequest
from ...protocol.reducers import reduce
from ...protocol.shapes import Origin
from ..clock import iso, now_ms
from .attachments import Attachments, turn_request
from .live_session import INTERRUPTED, LiveChat, cancel_backend
from .local_commands import LocalCommands
from .metered import Metering
from .opening import open_agent_chat
from .pending import PendingMessages
from .runner import TurnRunner, sender_of
from .running_agents import RunningAgents
from .session_table import Sessions
from .turn_counts import TurnCounts
from .turn_hooks import TurnHooks

log = logging.getLogger("ahpd.sessions")


class Turns(PendingMessages):
    def __init__(
        self,
        sessions: Sessions,
        running_agents: RunningAgents,
        *,
        delta_window_ms: int,
        state_dir: Path | None,
        local: LocalCommands,
        attachments: Attachments,
    ):
        self._sessions = sessions
        self._running_agents = running_agents
        self._window_ms = delta_window_ms
        self._state_dir = state_dir
        #: What runs a `!command` turn in a terminal, in the backend's place.
        self.local = local
        #: What finds a message's attachments before its turn runs (the host's, in its fence).
        self.attachments = attachments
        #: What the turns came to, for the operator.
        self.counts = TurnCounts()
        #: Set once the host is on its way out: a turn said from then on ends unrun.
        self.closing = False
        self.hooks = TurnHooks()  # what keeps a changeset's trees (turn_hooks.py)
        #: Each turn's policy check and usage (its meter set where there is a database).
        self.metering = Metering()
        self.metering.on_spent = self._over_budget

    # -- beginning ------------------------------------------------------------------------

    def begin(
        self,
        chat: LiveChat,
        action: dict[str, Any],
        *,
        origin: Origin | None = None,
        sender: Any = None,
    ) -> str:
        """Say a chat/turnStarted (a client's, with its origin, or this host's) and run it.

        The action is checked already. Its id.
        """
        chat.session.fanout.emit(chat.channel, action, origin=origin, sender=sender)
        self._sessions.chat_row_moved(chat)
        self._start(chat, action)
        return str(action["turnId"])

    def begin_message(
        self, chat: LiveChat, message: dict[str, Any], *, queued_id: str | None = None
    ) -> str:
        """A turn this host starts for a message (REST, a new chat's first, one taken up)."""
        action: dict[str, Any] = {
            "type": "chat/turnStarted",
            "turnId": str(uuid.uuid4()),
            "startedAt": iso(now_ms()),
            "message": message,
        }
        if queued_id is not None:
            action["queuedMessageId"] = queued_id
        sender = (message.get("_meta") or {}).get("ahpd.sender")
        if sender:
            # Who sent the message it runs, on the action too, as a client's start carries it.
            action["_meta"] = {"ahpd.sender": sender}
        return self.begin(chat, action)

    def _start(self, chat: LiveChat, action: dict[str, Any]) -> None:
        session = chat.session
        turn_id: str = action["turnId"]
        started = now_ms()
        if chat.busy:
            assert chat.runner is not None
            chat.runner.supersede()
            chat.replaced.append(chat.runner)
        runner = TurnRunner(chat, turn_id, started, self._window_ms)
        runner.sender = sender_of(action)
        text = str(action.get("message", {}).get("text", ""))
        title = None
        if not session.channel.state["title"] and not session.record.title and text.strip():
            # An untitled row is one nobody can find again: name it after its first message.
            # It is kept now and said once committed (the turn's task).
            title = session.record.title = " ".join(text.split())[:80]
        running: dict[str, Any] = {
            "id": turn_id,
            "startedAt": action.get("startedAt") or iso(started),
            "message": action.get("message"),
            "responseParts": [],
            "state": "running",
        }
        self._launch(chat, runner, running, turn_request(turn_id, text, action), title=title)

    def resume(self, chat: LiveChat, turn: dict[str, Any]) -> None:
        """Run again the turn a chat/turnResume (said already) reopened, under its own id, by
        the backend's resume: its duration and its usage go on from its earlier run."""
        turn_id = str(turn["id"])
        runner = TurnRunner(chat, turn_id, now_ms(), self._window_ms)
        runner.continuing(int(turn.get("duration") or 0), turn.get("usage"))
        runner.sender = sender_of(turn)
        text = str((turn.get("message") or {}).get("text", ""))
        active = {**chat.state().get("activeTurn", turn), "state": "running"}
        self._sessions.chat_row_moved(chat)  # in progress again, in the session's catalogue
        self._launch(chat, runner, active, turn_request(turn_id, text, turn), resume=True)

    def _launch(
        self,
        chat: LiveChat,
        runner: TurnRunner,
        running: dict[str, Any],
        request: TurnRequest,
        *,
        title: str | None = None,
        resume: bool = False,
    ) -> None:
        """The turn the chat holds as its running one, kept, and its task started."""
        session = chat.session
        chat.runner = runner
        self._running_agents.used(chat)
        self.counts.start(session.record.provider, runner.turn_id, chat.record.uri, runner.sender)
        self._sessions.touch(session)
        self._sessions.update_active_count()
        # Where the turn will stand: after every turn the chat holds, a stopped one still
        # letting go of its backend included.
        position = len(chat.state().get("turns", []))
        self._sessions.save_turn(chat.record.uri, position, running)
        runner.on_said = lambda: self._keep_running(chat, runner, position)
        previous = chat.task
        chat.task = asyncio.get_running_loop().create_task(
            self._run(chat, runner, request, previous, title, resume=resume)
        )

    def _keep_running(self, chat: LiveChat, runner: TurnRunner, position: int) -> None:
        """Write the running turn as it stands, behind: a crash keeps what it had streamed."""
        active = chat.state().get("activeTurn")
        if chat.runner is not runner or not active or active.get("id") != runner.turn_id:
            return  # replaced (its place is the newer turn's) or ended
        self._sessions.save_turn(chat.record.uri, position, {**active, "state": "running"})

    async def _say_title(self, chat: LiveChat, title: str) -> None:
        """A session's first title, said once it is committed."""
        session = chat.session
        await self._sessions.writes.flush()
        if self._sessions.holds(session) and session.record.title == title:
            # Unless renamed meanwhile (the rename is kept and said already).
            session.say({"type": "session/titleChanged", "title": title})

    async def commit_ending(self, chat: LiveChat, ending: dict[str, Any]) -> None:
        """Commit the turn an ending action (chat/turnComplete, turnCancelled, error) is about
        to end, as the chat will hold it once said; nothing for a turn it would not end."""
        if self._sessions.chat(chat.record.uri) is not chat:
            return  # disposed: nothing of it is kept
        finished = reduce("chat", chat.state(), ending, now_ms=now_ms())
        turns = finished.get("turns", [])
        if turns and turns[-1].get("id") == ending["turnId"] and "activeTurn" not in finished:
            self._sessions.save_turn(chat.record.uri, len(turns) - 1, turns[-1])
            await self._sessions.writes.flush()

    async def _end(
        self,
        chat: LiveChat,
        runner: TurnRunner,
        state: str,
        message: str = "",
        *,
        resumable: bool = False,
    ) -> None:
        """The turn's one ending, committed before any client is told it."""
        if runner.ended:
            return
        ending = runner.ending(state, message, resumable=resumable)
        if chat.runner is runner:
            await self.commit_ending(chat, ending)
        # Stopped meanwhile, the stop was said and is what the chat holds (written by _finish).
        runner.end_with(ending)

    async def _run(
        self,
        chat: LiveChat,
        runner: TurnRunner,
        request: TurnRequest,
        previous: asyncio.Task[None] | None,
        title: str | None = None,
        *,
        resume: bool = False,
    ) -> None:
        completed = False
        # A ! command is this host's own: run at once, whatever else runs, by no agent.
        local = self.local.command_for(chat, request.text)
        try:
            if title is not None:
                await self._say_title(chat, title)
            if previous is not None and not previous.done() and local is None:
                # A turn said while other work runs in the chat runs once that is done.
                await asyncio.wait([previous])
            if runner.ended:
                return
            if self.closing:
                runner.end("error", INTERRUPTED, "executionInterrupted")
                return
            if local is None and (refusal := await self.metering.admit(chat, runner, request)):
                # Refused by a policy: said as the turn's error, and the agent never asked.
                await self._end(chat, runner, "error", refusal)
                return
            if not resume:
                # A resumed turn's tree is the one its first run found: its changes are both
                # runs'.
                await self.hooks.starting(chat, request.turn_id)
            try:
                agent_chat = local or await open_agent_chat(
                    chat,
                    self._sessions,
                    self._running_agents,
                    self.local.terminals,
                    self._state_dir,
                )
            except Exception as exc:
                message = str(exc) if isinstance(exc, BackendError) else f"The agent failed: {exc}"
                if not isinstance(exc, BackendError):
                    log.exception("opening the agent of %s failed", chat.record.uri)
                await self._end(chat, runner, "error", message)
                await self._sessions.announce(chat.session, failure=message)
                return
            await self._sessions.announce(chat.session)
            found = await self.attachments.found(request)
            if runner.ended:
                # Stopped while its agent was opened (a backend drops a cancel with no turn
                # running): never asked. Nothing waits from here to the backend's own turn.
                return
            if not resume:
                end = await agent_chat.run_turn(found, runner)
            elif isinstance(agent_chat, ResumableChat):
                end = await agent_chat.resume_turn(found, runner)
            else:
                end = TurnEnd("error", "The agent holds no turn to run again.", resumable=True)
            await self.metering.settle(chat, runner)
            completed = end.state == "complete" and not runner.ended
            await self._end(chat, runner, end.state, end.message, resumable=end.resumable)
        except BackendError as exc:
            await self._end(chat, runner, "error", str(exc))
        except asyncio.CancelledError:
            runner.end("cancelled")
            raise
        except Exception as exc:
            log.exception("turn %s of %s failed", request.turn_id, chat.record.uri)
            await self._end(chat, runner, "error", f"The agent failed: {exc}")
        finally:
            self.metering.settle_later(chat, runner)
            self.local.done(chat, local)
            self.hooks.ended(chat, request.turn_id)
            self._finish(chat, runner, take_queued=completed)

    def _finish(self, chat: LiveChat, runner: TurnRunner, *, take_queued: bool) -> None:
        self._count_end(chat, runner)
        if runner in chat.replaced:
            # Replaced while it ran: in no client's state and no history; nothing to keep.
            chat.replaced.remove(runner)
            return
        if chat.runner is runner:
            chat.runner = None
            chat.task = None
        if self._sessions.chat(chat.record.uri) is not chat:
            return  # disposed meanwhile: nothing of it is kept or said any more
        turns = chat.state().get("turns", [])
        chat.record.turns = list(turns)
        finished = next((t for t in reversed(turns) if t.get("id") == runner.turn_id), None)
        if finished is not None:
            self._sessions.save_turn(chat.record.uri, turns.index(finished), finished)
        self._mark_unread(chat)
        self._sessions.touch(chat.session)
        self._sessions.update_active_count()
        self._sessions.chat_row_moved(chat)
        self._running_agents.rested(chat)
        # A stopped or failed turn leaves the queue waiting for the client's next move.
        if take_queued:
            self.take_queued(chat)

    def _count_end(self, chat: LiveChat, runner: TurnRunner) -> None:
        self.counts.end(
            chat.session.record.provider,
            runner.turn_id,
            chat.record.uri,
            runner.outcome or "cancelled",
            runner.duration_ms / 1000,
            error_type=runner.error_type,
        )

    async def interrupt_all(self) -> int:
        """The host is on its way out: every running turn ends now in chat/error, as a turn the
        last process left running reads back after a restart (executionInterrupted); then its
        work is stopped and what it came to is written behind. How many were running."""
        self.closing = True
        chats = list(self._sessions.chats.values())
        running = [chat for chat in chats if chat.busy]
        for chat in running:
            assert chat.runner is not None
            chat.runner.end("error", INTERRUPTED, "executionInterrupted")
            for replaced in chat.replaced:
                replaced.stop()
        tasks = [chat.task for chat in chats if chat.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return len(running)

    def _mark_unread(self, chat: LiveChat) -> None:
        """A turn's end is something new to read: the chat says unread, and a read session too."""
        chat.say({"type": "chat/isReadChanged", "isRead": False})
        if chat.record.is_read:
            chat.record.is_read = False
            self._sessions.save_chat(chat)
        session = chat.session
        if session.record.is_read and self._sessions.holds(session):
            session.say({"type": "session/isReadChanged", "isRead": False})
            session.record.is_read = False

    # -- stopping and rewinding -----------------------------------------------------------

    def stop(self, chat: LiveChat, *, said: bool) -> str | None:
        """Stop the chat's running turn for every client at once, then its backend.

        `said` when a client's chat/turnCancelled was said already; otherwise this host says
        one. The turns it replaced and pending steering go with it and start nothing behind
        it. The stopped turn's id, or None when none ran.
        """
        runner = chat.runner
        if runner is None or runner.ended:
            return None
        if not said:
            chat.say(_cancelled(runner))
        runner.stop()
        for replaced in chat.replaced:
            replaced.stop()
        self.drop_steering(chat)
        self._sessions.chat_row_moved(chat)
        self._sessions.update_active_count()
        agent_chat = chat.agent_chat
        if agent_chat is not None:
            asyncio.get_running_loop().create_task(cancel_backend(chat.record.uri, agent_chat))
        self.local.stop(chat)
        return runner.turn_id

    def _over_budget(self, chat: LiveChat, runner: TurnRunner, refusal: str) -> None:
        """A running turn's usage left a paying row with no room: it ends now, in an error
        naming the row, and its backend is stopped."""
        runner.end("error", refusal)
        if chat.agent_chat is not None:
            asyncio.get_running_loop().create_task(cancel_backend(chat.record.uri, chat.agent_chat))

    async def stop_kept(self, chat: LiveChat) -> str | None:
        """`stop`, the stop committed before it is said; the stopped turn's id, or None."""
        runner = chat.runner
        if runner is None or runner.ended:
            return None
        ending = _cancelled(runner)
        await self.commit_ending(chat, ending)
        if chat.runner is not runner or runner.ended:
            return None  # ended meanwhile, by its backend or by a client
        chat.say(ending)
        return self.stop(chat, said=True)

    def rewind(self, chat: LiveChat) -> None:
        """After a truncation: keep what the chat holds, and start its backend again on it.

        A backend that keeps a conversation of its own (an ACP agent) cannot be cut; it is let
        go, and the next turn opens a new conversation handed the turns kept as its history.
        """
        kept = list(chat.state().get("turns", []))
        chat.record.turns = kept
        chat.record.backend_id = None
        self._sessions.save_chat(chat)
        uri = chat.record.uri
        store = self._sessions.store

        async def write() -> None:
            await store.truncate_turns(uri, len(kept))

        self._sessions.writes.later(f"truncate:{uri}", write)
        agent_chat, chat.agent_chat = chat.agent_chat, None
        if agent_chat is not None:
            asyncio.get_running_loop().create_task(agent_chat.close())


def _cancelled(runner: TurnRunner) -> dict[str, Any]:
    return {"type": "chat/turnCancelled", "turnId": runner.turn_id, "duration": runner.duration()}
