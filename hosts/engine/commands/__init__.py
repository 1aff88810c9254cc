"""Command handlers by family; HANDLERS is what the host serves, by method name."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import chats, dispatch, handshake, sessions, subscriptions

if TYPE_CHECKING:
    from ..host import Handler

HANDLERS: dict[str, Handler] = {
    "initialize": handshake.initialize,
    "ping": handshake.ping,
    "reconnect": handshake.reconnect,
    "authenticate": handshake.authenticate,
    "subscribe": subscriptions.subscribe,
    "unsubscribe": subscriptions.unsubscribe,
    "dispatchAction": dispatch.dispatch_action,
    "createSession": sessions.create_session,
    "disposeSession": sessions.dispose_session,
    "listSessions": sessions.list_sessions,
    "fetchTurns": chats.fetch_turns,
    "createChat": chats.create_chat,
    "disposeChat": chats.dispose_chat,
    "completions": chats.completions,
    "resolveSessionConfig": sessions.resolve_session_config,
}
