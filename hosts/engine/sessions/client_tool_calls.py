"""The calls a running turn hands to a client: the tools the session's active clients provide.

A client announces its tools on its SessionActiveClient (session/activeClientSet); the engine
hands them to a backend as `ChatContext.client_tools`, read as each turn starts. A call to one
is said as the client's (its start carries `contributor: {kind: "client", clientId}`), ready
with `confirmed: 'not-needed'`, and mirrored to the session's inputNeeded as a
toolClientExecution entry, `toolClientExecution:<chat>:<turn>:<call>`, so the client that
provides the tool picks the work up. That client streams into it (chat/toolCallContentChanged)
and completes it (chat/toolCallComplete); only it may. A result its client asked to have
confirmed waits for a person's chat/toolCallResultConfirmed: approved, it goes to the agent as
given; denied, as a failure. A client that leaves mid-call, and a turn that ends first, fail
the call rather than leave the agent waiting on something nothing can settle any more.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ...backends.base import ClientTool

log = logging.getLogger("ahpd.sessions")

#: What the agent is told, and the call's error says, when its client left before answering.
CLIENT_LEFT = "The client that provides this tool left the session before the call finished."
#: When the turn ended (or was replaced) before the client answered.
TURN_ENDED = "The turn ended before the client finished this tool call."
#: A person denied the result the client gave, in VS Code's host's words.
RESULT_DENIED = "The user denied the tool result."


class ClientCallSink(Protocol):
    """The chat a turn runs in (sessions/live_session.py's LiveChat)."""

    @property
    def uri(self) -> str: ...

    def tool_call_state(self, turn_id: str, call_id: str) -> dict[str, Any] | None: ...

    def set_input_needed(self, request: dict[str, Any]) -> None: ...

    def remove_input_needed(self, request_id: str) -> None: ...

    def raise_input_needed(self, turn_id: str, call_id: str) -> None: ...

    def settle_input_needed(self, turn_id: str, call_id: str) -> None: ...

    def active_client_ids(self) -> set[str]: ...


def entry_id(chat: str, turn_id: str, call_id: str) -> str:
    """The session's inputNeeded id of a call a client runs, VS Code's."""
    return f"toolClientExecution:{chat}:{turn_id}:{call_id}"


def failure(message: str, title: str) -> dict[str, Any]:
    """A failed ToolCallResult: what a call nobody answered completes with."""
    return {"success": False, "pastTenseMessage": f"{title}: failed", "error": {"message": message}}


def client_tools_of(
    session_state: Mapping[str, Any], providers: Collection[str]
) -> list[ClientTool]:
    """The tools the session's active clients provide now, as its state holds them: each
    entry's well-formed ToolDefinitions (a name at least), under that entry's clientId, of
    the entries `providers` announced themselves."""
    tools: list[ClientTool] = []
    for client in session_state.get("activeClients") or []:
        if not isinstance(client, dict) or client.get("clientId") not in providers:
            continue  # an entry that names no client, or not its own, provides none
        for tool in client.get("tools") or []:
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                continue
            if not tool["name"]:
                continue
            schema = tool.get("inputSchema")
            tools.append(
                ClientTool(
                    client_id=client["clientId"],
                    name=tool["name"],
                    title=tool["title"] if isinstance(tool.get("title"), str) else None,
                    description=str(tool.get("description") or ""),
                    input_schema=schema if isinstance(schema, dict) else None,
                )
            )
    return tools


def held_call(chat_state: Mapping[str, Any], turn_id: str, call_id: str) -> dict[str, Any] | None:
    """The tool call `call_id` of turn `turn_id` wherever the chat holds it: its active turn, or
    a turn that ended (a call a stop ended included); None when the chat holds no such call."""
    turns = [chat_state.get("activeTurn"), *reversed(chat_state.get("turns") or [])]
    for turn in turns:
        if not isinstance(turn, dict) or turn.get("id") != turn_id:
            continue
        for part in turn.get("responseParts") or []:
            if (
                isinstance(part, dict)
                and part.get("kind") == "toolCall"
                and isinstance(part.get("toolCall"), dict)
                and part["toolCall"].get("toolCallId") == call_id
            ):
                call: dict[str, Any] = part["toolCall"]
                return call
    return None


def contributing_client(call: Mapping[str, Any]) -> str | None:
    """The client a call names as its contributor, or None for a call no client contributes."""
    contributor = call.get("contributor")
    if isinstance(contributor, dict) and contributor.get("kind") == "client":
        client_id = contributor.get("clientId")
        return client_id if isinstance(client_id, str) else None
    return None


@dataclass(slots=True)
class _Waiting:
    client_id: str
    title: str
    future: asyncio.Future[tuple[dict[str, Any], bool]]
    #: The result the client gave, held while a person confirms it.
    held: dict[str, Any] | None = None


class ClientToolCalls:
    """The calls of one turn that clients run, each waited on by the backend that made it."""

    def __init__(
        self,
        chat: ClientCallSink,
        turn_id: str,
        say: Callable[[dict[str, Any]], None],
    ) -> None:
        self._chat = chat
        self._turn_id = turn_id
        self._say = say
        self._waiting: dict[str, _Waiting] = {}

    async def run(self, call_id: str, client_id: str, title: str) -> dict[str, Any]:
        """Wait for the client's result of a call said running; a failure when it left, when
        a person denied its result, or when the turn ended first.

        The completion is said by whoever settles the call: the client (its own
        chat/toolCallComplete), or this host, for a call nobody answered.
        """
        if client_id not in self._chat.active_client_ids():
            return self._fail_now(call_id, title, CLIENT_LEFT)
        future: asyncio.Future[tuple[dict[str, Any], bool]] = (
            asyncio.get_running_loop().create_future()
        )
        self._waiting[call_id] = _Waiting(client_id, title, future)
        self._mirror(call_id, client_id)
        try:
            result, said = await future
        finally:
            self._waiting.pop(call_id, None)
            self._chat.remove_input_needed(entry_id(self._chat.uri, self._turn_id, call_id))
            self._chat.settle_input_needed(self._turn_id, call_id)
        if not said:
            self._complete(call_id, result)
        return result

    def _mirror(self, call_id: str, client_id: str) -> None:
        call = self._chat.tool_call_state(self._turn_id, call_id)
        if call is None or call.get("status") != "running":
            return
        self._chat.set_input_needed(
            {
                "kind": "toolClientExecution",
                "id": entry_id(self._chat.uri, self._turn_id, call_id),
                "chat": self._chat.uri,
                "turnId": self._turn_id,
                "clientId": client_id,
                "toolCall": call,
            }
        )

    def _complete(self, call_id: str, result: Mapping[str, Any]) -> None:
        self._say(
            {
                "type": "chat/toolCallComplete",
                "turnId": self._turn_id,
                "toolCallId": call_id,
                "result": dict(result),
            }
        )

    def _fail_now(self, call_id: str, title: str, message: str) -> dict[str, Any]:
        result = failure(message, title)
        self._complete(call_id, result)
        return result

    def waiting_for(self, call_id: str) -> str | None:
        """The client a call still waits on, or None."""
        waiting = self._waiting.get(call_id)
        return waiting.client_id if waiting is not None and not waiting.future.done() else None

    def completed(self, call_id: str, result: Mapping[str, Any], *, confirm: bool) -> bool:
        """The client's chat/toolCallComplete, said already: the result goes to the agent, or,
        where its client asked (`confirm`), waits for a person to confirm it. Whether the call
        was waiting."""
        waiting = self._waiting.get(call_id)
        if waiting is None or waiting.future.done() or waiting.held is not None:
            return False
        if confirm:
            waiting.held = dict(result)
            self._chat.remove_input_needed(entry_id(self._chat.uri, self._turn_id, call_id))
            self._chat.raise_input_needed(self._turn_id, call_id)
            return True
        self._chat.remove_input_needed(entry_id(self._chat.uri, self._turn_id, call_id))
        waiting.future.set_result((dict(result), True))
        return True

    def result_confirmed(self, call_id: str, approved: bool) -> bool:
        """A person's chat/toolCallResultConfirmed, said already: the held result goes on as
        the client gave it, or as a failure. Whether a result was waiting."""
        waiting = self._waiting.get(call_id)
        if waiting is None or waiting.future.done() or waiting.held is None:
            return False
        self._chat.settle_input_needed(self._turn_id, call_id)
        if approved:
            waiting.future.set_result((waiting.held, True))
        else:
            denied = {**failure(RESULT_DENIED, waiting.title), "error": {"message": RESULT_DENIED}}
            # The call is cancelled (result-denied) in every client's state: nothing more said.
            waiting.future.set_result((denied, True))
        return True

    def awaiting_confirmation(self, call_id: str) -> bool:
        waiting = self._waiting.get(call_id)
        return waiting is not None and not waiting.future.done() and waiting.held is not None

    def client_left(self, client_id: str) -> None:
        """A client left the session: each call it had yet to answer fails, said by this host.
        A result it gave that waits for a person stays: it is the person's to confirm now."""
        for waiting in list(self._waiting.values()):
            if waiting.client_id == client_id and waiting.held is None:
                if not waiting.future.done():
                    waiting.future.set_result((failure(CLIENT_LEFT, waiting.title), False))

    def fail_all(self) -> None:
        """The turn ended (or was replaced): every call still waiting fails, unsaid (the
        ending settled each in every client's state)."""
        for waiting in list(self._waiting.values()):
            if not waiting.future.done():
                waiting.future.set_result((failure(TURN_ENDED, waiting.title), True))

    def pending(self) -> Sequence[str]:
        return [c for c, w in self._waiting.items() if not w.future.done()]


class _Turn(Protocol):
    @property
    def client_calls(self) -> ClientToolCalls: ...


class _Chat(Protocol):
    @property
    def runner(self) -> _Turn | None: ...

    @property
    def replaced(self) -> Sequence[_Turn]: ...


class _Session(Protocol):
    """A session as live_session.py holds it (named by shape: it imports this module)."""

    @property
    def chats(self) -> Mapping[str, _Chat]: ...


def fail_calls_of(session: _Session, client_id: str) -> None:
    """A client left the session (it removed itself, or this host took it out): every call
    it was running in the session's chats fails, rather than leave a turn hanging."""
    for chat in session.chats.values():
        for runner in (chat.runner, *chat.replaced):
            if runner is not None:
                runner.client_calls.client_left(client_id)
