"""createSession, disposeSession, listSessions and resolveSessionConfig."""

from __future__ import annotations

import base64
import binascii
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...protocol.errors import ErrorCode, ProtocolError, invalid_params
from ...protocol.uris import kind_of
from .params import optional_str_list, required_str

if TYPE_CHECKING:
    from ..connection import Connection
    from ..host import Host
    from ..sessions import LiveSession


def agent_for(host: Host, provider: Any) -> str:
    """The provider named (or the first configured); -32002 for one this host does not run."""
    agents = host.sessions.agents
    if provider is None:
        if not agents:
            raise ProtocolError(ErrorCode.PROVIDER_NOT_FOUND, "No agent is configured on this host")
        return next(iter(agents))
    if not isinstance(provider, str) or provider not in agents:
        raise ProtocolError(ErrorCode.PROVIDER_NOT_FOUND, f"Provider not found: {provider}")
    return provider


def _session(host: Host, uri: str) -> LiveSession:
    session = host.sessions.sessions.get(uri)
    if session is None:
        raise ProtocolError(ErrorCode.SESSION_NOT_FOUND, f"Session not found: {uri}")
    return session


def working_directories(params: dict[str, Any], method: str = "createSession") -> list[str]:
    """The session's folder as a file: URI list (one); the server's folder when none is named."""
    directories = optional_str_list(params, method, "workingDirectories")
    for uri in directories:
        if not uri.startswith("file:"):
            raise invalid_params(f"{method}: a working directory must be a file: URI: {uri}")
    if len(directories) > 1:
        raise invalid_params(f"{method}: the agents here work in one directory")
    return directories or [Path.cwd().resolve().as_uri()]


def config_values(host: Host, provider: str, config: Any, method: str) -> dict[str, Any]:
    """The backend's defaults with the values the client chose laid over them."""
    if config is None:
        config = {}
    if not isinstance(config, dict):
        raise invalid_params(f"{method}: config must be an object")
    schema = host.sessions.agents[provider].session_config_schema()
    values = {
        key: prop["default"]
        for key, prop in schema.get("properties", {}).items()
        if "default" in prop
    }
    values.update(config)
    return values


async def create_session(host: Host, conn: Connection, params: dict[str, Any]) -> None:
    uri = required_str(params, "createSession", "channel")
    if kind_of(uri) not in (None, "session") or ":" not in uri:
        raise invalid_params(f"createSession: {uri} cannot name a session")
    provider = agent_for(host, params.get("provider"))
    values = config_values(host, provider, params.get("config"), "createSession")
    active_client = params.get("activeClient")
    if active_client is not None:
        if not isinstance(active_client, dict) or active_client.get("clientId") != conn.client_id:
            raise invalid_params(
                f"createSession: activeClient.clientId must be this client's id ({conn.client_id})"
            )
        if not isinstance(active_client.get("tools", []), list):
            raise invalid_params("createSession: activeClient.tools must be a list")
        active_client = {"tools": [], **active_client}
    directories = working_directories(params)
    existing = host.sessions.sessions.get(uri)
    if existing is not None:
        if existing.record.provider == provider:
            return None
        raise ProtocolError(ErrorCode.SESSION_ALREADY_EXISTS, f"Session already exists: {uri}")
    if uri in host.channels:
        raise ProtocolError(ErrorCode.SESSION_ALREADY_EXISTS, f"Session already exists: {uri}")
    host.sessions.create(
        conn.principal.ref,
        uri,
        provider,
        directories,
        values,
        active_client,
        derived_chat_uri=conn.legacy_vscode_chat_uris,
    )
    return None


async def dispose_session(host: Host, conn: Connection, params: dict[str, Any]) -> None:
    uri = required_str(params, "disposeSession", "channel")
    session = _session(host, uri)
    principal = conn.principal
    if session.record.owner and session.record.owner != principal.ref and not principal.admin:
        # Only the owner or an admin disposes a session: nothing here can be undone.
        raise ProtocolError(
            ErrorCode.PERMISSION_DENIED,
            f"{principal.ref} may not session:dispose here: {uri} is {session.record.owner}'s",
        )
    await host.sessions.dispose(session)
    return None


def _cursor(params: dict[str, Any]) -> int:
    cursor = params.get("cursor")
    if cursor is None:
        return 0
    try:
        text = base64.urlsafe_b64decode(str(cursor).encode() + b"==").decode()
        if not text.startswith("offset:"):
            raise ValueError
        offset = int(text.removeprefix("offset:"))
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise invalid_params(f"listSessions: a cursor this host did not issue: {cursor}") from None
    if offset < 0:
        raise invalid_params(f"listSessions: a cursor this host did not issue: {cursor}")
    return offset


async def list_sessions(host: Host, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
    items = host.sessions.listing()
    limit = params.get("limit")
    offset = _cursor(params)
    if limit is None:
        # Pages only when asked: neither client that connects here reads nextCursor.
        return {"items": items[offset:]}
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise invalid_params("listSessions: limit must be a positive integer")
    page = items[offset : offset + limit]
    result: dict[str, Any] = {"items": page}
    if offset + limit < len(items):
        token = base64.urlsafe_b64encode(f"offset:{offset + limit}".encode()).decode().rstrip("=")
        result["nextCursor"] = token
    return result


async def resolve_session_config(
    host: Host, conn: Connection, params: dict[str, Any]
) -> dict[str, Any]:
    provider = agent_for(host, params.get("provider"))
    schema = host.sessions.agents[provider].session_config_schema()
    values = config_values(host, provider, params.get("config"), "resolveSessionConfig")
    # What has been answered comes back answered; keys the schema does not declare do not.
    declared = schema.get("properties", {})
    return {"schema": schema, "values": {k: v for k, v in values.items() if k in declared}}
