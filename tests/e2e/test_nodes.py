"""Nodes (issue 29.1), end to end: a started `serve` is a node of its host, listed with where it
listens in /api/status and by `ahpd nodes`, gone from both as it stops. On PostgreSQL, where
several serve processes share one database: a second process with the same node id waits out
one lease and is refused in words naming the holder, one with its own id is listed beside the
first, and a node killed is gone once its lease lapses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error

import pytest

from tests.e2e.test_grants import cli
from tests.support.admin_site import add_boss, admin_signed_in
from tests.support.agents import local_agent_config, server_with_config
from tests.support.rest import call
from tests.support.server import REPO, ServerProcess

#: The module's node: a lease long enough that a loaded machine (CI runs two suites on two
#: cores) never starves its renewal (every third of it) past it.
LEASE_SECONDS = 9
#: A node that is killed: short, so its lapse is soon seen.
SHORT_LEASE_SECONDS = 3
NODE = "node-a"

on_postgres = pytest.mark.skipif(
    not os.environ.get("DATABASE_URL"),
    reason="several serve processes share a database on PostgreSQL only (the embedded "
    "SQLite default is one node)",
)


@pytest.fixture(scope="module")
def server():
    # Its one agent (never asked for a model here) is listed with the node.
    config = local_agent_config("http://127.0.0.1:9/v1")
    with server_with_config(
        config, AHPD_NODE_ID=NODE, AHPD_NODE_LEASE_SECONDS=str(LEASE_SECONDS)
    ) as process:
        yield process


def nodes(server: ServerProcess) -> list[dict]:
    status, body = call(server, "GET", "status/")
    assert status == 200, body
    return body["nodes"]


def beside(server: ServerProcess, lease: int = LEASE_SECONDS, **env: str) -> ServerProcess:
    """Another serve on `server`'s database (and its own data directory)."""
    shared = {"DATABASE_URL": server.env()["DATABASE_URL"]}
    return ServerProcess(env_extra={"AHPD_NODE_LEASE_SECONDS": str(lease), **shared, **env})


def serve_once(process: ServerProcess) -> subprocess.CompletedProcess[str]:
    """`manage.py serve` with `process`'s settings, to the end (a start that is refused)."""
    return subprocess.run(
        [sys.executable, "manage.py", "serve"],
        cwd=REPO,
        env=process.env(),
        capture_output=True,
        text=True,
        timeout=60,
    )


def said(server: ServerProcess, *args: str) -> str:
    """What `manage.py ahpd <args>` prints for a person."""
    done = subprocess.run(
        [sys.executable, "manage.py", "ahpd", *args],
        cwd=REPO,
        env=server.env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_where_the_nodes_run_is_the_operators_to_read(server):
    member = cli(server, "user", "add", "mo", "--role", "member")
    assert member
    token = str(cli(server, "user", "token", "mo")["token"])
    status, body = call(server, "GET", "status/", token)
    assert status == 200 and body["nodes"] == []
    assert "pid" not in json.dumps(body)


def test_a_started_server_is_a_node_listed_with_where_it_listens(server):
    [node] = nodes(server)
    assert node["id"] == NODE
    assert node["address"] == f"ws://127.0.0.1:{server.port}/"
    assert node["pid"] == server.pid
    assert node["folders"] == server.env()["AHPD_PATHS"].split(os.pathsep)
    assert node["agentsMax"] == 0
    assert node["agents"] == ["local"]
    # The command line reads the same rows from the database every node shares.
    [row] = cli(server, "nodes")
    assert {k: v for k, v in row.items() if k != "leaseUntil"} == {
        k: v for k, v in node.items() if k != "leaseUntil"
    }
    shown = said(server, "nodes")
    assert shown.startswith(f"{NODE}  ws://127.0.0.1:{server.port}/  pid {server.pid}")
    assert f"nodes: {NODE}\n" in said(server, "status")


def test_the_admins_nodes_page_lists_the_live_nodes_over_the_socket(server):
    add_boss(server)
    opener, _ = admin_signed_in(server)
    page = (
        opener.open(f"http://127.0.0.1:{server.port}/admin/hosts/node/", timeout=30).read().decode()
    )
    assert NODE in page and f"ws://127.0.0.1:{server.port}/" in page
    assert "no limit" in page  # AHPD_NODE_AGENTS unset
    assert '<td class="field-runs">local</td>' in page
    # Read only: each node claims, renews and lets go its own row.
    with pytest.raises(urllib.error.HTTPError) as refused:
        opener.open(f"http://127.0.0.1:{server.port}/admin/hosts/node/add/", timeout=30)
    assert refused.value.code == 403


@on_postgres
def test_a_second_live_process_with_the_same_node_id_is_refused_naming_the_holder(server):
    twin = beside(server, AHPD_NODE_ID=NODE)
    started = time.monotonic()
    done = serve_once(twin)
    assert done.returncode != 0
    assert f"node {NODE} is held by process {server.pid}" in done.stderr
    assert "AHPD_NODE_ID names one node of the host" in done.stderr
    # It waited out one lease first (a node killed and started again would have lapsed).
    assert time.monotonic() - started >= LEASE_SECONDS
    # The holder is untouched.
    [node] = nodes(server)
    assert node["pid"] == server.pid
    twin.close()


@on_postgres
def test_a_node_with_no_channel_layer_reaching_the_others_is_refused(server):
    """Nodes share sessions over Redis: one started on their database with the in-memory layer
    (no REDIS_URL) could reach none of them, and would run their sessions beside them."""
    alone = beside(server, AHPD_NODE_ID="node-alone", REDIS_URL="")
    done = serve_once(alone)
    assert done.returncode != 0
    assert f"nodes {NODE} serve this database already" in done.stderr
    assert "set REDIS_URL as they have" in done.stderr
    # It left no row behind, and the node serving is untouched.
    assert [node["id"] for node in nodes(server)] == [NODE]
    alone.close()


@on_postgres
def test_nodes_on_one_database_are_listed_together_and_a_killed_one_lapses(server):
    other = beside(server, SHORT_LEASE_SECONDS, AHPD_NODE_ID="node-b").start()
    try:
        listed = {node["id"]: node for node in nodes(server)}
        assert set(listed) == {NODE, "node-b"}
        assert listed["node-b"]["address"] == f"ws://127.0.0.1:{other.port}/"
        # Every node lists the same nodes.
        assert {node["id"] for node in nodes(other)} == {NODE, "node-b"}
        other.kill()
        # Gone once its lease lapses, and not before the lease it held ran out.
        deadline = time.monotonic() + SHORT_LEASE_SECONDS + 10
        while {node["id"] for node in nodes(server)} != {NODE}:
            assert time.monotonic() < deadline, nodes(server)
            time.sleep(0.25)
    finally:
        other.close()


def test_a_node_that_stops_is_gone_at_once(server):
    server.stop()
    try:
        assert cli(server, "nodes") == []
    finally:
        server.start()
    assert [node["id"] for node in nodes(server)] == [NODE]
