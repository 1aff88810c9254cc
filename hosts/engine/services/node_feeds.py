"""Feeding another node's mirror of a channel this node runs, holding the connection of a
client another node's socket pipes here, and asking a client whose socket is here what a
client of another node asked of it (other_nodes/): asked over the relay by the other node, as
its client's person."""

from __future__ import annotations

from typing import Any

from ...protocol.errors import ErrorCode, ProtocolError
from ..host import Host
from ..other_nodes.feeds import FED_KINDS
from ..other_nodes.mirrors import owned_json
from .caller import Caller


async def do_feed_channel(host: Host, caller: Caller, *, uri: str, inbox: str, token: str) -> Any:
    """Start feeding `uri` to the node reading `inbox`: its state now (with whose session it
    is), and every action from then on; refused as a subscribe here would be."""
    elsewhere = await host.wake(uri)
    if elsewhere is not None:
        raise ProtocolError(
            ErrorCode.SESSION_NOT_FOUND, f"{uri} is run by node {elsewhere.node_id}, not here"
        )
    channel = host.fanout.channel(uri)
    if channel is None:
        raise ProtocolError(ErrorCode.SESSION_NOT_FOUND, f"Resource not found: {uri}")
    if channel.kind not in FED_KINDS:
        raise ProtocolError(
            ErrorCode.SESSION_NOT_FOUND,
            f"{uri} is served by the node that runs its session alone: connect to it there",
        )
    # As its node read them just now.
    refused = host.permissions.watch_refusal(caller.principal, channel)
    if refused is not None:
        raise refused
    owned = host.permissions.whose(channel.uri)
    assert owned is not None, "a fed channel is a session's or a terminal's"
    fed = host.feeds.feed(channel, inbox, token)
    return {**fed, "whose": owned_json(owned)}


def do_stop_feed(host: Host, caller: Caller, *, uri: str, inbox: str, token: str) -> None:
    """Stop feeding `uri` to the node reading `inbox` (its last watcher there left)."""
    host.feeds.stop(uri, inbox, token)


def do_open_pipe(
    host: Host, caller: Caller, *, pipe: str, inbox: str, peer: str, text: str
) -> dict[str, Any]:
    """Hold the connection of a client that reconnected to the node reading `inbox`, signed
    in there as the caller, which this node met last: its frames carried both ways from now
    on (other_nodes/piped_clients.py), its reconnect `text` the first."""
    host.pipes.take(caller.principal, pipe, inbox, peer, text)
    return {}


async def do_ask_client(
    host: Host, caller: Caller, *, uri: str, method: str, params: dict[str, Any]
) -> Any:
    """Ask the client `uri` names, connected here, what a client of another node asked of it
    (client_requests.py), the caller judged here as there."""
    return await host.client_requests.ask(caller.principal.ref, uri, method, params, here_only=True)
