"""The questions a running turn puts to a person, and how each is answered.

A backend asks (`TurnEvents.ask`: an MCP server's elicitation, or the agent's own question):
the request is said on the chat as chat/inputRequested and mirrored to the session's
inputNeeded as a chatInput entry, `chatInput:<chat>:<request>`, the request as the chat holds
it. People co-edit the answers with chat/inputAnswerChanged, held on the request (so the entry
is set again: a client that arrives mid-question reads what is filled in), and answer with
chat/inputCompleted; the answer goes back to whoever asked. A turn that ends (or is replaced)
first answers `cancel`, and every entry goes with its turn.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from ...backends.base import InputAnswer


class QuestionSink(Protocol):
    """The chat a turn asks in (sessions/live_session.py's LiveChat)."""

    @property
    def uri(self) -> str: ...

    def state(self) -> dict[str, Any]: ...

    def set_input_needed(self, request: dict[str, Any]) -> None: ...

    def remove_input_needed(self, request_id: str) -> None: ...


def entry_id(chat: str, request_id: str) -> str:
    """The session's inputNeeded id of a chat's question, VS Code's."""
    return f"chatInput:{chat}:{request_id}"


def open_request(chat_state: Mapping[str, Any], request_id: str) -> dict[str, Any] | None:
    """The chat's open (unanswered) input request `request_id` in its active turn, as the chat
    holds it, answers and all; None when there is none."""
    active = chat_state.get("activeTurn")
    if not isinstance(active, dict):
        return None
    for part in active.get("responseParts", []):
        if (
            isinstance(part, dict)
            and part.get("kind") == "inputRequest"
            and part.get("response") is None
            and isinstance(part.get("request"), dict)
            and part["request"].get("id") == request_id
        ):
            request: dict[str, Any] = part["request"]
            return request
    return None


def unanswered_required(request: Mapping[str, Any], answers: Mapping[str, Any]) -> str | None:
    """The first required question of `request` with no submitted answer among `answers` (a
    draft and a skip are not one); None when every required one has one."""
    for question in request.get("questions") or []:
        if not isinstance(question, dict) or not question.get("required"):
            continue
        answer = answers.get(str(question.get("id")))
        if not isinstance(answer, dict) or answer.get("state") != "submitted":
            return str(question.get("id"))
    return None


def has_question(request: Mapping[str, Any], question_id: str) -> bool:
    return any(
        isinstance(q, dict) and q.get("id") == question_id for q in request.get("questions") or []
    )


class Questions:
    """The open questions of one turn, each waited on by whoever asked it."""

    def __init__(self, chat: QuestionSink, say: Callable[[dict[str, Any]], None]) -> None:
        self._chat = chat
        self._say = say
        self._open: dict[str, asyncio.Future[InputAnswer]] = {}

    async def ask(self, request: Mapping[str, Any]) -> InputAnswer:
        """Say the request, mirror it, and wait for its answer (`cancel` if the turn ends)."""
        asked = dict(request)
        request_id = asked.get("id")
        if not isinstance(request_id, str) or not request_id or request_id in self._open:
            # A request id is the key of everything that answers it: one of this host's own
            # where the asker gave none, or gave one already open.
            request_id = asked["id"] = f"input-{uuid.uuid4()}"
        future: asyncio.Future[InputAnswer] = asyncio.get_running_loop().create_future()
        self._open[request_id] = future
        self._say({"type": "chat/inputRequested", "request": asked})
        self.mirror(request_id)
        try:
            return await future
        finally:
            self._open.pop(request_id, None)
            self._chat.remove_input_needed(entry_id(self._chat.uri, request_id))

    def waiting(self, request_id: str) -> bool:
        future = self._open.get(request_id)
        return future is not None and not future.done()

    def mirror(self, request_id: str) -> None:
        """Set the session's entry for an open question to the request as the chat holds it."""
        request = open_request(self._chat.state(), request_id)
        if request is None or not self.waiting(request_id):
            return
        self._chat.set_input_needed(
            {
                "kind": "chatInput",
                "id": entry_id(self._chat.uri, request_id),
                "chat": self._chat.uri,
                "request": request,
            }
        )

    def answer(self, request_id: str, answer: InputAnswer) -> bool:
        """A person's answer, said already: its entry taken down, and handed to the asker."""
        future = self._open.pop(request_id, None)
        self._chat.remove_input_needed(entry_id(self._chat.uri, request_id))
        if future is None or future.done():
            return False
        future.set_result(answer)
        return True

    def cancel_all(self) -> None:
        """The turn ended (or was replaced) first: every asker is answered `cancel`."""
        for request_id in list(self._open):
            self.answer(request_id, InputAnswer("cancel"))
