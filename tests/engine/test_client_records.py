"""The records of the clients a host met: a record's clock starts when its last connection
closes, once for each connection however many times its end is told (a client the fan-out
dropped as too slow is told gone by the fan-out's drop and again as its socket closes)."""

from __future__ import annotations

from hosts.engine.clients import Clients
from hosts.engine.connection import Connection
from hosts.engine.principal import Principal
from hosts.protocol.versions import parse_version
from tests.support.transport import FakeTransport


def connection(client_id: str) -> Connection:
    conn = Connection(FakeTransport(), "peer")
    conn.client_id, conn.version_text = client_id, "1.0.0"
    conn.version = parse_version("1.0.0")
    conn.principal = Principal("user:ana", ())
    return conn


def test_a_connection_told_gone_twice_is_let_go_once():
    clients = Clients(ttl_s=60)
    first, second = connection("c1"), connection("c1")
    clients.remember(first)
    clients.remember(second)
    clients.gone(first)
    clients.gone(first)  # its socket's close, after the fan-out's drop
    record = clients.get("c1")
    assert record is not None and record.gone_since is None  # the second is open
    clients.gone(second)
    assert record.gone_since is not None


def test_a_client_met_elsewhere_is_kept_for_the_node_that_met_it_until_it_connects_here():
    clients = Clients(ttl_s=60)
    clients.met_elsewhere("node-b", "c2", "1.0.0", "user:ana", None)
    assert clients.held_by("c2", "user:ana").met_by == "node-b"
    assert clients.held_by("c2", "user:max") is None
    conn = connection("c2")
    clients.remember(conn)
    assert clients.get("c2").met_by == ""
    # Told of it again by another node while it is connected here: left as it is.
    clients.met_elsewhere("node-b", "c2", "1.0.0", "user:ana", None)
    assert clients.get("c2").met_by == ""
