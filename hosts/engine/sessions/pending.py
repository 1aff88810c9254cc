"""A chat's pending messages: the steering message and the queue, taken up as turns.

A steering message goes into the running turn when its backend can take it, else runs next as
a turn of its own; the head of the queue starts a turn once none runs. Both are said removed
from every client's state as they are taken.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .live_session import LiveChat

if TYPE_CHECKING:
    from .session_table import Sessions


class PendingMessages:
    """The part of :class:`Turns` that takes up what waits in a chat."""

    _sessions: Sessions

    if TYPE_CHECKING:

        def begin_message(
            self, chat: LiveChat, message: dict[str, Any], *, queued_id: str | None = None
        ) -> str: ...

    def steer(self, chat: LiveChat) -> None:
        """Hand the chat's steering message to the running turn, or run it as a turn of its own.

        A backend that cannot take steering into a running turn has it run next, as a turn of
        its own, once the running one completes.
        """
        held = chat.state().get("steeringMessage")
        if not held:
            return
        if not chat.busy:
            self._take(chat, "steering", held)
            return
        steer = getattr(chat.agent_chat, "steer", None)
        if steer is not None and steer(str(held["message"].get("text", ""))):
            chat.say({"type": "chat/pendingMessageRemoved", "kind": "steering", "id": held["id"]})

    def drop_steering(self, chat: LiveChat) -> None:
        held = chat.state().get("steeringMessage")
        if held:
            chat.say({"type": "chat/pendingMessageRemoved", "kind": "steering", "id": held["id"]})

    def take_queued(self, chat: LiveChat) -> None:
        """Steering left over, then the head of the queue, starts a turn when none runs."""
        if chat.busy or not self._sessions.holds(chat.session):
            return
        held = chat.state().get("steeringMessage")
        if held:
            self._take(chat, "steering", held)
            return
        state = chat.state()
        queued = state.get("queuedMessages") or []
        turns = state.get("turns") or []
        if turns and ends_resumable(turns[-1]):
            return  # nothing starts behind a failure a client can resume (chat/turnResume)
        if queued:
            self._take(chat, "queued", queued[0])

    def _take(self, chat: LiveChat, kind: str, head: dict[str, Any]) -> None:
        chat.say({"type": "chat/pendingMessageRemoved", "kind": kind, "id": head["id"]})
        self.begin_message(chat, head["message"], queued_id=head["id"])


def ends_resumable(turn: dict[str, Any]) -> bool:
    """Whether a turn stopped at an error its backend said it can run the turn again from."""
    parts = turn.get("responseParts") or []
    last = parts[-1] if parts else None
    return (
        turn.get("state") == "error"
        and isinstance(last, dict)
        and last.get("kind") == "error"
        and last.get("resumable") is True
    )
