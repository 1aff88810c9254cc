"""The router: one frame in, one answer out. The method registry (hosts/protocol/methods.py)
says what the protocol declares; the command table (commands/) what this host serves and
what each needs.

Whatever a frame holds, the connection stays up: a malformed frame is a JSON-RPC error, a
declared method this host does not serve is -32601, a handler's failure -32603.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ..protocol import jsonrpc
from ..protocol.errors import ErrorCode, ProtocolError
from ..protocol.methods import METHODS
from ..protocol.uris import canonical
from ..protocol.vscode_methods import VSCODE_METHODS
from .commands import COMMANDS, FRESH, Command
from .commands.dispatch import dispatch_params
from .connection import Connection
from .host import Host
from .other_nodes.mirrors import client_of

log = logging.getLogger("ahpd.engine")


class Router:
    def __init__(self, host: Host, commands: Mapping[str, Command] = COMMANDS) -> None:
        self.host = host
        self._commands = commands

    def serves(self, method: str) -> bool:
        return method in self._commands

    async def receive(self, conn: Connection, text: str) -> None:
        """Take one text frame from a connection and queue its answer, if it has one."""
        pipes = self.host.pipes
        if pipes.piped(conn):
            await pipes.forward(conn, text)  # answered by the node that holds the client
            return
        try:
            incoming = jsonrpc.parse(text)
        except jsonrpc.FrameError as exc:
            self.host.fanout.send(conn, jsonrpc.error_frame(exc.request_id, exc))
            return
        if isinstance(incoming, jsonrpc.Response):
            self.host.client_requests.answered(conn, incoming)
            return
        if (
            incoming.method == "reconnect"
            and not conn.ready
            and (home := await pipes.home_of(conn, incoming.params)) is not None
            and await pipes.open(conn, home, text)
        ):
            # Met last by another node that is there: resumed by it, from its own serverSeq,
            # and answered by it from now on (other_nodes/piped_clients.py).
            return
        if (
            incoming.method == "action"
            and not incoming.has_id
            and self.host.client_requests.took_action(conn, incoming.params)
        ):
            return  # a client's batch on a watch this host subscribed to (client_requests.py)
        unsaid = conn.unsaid
        if unsaid is not None:
            if unsaid.done():
                conn.unsaid = None
            elif not _root_push(incoming):
                # Its root config pushes wait for their commit; what it sent after them is
                # taken once they are said (another push joins them, to share the commit).
                await unsaid
        answer = await self.handle(conn, incoming)
        if answer is not None:
            self.host.fanout.send(conn, answer)

    async def handle(self, conn: Connection, incoming: jsonrpc.Incoming) -> str | None:
        """Answer one request or notification; the answer frame, or None for none."""
        method, params = incoming.method, incoming.params
        try:
            spec = METHODS.get(method) or VSCODE_METHODS.get(method)
            command = self._commands.get(method)
            if spec is None or command is None:
                raise ProtocolError(ErrorCode.METHOD_NOT_FOUND, f"Method not found: {method}")
            if not conn.ready and not spec.before_initialize:
                raise ProtocolError(
                    ErrorCode.INVALID_REQUEST,
                    f"{method} before initialize: a connection starts with initialize "
                    "(or reconnect)",
                )
            if spec.channel_literal is not None and spec.literal_enforced:
                named = params.get("channel")
                if named is not None and canonical(str(named)) != spec.channel_literal:
                    raise ProtocolError(
                        ErrorCode.INVALID_PARAMS,
                        f"{method} is served on channel {spec.channel_literal}, not {named}",
                    )
            named = _routed_by(method, params)
            if isinstance(named, str):
                # A chat whose turns are not read yet is read before anything names it; a
                # session whose node is gone is taken over here.
                elsewhere = await self.host.wake(named)
                if elsewhere is None and method == "createSession":
                    # A session of an agent another node runs, and this one does not, is
                    # made there.
                    elsewhere = await self.host.runs_agent_elsewhere(params)
                if elsewhere is not None:
                    # Another node runs it: watched here through a mirror that node feeds,
                    # and acted on there (other_nodes/).
                    client = client_of(conn)
                    if method == "dispatchAction":
                        dispatch_params(params)  # refused here if it is no dispatch at all
                        await self.host.mirrors.dispatch(conn, elsewhere, client, params)
                        return None
                    if method == "subscribe":
                        principal = await self.host.permissions.principal_now(conn)
                        await self.host.mirrors.open(canonical(named), elsewhere, principal)
                    elif method != "unsubscribe":
                        return await self.host.mirrors.request(
                            conn,
                            elsewhere,
                            client,
                            {
                                "id": incoming.id,
                                "hasId": incoming.has_id,
                                "method": method,
                                "params": params,
                            },
                        )
            if command.grant == FRESH:
                await self.host.permissions.principal_now(conn)
            elif command.grant is not None:
                await self.host.permissions.require(conn, command.grant)
            result = await command.handler(self.host, conn, params)
        except ProtocolError as exc:
            # A notification has no id to answer; a failed one is still answered, with a null
            # id, because a client told nothing cannot tell a refusal from a lost frame.
            return jsonrpc.error_frame(incoming.id, exc)
        except Exception:
            log.exception("%s failed", method)
            return jsonrpc.error_frame(
                incoming.id, ProtocolError(ErrorCode.INTERNAL_ERROR, f"Internal error in {method}")
            )
        if not incoming.has_id:
            return None
        return jsonrpc.result_frame(incoming.id, result)


def _root_push(incoming: jsonrpc.Incoming) -> bool:
    """Whether a frame dispatches a root config push (committed, then said, in order)."""
    if incoming.method != "dispatchAction":
        return False
    action = incoming.params.get("action")
    return isinstance(action, dict) and action.get("type") == "root/configChanged"


def _routed_by(method: str, params: dict[str, Any]) -> object:
    """The URI whose node answers a request: its channel's, but a new terminal a session
    claims is opened where that session runs (its folders are that machine's)."""
    if method == "createTerminal":
        claim = params.get("claim")
        if isinstance(claim, dict) and claim.get("kind") == "session":
            return claim.get("session")
    return params.get("channel")
