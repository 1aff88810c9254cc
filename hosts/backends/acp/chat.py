"""One ACP conversation as an `AgentChat`: the turns run in the chat's agent session.

A turn is one `session/prompt`. It ends when the agent answers, when it is cancelled (the agent
is told, and open permission questions are answered `cancelled`), or when it takes longer than
the configured prompt timeout; an agent that does not stop when asked is restarted, and its
session loaded again, for the next turn.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import acp
from acp import RequestError

from hosts.backends.base import BackendError, ChatContext, TurnEnd, TurnEvents, TurnRequest

from .agent_process import SHUTDOWN_GRACE_S
from .errors import AgentGone, describe
from .history import earlier_conversation
from .prompt import attachment_blocks
from .session import AcpSession
from .turn import Turn, ending

if TYPE_CHECKING:
    from .agent import AcpAgent

log = logging.getLogger(__name__)


class AcpChat(AcpSession):
    """One conversation: one agent process and one ACP session in it, restarted when it dies."""

    #: How long a cancelled (or timed-out) turn waits for the agent to stop before giving up on it.
    cancel_grace_s: float = 3.0

    def __init__(self, agent: AcpAgent, context: ChatContext) -> None:
        super().__init__(agent, context)
        self._turn_lock = asyncio.Lock()
        self._closed = False

    async def run_turn(self, request: TurnRequest, events: TurnEvents) -> TurnEnd:
        """Prompt the agent and report the turn; restart (and reload) an agent that died."""
        async with self._turn_lock:
            turn = Turn(events, request.turn_id, self.client, self.client_tools)
            self._turn = turn
            try:
                if self._closed:
                    return TurnEnd("cancelled")
                if not self._alive():
                    await self._stop(kill=True)
                    try:
                        await self.start()
                    except BackendError as error:
                        return TurnEnd("error", str(error))
                    except Exception as error:
                        log.exception("%s: cannot restart the agent", self._name)
                        return TurnEnd("error", f"Cannot restart {self._name}: {error}")
                if self._alive() and self.client_tools.changed():
                    # The clients' tools changed since the agent listed them: it is started
                    # again, its session loaded with the new set (seed 000: at the next send).
                    await self._stop()
                    try:
                        await self.start()
                    except BackendError as error:
                        return TurnEnd("error", str(error))
                if turn.cancelled.is_set():
                    return TurnEnd("cancelled")
                self.client_tools.begin(events)
                if request.model:
                    try:
                        await self._select_model(request.model)
                    except AgentGone as gone:
                        await self._stop(kill=True)
                        return TurnEnd("error", str(gone))
                end = await self._prompt(turn, request)
                if end.state == "complete":
                    said = "".join(turn.updates.said)
                    self._history.append({"user": request.text, "assistant": said})
                return end
            finally:
                self._turn = None
                self.client_tools.end()
                for question in turn.questions:
                    question.cancel()

    def _prompt_texts(self, text: str) -> list[str]:
        """The person's message, after the chat's kept turns when the session has not had them."""
        if self._history_due:
            # Given once: from here on the agent's own session holds them.
            self._history_due = False
            earlier = earlier_conversation(self._history)
            if earlier is not None:
                return [earlier, text]
        return [text]

    def _prompt_blocks(self, request: TurnRequest) -> list[Any]:
        """The kept turns (where due), the message's attachments, then the message itself."""
        *earlier, text = self._prompt_texts(request.text)
        return [
            *(acp.text_block(part) for part in earlier),
            *attachment_blocks(request.attachments, self.prompt_capabilities),
            acp.text_block(text),
        ]

    async def _prompt(self, turn: Turn, request: TurnRequest) -> TurnEnd:
        conn = self._link.conn
        assert conn is not None
        turn.updates.model = self._model
        turn.updates.cost_start = self.cost_said
        prompt = asyncio.ensure_future(
            conn.prompt(
                session_id=self._session,
                prompt=self._prompt_blocks(request),
            )
        )
        cancelled = asyncio.ensure_future(turn.cancelled.wait())
        timeout = self._config.prompt_timeout_s if self._config.prompt_timeout_s > 0 else None
        try:
            while True:
                done, _ = await asyncio.wait(
                    {prompt, cancelled}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
                )
                if done or not turn.questions:
                    break
                # A person is deciding; that is not the agent being slow. The clock restarts
                # once nobody is being asked.
                waiting: set[asyncio.Future[Any]] = {prompt, cancelled, *turn.questions}
                await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            if prompt.done():
                return await self._finish(turn, prompt)
            timed_out = not cancelled.done()
            if timed_out:
                log.warning("%s: turn %s timed out", self._name, request.turn_id)
                await self._interrupt(turn)
            await asyncio.wait({prompt}, timeout=self.cancel_grace_s)
            if prompt.done() and not timed_out:
                return await self._finish(turn, prompt)
            if not prompt.done():
                # The agent did not stop when asked: it may still be busy with this prompt,
                # so the next turn gets a fresh process (and the session back by loading).
                log.warning(
                    "%s did not stop within %g s; restarting it", self._name, self.cancel_grace_s
                )
                prompt.cancel()
                await self._stop(kill=True)
            if timed_out:
                return TurnEnd(
                    "error",
                    f"{self._name} did not finish within {timeout:g} s; the turn timed out.",
                )
            return TurnEnd("cancelled")
        finally:
            cancelled.cancel()
            if not prompt.done():
                prompt.cancel()

    async def _finish(self, turn: Turn, prompt: asyncio.Future[Any]) -> TurnEnd:
        try:
            response = prompt.result()
        except ConnectionError:
            message = await self._link.exit_message()
            await self._stop(kill=True)
            if turn.cancelled.is_set():
                return TurnEnd("cancelled")  # stopped as asked, if more abruptly (close, say)
            return TurnEnd("error", message)
        except RequestError as error:
            if turn.cancelled.is_set():
                return TurnEnd("cancelled")
            return TurnEnd("error", f"{self._name}: {describe(error)}")
        except Exception as error:
            # An answer the SDK cannot read (an unknown stopReason, say).
            log.exception("%s: unreadable answer to session/prompt", self._name)
            return TurnEnd("error", f"{self._name} gave an unreadable answer: {error}")
        if response.usage is not None:
            turn.events.usage(
                input_tokens=response.usage.input_tokens,
                output_tokens=response.usage.output_tokens,
                model=self._model,
                cache_read_tokens=response.usage.cached_read_tokens,
                cache_write_tokens=response.usage.cached_write_tokens,
            )
        return ending(response.stop_reason, cancelled=turn.cancelled.is_set(), name=self._name)

    async def cancel(self) -> None:
        """Stop the running turn: open questions are answered `cancelled`, the agent is told."""
        turn = self._turn
        if turn is None or turn.cancelled.is_set():
            return
        turn.cancelled.set()
        await self._interrupt(turn)

    async def _interrupt(self, turn: Turn) -> None:
        for question in list(turn.questions):
            question.cancel()
        conn = self._link.conn
        if conn is None or self.backend_id is None or not self._alive():
            return
        try:
            # A notification; bounded because a wedged agent may have stopped reading stdin.
            await asyncio.wait_for(conn.cancel(session_id=self.backend_id), SHUTDOWN_GRACE_S)
        except (TimeoutError, ConnectionError, OSError) as error:
            log.warning("%s: cannot send session/cancel: %s", self._name, error)

    async def close(self) -> None:
        """Let the agent go: a running turn is cancelled first, then the process ends."""
        self._closed = True
        await self.cancel()
        await self._stop()
        # The servers it started went with it.
        self._mcp.stopped()
        await self.client_tools.close()
