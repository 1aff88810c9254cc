"""createSession, disposeSession, listSessions and resolveSessionConfig."""

from __future__ import annotations

from typing import Any

from ...protocol.errors import invalid_params
from ...protocol.validation import positive_int, required_str
from ..connection import Connection
from ..host import Host
from ..services import do_dispose_session
from ..services.config_completions import do_session_config_completions
from ..services.policies import do_create_checked_session
from ..services.sessions import agent_for, config_values
from ..sessions.catalogue import BadCursor, decode_cursor, encode_cursor
from .common import caller_of, on_channel


async def create_session(host: Host, conn: Connection, params: dict[str, Any]) -> None:
    uri = required_str(params, "createSession", "channel")
    await do_create_checked_session(
        host,
        caller_of(conn),
        uri=uri,
        provider=params.get("provider"),
        directories=params.get("workingDirectories"),
        config=params.get("config"),
        active_client=params.get("activeClient"),
        scope=_named_scope(params),
        derived_chat_uri=conn.legacy_vscode_chat_uris,
        multi_root=_multi_root(params),
    )
    # A client answered that its session is made reads it back after a crash.
    await host.writes.flush()
    return None


def _named_scope(params: dict[str, Any]) -> Any:
    """The scope a createSession names, under `_meta['ahpd.scope']` (AHP has no such field)."""
    meta = params.get("_meta")
    return meta.get("ahpd.scope") if isinstance(meta, dict) else None


def _multi_root(params: dict[str, Any]) -> bool:
    """Whether a VS Code window of a multi-root workspace made it (`_meta.multiRoot`, VS
    Code's own key): what lets its folders change later (services/working_directories.py)."""
    meta = params.get("_meta")
    return isinstance(meta, dict) and meta.get("multiRoot") is True


dispose_session = on_channel("disposeSession", do_dispose_session)


async def list_sessions(host: Host, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
    cursor = params.get("cursor")
    after = None
    if cursor is not None:
        try:
            after = decode_cursor(cursor)
        except BadCursor:
            raise invalid_params(
                f"listSessions: a cursor this host did not issue: {cursor}"
            ) from None
    limit = params.get("limit")
    if limit is not None:
        limit = positive_int(limit, "listSessions", "limit")
    # Pages only when asked: neither client that connects here reads nextCursor.
    items, more = host.sessions.listing(after, limit, reader=conn.principal)
    result: dict[str, Any] = {"items": items}
    if more is not None:
        result["nextCursor"] = encode_cursor(more)
    return result


async def session_config_completions(
    host: Host, conn: Connection, params: dict[str, Any]
) -> dict[str, Any]:
    return {"items": await do_session_config_completions(host, caller_of(conn), params)}


async def resolve_session_config(
    host: Host, conn: Connection, params: dict[str, Any]
) -> dict[str, Any]:
    provider = agent_for(host, params.get("provider"))
    schema = host.sessions.agents[provider].session_config_schema()
    values = config_values(host, provider, params.get("config"), "resolveSessionConfig")
    # What has been answered comes back answered; keys the schema does not declare do not.
    declared = schema.get("properties", {})
    return {"schema": schema, "values": {k: v for k, v in values.items() if k in declared}}
