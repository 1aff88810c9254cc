"""What a client of another node dispatches to a channel this node runs: applied here as if
it were this node's client, by the one dispatch pipeline (commands/dispatch.py), as the person
that node checked in, under the client's own id (the origin its envelope comes back with).

The client is a connection of no socket: what the pipeline says to the sender alone reaches
nobody, and what it says on the channel reaches the client through its node's mirror
(mirrors.py), refusals included.
"""

from __future__ import annotations

from typing import Any

from ...protocol.jsonrpc import Incoming
from ...protocol.versions import parse_version
from ..commands.dispatch import dispatch_action
from ..connection import Connection
from ..host import Host
from ..principal import Principal
from ..router import Router


class NoSocket:
    """The transport of a client whose socket is another node's."""

    def write_now(self, texts: list[str]) -> bool:
        return True

    async def send_batch(self, texts: list[str]) -> None:
        return None

    async def close(self, code: int, reason: str) -> None:
        return None

    async def abort(self) -> None:
        return None

    def buffered(self) -> int | None:
        return None


#: The relay's name for a client's request carried to the node that runs its channel.
CLIENT_REQUEST = "client_request"


def _as_here(principal: Principal, client: dict[str, Any]) -> Connection:
    """Another node's client (mirrors.client_of), as a connection of this node with no socket."""
    conn = Connection(NoSocket(), f"client {client.get('clientId')} of another node")
    conn.principal = conn.admitted_principal = principal
    conn.client_id = str(client["clientId"])
    conn.version_text = str(client["version"])
    conn.version = parse_version(conn.version_text)
    name = client.get("name")
    conn.client_name = name if isinstance(name, str) else None
    conn.legacy_vscode_chat_uris = client.get("legacyChatUris") is True
    return conn


async def dispatch_from_node(
    host: Host, principal: Principal, client: dict[str, Any], params: dict[str, Any]
) -> None:
    """Apply a dispatchAction another node's client sent."""
    await dispatch_action(host, _as_here(principal, client), params)


async def request_from_node(
    host: Host, principal: Principal, client: dict[str, Any], request: dict[str, Any]
) -> str | None:
    """Answer a request another node's client sent about a channel this node runs, as the
    router answers this node's own clients: the answer frame (None for a notification).
    What a command says to its client beyond its answer is not carried back."""
    incoming = Incoming(request["id"], bool(request["hasId"]), request["method"], request["params"])
    return await Router(host).handle(_as_here(principal, client), incoming)
