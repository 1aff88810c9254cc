"""The clients this host has met: what `reconnect` needs of one that introduced itself."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..protocol.versions import Version, VersionFormatError, parse_version
from .connection import Connection


@dataclass(slots=True)
class ClientRecord:
    client_id: str
    version_text: str
    version: Version
    #: Who made it (the principal's ref at initialize): only they may resume or re-use it.
    principal: str
    #: The name its clientInfo gave at initialize, which a reconnect does not repeat.
    client_name: str | None = None
    #: Its open connections (each let go once, however many times its end is told).
    connections: set[Connection] = field(default_factory=set)
    gone_since: float | None = None
    #: The other node of the host that met it last (told so), or "" for this one: a reconnect
    #: here is piped to that node while it is live (other_nodes/piped_clients.py), and sent
    #: its channels' snapshots once it is not, that node's serverSeq meaning nothing here.
    met_by: str = ""


class Clients:
    def __init__(self, ttl_s: float) -> None:
        #: A record is forgotten once its client has been gone this long.
        self._ttl_s = ttl_s
        self._records: dict[str, ClientRecord] = {}
        #: Told of each client a handshake introduced here (the other nodes are told).
        self.on_met: Callable[[ClientRecord], None] | None = None

    def get(self, client_id: str) -> ClientRecord | None:
        """The client's record, unless its client has been gone past the time it is kept."""
        record = self._records.get(client_id)
        if record is None or (
            record.gone_since is not None and record.gone_since < time.monotonic() - self._ttl_s
        ):
            return None
        return record

    def held_by(self, client_id: str, principal: str) -> ClientRecord | None:
        """The client's record, where `principal` made it; None for an id this host does not
        know and for another principal's alike, so nobody learns another's id is here."""
        record = self.get(client_id)
        return record if record is not None and record.principal == principal else None

    def held_by_another(self, client_id: str, principal: str) -> bool:
        """Whether another principal made the client (and it is not forgotten yet)."""
        record = self.get(client_id)
        return record is not None and record.principal != principal

    def remember(self, conn: Connection) -> None:
        """Record (or refresh) the client a handshake introduced, and prune forgotten ones.

        A new record belongs to the connection's principal; the handshake checked that an
        existing one is that principal's own.
        """
        assert conn.client_id is not None and conn.version is not None
        assert conn.version_text is not None
        horizon = time.monotonic() - self._ttl_s
        for client_id, old in list(self._records.items()):
            if old.gone_since is not None and old.gone_since < horizon:
                del self._records[client_id]
        record = self._records.get(conn.client_id)
        if record is None:
            record = ClientRecord(
                conn.client_id, conn.version_text, conn.version, conn.principal.ref
            )
            self._records[conn.client_id] = record
        record.version_text, record.version = conn.version_text, conn.version
        record.client_name = conn.client_name
        record.connections.add(conn)
        record.gone_since = None
        record.met_by = ""
        if self.on_met is not None:
            self.on_met(record)

    def met_elsewhere(
        self,
        node: str,
        client_id: str,
        version_text: str,
        principal: str,
        client_name: str | None,
    ) -> None:
        """Node `node` of the host met the client: kept here as one gone, for the time a
        record is kept, so that it may reconnect here (its node gone, or a proxy's choice);
        a client this node holds a connection of is left as it is."""
        record = self._records.get(client_id)
        if record is not None and record.connections:
            return
        try:
            version = parse_version(version_text)
        except VersionFormatError:
            return
        self._records[client_id] = ClientRecord(
            client_id,
            version_text,
            version,
            principal,
            client_name,
            gone_since=time.monotonic(),
            met_by=node,
        )

    def gone(self, conn: Connection) -> None:
        """One of the client's connections closed: its record's clock starts at the last."""
        record = self._records.get(conn.client_id or "")
        if record is not None and conn in record.connections:
            record.connections.discard(conn)
            if not record.connections:
                record.gone_since = time.monotonic()
