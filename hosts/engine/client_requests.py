"""What this host asks of a client: the `resource*` requests about the client's own files.

A URI under `vscode-agent-client://<clientId>/<scheme>/<authority>/<path>` names a file as
that client knows it, in VS Code's own form: an empty authority is written `-`
(`file:///work/a.ts` on client `editor` is `vscode-agent-client://editor/file/-/work/a.ts`)
and a scheme with no path of slashes (`untitled:Untitled-1`) is written `<scheme>!`. A request
about one goes to that client's connection with its URIs as the client knows them, and its
answer comes back as the client gave it, result or error. A client whose connection has just
closed is waited for through VS Code's 5 s grace; one gone longer, or never here, is refused
-32603 `No connection for authority: <clientId>`. A refusal is logged with the method, the
URI, the client and the code: the one place all four are seen at once.

A client's files are its person's: only the principal who introduced the client may have this
host ask it. Anyone else is -32009 `Permission denied: <uri>`; an id nobody introduced is the
seed's -32603 (an id is the client's own choosing and names nobody, and `initialize` already
says an id is taken, so telling "not here" from "not yours" gives nobody away).

A client another node of the host holds (its socket is there) is asked by that node, over the
relay, and its answer comes back the same way; that node judges the asker again.

A watch over a client's files (resources/client_watches.py) is relayed: the client answers a
channel of its own, this host subscribes to it on that client's connection, and the `action`
envelopes the client sends on it are handed to the watch.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from ..protocol import jsonrpc
from ..protocol.errors import ErrorCode, ProtocolError
from .clients import Clients
from .connection import Connection
from .fanout import Fanout

log = logging.getLogger("ahpd.engine")

SCHEME = "vscode-agent-client://"
#: How long a client that dropped is waited for (VS Code's grace).
GRACE_S = 5.0
#: How long a client is given to answer.
ANSWER_S = 30.0

_ids = itertools.count(1)


def client_uri(uri: str) -> tuple[str, str] | None:
    """(client id, the URI as the client knows it) of a client-scheme URI; None otherwise.

    VS Code's `fromAgentClientUri`: `-` is the empty authority, `<scheme>!` an opaque URI.
    """
    if not uri.startswith(SCHEME):
        return None
    rest, _, fragment = uri.removeprefix(SCHEME).partition("#")
    rest, _, query = rest.partition("?")
    client_id, _, path = rest.partition("/")
    scheme, slash, path = path.partition("/")
    opaque = scheme.endswith("!")
    scheme = scheme.removesuffix("!")
    if not client_id or not scheme or not slash:
        return None
    authority, slash, path = path.partition("/")
    path = "/" + path
    authority = "" if authority == "-" else authority
    if opaque:
        known = f"{scheme}:{path[1:]}"
    elif authority or scheme == "file":
        known = f"{scheme}://{authority}{path}"
    else:
        known = f"{scheme}:{path}"
    return client_id, known + (f"?{query}" if query else "") + (f"#{fragment}" if fragment else "")


def to_client_uri(client_id: str, uri: str) -> str:
    """The client-scheme URI of `uri` as client `client_id` knows it (VS Code's
    `toAgentClientUri`): the inverse of `client_uri`."""
    parts = urlsplit(uri)
    opaque = bool(parts.path) and not parts.path.startswith("/")
    slot = f"{parts.scheme}!" if opaque else parts.scheme
    body = f"/{parts.path}" if opaque else parts.path
    said = f"{SCHEME}{client_id}/{slot}/{parts.netloc or '-'}{body}"
    return (
        said
        + (f"?{parts.query}" if parts.query else "")
        + (f"#{parts.fragment}" if parts.fragment else "")
    )


#: The relay's name for asking a client another node holds, on that node (services/calls.py).
ASK_CLIENT = "ask_client"

#: What takes the action envelopes a client sends on a channel this host subscribed to.
Taker = Callable[[dict[str, Any]], None]


class ClientRequests:
    def __init__(self, fanout: Fanout, clients: Clients, grace_s: float = GRACE_S) -> None:
        self._fanout = fanout
        self._clients = clients
        self._grace_s = grace_s
        self._pending: dict[tuple[Connection, str], asyncio.Future[Any]] = {}
        self._arrivals: dict[str, list[asyncio.Future[None]]] = {}
        self._relays: dict[tuple[Connection, str], Taker] = {}
        #: Each client's connection it introduced itself on last.
        self._latest: dict[str, Connection] = {}
        self._arrival_listeners: list[Callable[[Connection], None]] = []
        #: Asks a client another node of the host holds, by that node: (node, who, uri,
        #: method, params) -> its answer (Host._ask_on_node; None for one node alone).
        self.ask_elsewhere: (
            Callable[[str, str, str, str, dict[str, Any]], Awaitable[Any]] | None
        ) = None
        self._gone_listeners: list[Callable[[Connection], None]] = []

    def knows(self, client_id: str) -> bool:
        """Whether a client introduced itself here (and is not forgotten)."""
        return self._clients.get(client_id) is not None

    def permit(self, who: str, uri: str) -> str:
        """The client a client-scheme URI names, if `who` (a principal's ref) introduced it:
        -32603 for a client never here (or forgotten), -32009 for another person's."""
        named = client_uri(uri)
        if named is None:
            raise ProtocolError(ErrorCode.INVALID_PARAMS, f"{uri} is no client's URI")
        record = self._clients.get(named[0])
        if record is None:
            raise no_connection(named[0])
        if record.principal != who:
            raise ProtocolError(ErrorCode.PERMISSION_DENIED, f"Permission denied: {uri}")
        return named[0]

    async def ask(
        self, who: str, uri: str, method: str, params: dict[str, Any], *, here_only: bool = False
    ) -> Any:
        """Ask the client `uri` names `method` with `params` (its URIs as it knows them), as
        `who` (a principal's ref): on its connection here, or, where another node of the host
        met it last and it has none here, by that node (`here_only`: asked by another node)."""
        client_id = self.permit(who, uri)
        record = self._clients.get(client_id)
        if (
            not here_only
            and self.ask_elsewhere is not None
            and record is not None
            and record.met_by
            and self._find(client_id) is None
        ):
            return await self.ask_elsewhere(record.met_by, who, uri, method, params)
        conn = await self.connection(client_id)
        return await self.request(conn, method, params, uri)

    async def request(self, conn: Connection, method: str, params: dict[str, Any], uri: str) -> Any:
        """Send one request to a client's connection and wait for its answer; a refusal is
        logged (method, URI, client, code) and raised as the client gave it."""
        request_id = f"ahpd-{next(_ids)}"
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[(conn, request_id)] = answer
        client_id = conn.client_id or ""
        try:
            self._fanout.send(conn, jsonrpc.request_frame(request_id, method, params))
            return await asyncio.wait_for(answer, ANSWER_S)
        except TimeoutError:
            raise ProtocolError(
                ErrorCode.INTERNAL_ERROR, f"Client {client_id} did not answer {method}"
            ) from None
        except ProtocolError as refusal:
            log.info(
                "client %s refused %s of %s: %d %s",
                client_id,
                method,
                uri,
                int(refusal.code),
                refusal.message,
                extra={
                    "client": client_id,
                    "method": method,
                    "uri": uri,
                    "code": int(refusal.code),
                },
            )
            raise
        finally:
            self._pending.pop((conn, request_id), None)

    def notify(self, conn: Connection, method: str, params: dict[str, Any]) -> None:
        if not conn.closed:
            self._fanout.send(conn, jsonrpc.notification_frame(method, params))

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

    # -- relayed channels -------------------------------------------------------------------

    def relay(self, conn: Connection, channel: str, take: Taker) -> None:
        """Hand the action envelopes `conn` sends on its `channel` to `take`."""
        self._relays[(conn, channel)] = take

    def unrelay(self, conn: Connection, channel: str) -> None:
        self._relays.pop((conn, channel), None)

    def took_action(self, conn: Connection, params: dict[str, Any]) -> bool:
        """An `action` envelope a client sent: whether a relay of this host's took it."""
        take = self._relays.get((conn, str(params.get("channel"))))
        if take is None:
            return False
        take(params)
        return True

    # -- clients coming and going -----------------------------------------------------------

    def on_arrived(self, listener: Callable[[Connection], None]) -> None:
        self._arrival_listeners.append(listener)

    def on_gone(self, listener: Callable[[Connection], None]) -> None:
        self._gone_listeners.append(listener)

    def arrived(self, conn: Connection) -> None:
        """A client introduced itself (initialize or reconnect): who waits for it has it."""
        if conn.client_id:
            self._latest[conn.client_id] = conn
        for waiter in self._arrivals.pop(conn.client_id or "", []):
            if not waiter.done():
                waiter.set_result(None)
        for listener in self._arrival_listeners:
            listener(conn)

    def gone(self, conn: Connection) -> None:
        """A connection closed: what was asked of it is answered with its absence."""
        if self._latest.get(conn.client_id or "") is conn:
            del self._latest[conn.client_id or ""]
        for key in [key for key in self._pending if key[0] is conn]:
            answer = self._pending.pop(key)
            if not answer.done():
                answer.set_exception(no_connection(conn.client_id or ""))
        for key in [key for key in self._relays if key[0] is conn]:
            del self._relays[key]
        for listener in self._gone_listeners:
            listener(conn)

    async def connection(self, client_id: str) -> Connection:
        """The client's open connection, waiting through the grace for one that just closed."""
        found = self._find(client_id)
        if found is not None:
            return found
        record = self._clients.get(client_id)
        if record is None or record.gone_since is None:
            raise no_connection(client_id)
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._arrivals.setdefault(client_id, []).append(waiter)
        try:
            await asyncio.wait_for(waiter, self._grace_s)
        except TimeoutError:
            raise no_connection(client_id) from None
        found = self._find(client_id)
        if found is None:
            raise no_connection(client_id)
        return found

    def _find(self, client_id: str) -> Connection | None:
        """The client's connection: the one it came back on last, while that is open (one it
        left may not be seen closed yet), else any open one."""
        latest = self._latest.get(client_id)
        if latest is not None and latest.ready and not latest.closed:
            return latest
        return next(
            (
                conn
                for conn in self._fanout.connections
                if conn.client_id == client_id and conn.ready and not conn.closed
            ),
            None,
        )


def no_connection(client_id: str) -> ProtocolError:
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

#: Every request this host sends a client (the protocol's ServerCommandMap's resource half),
#: and when: the README's coverage table lists them.
ASKED: dict[str, str] = {
    **{name: "a request about a `vscode-agent-client:` URI" for name in FORWARDED},
    "resourceRead": "a request about a `vscode-agent-client:` URI; a message's attachment on "
    "the sender's own client",
    "resourceResolve": "a request about a `vscode-agent-client:` URI; the root of a watch over "
    "a client's files",
    "createResourceWatch": "a watch over a client's files is first subscribed (then "
    "`subscribe` to the channel the client answers)",
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
