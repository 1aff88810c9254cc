"""The host's side of ACP: the `acp.Client` callbacks an agent calls.

Permission questions go to the chat (which asks a person), files are served inside the folder
fence, and terminals are run by `Terminals`. There is no `session_update`: the agent's pipe takes
those notifications before the SDK sees them (see `pipe.py`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from acp.schema import PermissionOption as AcpPermissionOption
from acp.schema import (
    ReadTextFileResponse,
    RequestPermissionResponse,
    ToolCallUpdate,
    WriteTextFileResponse,
)

from hosts.backends.base import HostTerminals
from hosts.backends.fence import Fence

from .files import read_text, write_text
from .terminals import Terminals

AskPerson = Callable[
    [ToolCallUpdate, Sequence[AcpPermissionOption]], Awaitable[RequestPermissionResponse]
]


class HostClient(Terminals):
    """What one chat's agent may ask of the host, whichever agent process is running."""

    def __init__(
        self,
        fence: Fence,
        terminal_env: Mapping[str, str],
        ask: AskPerson,
        host: HostTerminals | None = None,
        turn_id: Callable[[], str | None] = lambda: None,
    ) -> None:
        super().__init__(fence, terminal_env, host, turn_id)
        self._ask = ask

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[AcpPermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        """Whether a tool call may run, decided by a person."""
        return await self._ask(tool_call, options)

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        """A file inside the chat's folders."""
        return await read_text(self.fence, path, line, limit)

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        """Write a file inside the chat's folders."""
        return await write_text(self.fence, path, content)
