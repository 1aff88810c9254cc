"""The nodes of a host: every `serve` process on the same database, each holding a row under
its node id by a lease (hosts.models.Node).

Each write is one statement under a condition, never a read and then a write: a claim takes
the row where its lease has lapsed or its holder is this very start (`instance`), or inserts
it, the primary key refusing a second; a renewal and a release touch the row only while this
start holds it. The one read before a write, a holder on this same machine whose process is
gone (a node killed and started again before its lease lapsed), is taken over by a swap that
names the holder read, so two starts racing for it cannot both win.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import DateTimeField, ExpressionWrapper, Q, Value
from django.db.models.functions import Now

from ..edge.control import gone
from ..models import Node


@dataclass(frozen=True)
class NodeFacts:
    """What a node says of itself when it claims its row and at each renewal."""

    node_id: str
    instance: str
    machine: str
    pid: int
    pid_space: str
    address: str
    folders: tuple[str, ...]
    agents_max: int
    version: str
    #: The agents it runs, by id.
    agents: tuple[str, ...] = ()


class NodeHeld(Exception):
    """The node id is another live process's."""

    def __init__(self, holder: Node) -> None:
        self.holder = holder
        super().__init__(
            f"node {holder.node_id} is held by process {holder.pid} on {holder.machine} "
            f"(serving {holder.address or 'no address yet'}) until "
            f"{holder.lease_until.isoformat(timespec='seconds')}: AHPD_NODE_ID names one "
            "node of the host, so give this process another"
        )


def _now() -> Now:
    """The database's time, not this process's: every node of the host, on whatever machine
    with whatever clock, judges a lease by the same one."""
    return Now()


def _until(lease: timedelta) -> ExpressionWrapper:
    return ExpressionWrapper(Now() + Value(lease), output_field=DateTimeField())


def _written(facts: NodeFacts, lease: timedelta) -> dict[str, Any]:
    return {
        "instance": facts.instance,
        "address": facts.address,
        "machine": facts.machine,
        "pid": facts.pid,
        "pid_space": facts.pid_space,
        "folders": list(facts.folders),
        "agents_max": facts.agents_max,
        "agents": list(facts.agents),
        "version": facts.version,
        "renewed_at": _now(),
        "lease_until": _until(lease),
    }


def claim(facts: NodeFacts, lease: timedelta) -> None:
    """Take the node's row for this start, or raise NodeHeld naming the live holder."""
    row = {**_written(facts, lease), "started_at": _now()}
    rows = Node.objects.filter(node_id=facts.node_id)
    if rows.filter(Q(lease_until__lt=_now()) | Q(instance=facts.instance)).update(**row):
        return
    try:
        with transaction.atomic():
            Node.objects.create(node_id=facts.node_id, **row)
        return
    except IntegrityError:
        pass
    holder = rows.first()
    if holder is None:  # let go between the two statements: claimed on the next try
        claim(facts, lease)
        return
    if gone(holder.machine, holder.pid, holder.pid_space):
        # Killed and started again before its lease lapsed: this start takes it over, unless
        # another start took it first.
        if rows.filter(instance=holder.instance).update(**row):
            return
        holder = rows.first() or holder
    raise NodeHeld(holder)


def renew(facts: NodeFacts, lease: timedelta) -> bool:
    """Renew the lease this start holds; False where it holds it no longer: it lapsed (and
    another node may have taken the sessions this one ran), or another start took the row."""
    held = Node.objects.filter(
        node_id=facts.node_id, instance=facts.instance, lease_until__gte=_now()
    )
    return bool(held.update(**_written(facts, lease)))


def release(facts: NodeFacts) -> None:
    """Let the row go as the node stops: gone from every list at once, not when it lapses."""
    Node.objects.filter(node_id=facts.node_id, instance=facts.instance).delete()


def live() -> list[Node]:
    """The nodes whose lease holds now, first started first."""
    return list(Node.objects.filter(lease_until__gte=_now()))


def node_json(node: Node) -> dict[str, Any]:
    """A node as the REST API, the CLI and the admin show it."""
    return {
        "id": node.node_id,
        "address": node.address,
        "machine": node.machine,
        "pid": node.pid,
        "folders": list(node.folders),
        "agentsMax": node.agents_max,
        "agents": list(node.agents),
        "version": node.version,
        "startedAt": node.started_at.isoformat(timespec="seconds"),
        "leaseUntil": node.lease_until.isoformat(timespec="seconds"),
    }
