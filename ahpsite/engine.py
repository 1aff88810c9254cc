"""The composition root's engine: the host made with its Django adapters, the ORM store and
people directory (hosts/store/), the usage meter (usage/meter.py), the automations' store
(automations/store.py) and the MCP servers' directory (mcp_servers/directory.py: the team's
registry, with the operator's AHPD_CONFIG servers runtime.py read). hosts/edge/runtime.py runs
what this makes (its loop, its start and stop, its inbox) and knows it only as
settings.AHPD_ENGINE_BUILDER, so hosts imports nothing of usage, automations or mcp_servers."""

from __future__ import annotations

from channels.layers import get_channel_layer

from audit.engine_trail import DjangoAuditTrail
from automations.store import DjangoAutomationStore
from hosts.edge.relay import LayerRelay
from hosts.edge.runtime import (
    configured_agents,
    configured_mcp_servers,
    host_settings,
    shared_layer,
    this_node,
)
from hosts.engine.automations import Automations
from hosts.engine.host import Host
from hosts.engine.placement import NodePlacement
from hosts.store import DjangoDirectory, DjangoStore
from hosts.store.session_nodes import DjangoSessionNodes
from mcp_servers.directory import DjangoMcpDirectory
from usage.meter import DjangoMeter


def build_engine() -> Host:
    """The process's host, made and not started: runtime.get_router starts it, then its
    automations."""
    layer = get_channel_layer()
    # A node of a host of several (`serve`, with a channel layer the nodes share) runs the
    # sessions the database gives it; one alone (the embedded default's in-memory layer
    # reaches no other process) or a process with no server loop runs every session it keeps.
    node_id, machine = (this_node() if shared_layer() else None) or ("", "")
    host = Host(
        DjangoStore(node_id, machine),
        host_settings(),
        configured_agents(),
        DjangoDirectory(),
        placement=NodePlacement(node_id, DjangoSessionNodes(node_id, machine)) if node_id else None,
        relay=LayerRelay(layer) if layer is not None else None,
    )
    host.turns.metering.meter = DjangoMeter()
    host.audit = DjangoAuditTrail()
    host.automations = Automations(host, DjangoAutomationStore())
    host.mcp_directory = DjangoMcpDirectory(configured_mcp_servers())
    return host
