"""What this host asks of a client: the `resource*` requests about the client's own files.

A URI under `vscode-agent-client://<clientId>/<scheme>/<authority>/<path>` names a file as
that client knows it (`<scheme>://<authority>/<path>`). A request about one goes to that
client's connection and its answer comes back as the client gave it, result or error. A client
whose connection has just closed is waited for through VS Code's 5 s grace; one gone longer,
or never here, is refused -32603 `No connection for authority: <clientId>`.

A client's files are its person's: only the principal who introduced the client may have this
host ask it (anyone else is -32009 `Permission denied: <uri>`), since the host would otherwise
hand one person's files to another.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from ..protocol import jsonrpc
from ..protocol.errors import ErrorCode, ProtocolError
from .clients import Clients
from .connection import Connection
from .fanout import Fanout
from .principal import Principal

SCHEME = "vscode-agent-client://"
#: How long a client that dropped is waited for (VS Code's grace).
GRACE_S = 5.0
#: How long a client is given to answer.
ANSWER_S = 30.0

_ids = itertools.count(1)


def client_uri(uri: str) -> tuple[str, str] | None:
    """(client id, the URI as the client knows it) of a client-scheme URI; None otherwise."""
    if not uri.startswith(SCHEME):
        return None
    client_id, _, rest = uri.removeprefix(SCHEME).partition("/")
    scheme, _, rest = rest.partition("/")
    authority, _, path = rest.partition("/")
    if not client_id or not scheme:
        return None
    return client_id, f"{scheme}://{authority}/{path}"


class Asks:
    def __init__(self, fanout: Fanout, clients: Clients, grace_s: float = GRACE_S) -> None:
        self._fanout = fanout
        self._clients = clients
        self._grace_s = grace_s
        self._pending: dict[tuple[Connection, str], asyncio.Future[Any]] = {}
        self._arrivals: dict[str, list[asyncio.Future[None]]] = {}

    def owner_may(self, who: str, client_id: str) -> bool:
        """Whether `who` (a principal's ref) introduced the client, so may have its files
        asked of it."""
        record = self._clients.get(client_id)
        return record is not None and record.principal == who

    async def ask(
        self, principal: Principal | str, uri: str, method: str, params: dict[str, Any]
    ) -> Any:
        """Ask the client `uri` names `method` with `params` (its URIs as it knows them), as
        `principal` (or the ref of one)."""
        who = principal if isinstance(principal, str) else principal.ref
        named = client_uri(uri)
        if named is None or not self.owner_may(who, named[0]):
            raise ProtocolError(ErrorCode.PERMISSION_DENIED, f"Permission denied: {uri}")
        client_id = named[0]
        conn = await self._connection(client_id)
        request_id = f"ahpd-{next(_ids)}"
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[(conn, request_id)] = answer
        try:
            self._fanout.send(conn, jsonrpc.request_frame(request_id, method, params))
            return await asyncio.wait_for(answer, ANSWER_S)
        except TimeoutError:
            raise ProtocolError(
                ErrorCode.INTERNAL_ERROR, f"Client {client_id} did not answer {method}"
            ) from None
        finally:
            self._pending.pop((conn, request_id), None)

    def answered(self, conn: Connection, response: jsonrpc.Response) -> None:
        """A client's answer to a request of this host's; one it was never asked is dropped."""
        answer = self._pending.pop((conn, str(response.id)), None)
        if answer is None or answer.done():
            return
        if response.error is not None:
            error = response.error
            answer.set_exception(
                ProtocolError(
                    _code(error.get("code")), str(error.get("message", "")), error.get("data")
                )
            )
        else:
            answer.set_result(response.result)

    def arrived(self, conn: Connection) -> None:
        """A client introduced itself (initialize or reconnect): who waits for it has it."""
        for waiter in self._arrivals.pop(conn.client_id or "", []):
            if not waiter.done():
                waiter.set_result(None)

    def gone(self, conn: Connection) -> None:
        """A connection closed: what was asked of it is answered with its absence."""
        for key in [key for key in self._pending if key[0] is conn]:
            answer = self._pending.pop(key)
            if not answer.done():
                answer.set_exception(_no_connection(conn.client_id or ""))

    async def _connection(self, client_id: str) -> Connection:
        found = self._find(client_id)
        if found is not None:
            return found
        record = self._clients.get(client_id)
        if record is None or record.gone_since is None:
            raise _no_connection(client_id)
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._arrivals.setdefault(client_id, []).append(waiter)
        try:
            await asyncio.wait_for(waiter, self._grace_s)
        except TimeoutError:
            raise _no_connection(client_id) from None
        found = self._find(client_id)
        if found is None:
            raise _no_connection(client_id)
        return found

    def _find(self, client_id: str) -> Connection | None:
        return next(
            (
                conn
                for conn in self._fanout.connections
                if conn.client_id == client_id and conn.ready and not conn.closed
            ),
            None,
        )


def _no_connection(client_id: str) -> ProtocolError:
    return ProtocolError(ErrorCode.INTERNAL_ERROR, f"No connection for authority: {client_id}")


def _code(value: Any) -> ErrorCode:
    """The protocol's code the client answered with (one it does not define: internal)."""
    try:
        return ErrorCode(value)
    except ValueError:
        return ErrorCode.INTERNAL_ERROR


#: The request methods this host forwards to a client, and their params that are URIs.
FORWARDED: dict[str, tuple[str, ...]] = {
    "resourceRead": ("uri",),
    "resourceWrite": ("uri",),
    "resourceList": ("uri",),
    "resourceResolve": ("uri",),
    "resourceMkdir": ("uri",),
    "resourceDelete": ("uri",),
    "resourceRequest": ("uri",),
    "resourceCopy": ("source", "destination"),
    "resourceMove": ("source", "destination"),
}


def as_the_client_knows(params: dict[str, Any], client_id: str, method: str) -> dict[str, Any]:
    """The params with every URI of that client's put as the client knows it."""
    out = {key: value for key, value in params.items() if key != "channel"}
    out["channel"] = "ahp-root://"
    for key in FORWARDED[method]:
        named = client_uri(out[key]) if isinstance(out.get(key), str) else None
        if named is not None and named[0] == client_id:
            out[key] = named[1]
    return out
