"""createTerminal and disposeTerminal."""

from __future__ import annotations

from typing import Any

from ...protocol.validation import required_str
from ..connection import Connection
from ..host import Host
from ..services import Caller
from ..services.terminals import do_create_terminal, do_dispose_terminal
from .common import caller_of, on_channel


async def create_terminal(host: Host, conn: Connection, params: dict[str, Any]) -> None:
    do_create_terminal(
        host,
        caller_of(conn),
        required_str(params, "createTerminal", "channel"),
        claim=params.get("claim"),
        name=params.get("name"),
        cwd=params.get("cwd"),
        cols=params.get("cols"),
        rows=params.get("rows"),
    )
    return None


async def _dispose(host: Host, caller: Caller, uri: str) -> None:
    do_dispose_terminal(host, caller, uri)


dispose_terminal = on_channel("disposeTerminal", _dispose)
