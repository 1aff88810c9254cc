"""The terminals the other nodes of a host run, in this node's root list: said when what a node
told moves the list (not again for the same list), judged as whose they are there, and gone
with the node."""

from __future__ import annotations

from hosts.engine import access
from hosts.engine.host import Host, HostSettings
from hosts.engine.ports import MemoryStore
from hosts.engine.principal import Principal

INFO = {
    "resource": "ahp-terminal:/far",
    "title": "bash",
    "claim": {"kind": "client", "clientId": "c-far"},
    "lifecycle": {"status": "running"},
}


async def test_another_nodes_terminals_are_listed_judged_as_theirs_and_gone_with_it():
    host = Host(MemoryStore(), HostSettings())
    await host.start()
    try:
        said = host.fanout.server_seq
        whose = access.Personal("ahp-terminal:/far", "user:ana", "team:alpha")
        host.terminals.said_elsewhere("node-b", [(INFO, whose)])
        assert host.root.state["terminals"] == [INFO]
        assert host.fanout.server_seq == said + 1
        # The same list told again (node-b answering another node's start) says nothing.
        host.terminals.said_elsewhere("node-b", [(INFO, whose)])
        assert host.fanout.server_seq == said + 1
        # Judged as its opener's own, as on the node that runs it.
        ana = Principal("user:ana", ("terminal:read",), home="team:alpha")
        teammate = Principal("user:max", ("terminal:read",), home="team:alpha")
        assert host.terminals.may_read(ana, INFO["resource"])
        assert not host.terminals.may_read(teammate, INFO["resource"])
        assert host.terminals.node_of(INFO["resource"]) == "node-b"
        # Its node gone: the list is said without it.
        host.terminals.said_elsewhere("node-b", None)
        assert "terminals" not in host.root.state
        assert host.terminals.node_of(INFO["resource"]) is None
    finally:
        await host.stop()
