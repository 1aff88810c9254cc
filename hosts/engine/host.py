"""The authoritative host: channels and their held state, serverSeq, the replay ring, delivery.

Everything here runs on one asyncio loop and nothing on the delivery path awaits the database:
an accepted action is sequenced, reduced, serialized once, ringed and queued to every watcher
in one synchronous step; durable facts are written behind it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ..backends.base import Agent
from ..protocol import jsonrpc
from ..protocol.actions import action_spec
from ..protocol.errors import ErrorCode, ProtocolError
from ..protocol.methods import METHODS
from ..protocol.reducers import reduce
from ..protocol.uris import ROOT_URI, canonical
from ..protocol.versions import Version
from . import grants, root_config
from .channel import Channel
from .clock import now_ms
from .connection import Connection
from .ports import Store, Transport
from .principal import ANONYMOUS_REF, USERS_RESOURCE_METADATA, Directory, NoDirectory, Principal
from .principal import root as principal_root
from .replay import Entry, ReplayRing
from .writebehind import WriteBehind

log = logging.getLogger("ahpd.engine")

Handler = Callable[["Host", Connection, dict[str, Any]], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class HostSettings:
    server_name: str = "ahpd"
    server_version: str = "0.1.0"
    client_queue_bytes: int = 16 * root_config.MIB
    replay_bytes: int = 32 * root_config.MIB
    replay_count: int = 1000
    #: A client record is forgotten once its client has been gone ten 30 s windows.
    client_record_ttl_s: float = 300.0
    #: Streamed text is gathered per part this long before it is said; 0 says every chunk.
    delta_window_ms: int = 75
    #: The name `root:<host>` says for the deployment's own token.
    host_name: str = "ahpd"
    #: How long a client that dropped stays in the sessions it was in.
    presence_grace_s: float = 30.0
    #: Where backends keep their own state (agents' HOME folders).
    state_dir: Path | None = None


@dataclass(slots=True)
class ClientRecord:
    """What `reconnect` needs of a client that introduced itself with `initialize`."""

    client_id: str
    version_text: str
    version: Version
    connections: int = 0
    gone_since: float | None = None


class Host:
    def __init__(
        self,
        store: Store,
        settings: HostSettings | None = None,
        agents: Mapping[str, Agent] | None = None,
        directory: Directory | None = None,
    ) -> None:
        from .commands import HANDLERS
        from .sessions import Sessions

        self.store = store
        self.settings = settings or HostSettings()
        self.handlers: dict[str, Handler] = HANDLERS
        self.server_seq = 0
        self.channels: dict[str, Channel] = {}
        self.clients: dict[str, ClientRecord] = {}
        self.connections: set[Connection] = set()
        self.ring = ReplayRing(self.settings.replay_count, self.replay_bytes)
        self.writes = WriteBehind()
        self.directory: Directory = directory or NoDirectory()
        self.root_principal = principal_root(self.settings.host_name)
        self.sessions = Sessions(self, agents or {}, self.settings.state_dir)
        self._dirty: dict[Connection, None] = {}
        self._flush_wanted = asyncio.Event()
        self._flusher: asyncio.Task[None] | None = None
        self._started = False
        self._start_lock = asyncio.Lock()
        self.queue_limit = self.settings.client_queue_bytes

    # -- life -----------------------------------------------------------------------------

    async def start(self) -> None:
        """Read what the store keeps and open the root channel. Safe to call more than once."""
        async with self._start_lock:
            if self._started:
                return
            config_schema = root_config.schema(
                client_queue_bytes=self.settings.client_queue_bytes,
                replay_bytes=self.settings.replay_bytes,
            )
            values = root_config.defaults(config_schema)
            values.update(await self.store.load_root_config())
            self.channels[ROOT_URI] = Channel(
                ROOT_URI,
                "root",
                {
                    "agents": [
                        {**agent.info(), "protectedResources": [USERS_RESOURCE_METADATA]}
                        for agent in self.sessions.agents.values()
                    ],
                    "activeSessions": 0,
                    "config": {"schema": config_schema, "values": values},
                },
            )
            self._root_changed()
            await self.sessions.restore()
            self._flusher = asyncio.create_task(self._flush_loop(), name="ahpd-flusher")
            self.writes.start()
            self._started = True

    async def stop(self) -> None:
        """Let the backends go, write what is owed to the store, stop the background tasks."""
        await self.sessions.shutdown()
        await self.writes.stop()
        if self._flusher is not None:
            self._flusher.cancel()
            self._flusher = None

    # -- connections ----------------------------------------------------------------------

    def connect(
        self, transport: Transport, peer: str, principal: Principal | None = None
    ) -> Connection:
        """A socket the door admitted, as the person (or the deployment) its token is."""
        conn = Connection(self, transport, peer)
        conn.principal = conn.door_principal = principal or self.root_principal
        self.connections.add(conn)
        return conn

    def disconnect(self, conn: Connection) -> None:
        """The socket is gone: stop delivering to it and start the client record's clock."""
        if conn not in self.connections:
            return
        self.connections.discard(conn)
        conn.closed = True
        conn.outbox.clear()
        conn.outbox_bytes = 0
        self._dirty.pop(conn, None)
        watched = list(conn.subscriptions.values())
        for channel in watched:
            channel.subscribers.pop(conn, None)
        conn.subscriptions.clear()
        if conn.client_id is not None:
            # A client that drops has a grace in every session it is in; it ends when it comes
            # back and subscribes again.
            self.sessions.left_later(conn.client_id, watched)
        record = self.clients.get(conn.client_id or "")
        if record is not None:
            record.connections = max(0, record.connections - 1)
            if record.connections == 0:
                record.gone_since = time.monotonic()

    def remember_client(self, conn: Connection) -> None:
        """Record (or refresh) the client a handshake introduced, and prune forgotten ones."""
        assert conn.client_id is not None and conn.version is not None
        assert conn.version_text is not None
        horizon = time.monotonic() - self.settings.client_record_ttl_s
        for client_id, old in list(self.clients.items()):
            if old.gone_since is not None and old.gone_since < horizon:
                del self.clients[client_id]
        record = self.clients.get(conn.client_id)
        if record is None:
            record = ClientRecord(conn.client_id, conn.version_text, conn.version)
            self.clients[conn.client_id] = record
        record.version_text, record.version = conn.version_text, conn.version
        record.connections += 1
        record.gone_since = None

    def subscribe(self, conn: Connection, channel: Channel) -> None:
        if conn.closed:
            return  # dropped while its request was handled: nothing may hold it again
        channel.subscribers[conn] = None
        conn.subscriptions[channel.uri] = channel

    def unsubscribe(self, conn: Connection, channel: Channel) -> None:
        channel.subscribers.pop(conn, None)
        conn.subscriptions.pop(channel.uri, None)
        if conn.client_id is not None:
            self.sessions.left(conn.client_id, [channel])

    def client_queue_bytes(self) -> int:
        return int(self.root_value(root_config.CLIENT_QUEUE_BYTES))

    def _root_changed(self) -> None:
        # clientQueueBytes is read before every frame to every client; it is kept here, and
        # refreshed whenever root state moves, so a push applies to the very next frame.
        self.queue_limit = self.client_queue_bytes()

    def replay_bytes(self) -> int:
        return int(self.root_value(root_config.REPLAY_BYTES))

    def root_value(self, key: str) -> Any:
        """A root config value, or its declared default where a replace left it unset."""
        config = self.channels[ROOT_URI].state["config"]
        if key in config["values"]:
            return config["values"][key]
        return config["schema"]["properties"][key]["default"]

    def drop_slow(self, conn: Connection, behind: int) -> None:
        """Close a client that stopped reading; it comes back with `reconnect`."""
        log.warning(
            "closing client %s (%s): %d bytes behind, past clientQueueBytes %d",
            conn.client_id,
            conn.peer,
            behind,
            self.client_queue_bytes(),
        )
        transport = conn.transport
        self.disconnect(conn)
        # Aborted rather than closed: a close frame would wait behind everything the client
        # has not read, and the point is to stop holding that.
        asyncio.get_running_loop().create_task(transport.abort())

    # -- delivery -------------------------------------------------------------------------

    def wake_flusher(self, conn: Connection) -> None:
        self._dirty[conn] = None
        self._flush_wanted.set()

    async def _flush_loop(self) -> None:
        # One task drains every connection: a transport's send does not wait for its peer, so
        # a batch of envelopes costs one wakeup rather than one per subscriber.
        while True:
            await self._flush_wanted.wait()
            self._flush_wanted.clear()
            while self._dirty:
                dirty, self._dirty = self._dirty, {}
                for conn in dirty:
                    try:
                        await conn.flush()
                    except Exception:
                        log.exception("sending to %r failed; dropping it", conn)
                        self.disconnect(conn)
                        # The socket goes too: a client left open would wait for answers.
                        asyncio.get_running_loop().create_task(conn.transport.abort())

    def emit(
        self,
        channel: Channel,
        action: dict[str, Any],
        *,
        origin: dict[str, Any] | None = None,
        sender: Connection | None = None,
        rejection: str | None = None,
        reduce_state: bool = True,
        next_state: Any = None,
    ) -> int:
        """Sequence one action on a channel, apply it, and deliver the envelope to its watchers.

        A refusal (`rejection`) takes a serverSeq and is ringed and delivered like any envelope,
        but changes no state. The sender is told even when it watches no such channel.
        """
        self.server_seq += 1
        seq = self.server_seq
        if next_state is not None:
            channel.state = next_state
        elif rejection is None and reduce_state:
            channel.state = reduce(channel.kind, channel.state, action, now_ms=now_ms())
        if channel.kind == "root" and rejection is None:
            self._root_changed()
        envelope: dict[str, Any] = {"channel": channel.uri, "action": action, "serverSeq": seq}
        if origin is not None:
            envelope["origin"] = origin
        if rejection is not None:
            envelope["rejectionReason"] = rejection
        envelope_text = orjson.dumps(envelope).decode()
        frame = '{"jsonrpc":"2.0","method":"action","params":' + envelope_text + "}"
        spec = action_spec(action["type"])
        introduced = spec.introduced_in if spec is not None else None
        needed = grants.TOLD.get(action["type"])
        self.ring.append(
            Entry(
                seq,
                channel.uri,
                envelope_text,
                len(frame),
                introduced,
                sender.client_id if sender is not None else None,
                needed,
            )
        )
        # A copy: a client found too far behind is dropped, and leaves the set, mid-loop.
        for conn in tuple(channel.subscribers):
            if conn is sender or (
                introduced is not None
                and conn.version is not None
                and introduced <= conn.version
                and (needed is None or conn.principal.may(needed))
            ):
                conn.enqueue(frame)
        if sender is not None and sender not in channel.subscribers:
            sender.enqueue(frame)
        return seq

    def notify(self, channel: Channel, method: str, params: dict[str, Any]) -> None:
        """A protocol notification: to the channel's watchers now, never ringed or replayed."""
        frame = jsonrpc.notification_frame(method, params)
        for conn in tuple(channel.subscribers):
            conn.enqueue(frame)

    def say_host_action(self, uri: Any, action: Any) -> str | None:
        """Say an action on this host's own account (no origin); why not, or None when said."""
        if not isinstance(uri, str) or not isinstance(action, dict):
            return "a host action needs a channel URI and an action object"
        spec = action_spec(str(action.get("type")))
        channel = self.find_channel(uri)
        if spec is None:
            return f"unknown action type: {action.get('type')}"
        if channel is None:
            return f"no such channel: {uri}"
        if channel.kind != spec.channel_kind:
            return f"{spec.type} is not an action of {channel.uri}"
        if spec.type == "root/configChanged":
            reason = root_config.check_push(action.get("config"), action.get("replace"))
            if reason is None:
                self.change_root_config(action)
            return reason
        self.emit(channel, action)
        return None

    def change_root_config(
        self,
        action: dict[str, Any],
        *,
        origin: dict[str, Any] | None = None,
        sender: Connection | None = None,
    ) -> None:
        """Apply a checked root/configChanged: said and kept only where it moves a value.

        A push that moves nothing is neither kept nor said, so a window mirroring its settings
        at every connect moves no client watching the root.
        """
        root = self.channels[ROOT_URI]
        next_state = reduce("root", root.state, action, now_ms=now_ms())
        if next_state["config"]["values"] == root.state["config"]["values"]:
            return
        self.emit(root, action, origin=origin, sender=sender, next_state=next_state)
        values = dict(next_state["config"]["values"])
        self.writes.later("root-config", lambda: self.store.save_root_config(values))

    # -- requests -------------------------------------------------------------------------

    async def principal_now(self, conn: Connection) -> Principal:
        """The connection's principal with its grants read again; a revoked token signs out.

        The deployment's own token (and anonymity) has nothing to read again.
        """
        if conn.principal.token_id is None:
            return conn.principal
        principal = await self.directory.refresh(conn.principal)
        if principal is None:
            self.become(conn, Principal(ANONYMOUS_REF, ()))
            conn.door_principal = conn.principal
            raise ProtocolError(
                ErrorCode.AUTH_REQUIRED,
                "The token this connection signed in with is no longer valid: sign in again",
                {"resources": [USERS_RESOURCE_METADATA]},
            )
        self.become(conn, principal)
        return principal

    def become(self, conn: Connection, principal: Principal) -> None:
        """The connection is now `principal`: it stops watching what that one may not read."""
        narrowed = not set(principal.grants) >= set(conn.principal.grants)
        conn.principal = principal
        if not narrowed:
            return
        for channel in list(conn.subscriptions.values()):
            needed = grants.SUBSCRIBE.get(channel.kind)
            if needed is not None and not any(principal.may(n) for n in needed):
                self.unsubscribe(conn, channel)

    async def require(self, conn: Connection, needed: str, *alternatives: str) -> Principal:
        """The principal, if it holds `needed` (or one of the alternatives); -32009 in the
        reference's words, naming `needed`, otherwise."""
        principal = await self.principal_now(conn)
        if not any(principal.may(n) for n in (needed, *alternatives)):
            raise ProtocolError(
                ErrorCode.PERMISSION_DENIED, f"{principal.ref} may not {needed} here"
            )
        return principal

    def snapshot(self, conn: Connection, channel: Channel, resource: str | None = None) -> Any:
        """A channel's snapshot for one connection: the root says who it is and the grant map."""
        snapshot = channel.snapshot(self.server_seq, resource)
        if channel.kind == "root":
            state = dict(snapshot["state"])
            if not conn.principal.may(grants.TOLD["root/configChanged"]):
                # Root state shows a person only what their grants let them read.
                state["config"] = {"schema": state["config"]["schema"], "values": {}}
            state["_meta"] = {
                **state.get("_meta", {}),
                "ahpd.grants": grants.advertised(),
                "ahpd.principal": conn.principal.ref,
            }
            snapshot["state"] = state
        return snapshot

    def find_channel(self, uri: str) -> Channel | None:
        return self.channels.get(canonical(uri))

    async def handle(self, conn: Connection, incoming: jsonrpc.Incoming) -> str | None:
        """Answer one request or notification; the answer frame, or None for none."""
        method, params = incoming.method, incoming.params
        try:
            spec = METHODS.get(method)
            handler = self.handlers.get(method)
            if spec is None or handler is None:
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
            needed = grants.COMMANDS.get(method)
            if needed is not None:
                await self.require(conn, needed)
            result = await handler(self, conn, params)
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
