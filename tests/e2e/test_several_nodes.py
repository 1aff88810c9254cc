"""Several nodes of one host (issue 29.2, 29.4, 29.5), end to end: two real `serve` processes on
one PostgreSQL database and one Redis, each a node. A session is run by one node, which the
database names; a REST call made to the other reaches it there over the channel layer; a new
session goes to the least loaded node; a socket client of the node that does not run a session
is told which does; and when the node running a session is killed mid-turn, the other takes the
session over at its next use, once the lease lapsed: its history kept, the turn the dead node
ran ended as interrupted, a new turn run."""

from __future__ import annotations

import json
import os
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.e2e.test_rest_sessions import person
from tests.e2e.test_sessions import ended
from tests.support.agents import local_agent_config
from tests.support.client import RpcError
from tests.support.fake_openai import FakeOpenAi
from tests.support.rest import call
from tests.support.server import ServerProcess

pytestmark = pytest.mark.skipif(
    not os.environ.get("DATABASE_URL"),
    reason="several serve processes share a database and a channel layer on PostgreSQL and "
    "Redis only (the embedded default is one node)",
)

#: Short enough that a killed node is soon seen gone, long enough that a loaded machine (CI
#: runs two suites side by side) renews every third of it in time.
LEASE_SECONDS = 5


@pytest.fixture(scope="module")
def nodes() -> Iterator[dict[str, ServerProcess]]:
    model = FakeOpenAi()
    with tempfile.TemporaryDirectory(prefix="ahpd-nodes-") as folder:
        config = Path(folder) / f"agents-{uuid.uuid4().hex}.json"
        config.write_text(json.dumps(local_agent_config(model.url)))
        common = {"AHPD_CONFIG": str(config), "AHPD_NODE_LEASE_SECONDS": str(LEASE_SECONDS)}
        first = ServerProcess(env_extra={**common, "AHPD_NODE_ID": "node-a"}).start()
        shared = {key: first.env()[key] for key in ("DATABASE_URL", "AHPD_REDIS_PREFIX")}
        second = ServerProcess(env_extra={**common, **shared, "AHPD_NODE_ID": "node-b"}).start()
        try:
            yield {"node-a": first, "node-b": second}
        finally:
            second.close()
            first.close()
            model.close()


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ahpd-nodes-work-") as path:
        yield Path(path)


def at(uri: str) -> str:
    return "sessions/" + quote(uri, safe="") + "/"


def made_on(server: ServerProcess, token: str, workdir: Path, message: str) -> dict:
    status, made = call(
        server,
        "POST",
        "sessions/",
        token,
        {"provider": "local", "workingDirectories": [workdir.as_uri()], "message": message},
    )
    assert status == 201, made
    return made


def detail(server: ServerProcess, token: str, uri: str) -> dict:
    status, body = call(server, "GET", at(uri), token)
    assert status == 200, body
    return body


async def watched(connect, server: ServerProcess, token: str, chat: str):
    client = await connect(server.url, token=token)
    await client.initialize()
    snapshot = (await client.request("subscribe", {"channel": chat}))["snapshot"]
    return client, snapshot["state"]


async def test_a_session_is_run_by_one_node_and_driven_from_the_other(nodes, connect, workdir):
    a, b = nodes["node-a"], nodes["node-b"]
    member = person(a, "member")
    made = made_on(a, member, workdir, "first")
    # Made where it was asked (no node runs any session yet), and named so in the database
    # every node reads: the REST API of either says where it runs.
    assert detail(a, member, made["uri"])["node"] == "node-a"
    assert detail(b, member, made["uri"])["node"] == "node-a"

    watcher, state = await watched(connect, a, member, made["chat"])
    if state.get("activeTurn"):
        await watcher.wait_action(ended(made["chat"], made["turnId"]), timeout=30)
    # A message sent to the other node is carried to the one that runs the session, as the
    # person who sent it: its turn runs there, and its client sees it stream.
    status, sent = call(b, "POST", at(made["uri"]) + "messages/", member, {"message": "second"})
    assert status == 202, sent
    end = await watcher.wait_action(ended(made["chat"], sent["turnId"]), timeout=30)
    assert end["action"]["type"] == "chat/turnComplete"
    turns = detail(b, member, made["uri"])["chats"][0]["turns"]
    assert [turn["message"]["text"] for turn in turns] == ["first", "second"]
    assert (
        turns[1]["message"]["_meta"]["ahpd.sender"] == turns[0]["message"]["_meta"]["ahpd.sender"]
    )
    # Someone else's session is still refused on the node that carries the call.
    stranger = person(b, "member")
    status, refused = call(b, "POST", at(made["uri"]) + "messages/", stranger, {"message": "x"})
    assert status == 403, refused
    assert refused["detail"].endswith(
        f"{made['uri']} is {turns[0]['message']['_meta']['ahpd.sender']}'s"
    )

    # A socket client of the node that does not run it is told which does, and where.
    other = await connect(b.url, token=member)
    await other.initialize()
    with pytest.raises(RpcError) as told:
        await other.request("subscribe", {"channel": made["chat"]})
    assert told.value.code == -32001
    assert told.value.data == {"node": "node-a", "address": f"ws://127.0.0.1:{a.port}/"}
    assert "is run by node node-a" in told.value.message
    # The connection serves on.
    assert (await other.request("listSessions", {})) is not None

    # A new session goes to the node running fewer: the other one now, wherever it is asked.
    second = made_on(a, member, workdir, "elsewhere")
    assert detail(a, member, second["uri"])["node"] == "node-b"
    watcher_b, state = await watched(connect, b, member, second["chat"])
    if state.get("activeTurn"):
        await watcher_b.wait_action(ended(second["chat"], second["turnId"]), timeout=30)
    turns = detail(a, member, second["uri"])["chats"][0]["turns"]
    assert [turn["state"] for turn in turns] == ["complete"]
    # Disposed from the node that does not run it: gone from both.
    status, _ = call(a, "DELETE", at(second["uri"]), member)
    assert status == 204
    assert call(b, "GET", at(second["uri"]), member)[0] == 404


async def test_a_killed_nodes_session_is_taken_over_at_its_next_use(nodes, connect, workdir):
    a = nodes["node-a"]
    member = person(a, "member")
    made = made_on(a, member, workdir, "before")
    holder_id = detail(a, member, made["uri"])["node"]
    holder = nodes[holder_id]
    survivor_id, survivor = next((k, v) for k, v in nodes.items() if k != holder_id)

    watcher, state = await watched(connect, holder, member, made["chat"])
    if state.get("activeTurn"):
        await watcher.wait_action(ended(made["chat"], made["turnId"]), timeout=30)
    status, held = call(holder, "POST", at(made["uri"]) + "messages/", member, {"message": "hold"})
    assert status == 202, held
    await watcher.wait_action(
        lambda e: e["channel"] == made["chat"] and e["action"]["type"] == "chat/delta",
        timeout=30,
    )
    # Written behind as it streams: the database every node reads has the running turn.
    deadline = time.monotonic() + 30
    while [t["state"] for t in detail(survivor, member, made["uri"])["chats"][0]["turns"]] != [
        "complete",
        "running",
    ]:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    await watcher.close()
    holder.kill()

    # Gone once its lease lapses.
    deadline = time.monotonic() + LEASE_SECONDS + 15
    while {n["id"] for n in call(survivor, "GET", "status/")[1]["nodes"]} != {survivor_id}:
        assert time.monotonic() < deadline
        time.sleep(0.25)
    status, sent = call(
        survivor, "POST", at(made["uri"]) + "messages/", member, {"message": "after"}
    )
    assert status == 202, sent
    assert detail(survivor, member, made["uri"])["node"] == survivor_id
    client, state = await watched(connect, survivor, member, made["chat"])
    if (state.get("activeTurn") or {}).get("id") == sent["turnId"]:
        await client.wait_action(ended(made["chat"], sent["turnId"]), timeout=30)
    turns = detail(survivor, member, made["uri"])["chats"][0]["turns"]
    assert [turn["message"]["text"] for turn in turns] == ["before", "hold", "after"]
    assert [turn["state"] for turn in turns] == ["complete", "error", "complete"]
    interrupted = turns[1]["responseParts"][-1]
    assert interrupted["error"]["errorType"] == "executionInterrupted"
    # What the dead node streamed before it died is kept.
    assert any(part.get("kind") == "markdown" for part in turns[1]["responseParts"])
