"""Service calls between engine processes, over the channel layer (Redis between processes).

An engine is named by the layer channel it reads (`ahpd.engine` for the one engine of a
deployment today). `LayerRelay` is the engine's Relay port (hosts/engine/placement.py): it
sends a call to the engine holding the session and waits on a reply channel of its own;
`answer_call` is how the holding engine runs it and replies. The layer is the trust boundary:
the principal a call carries is the one the calling process checked in.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

from ..engine.host import Host
from ..engine.other_nodes.remote_clients import (
    CLIENT_REQUEST,
    dispatch_from_node,
    request_from_node,
)
from ..engine.placement import NODES_GROUP
from ..engine.principal import Principal
from ..engine.services.calls import perform
from ..protocol.errors import ErrorCode, ProtocolError

log = logging.getLogger("ahpd.relay")

CALL = "engine.call"
DISPATCH = "engine.dispatch"
REPLY = "engine.reply"


class Layer(Protocol):
    """What this module needs of a Channels layer."""

    async def send(self, channel: str, message: dict[str, Any]) -> None: ...

    async def receive(self, channel: str) -> dict[str, Any]: ...

    async def new_channel(self, prefix: str = "specific.") -> str: ...

    async def group_send(self, group: str, message: dict[str, Any]) -> None: ...

    async def group_add(self, group: str, channel: str) -> None: ...


def principal_json(principal: Principal) -> dict[str, Any]:
    return {
        "ref": principal.ref,
        "grants": list(principal.grants),
        "token_id": principal.token_id,
        "scoped": {scope: list(held) for scope, held in principal.scoped.items()},
        "home": principal.home,
    }


def principal_from_json(data: dict[str, Any]) -> Principal:
    return Principal(
        str(data["ref"]),
        tuple(data["grants"]),
        data.get("token_id"),
        scoped={str(scope): tuple(held) for scope, held in (data.get("scoped") or {}).items()},
        home=str(data.get("home") or ""),
    )


class NoAnswer(ProtocolError):
    """The engine called did not answer within the relay's timeout."""


class LayerRelay:
    def __init__(self, layer: Layer, timeout_s: float = 60.0) -> None:
        self._layer = layer
        self._timeout_s = timeout_s

    async def call(
        self, engine: str, service: str, principal: Principal, args: dict[str, Any]
    ) -> Any:
        """Run `service` on the engine reading `engine`, as `principal`; its answer, or the
        ProtocolError it refused with."""
        reply_to = await self._layer.new_channel("ahpd.reply.")
        await self._layer.send(
            engine,
            {
                "type": CALL,
                "service": service,
                "principal": principal_json(principal),
                "args": args,
                "reply_to": reply_to,
            },
        )
        try:
            reply = await asyncio.wait_for(self._layer.receive(reply_to), self._timeout_s)
        except TimeoutError:
            raise NoAnswer(
                ErrorCode.INTERNAL_ERROR,
                f"{service}: engine {engine} did not answer within {self._timeout_s:g} s",
            ) from None
        error = reply.get("error")
        if error is not None:
            raise ProtocolError(ErrorCode(error["code"]), error["message"], error.get("data"))
        return reply.get("result")

    async def send(self, inbox: str, message: dict[str, Any]) -> None:
        await self._layer.send(inbox, message)

    async def broadcast(self, message: dict[str, Any]) -> None:
        await self._layer.group_send(NODES_GROUP, message)

    async def dispatch(
        self, engine: str, principal: Principal, client: dict[str, Any], params: dict[str, Any]
    ) -> None:
        await self._layer.send(
            engine,
            {
                "type": DISPATCH,
                "principal": principal_json(principal),
                "client": client,
                "params": params,
            },
        )


async def take_dispatch(host: Host, message: dict[str, Any]) -> None:
    """Apply a dispatchAction another node's client sent, as that node checked it in."""
    await dispatch_from_node(
        host, principal_from_json(message["principal"]), message["client"], message["params"]
    )


async def answer_call(host: Host, layer: Layer, message: dict[str, Any]) -> None:
    """Run a call another engine sent here and send it the answer (or the refusal)."""
    reply: dict[str, Any] = {"type": REPLY}
    try:
        principal = principal_from_json(message["principal"])
        if message["service"] == CLIENT_REQUEST:
            args = message["args"]
            reply["result"] = await request_from_node(
                host, principal, args["client"], args["request"]
            )
        else:
            reply["result"] = await perform(
                host, message["service"], principal, relayed=True, **message["args"]
            )
    except ProtocolError as exc:
        reply["error"] = exc.to_json()
    except Exception:
        log.exception("engine call %r failed", message.get("service"))
        reply["error"] = ProtocolError(
            ErrorCode.INTERNAL_ERROR, f"Internal error in {message.get('service')}"
        ).to_json()
    await layer.send(message["reply_to"], reply)
