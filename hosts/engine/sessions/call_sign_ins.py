"""A running call to an MCP server's tool that waits for a person to sign in to that server:
said with chat/toolCallAuthRequired and mirrored to the session's inputNeeded as a
`toolAuthentication` entry, `toolAuthentication:<chat>:<turn>:<call>` (VS Code's id), which the
`authenticate` command answers rather than a chat action; once the server is back the call runs
on (chat/toolCallAuthResolved) and the entry is taken down, as it is when the turn ends first."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol


class SignInSink(Protocol):
    """The chat a turn runs in (sessions/live_session.py's LiveChat)."""

    @property
    def uri(self) -> str: ...

    def tool_call_state(self, turn_id: str, call_id: str) -> dict[str, Any] | None: ...

    def set_input_needed(self, request: dict[str, Any]) -> None: ...

    def remove_input_needed(self, request_id: str) -> None: ...


def entry_id(chat: str, turn_id: str, call_id: str) -> str:
    """The session's inputNeeded id of a call waiting on a sign-in, VS Code's."""
    return f"toolAuthentication:{chat}:{turn_id}:{call_id}"


class CallSignIns:
    """The calls of one turn that wait for a sign-in."""

    def __init__(
        self, chat: SignInSink, turn_id: str, say: Callable[[dict[str, Any]], None]
    ) -> None:
        self._chat = chat
        self._turn_id = turn_id
        self._say = say
        self._waiting: set[str] = set()

    def required(self, call_id: str, auth: Mapping[str, Any]) -> None:
        self._waiting.add(call_id)
        self._say(
            {
                "type": "chat/toolCallAuthRequired",
                "turnId": self._turn_id,
                "toolCallId": call_id,
                "auth": dict(auth),
            }
        )
        call = self._chat.tool_call_state(self._turn_id, call_id)
        if call is not None:
            self._chat.set_input_needed(
                {
                    "kind": "toolAuthentication",
                    "id": entry_id(self._chat.uri, self._turn_id, call_id),
                    "chat": self._chat.uri,
                    "turnId": self._turn_id,
                    "toolCall": call,
                }
            )

    def resolved(self, call_id: str) -> None:
        if call_id not in self._waiting:
            return
        self._waiting.discard(call_id)
        self._say(
            {"type": "chat/toolCallAuthResolved", "turnId": self._turn_id, "toolCallId": call_id}
        )
        self._chat.remove_input_needed(entry_id(self._chat.uri, self._turn_id, call_id))

    def settle_all(self) -> None:
        """The turn ended: no call of it waits any more."""
        for call_id in list(self._waiting):
            self._chat.remove_input_needed(entry_id(self._chat.uri, self._turn_id, call_id))
        self._waiting.clear()
