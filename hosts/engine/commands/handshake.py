"""initialize, ping and reconnect: how a connection starts, and how a dropped one resumes."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson

from ...protocol.errors import ErrorCode, ProtocolError, invalid_params
from ...protocol.reconnect_params import ReplayCursor, parse_reconnect
from ...protocol.uris import kind_of
from ...protocol.validation import optional_str_list, required_str
from ...protocol.versions import SUPPORTED_VERSIONS, VersionFormatError, negotiate
from .. import telemetry
from ..channel import Channel
from ..connection import Connection
from ..host import Host
from ..permissions import readable
from ..principal import USERS_RESOURCE, USERS_RESOURCE_METADATA
from ..replay import Entry, seen
from ..resource_tokens import advertised
from ..sessions.local_commands import PREFIX

#: Below this a replay is never weighed against the snapshots.
REPLAY_ALWAYS_BYTES = 64 * 1024


def _replayable(host: Host, conn: Connection, entry: Entry, watched: set[str]) -> bool:
    """Whether a reconnecting connection is sent a ringed envelope again, by what its principal
    may read now (grants change between a drop and a reconnect): as Entry.owed says, and its own
    dispatch's answer on a channel it does not watch only where it may read that channel.
    """
    principal = conn.principal
    if not entry.owed(conn.client_id or "", watched, conn.version, principal.may):
        return False
    if entry.channel in watched:
        return True
    channel = host.fanout.channel(entry.channel)
    if channel is not None:
        return host.permissions.may_watch(principal, channel)
    # A channel gone since is read as its scheme names it; a scheme the protocol does not
    # define names a session (sessions alone live under a scheme a client chose).
    return readable(principal, kind_of(entry.channel) or "session")


async def _watched(host: Host, channel: Channel) -> bool:
    """Whether a resource watch's OS watch is in place before a handshake subscribes to it:
    one the system refuses is left out (missing, to a reconnect), never joined and silent."""
    if channel.kind != "resourceWatch":
        return True
    try:
        await host.watches.ready(channel.uri)
    except ProtocolError:
        return False
    return True


def _snapshot_bytes(host: Host, channels: list[Channel]) -> int:
    return sum(len(orjson.dumps(channel.state)) for channel in channels)


async def authenticate(host: Host, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
    """Sign the connection in as a person with their token (ahpd://users; an empty token signs
    out), or keep a token for an MCP server's protected resource this host advertised to it
    (resource_tokens.py; an empty token withdraws it)."""
    resource = required_str(params, "authenticate", "resource")
    token = params.get("token")
    if not isinstance(token, str):
        raise invalid_params("authenticate: token must be a string")
    if resource != USERS_RESOURCE:
        return _resource_token(host, conn, resource, token, params)
    if token == "":
        host.permissions.become(conn, conn.admitted_principal)
        return {}
    principal = await host.directory.principal_for_token(token)
    if principal is None:
        raise ProtocolError(
            ErrorCode.AUTH_REQUIRED,
            "authenticate: the directory knows no such token",
            {"resources": [USERS_RESOURCE_METADATA]},
        )
    host.permissions.become(conn, principal)
    return {}


def _resource_token(
    host: Host, conn: Connection, resource: str, token: str, params: dict[str, Any]
) -> dict[str, Any]:
    """A token for a resource an MCP server of one of the caller's own sessions, watched on
    this connection, waits for; -32007 for a resource this host advertised it nowhere."""
    expires_in = params.get("expiresIn")
    if expires_in is not None and (
        not isinstance(expires_in, int) or isinstance(expires_in, bool) or expires_in <= 0
    ):
        raise invalid_params("authenticate: expiresIn must be a positive integer of seconds")
    scopes = optional_str_list(params, "authenticate", "scopes")
    if token == "":
        host.resource_tokens.withdraw(conn, resource)
        return {}
    for uri, channel in conn.subscriptions.items():
        session = host.sessions.session(uri) if channel.kind == "session" else None
        if session is None or session.record.owner != conn.principal.ref:
            continue
        metadata = advertised(channel.state, resource)
        if metadata is not None:
            host.resource_tokens.put(
                conn,
                resource,
                token,
                metadata=metadata,
                session=uri,
                expires_in=expires_in,
                scopes=tuple(scopes),
            )
            return {}
    raise ProtocolError(
        ErrorCode.AUTH_REQUIRED,
        f"authenticate: no protected resource {resource} here",
        {"resources": [USERS_RESOURCE_METADATA]},
    )


async def ping(host: Host, conn: Connection, params: dict[str, Any]) -> None:
    return None


async def initialize(host: Host, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
    if conn.ready:
        raise ProtocolError(ErrorCode.INVALID_REQUEST, "initialize: this connection is initialized")
    offered = params.get("protocolVersions")
    if not isinstance(offered, list) or not offered:
        raise invalid_params("initialize: protocolVersions must be a non-empty list of versions")
    try:
        chosen = negotiate(offered)
    except VersionFormatError as exc:
        raise invalid_params(f"initialize: {exc}") from None
    client_id = required_str(params, "initialize", "clientId")
    subscriptions = optional_str_list(params, "initialize", "initialSubscriptions")
    if chosen is None:
        raise ProtocolError(
            ErrorCode.UNSUPPORTED_PROTOCOL_VERSION,
            f"None of the offered protocol versions is supported: {', '.join(map(str, offered))}",
            {"supportedVersions": list(SUPPORTED_VERSIONS)},
        )
    if host.clients.held_by_another(client_id, conn.principal.ref):
        # A client id is its maker's: taking it over would resume their replay, their place
        # in sessions and the calls addressed to them.
        raise ProtocolError(
            ErrorCode.ALREADY_EXISTS,
            f"initialize: clientId {client_id} is taken; introduce yourself with another",
        )
    conn.client_id = client_id
    conn.version_text, conn.version = chosen
    client_info = params.get("clientInfo") or {}
    meta = params.get("_meta") or {}
    name = client_info.get("name") if isinstance(client_info, dict) else None
    conn.client_name = name if isinstance(name, str) else None
    conn.legacy_vscode_chat_uris = (
        isinstance(client_info, dict)
        and client_info.get("name") in ("vscode-editor-window", "vscode-agents-window")
        and not (isinstance(meta, dict) and meta.get("vscode.ahpChatUris"))
    )
    host.clients.remember(conn)
    host.client_requests.arrived(conn)
    snapshots = []
    for uri in subscriptions:
        await host.wake_to_watch(uri, conn.principal)
        channel = host.fanout.channel(uri)
        if channel is None or not host.permissions.may_watch(conn.principal, channel):
            continue
        if not await _watched(host, channel):
            continue
        host.fanout.subscribe(conn, channel)
        if channel.kind != telemetry.KIND:
            snapshots.append(host.snapshot(conn, channel))
    result: dict[str, Any] = {
        "_meta": {"ahpd.principal": conn.principal.ref},
        "protocolVersion": conn.version_text,
        "serverSeq": host.fanout.server_seq,
        "snapshots": snapshots,
        "serverInfo": {"name": host.settings.server_name, "version": host.settings.server_version},
        "defaultDirectory": host.served.default.as_uri(),
        # Without them VS Code never asks for completions: `/` commands, `@` files, `#` refs.
        "completionTriggerCharacters": ["/", "@", "#"],
        # A chat message starting with it runs as this host's own command, in a terminal.
        "terminalCommandPrefix": PREFIX,
    }
    if host.automations is not None:
        # Presence is what permits a client to use the catalogue (automations/).
        result["automations"] = host.automations.capabilities()
    if readable(conn.principal, telemetry.KIND):
        # Offered to those who may watch it (diagnostics:read), as the catalogue is offered
        # where it can be used: anyone else's subscribe would be refused.
        result["telemetry"] = dict(telemetry.CAPABILITIES)
    return result


async def reconnect(host: Host, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
    """Resume a dropped client: AHP 1.0.0's one watermark answered with one replay or the
    snapshots, per-channel cursors with one recovery for each channel (reconnect_params.py)."""
    request = parse_reconnect(params)
    client_id = request.client_id
    if conn.ready and conn.client_id != client_id:
        raise invalid_params(f"reconnect: this connection is client {conn.client_id}")
    # Who the connection is now decides what it may resume (a revoked token, nothing).
    principal = await host.permissions.principal_now(conn)
    # Another principal's client is answered as one this host never met: no id is confirmed.
    # A connection that is the client already resumes in place, whoever it signed in as since.
    record = (
        host.clients.get(client_id)
        if conn.ready
        else host.clients.held_by(client_id, principal.ref)
    )
    if record is None:
        raise ProtocolError(ErrorCode.NOT_FOUND, f"Reconnect client not found: {client_id}")
    # A client another node met counted that node's serverSeq: sent snapshots, never replays.
    replayable = not record.met_by
    # The connection is held to the version the client agreed at initialize.
    if not conn.ready:
        conn.client_id = client_id
        conn.version_text, conn.version = record.version_text, record.version
        conn.client_name = record.client_name
        host.clients.remember(conn)
        host.client_requests.arrived(conn)
    found, missing = [], []
    for uri in request.channels:
        await host.wake_to_watch(uri, conn.principal)
        channel = host.fanout.channel(uri)
        if (
            channel is None
            or not host.permissions.may_watch(conn.principal, channel)
            or not await _watched(host, channel)
        ):
            missing.append(uri)
        else:
            found.append(channel)
    # From here to the subscriptions nothing awaits, so no envelope falls between what the
    # answer holds and what the connection is sent live.
    if request.cursors is None:
        assert request.last_seen is not None
        result = _recover_connection(
            host, conn, request.last_seen, found, missing, replayable=replayable
        )
    else:
        cursors = request.cursors if replayable else _no_baseline(request.cursors)
        result = {"channels": _recover_channels(host, conn, cursors, found)}
    for channel in found:
        host.fanout.subscribe(conn, channel)
    # A client that comes back without asking for a session it was in has left it.
    host.presence.kept_only(client_id, found)
    return result


def _no_baseline(cursors: tuple[ReplayCursor, ...]) -> tuple[ReplayCursor, ...]:
    """Cursors another node's serverSeqs wrote: each taken as no baseline (a snapshot)."""
    return tuple(replace(cursor, last_seen=0) for cursor in cursors)


def _told(host: Host, conn: Connection, entry: Entry) -> orjson.Fragment:
    """A ringed envelope as the reconnecting principal is told it."""
    return orjson.Fragment(
        seen(entry.envelope, conn.principal, host.fanout.action_views)
        if entry.viewed
        else entry.envelope
    )


def _worth_replaying(host: Host, entries: list[Entry], channels: list[Channel]) -> bool:
    """A replay heavier than the snapshots it stands for is answered with the snapshots: a
    client that fell behind should not be handed more than the state it is missing."""
    replay_bytes = sum(entry.size for entry in entries)
    return replay_bytes <= REPLAY_ALWAYS_BYTES or replay_bytes <= _snapshot_bytes(host, channels)


def _recover_connection(
    host: Host,
    conn: Connection,
    last_seen: int,
    found: list[Channel],
    missing: list[str],
    *,
    replayable: bool = True,
) -> dict[str, Any]:
    """AHP 1.0.0's answer: everything after one watermark, or every channel's snapshot."""
    if (
        replayable
        and host.fanout.ring.covers(last_seen, host.fanout.server_seq)
        and not any(host.fanout.replaced_since(channel.uri, last_seen) for channel in found)
    ):
        watched = {channel.uri for channel in found}
        entries = [
            entry
            for entry in host.fanout.ring.since(last_seen)
            if _replayable(host, conn, entry, watched)
        ]
        if _worth_replaying(host, entries, found):
            return {
                "type": "replay",
                "actions": [_told(host, conn, entry) for entry in entries],
                "missing": missing,
            }
    return {
        "type": "snapshot",
        "snapshots": [
            host.snapshot(conn, channel)
            for channel in found
            if channel.kind != telemetry.KIND  # stateless: joined again, nothing to hand
        ],
    }


def _recover_channels(
    host: Host, conn: Connection, cursors: tuple[ReplayCursor, ...], found: list[Channel]
) -> list[dict[str, Any]]:
    """One ChannelRecovery per cursor, in the order asked: each channel replayed after its own
    cursor, or its snapshot where the ring no longer covers that cursor (or the replay would
    weigh more than the state), or missing where it is gone or no longer the principal's to
    read. Nothing of one channel is put in another's recovery."""
    ring, current = host.fanout.ring, host.fanout.server_seq
    by_uri = {channel.uri: channel for channel in found}
    watched = set(by_uri)

    def stateless(channel: Channel) -> bool:
        return channel.kind == telemetry.KIND

    # A cursor of 0 is a channel the client holds no baseline for: a held state is seeded from
    # the store, not built by actions, so it has nothing to replay onto and is sent the snapshot.
    replayable = [
        cursor
        for cursor in cursors
        if (channel := by_uri.get(cursor.channel)) is not None
        and (
            stateless(channel)
            or (
                cursor.last_seen > 0
                and ring.covers(cursor.last_seen, current)
                and not host.fanout.replaced_since(channel.uri, cursor.last_seen)
            )
        )
    ]
    owed: dict[str, list[Entry]] = {}
    if replayable:
        # One walk of the ring from the oldest cursor it serves, bucketed by channel.
        for entry in ring.since(min(cursor.last_seen for cursor in replayable)):
            if entry.channel in watched and _replayable(host, conn, entry, watched):
                owed.setdefault(entry.channel, []).append(entry)
    replaying = {cursor.channel for cursor in replayable}
    recoveries: list[dict[str, Any]] = []
    for cursor in cursors:
        channel = by_uri.get(cursor.channel)
        if channel is None:
            recoveries.append({"kind": "missing", "channel": cursor.channel})
            continue
        if cursor.channel in replaying:
            entries = [
                entry
                for entry in owed.get(cursor.channel, ())
                if entry.server_seq > cursor.last_seen
            ]
            # A stateless channel has no snapshot to stand for it: it is always replayed.
            if stateless(channel) or _worth_replaying(host, entries, [channel]):
                recoveries.append(
                    {
                        "kind": "replay",
                        "channel": cursor.channel,
                        "actions": [_told(host, conn, entry) for entry in entries],
                    }
                )
                continue
        recoveries.append(
            {
                "kind": "snapshot",
                "channel": cursor.channel,
                "snapshot": host.snapshot(conn, channel),
            }
        )
    return recoveries
