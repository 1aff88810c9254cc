"""The JSON-RPC commands this host serves, by method name: the handler and what it needs.

A handler parses its params, calls a service (services/) or reads the engine, and answers.
`grant` is checked by the router, with the principal read fresh, before the handler runs; a
command backed by a service (`FRESH`) has its grants checked inside the service, once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..connection import Connection
from ..host import Host
from . import (
    automations,
    changesets,
    chats,
    debug_logs,
    dispatch,
    handshake,
    resources,
    sessions,
    subscriptions,
    terminals,
)

Handler = Callable[[Host, Connection, dict[str, Any]], Awaitable[Any]]

#: The service checks the grants itself; the router reads the principal fresh for it.
FRESH = "fresh"


@dataclass(frozen=True, slots=True)
class Command:
    handler: Handler
    #: What the caller must hold (read fresh), FRESH, or None for nothing beyond a connection's
    #: token.
    grant: str | None = None


COMMANDS: dict[str, Command] = {
    "initialize": Command(handshake.initialize),
    "ping": Command(handshake.ping),
    "reconnect": Command(handshake.reconnect),
    "authenticate": Command(handshake.authenticate),
    "subscribe": Command(subscriptions.subscribe),
    "unsubscribe": Command(subscriptions.unsubscribe),
    "dispatchAction": Command(dispatch.dispatch_action),
    "createSession": Command(sessions.create_session, FRESH),
    "disposeSession": Command(sessions.dispose_session, FRESH),
    "listSessions": Command(sessions.list_sessions, "session:list"),
    "resolveSessionConfig": Command(sessions.resolve_session_config, "session:create"),
    "sessionConfigCompletions": Command(sessions.session_config_completions, "session:create"),
    "fetchTurns": Command(chats.fetch_turns, "chat:turns"),
    "createChat": Command(chats.create_chat, FRESH),
    "disposeChat": Command(chats.dispose_chat, FRESH),
    "moveChat": Command(chats.move_chat, FRESH),
    "completions": Command(chats.completions, "chat:send"),
    **{method: Command(handler, grant) for method, (handler, grant) in resources.SERVED.items()},
    "invokeChangesetOperation": Command(changesets.invoke_changeset_operation, "session:changes"),
    "createTerminal": Command(terminals.create_terminal, FRESH),
    "disposeTerminal": Command(terminals.dispose_terminal, FRESH),
    "runAutomation": Command(automations.run_automation, "automation:run"),
    "fetchAutomationRuns": Command(automations.fetch_automation_runs, "automation:read"),
    "listAutomationTriggerDefinitions": Command(
        automations.list_trigger_definitions, "automation:read"
    ),
    # VS Code's own requests (hosts/protocol/vscode_methods.py).
    debug_logs.COLLECT: Command(debug_logs.collect_debug_logs, "diagnostics:read"),
    debug_logs.READ_CHUNK: Command(debug_logs.read_debug_logs_chunk, "diagnostics:read"),
}
