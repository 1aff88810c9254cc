"""A node's row (hosts/store/nodes.py), claimed, renewed and let go under a condition each: a
second live start of the same node id is refused, a lapsed lease is anyone's, a holder on this
machine whose process is gone is taken over, and a start that lost its row cannot renew it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from dataclasses import replace
from datetime import timedelta

import pytest
from django.utils import timezone

from hosts.edge.control import pid_space
from hosts.models import Node
from hosts.store.nodes import NodeFacts, NodeHeld, claim, live, release, renew

LEASE = timedelta(seconds=15)


def facts(instance: str, **changed: object) -> NodeFacts:
    made = NodeFacts(
        node_id="web-1:9187",
        instance=instance,
        machine="machine-a",
        pid=os.getpid(),
        pid_space=pid_space(),
        address="ws://machine-a:9187/",
        folders=("/srv/work",),
        agents_max=4,
        version="1.0",
    )
    return replace(made, **changed)  # type: ignore[arg-type]


def lapse(node_id: str) -> None:
    Node.objects.filter(node_id=node_id).update(lease_until=timezone.now() - timedelta(seconds=1))


@pytest.mark.django_db
def test_a_claimed_node_is_listed_renewed_and_gone_once_let_go():
    first = facts("one")
    claim(first, LEASE)
    [node] = live()
    assert (node.node_id, node.address, node.folders, node.agents_max) == (
        "web-1:9187",
        "ws://machine-a:9187/",
        ["/srv/work"],
        4,
    )
    assert renew(replace(first, address="ws://machine-a:9999/"), LEASE)
    assert live()[0].address == "ws://machine-a:9999/"
    release(first)
    assert live() == [] and not Node.objects.exists()


@pytest.mark.django_db
def test_a_second_live_start_of_the_same_node_is_refused_naming_the_holder():
    claim(facts("one", machine="machine-b"), LEASE)
    with pytest.raises(NodeHeld) as refused:
        claim(facts("two"), LEASE)
    assert "node web-1:9187 is held by process" in str(refused.value)
    assert "on machine-b" in str(refused.value) and "AHPD_NODE_ID" in str(refused.value)
    # The holder keeps its row and its lease.
    assert Node.objects.get().instance == "one"
    # Its release by the refused start touches nothing.
    release(facts("two"))
    assert Node.objects.get().instance == "one"


@pytest.mark.django_db
def test_a_lapsed_lease_is_taken_and_the_start_that_lost_it_cannot_renew_it():
    claim(facts("one", machine="machine-b"), LEASE)
    lapse("web-1:9187")
    assert live() == []  # a node whose lease lapsed is gone
    claim(facts("two"), LEASE)
    assert not renew(facts("one", machine="machine-b"), LEASE)
    assert Node.objects.get().instance == "two"


@pytest.mark.django_db
def test_a_holder_on_this_machine_whose_process_is_gone_is_taken_over():
    # A node killed and started again before its lease lapsed: its pid is no process now.
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    machine = socket.gethostname()
    claim(facts("one", machine=machine, pid=gone.pid), LEASE)
    claim(facts("two", machine=machine), LEASE)
    assert Node.objects.get().instance == "two"
    # A live holder on this machine is not.
    with pytest.raises(NodeHeld):
        claim(facts("three", machine=machine), LEASE)


@pytest.mark.django_db
def test_a_holder_counting_other_pids_under_this_machines_name_is_never_judged_gone():
    # A container on host networking shares the machine's name, not its pids: a pid not
    # found here says nothing of it.
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    machine = socket.gethostname()
    claim(facts("one", machine=machine, pid=gone.pid, pid_space="pid:[1]"), LEASE)
    with pytest.raises(NodeHeld):
        claim(facts("two", machine=machine), LEASE)


@pytest.mark.django_db(transaction=True)
def test_two_starts_racing_for_one_node_id_one_wins():
    from concurrent.futures import ThreadPoolExecutor
    from threading import Barrier

    from django.db import connections

    starts = 4
    barrier = Barrier(starts)

    def start(instance: str) -> str:
        try:
            barrier.wait()
            claim(facts(instance, machine="machine-b"), LEASE)
            return "claimed"
        except NodeHeld:
            return "refused"
        finally:
            connections.close_all()

    with ThreadPoolExecutor(starts) as pool:
        outcomes = list(pool.map(start, [f"start-{n}" for n in range(starts)]))
    assert sorted(outcomes) == ["claimed"] + ["refused"] * (starts - 1)
    assert Node.objects.count() == 1
