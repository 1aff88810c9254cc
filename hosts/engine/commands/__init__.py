"""Command handlers by family; HANDLERS is what the host serves, by method name."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import dispatch, handshake, subscriptions

if TYPE_CHECKING:
    from ..host import Handler

HANDLERS: dict[str, Handler] = {
    "initialize": handshake.initialize,
    "ping": handshake.ping,
    "reconnect": handshake.reconnect,
    "subscribe": subscriptions.subscribe,
    "unsubscribe": subscriptions.unsubscribe,
    "dispatchAction": dispatch.dispatch_action,
}
