"""Several nodes of one host (issue 29.2, 29.4, 29.5), end to end: two real `serve` processes on
one PostgreSQL database and one Redis, each a node. A session is run by one node, which the
database names; a REST call made to the other reaches it there over the channel layer; a new
session goes to the least loaded node; a socket client of the node that does not run a session
is told which does; and when the node running a session is killed mid-turn, the other takes the
session over at its next use, once the lease lapsed: its history kept, the turn the dead node
ran ended as interrupted, a new turn run."""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.e2e.test_every_write_answers import automation
from tests.e2e.test_rest_sessions import person
from tests.e2e.test_sessions import ended, turn
from tests.e2e.test_terminals import text_of
from tests.support.agents import local_agent_config
from tests.support.celery_worker import (
    celery_worker,
    worker_log,
    worker_output_on_failure,
    worker_ticking,
)
from tests.support.client import RpcError
from tests.support.fake_openai import FakeOpenAi
from tests.support.rest import call, session_over_rest
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
def b_only() -> Iterator[Path]:
    """A folder node-b serves and node-a does not (outside the temporary directory both do)."""
    with tempfile.TemporaryDirectory(prefix="ahpd-nodes-b-", dir="/var/tmp") as path:
        yield Path(path)


@pytest.fixture(scope="module")
def nodes(b_only: Path) -> Iterator[dict[str, ServerProcess]]:
    model = FakeOpenAi()
    with tempfile.TemporaryDirectory(prefix="ahpd-nodes-") as folder:
        config = Path(folder) / f"agents-{uuid.uuid4().hex}.json"
        config.write_text(json.dumps(local_agent_config(model.url)))
        common = {"AHPD_CONFIG": str(config), "AHPD_NODE_LEASE_SECONDS": str(LEASE_SECONDS)}
        first = ServerProcess(env_extra={**common, "AHPD_NODE_ID": "node-a"}).start()
        shared = {key: first.env()[key] for key in ("DATABASE_URL", "AHPD_REDIS_PREFIX")}
        served = os.pathsep.join((first.env()["AHPD_PATHS"], str(b_only)))
        second = ServerProcess(
            env_extra={**common, **shared, "AHPD_NODE_ID": "node-b", "AHPD_PATHS": served}
        ).start()
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


OUTSIDER = """
import json, uuid
from django.contrib.auth import get_user_model
from hosts.models import Membership, Role, Team
from hosts.store import mint_token
name = f"outsider-{uuid.uuid4().hex[:6]}"
user = get_user_model().objects.create_user(username=name)
team, _ = Team.objects.get_or_create(slug="beta")
Membership.objects.create(user=user, role=Role.objects.get(name="member"), team=team, primary=True)
print(json.dumps(mint_token(name, "tests").secret))
"""


def outsider(server: ServerProcess) -> str:
    """A token of a member of team beta alone: the host's own sessions are not theirs to read."""
    return str(server.shell_json(OUTSIDER))


def detail(server: ServerProcess, token: str, uri: str) -> dict:
    status, body = call(server, "GET", at(uri), token)
    assert status == 200, body
    return body


def streamed(turns: list[dict]) -> bool:
    return [t["state"] for t in turns] == ["complete", "running"] and any(
        part.get("kind") == "markdown" for part in turns[1]["responseParts"]
    )


async def watched(connect, server: ServerProcess, token: str, chat: str):
    client = await connect(server.url, token=token)
    await client.initialize()
    snapshot = (await client.request("subscribe", {"channel": chat}))["snapshot"]
    return client, snapshot["state"]


async def test_a_session_is_run_by_one_node_and_driven_from_the_other(nodes, connect, workdir):
    a, b = nodes["node-a"], nodes["node-b"]
    member = person(a, "member")
    made = session_over_rest(a, member, workdir, "first")
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

    # A new session goes to the node running fewer: the other one now, wherever it is asked.
    second = session_over_rest(a, member, workdir, "elsewhere")
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


async def test_a_client_of_either_node_watches_and_drives_a_session_the_other_runs(
    nodes, connect, workdir
):
    member = person(nodes["node-a"], "member")
    made = session_over_rest(nodes["node-a"], member, workdir, "first")
    holder_id = detail(nodes["node-a"], member, made["uri"])["node"]
    other_id = next(k for k in nodes if k != holder_id)
    chat = made["chat"]
    near, state = await watched(connect, nodes[holder_id], member, chat)
    if state.get("activeTurn"):
        await near.wait_action(ended(chat, made["turnId"]), timeout=30)
    # A client of the other node watches it through that node's mirror of it: the same state.
    far, far_state = await watched(connect, nodes[other_id], member, chat)
    near_state = (await near.request("subscribe", {"channel": chat}))["snapshot"]["state"]
    assert far_state["turns"] == near_state["turns"]
    session = (await far.request("subscribe", {"channel": made["uri"]}))["snapshot"]["state"]
    assert session["defaultChat"] == chat

    # Driven from afar: the node that runs it applies it, and both clients see the same
    # actions in the same order, the dispatching client's origin on its own.
    action = turn("from afar")
    echo = await far.dispatch_and_wait(chat, action, timeout=30)
    assert "rejectionReason" not in echo, echo
    await far.wait_action(ended(chat, action["turnId"]), timeout=30)
    await near.wait_action(ended(chat, action["turnId"]), timeout=30)

    def of_turn(client) -> list[tuple]:
        return [
            (e["action"]["type"], json.dumps(e["action"], sort_keys=True), e.get("origin"))
            for e in client.actions
            if e["channel"] == chat and e["action"].get("turnId") == action["turnId"]
        ]

    assert of_turn(far) == of_turn(near)

    # Root state's count of sessions running a turn is the host's, on either node.
    def counts(client) -> list[int]:
        return [
            e["action"]["activeSessions"]
            for e in client.actions
            if e["action"]["type"] == "root/activeSessionsChanged"
        ]

    for client in (near, far):
        await client.wait_for(lambda c=client: 1 in counts(c) and counts(c)[-1] == 0)
    assert of_turn(far)[0][2] == {
        "clientId": far.client_id,
        "clientSeq": echo["origin"]["clientSeq"],
    }
    # Each client's serverSeq is its own node's, rising whatever node said the action.
    seqs = [e["serverSeq"] for e in far.actions]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    await far.assert_conforms(chat)
    await near.assert_conforms(chat)

    # A request about it is answered by the node that runs it: a page of older turns, said
    # on the chat to every client watching it, on either node.
    window = (await far.request("subscribe", {"channel": chat, "view": {"turns": 1}}))["snapshot"][
        "state"
    ]
    assert [t["id"] for t in window["turns"]] == [action["turnId"]]
    assert (
        await far.request("fetchTurns", {"channel": chat, "cursor": window["turnsNextCursor"]})
        == {}
    )
    for client in (far, near):
        loaded = await client.wait_action(
            lambda e: e["channel"] == chat and e["action"]["type"] == "chat/turnsLoaded"
        )
        assert [t["id"] for t in loaded["action"]["turns"]] == [made["turnId"]]

    # Its annotations are watched and marked from afar too: the mark is made where the session
    # runs, and both nodes' clients are told it.
    marks = f"{made['uri']}/annotations"
    await far.request("subscribe", {"channel": marks})
    await near.request("subscribe", {"channel": marks})
    mark = {
        "id": "m1",
        "origin": {"session": made["uri"]},
        "resource": (workdir / "a.txt").as_uri(),
        "range": {"start": {"line": 1, "character": 0}, "end": {"line": 2, "character": 0}},
        "resolved": False,
        "entries": [{"id": "e1", "text": "from afar"}],
    }
    set_echo = await far.dispatch_and_wait(marks, {"type": "annotations/set", "annotation": mark})
    assert "rejectionReason" not in set_echo, set_echo
    await near.wait_action(
        lambda e: e["channel"] == marks and e["action"]["type"] == "annotations/set"
    )
    for client in (far, near):
        await client.assert_conforms(marks)
    # The session's changes (outside git, the trees the host keeps) read the same from
    # either node.
    [session_changes] = [
        c["uriTemplate"] for c in session.get("changesets", []) if c["changeKind"] == "session"
    ]
    states = [
        (await client.request("subscribe", {"channel": session_changes}))["snapshot"]["state"]
        for client in (far, near)
    ]
    assert states[0] == states[1]

    # Someone who may not read it is refused it on either node, in the same words.
    guest = outsider(nodes[other_id])
    refusals = []
    for node in (holder_id, other_id):
        stranger = await connect(nodes[node].url, token=guest)
        await stranger.initialize()
        with pytest.raises(RpcError) as refused:
            await stranger.request("subscribe", {"channel": chat})
        refusals.append((refused.value.code, refused.value.message))
    assert refusals[0] == refusals[1]
    assert refusals[0][0] == -32009, refusals
    await far.notify("unsubscribe", {"channel": chat})
    await far.notify("unsubscribe", {"channel": made["uri"]})
    # Disposed over the socket of the node that does not run it: by the node that does.
    assert await far.request("disposeSession", {"channel": made["uri"]}) is None
    for server in nodes.values():
        assert call(server, "GET", at(made["uri"]), member)[0] == 404


def listed(items: list[dict]) -> set[str]:
    return {item["resource"] for item in items}


def told_of(client, method: str, uri: str):
    key = "session" if method == "root/sessionRemoved" else None
    return lambda: next(
        (
            params
            for said, params in client.notifications
            if said == method
            and (params[key] if key else params.get("summary", {}).get("resource")) == uri
        ),
        None,
    )


async def test_every_node_lists_every_session_and_says_each_change(nodes, connect, workdir):
    member = person(nodes["node-a"], "member")
    watchers = {}
    for node_id, server in nodes.items():
        watchers[node_id] = await connect(server.url, token=member)
        await watchers[node_id].initialize()
    made = session_over_rest(nodes["node-b"], member, workdir, "listed")
    for watcher in watchers.values():
        added = await watcher.wait_for(told_of(watcher, "root/sessionAdded", made["uri"]), 30)
        assert added["summary"]["resource"] == made["uri"]
        assert made["uri"] in listed((await watcher.request("listSessions", {}))["items"])
    # The rows are the same on either node, and an outsider is shown none of them anywhere.
    rows = [
        next(
            i
            for i in (await w.request("listSessions", {}))["items"]
            if i["resource"] == made["uri"]
        )
        for w in watchers.values()
    ]
    assert rows[0]["title"] == rows[1]["title"] and rows[0]["provider"] == rows[1]["provider"]
    guest = outsider(nodes["node-a"])
    for server in nodes.values():
        stranger = await connect(server.url, token=guest)
        await stranger.initialize()
        assert made["uri"] not in listed((await stranger.request("listSessions", {}))["items"])

    # A node started later lists every session the others run before it says it serves.
    with third_node(nodes) as late:
        client = await connect(late.url, token=member)
        await client.initialize()
        everyone = listed((await client.request("listSessions", {}))["items"])
        first = listed((await watchers["node-a"].request("listSessions", {}))["items"])
        assert made["uri"] in everyone and first <= everyone

    status, _ = call(nodes["node-a"], "DELETE", at(made["uri"]), member)
    assert status == 204
    for watcher in watchers.values():
        await watcher.wait_for(told_of(watcher, "root/sessionRemoved", made["uri"]), 30)
        assert made["uri"] not in listed((await watcher.request("listSessions", {}))["items"])


async def test_root_config_set_on_one_node_is_seen_on_every_node(nodes, connect):
    watchers = {}
    for node_id, server in nodes.items():
        watchers[node_id] = await connect(server.url)
        await watchers[node_id].initialize()
    mark = {"x-nodes": uuid.uuid4().hex}
    echo = await watchers["node-a"].dispatch_and_wait(
        "ahp-root://", {"type": "root/configChanged", "config": mark}
    )
    assert "rejectionReason" not in echo
    said = await watchers["node-b"].wait_action(
        lambda e: (
            e["action"]["type"] == "root/configChanged"
            and e["action"]["config"].get("x-nodes") == mark["x-nodes"]
        )
    )
    assert "origin" not in said
    # A client that comes later, to either node, reads it in root state.
    for server in nodes.values():
        late = await connect(server.url)
        root = (await late.initialize())["snapshots"][0]["state"]
        assert root["config"]["values"]["x-nodes"] == mark["x-nodes"]

    # Pushed on both at once, one key each and one key alike: every node ends as the store
    # does, each node's own key kept.
    pushes = {
        node_id: {"x-both": node_id, f"x-{node_id}": uuid.uuid4().hex} for node_id in watchers
    }
    echoes = await asyncio.gather(
        *(
            watchers[node_id].dispatch_and_wait(
                "ahp-root://", {"type": "root/configChanged", "config": config}
            )
            for node_id, config in pushes.items()
        )
    )
    assert all("rejectionReason" not in echo for echo in echoes)
    keys = ["x-both", *(f"x-{node_id}" for node_id in pushes)]

    async def settled() -> list[dict]:
        seen = []
        for client in watchers.values():
            root = (await client.request("subscribe", {"channel": "ahp-root://"}))["snapshot"]
            seen.append({key: root["state"]["config"]["values"].get(key) for key in keys})
        return seen

    deadline = time.monotonic() + 10
    while (seen := await settled())[0] != seen[1]:
        assert time.monotonic() < deadline, seen
        await asyncio.sleep(0.1)
    for node_id, config in pushes.items():
        assert seen[0][f"x-{node_id}"] == config[f"x-{node_id}"]
    assert seen[0]["x-both"] in pushes


def terminals_of(client) -> list[str]:
    return [t["resource"] for t in client.tracked["ahp-root://"][0].get("terminals", [])]


async def test_a_terminal_one_node_runs_is_listed_watched_and_typed_into_from_another(
    nodes, connect, workdir
):
    a, b = nodes["node-a"], nodes["node-b"]
    member = person(a, "member")
    opener = await connect(a.url, token=member)
    await opener.initialize(subscriptions=["ahp-root://"])
    uri = f"ahp-terminal:/{uuid.uuid4()}"
    claim = {"kind": "client", "clientId": opener.client_id}
    await opener.request("createTerminal", {"channel": uri, "claim": claim})
    await opener.request("subscribe", {"channel": uri})
    # The root's list is the host's: the other node lists it too.
    far = await connect(b.url, token=member)
    await far.initialize(subscriptions=["ahp-root://"])
    await far.wait_for(lambda: uri in terminals_of(far), timeout=15)
    # Watched and typed into through the other node's mirror of it: the shell is node-a's.
    await far.request("subscribe", {"channel": uri})
    await far.dispatch(uri, {"type": "terminal/input", "data": "echo node-$((6*7))\r"})
    for client in (far, opener):
        await client.wait_for(lambda c=client: "node-42" in text_of(c.tracked[uri][0]), 15)
    await far.assert_conforms(uri)

    # Someone who may not read it is shown it nowhere and refused it, on either node.
    guest = outsider(b)
    for server in (a, b):
        stranger = await connect(server.url, token=guest)
        await stranger.initialize(subscriptions=["ahp-root://"])
        assert uri not in terminals_of(stranger)
        with pytest.raises(RpcError) as refused:
            await stranger.request("subscribe", {"channel": uri})
        assert refused.value.code == -32009, refused.value

    # Disposed from the other node: by the node that runs it, and gone from both lists.
    assert await far.request("disposeTerminal", {"channel": uri}) is None
    for client in (opener, far):
        await client.wait_for(lambda c=client: uri not in terminals_of(c), timeout=15)

    # One a session claims is opened where the session runs, whichever node is asked.
    made = session_over_rest(a, member, workdir, "with a terminal")
    holder = detail(a, member, made["uri"])["node"]
    asker = await connect(nodes[next(n for n in nodes if n != holder)].url, token=member)
    await asker.initialize(subscriptions=["ahp-root://"])
    claimed = f"ahp-terminal:/{uuid.uuid4()}"
    claim = {"kind": "session", "session": made["uri"], "chat": made["chat"]}
    assert await asker.request("createTerminal", {"channel": claimed, "claim": claim}) is None
    watcher = await connect(nodes[holder].url, token=member)
    await watcher.initialize(subscriptions=["ahp-root://"])
    for client in (asker, watcher):
        await client.wait_for(lambda c=client: claimed in terminals_of(c), timeout=15)
    assert await asker.request("disposeTerminal", {"channel": claimed}) is None
    await watcher.wait_for(lambda: claimed not in terminals_of(watcher), timeout=15)


@contextmanager
def third_node(nodes: dict[str, ServerProcess], **env: str) -> Iterator[ServerProcess]:
    """A third node of the two's host, for as long as a test needs it (stopped cleanly)."""
    shared = {key: nodes["node-a"].env()[key] for key in ("DATABASE_URL", "AHPD_REDIS_PREFIX")}
    third = ServerProcess(
        env_extra={**nodes["node-a"].env_extra, **shared, "AHPD_NODE_ID": "node-c", **env}
    ).start()
    try:
        yield third
    finally:
        third.close()


async def test_three_nodes_are_one_host_every_client_seeing_one_session_alike(
    nodes, connect, workdir
):
    with third_node(nodes) as third:
        three = {**nodes, "node-c": third}
        member = person(third, "member")
        made = session_over_rest(third, member, workdir, "three")
        chat = made["chat"]
        holder = detail(third, member, made["uri"])["node"]
        # A client of each node watches it (two through their node's mirror of it).
        clients = {}
        for node_id, server in three.items():
            clients[node_id], state = await watched(connect, server, member, chat)
            if state.get("activeTurn"):
                await clients[node_id].wait_action(ended(chat, made["turnId"]), timeout=30)
        # Driven from a node that does not run it: every client sees the same actions in the
        # same order.
        driver = next(node_id for node_id in three if node_id != holder)
        action = turn("from one of three")
        echo = await clients[driver].dispatch_and_wait(chat, action, timeout=30)
        assert "rejectionReason" not in echo, echo
        for client in clients.values():
            await client.wait_action(ended(chat, action["turnId"]), timeout=30)

        def of_turn(client) -> list[str]:
            return [
                json.dumps(e["action"], sort_keys=True)
                for e in client.actions
                if e["channel"] == chat and e["action"].get("turnId") == action["turnId"]
            ]

        seen = [of_turn(client) for client in clients.values()]
        assert seen[0] == seen[1] == seen[2] and len(seen[0]) >= 3
        for client in clients.values():
            await client.assert_conforms(chat)

        # Root config set on one of the three is seen on the others.
        mark = {"x-three": uuid.uuid4().hex}
        pusher = await connect(third.url)
        await pusher.initialize()
        echo = await pusher.dispatch_and_wait(
            "ahp-root://", {"type": "root/configChanged", "config": mark}
        )
        assert "rejectionReason" not in echo
        for server in nodes.values():
            late = await connect(server.url)
            await late.initialize()
            deadline = time.monotonic() + 10
            while True:
                root = (await late.request("subscribe", {"channel": "ahp-root://"}))["snapshot"]
                if root["state"]["config"]["values"].get("x-three") == mark["x-three"]:
                    break
                assert time.monotonic() < deadline, root["state"]["config"]["values"]
                await asyncio.sleep(0.1)
        status, _ = call(nodes["node-a"], "DELETE", at(made["uri"]), member)
        assert status == 204


def providers(client) -> list[str]:
    return [agent["provider"] for agent in client.tracked["ahp-root://"][0]["agents"]]


async def test_an_agent_one_node_alone_runs_is_offered_on_every_node_and_run_there(
    nodes, connect, workdir, tmp_path
):
    # node-c runs one more agent than the others, `other` (the same fake model, by another id).
    config = json.loads(Path(nodes["node-a"].env_extra["AHPD_CONFIG"]).read_text())
    [local] = config["agents"]
    config["agents"].append({**local, "provider": "other", "displayName": "Other"})
    path = tmp_path / f"agents-{uuid.uuid4().hex}.json"
    path.write_text(json.dumps(config))
    member = person(nodes["node-a"], "member")
    client = await connect(nodes["node-a"].url, token=member)
    await client.initialize()
    assert providers(client) == ["local"]
    with third_node(nodes, AHPD_CONFIG=str(path)) as third:
        # Offered by node-a as node-c starts, and to a client that comes later.
        await client.wait_for(lambda: providers(client) == ["local", "other"])
        late = await connect(nodes["node-b"].url, token=member)
        root = (await late.initialize())["snapshots"][0]["state"]
        assert [agent["provider"] for agent in root["agents"]] == ["local", "other"]

        # A session of it asked of node-a's socket is made, and run, on node-c.
        uri = f"ahp-session:/{uuid.uuid4()}"
        made = {"channel": uri, "provider": "other", "workingDirectories": [workdir.as_uri()]}
        assert await client.request("createSession", made) is None
        chat = (await client.request("subscribe", {"channel": uri}))["snapshot"]["state"][
            "defaultChat"
        ]
        await client.request("subscribe", {"channel": chat})
        await run_on(client, chat, "on the node that runs my agent")
        await client.assert_conforms(chat)
        for server in (nodes["node-a"], third):
            assert detail(server, member, uri)["node"] == "node-c"
        # One made over REST too, whichever node is asked.
        status, rest = call(
            nodes["node-b"],
            "POST",
            "sessions/",
            member,
            {"provider": "other", "workingDirectories": [workdir.as_uri()], "message": "hi"},
        )
        assert status == 201, rest
        assert detail(nodes["node-b"], member, rest["uri"])["node"] == "node-c"
    # node-c gone (its watchers here sent to reconnect), its agent is offered no more, and a
    # session of it is refused as one node alone refuses an agent it does not run.
    await late.wait_for(lambda: providers(late) == ["local"], timeout=20)
    with pytest.raises(RpcError) as refused:
        await late.request("createSession", {**made, "channel": f"ahp-session:/{uuid.uuid4()}"})
    assert refused.value.code == -32002, refused.value


async def test_a_clients_files_are_asked_of_it_by_the_node_its_socket_is_on(nodes, connect):
    member = person(nodes["node-a"], "member")
    laptop = await connect(
        nodes["node-b"].url, token=member, client_id=f"laptop-{uuid.uuid4().hex[:6]}"
    )
    await laptop.initialize()
    files = {"file:///home/me/notes.md": "kept on the laptop"}

    async def serves(method: str, params: dict) -> dict:
        if method == "resourceRead" and params["uri"] in files:
            return {"data": files[params["uri"]], "encoding": "utf-8"}
        raise RpcError({"code": -32008, "message": f"Resource not found: {params['uri']}"})

    laptop.serves = serves
    on_laptop = f"vscode-agent-client://{laptop.client_id}/file/-"
    # The same person's window on the other node: asked of the laptop by node-b, once node-a
    # was told of the laptop.
    window = await connect(nodes["node-a"].url, token=member)
    await window.initialize()
    read = {"channel": "ahp-root://", "uri": f"{on_laptop}/home/me/notes.md"}
    deadline = time.monotonic() + 10
    while True:
        try:
            answer = await window.request("resourceRead", read)
            break
        except RpcError as error:
            assert error.code == -32603 and time.monotonic() < deadline, error
            await asyncio.sleep(0.1)
    assert answer == {"data": "kept on the laptop", "encoding": "utf-8"}
    assert laptop.asked[-1] == (
        "resourceRead",
        {"channel": "ahp-root://", "uri": "file:///home/me/notes.md"},
    )
    # The laptop's refusal comes back as it gave it.
    with pytest.raises(RpcError) as missing:
        await window.request("resourceRead", {**read, "uri": f"{on_laptop}/home/me/none"})
    assert (missing.value.code, missing.value.message) == (
        -32008,
        "Resource not found: file:///home/me/none",
    )
    # Another person is refused, and the laptop never asked.
    asked = len(laptop.asked)
    stranger = await connect(nodes["node-a"].url, token=person(nodes["node-a"], "member"))
    await stranger.initialize()
    with pytest.raises(RpcError) as denied:
        await stranger.request("resourceRead", read)
    assert denied.value.code == -32009, denied.value
    assert len(laptop.asked) == asked


async def reconnected(connect, server: ServerProcess, token: str, client_id: str, params: dict):
    """A reconnect to `server` of a client another node met, once it has been told of it: the
    client, and the reconnect's answer."""
    deadline = time.monotonic() + 10
    while True:
        again = await connect(server.url, token=token, client_id=client_id)
        try:
            return again, await again.request("reconnect", {"clientId": client_id, **params})
        except RpcError as error:
            if error.code != -32008 or time.monotonic() > deadline:
                raise
        await again.close()
        await asyncio.sleep(0.1)


def turn_done(server: ServerProcess, token: str, uri: str, count: int) -> None:
    """Until the session's one chat holds `count` turns, the last of them over."""
    deadline = time.monotonic() + 30
    while True:
        turns = detail(server, token, uri)["chats"][0]["turns"]
        if len(turns) == count and turns[-1]["state"] != "running":
            return
        assert time.monotonic() < deadline, turns
        time.sleep(0.1)


async def test_a_client_of_one_node_reconnects_to_another_and_is_replayed_by_the_first(
    nodes, connect, workdir
):
    """A client that reconnects to another node is piped to the node it spoke to, which
    replays what it missed from its own serverSeq and answers it from then on: in AHP 1.0's
    one watermark and in 1.1's per-channel cursors, whichever node runs the session."""
    member = person(nodes["node-a"], "member")
    made = session_over_rest(nodes["node-a"], member, workdir, "before")
    chat = made["chat"]
    turn_done(nodes["node-a"], member, made["uri"], 1)
    count = 1
    for versions, first_node, next_node in (
        (["1.0.0"], "node-a", "node-b"),
        (["1.1.0"], "node-b", "node-a"),
    ):
        first = await connect(nodes[first_node].url, token=member)
        await first.initialize(versions, subscriptions=["ahp-root://", chat])
        # It works in the session (through this node's mirror of it, where the other node runs
        # it), and drops.
        before = turn(f"before leaving, {versions[0]}")
        assert "rejectionReason" not in await first.dispatch_and_wait(chat, before, timeout=30)
        await first.wait_action(ended(chat, before["turnId"]), timeout=30)
        count += 1
        seen = max([first.last_seq, *(e["serverSeq"] for e in first.actions)])
        await first.close()
        # Said while it was away: a turn, sent to the node it comes back to.
        text = f"while away, {versions[0]}"
        sent = call(
            nodes[next_node], "POST", at(made["uri"]) + "messages/", member, {"message": text}
        )
        assert sent[0] == 202, sent
        count += 1
        turn_done(nodes[next_node], member, made["uri"], count)
        if versions == ["1.0.0"]:
            params = {
                "channel": "ahp-root://",
                "lastSeenServerSeq": seen,
                "subscriptions": ["ahp-root://", chat],
            }
            again, result = await reconnected(
                connect, nodes[next_node], member, first.client_id, params
            )
            assert result["type"] == "replay", result
            missed = result["actions"]
        else:
            params = {
                "channel": "ahp-root://",
                "subscriptions": [
                    {"channel": "ahp-root://", "lastSeenServerSeq": seen},
                    {"channel": chat, "lastSeenServerSeq": seen},
                ],
            }
            again, result = await reconnected(
                connect, nodes[next_node], member, first.client_id, params
            )
            assert [r["kind"] for r in result["channels"]] == ["replay", "replay"], result
            missed = [a for r in result["channels"] for a in r["actions"]]
        # The turn it missed, as the node it spoke to said it: each serverSeq past the one it
        # last saw there, in order.
        started = [
            e for e in missed if e["channel"] == chat and e["action"]["type"] == "chat/turnStarted"
        ]
        assert [e["action"]["message"]["text"] for e in started] == [text]
        seqs = sorted(e["serverSeq"] for e in missed)
        assert seqs[0] > seen and len(set(seqs)) == len(seqs)
        # Answered by that node from now on: a request, and what is said live, its serverSeq
        # going on from the replay's.
        listed = await again.request("listSessions", {"channel": "ahp-root://"})
        assert made["uri"] in {item["resource"] for item in listed["items"]}
        action = turn(f"after coming back, {versions[0]}")
        echo = await again.dispatch_and_wait(chat, action, timeout=30)
        assert "rejectionReason" not in echo, echo
        assert echo["serverSeq"] > seqs[-1]
        await again.wait_action(ended(chat, action["turnId"]), timeout=30)
        count += 1
        state = (await again.request("subscribe", {"channel": chat}))["snapshot"]["state"]
        assert len(state["turns"]) == count
        await again.close()

    # Another person's reconnect under its client id is piped nowhere, and resumes nothing.
    stranger = outsider(nodes["node-b"])
    with pytest.raises(RpcError) as refused:
        await reconnected(connect, nodes["node-b"], stranger, first.client_id, params)
    assert refused.value.code == -32008
    assert refused.value.message == f"Reconnect client not found: {first.client_id}"


CATALOGUE = "ahp-automations://"


async def cataloguing(connect, server: ServerProcess, token: str):
    client = await connect(server.url, token=token)
    await client.initialize(subscriptions=["ahp-root://", CATALOGUE])
    return client


def entry_of(client, uri: str) -> dict | None:
    entries = client.tracked[CATALOGUE][0]["entries"]
    return next((e for e in entries if e["resource"] == uri), None)


def run_status(client, uri: str, run: str) -> str | None:
    found = entry_of(client, uri)
    runs = {r["resource"]: r for r in (found or {}).get("runs", [])}
    return runs[run]["lifecycle"]["status"] if run in runs else None


async def test_one_automation_catalogue_across_nodes_a_run_followed_and_cancelled_from_afar(
    nodes, connect, workdir
):
    a, b = nodes["node-a"], nodes["node-b"]
    admin = person(a, "admin")
    near, far = await cataloguing(connect, a, admin), await cataloguing(connect, b, admin)
    uri = f"ahp-automation:/{uuid.uuid4()}"
    made = {"type": "automation/createRequested", "resource": uri}
    made["definition"] = automation(workdir, "hold")
    said = await near.dispatch_and_wait(CATALOGUE, made)
    assert "rejectionReason" not in said, said["rejectionReason"]
    # Made on one node, said on the other: it read it back from the store it was kept in.
    await far.wait_for(lambda: entry_of(far, uri), timeout=15)
    assert entry_of(far, uri)["definition"] == entry_of(near, uri)["definition"]

    params = {"channel": CATALOGUE, "automation": uri, "requestId": str(uuid.uuid4())}
    run = (await near.request("runAutomation", params))["resource"]
    # Run by one node (the least loaded); followed by the other as it moves, its channel too.
    clients = {"node-a": near, "node-b": far}
    for client in clients.values():
        await client.wait_for(lambda c=client: run_status(c, uri, run) == "running", 30)
        await client.request("subscribe", {"channel": run})
        await client.wait_for(lambda c=client: c.tracked[run][0]["lifecycle"]["status"])
    session = far.tracked[run][0]["primarySession"]
    holder = detail(b, admin, session)["node"]
    [(other_id, other)] = [(n, c) for n, c in clients.items() if n != holder]
    assert other.tracked[run][0]["lifecycle"]["status"] == "running"

    # Someone else's run is not theirs to cancel, asked on the node that does not run it.
    guest = outsider(nodes[other_id])
    stranger = await connect(nodes[other_id].url, token=guest)
    await stranger.initialize()
    refused = await stranger.dispatch_and_wait(run, {"type": "automationRun/cancelRequested"})
    # Judged by the node that runs it, in the grant's words.
    assert refused["rejectionReason"].endswith(" may not automation:cancel here"), refused
    assert other.tracked[run][0]["lifecycle"]["status"] == "running"

    # Cancelled from the node that does not run it: by the node that does.
    answer = await other.dispatch_and_wait(run, {"type": "automationRun/cancelRequested"})
    assert "rejectionReason" not in answer, answer
    for client in clients.values():
        await client.wait_for(
            lambda c=client: c.tracked[run][0]["lifecycle"]["status"] == "cancelled", 30
        )
        await client.wait_for(lambda c=client: run_status(c, uri, run) == "cancelled", 30)
    again = await other.dispatch_and_wait(run, {"type": "automationRun/cancelRequested"})
    assert again["rejectionReason"] == f"Automation run is already terminal: {run}"
    await other.assert_conforms(run)
    await other.assert_conforms(CATALOGUE)

    # Removed on the other node: gone from both.
    gone = {"type": "automation/removed", "resource": uri}
    assert "rejectionReason" not in await far.dispatch_and_wait(CATALOGUE, gone)
    await near.wait_for(lambda: entry_of(near, uri) is None, timeout=15)
    await near.assert_conforms(CATALOGUE)


async def test_a_run_is_run_by_the_node_that_serves_its_folder_whichever_is_asked(
    nodes, connect, b_only
):
    a, b = nodes["node-a"], nodes["node-b"]
    admin = person(a, "admin")
    near, far = await cataloguing(connect, a, admin), await cataloguing(connect, b, admin)
    uri = f"ahp-automation:/{uuid.uuid4()}"
    made = {"type": "automation/createRequested", "resource": uri}
    made["definition"] = automation(b_only, "ping")
    assert "rejectionReason" not in await near.dispatch_and_wait(CATALOGUE, made)
    # Pressed on node-a, which does not serve its folder: run by node-b, which does.
    params = {"channel": CATALOGUE, "automation": uri, "requestId": str(uuid.uuid4())}
    run = (await near.request("runAutomation", params))["resource"]
    # Watched on the node asked at once, and followed there to its end.
    await near.request("subscribe", {"channel": run})
    await near.wait_for(lambda: near.tracked[run][0]["lifecycle"]["status"] == "completed", 30)
    session = near.tracked[run][0]["primarySession"]
    assert detail(a, admin, session)["node"] == "node-b"
    await far.wait_for(lambda: run_status(far, uri, run) == "completed", timeout=30)
    # Asked again with the same request: the same run, wherever it is asked.
    assert (await far.request("runAutomation", params))["resource"] == run
    assert (await near.request("runAutomation", params))["resource"] == run
    await near.assert_conforms(run)


@pytest.fixture(scope="module")
def worker(nodes) -> Iterator[Path]:
    """A Celery worker with beat on the nodes' database and Redis; its folder (its log)."""
    with tempfile.TemporaryDirectory(prefix="ahpd-nodes-celery-") as folder:
        with celery_worker(nodes["node-a"].env(), Path(folder)):
            yield Path(folder)


async def test_a_celery_fired_run_is_started_once_by_one_node_and_followed_on_every_node(
    nodes, connect, b_only, worker
):
    log = worker_log(worker)
    with worker_output_on_failure(log):
        await worker_ticking(log)
        a, b = nodes["node-a"], nodes["node-b"]
        admin = person(a, "admin")
        near, far = await cataloguing(connect, a, admin), await cataloguing(connect, b, admin)
        uri = f"ahp-automation:/{uuid.uuid4()}"
        trigger = {
            "id": "beat",
            "kind": "schedule",
            "schedule": {"expression": "* * * * *", "timeZone": "UTC"},
            "misfirePolicy": "runOnce",
        }
        made = {"type": "automation/createRequested", "resource": uri}
        made["definition"] = automation(b_only, "from celery", triggers=[trigger])
        said = await near.dispatch_and_wait(CATALOGUE, made)
        assert "rejectionReason" not in said, said["rejectionReason"]
        # Due at the next minute boundary: the worker claims it and tells one node.
        await far.wait_for(lambda: (entry_of(far, uri) or {}).get("runs"), timeout=90)
        off = {"type": "automation/updateRequested", "resource": uri, "changes": {"enabled": False}}
        assert "rejectionReason" not in await far.dispatch_and_wait(CATALOGUE, off)
        run = entry_of(far, uri)["runs"][0]["resource"]
        for client in (near, far):
            await client.wait_for(lambda c=client: run_status(c, uri, run) == "completed", 60)
        # One run, run by one node: its session is that node's, and reads the same from both.
        for client in (near, far):
            await client.wait_for(lambda c=client: not entry_of(c, uri)["definition"]["enabled"])
            assert [r["resource"] for r in entry_of(client, uri)["runs"]] == [run]
        summaries = [entry_of(client, uri)["runs"][0] for client in (near, far)]
        assert summaries[0] == summaries[1]
        session = summaries[0]["primarySession"]
        # Run by the node that serves its folder, whichever node the worker's call reached.
        assert detail(a, admin, session)["node"] == detail(b, admin, session)["node"] == "node-b"
        turns = detail(b, admin, session)["chats"][0]["turns"]
        assert [(t["message"]["text"], t["state"]) for t in turns] == [("from celery", "complete")]
        await far.assert_conforms(CATALOGUE)


# Last: a node of the module's is killed.
def one_on_each(nodes, member: str, workdir: Path) -> dict[str, dict]:
    """A session of `member`'s run by each node (made until placement put one on each)."""
    made: dict[str, dict] = {}
    for attempt in range(6):
        session = session_over_rest(nodes["node-a"], member, workdir, f"made {attempt}")
        made.setdefault(detail(nodes["node-a"], member, session["uri"])["node"], session)
        if len(made) == len(nodes):
            return made
    raise AssertionError(f"placement put every session on {set(made)}")


def chats_of(client, session: str) -> list[str]:
    return [row["resource"] for row in client.tracked[session][0]["chats"]]


def kept_turns(server: ServerProcess, token: str, session: str, chat: str, ids: list[str]) -> None:
    """Until the REST API of `server` reads the chat, in the session, with those turns."""
    deadline = time.monotonic() + 10
    while True:
        rows = {c["uri"]: c for c in detail(server, token, session)["chats"]}
        if chat in rows and [t["id"] for t in rows[chat]["turns"]] == ids:
            return
        assert time.monotonic() < deadline, rows.get(chat)
        time.sleep(0.1)


async def run_on(client, chat: str, text: str) -> str:
    action = turn(text)
    echo = await client.dispatch_and_wait(chat, action, timeout=30)
    assert "rejectionReason" not in echo, echo
    await client.wait_action(ended(chat, action["turnId"]), timeout=30)
    return action["turnId"]


async def test_a_chat_moves_to_a_session_another_node_runs_and_its_watchers_watch_on(
    nodes, connect, workdir
):
    member = person(nodes["node-a"], "member")
    made = one_on_each(nodes, member, workdir)
    source, target = made["node-a"]["uri"], made["node-b"]["uri"]
    admin = await connect(nodes["node-a"].url)
    await admin.initialize()
    moves = {"type": "root/configChanged", "config": {"chatMoves.enabled": True}}
    assert "rejectionReason" not in await admin.dispatch_and_wait("ahp-root://", moves)
    near = await connect(nodes["node-a"].url, token=member)
    far = await connect(nodes["node-b"].url, token=member)
    try:
        chat = f"ahp-chat:/{uuid.uuid4()}"
        for client in (near, far):
            await client.initialize()
            for uri in (source, target):
                await client.request("subscribe", {"channel": uri})
        # A side chat of node-a's session, with a turn: movable, on both nodes.
        await far.request("createChat", {"channel": source, "chat": chat})
        for client in (near, far):
            await client.request("subscribe", {"channel": chat})
        first = await run_on(near, chat, "before the move")
        for client in (near, far):
            await client.wait_for(lambda c=client: c.tracked[chat][0].get("movable"))
        turns = near.tracked[chat][0]["turns"]

        # Asked of node-b, whose client it is: carried to node-a, which runs the chat and
        # hands it to node-b, which runs the destination.
        target_default = made["node-b"]["chat"]
        destination = {"kind": "session", "session": target, "after": target_default}
        assert await far.request("moveChat", {"channel": chat, "destination": destination}) == {
            "session": target
        }
        for client in (near, far):
            await client.wait_for(lambda c=client: chats_of(c, target)[-1:] == [chat])
            await client.wait_for(lambda c=client: chat not in chats_of(c, source))
            # Watched on, with nothing said on the chat itself: its turns where they were.
            assert client.tracked[chat][0]["turns"] == turns
        for server in nodes.values():
            rows = {c["uri"]: c for c in detail(server, member, target)["chats"]}
            assert [t["id"] for t in rows[chat]["turns"]] == [first]
            assert chat not in {c["uri"] for c in detail(server, member, source)["chats"]}

        # Its next turn runs where its session runs now, watched on from both nodes alike.
        after = await run_on(near, chat, "after the move")
        await far.wait_action(ended(chat, after), timeout=30)

        def of_turn(client) -> list[str]:
            return [
                json.dumps(e["action"], sort_keys=True)
                for e in client.actions
                if e["channel"] == chat and e["action"].get("turnId") == after
            ]

        assert of_turn(near) == of_turn(far) and len(of_turn(near)) >= 3
        for client in (near, far):
            for uri in (chat, source, target):
                await client.assert_conforms(uri)
        kept_turns(nodes["node-a"], member, target, chat, [first, after])

        # Refused by the destination's node (archived there), in its words, nothing moved.
        archive = {"type": "session/isArchivedChanged", "isArchived": True}
        assert "rejectionReason" not in await near.dispatch_and_wait(source, archive)
        back = {"kind": "session", "session": source}
        with pytest.raises(RpcError) as refused:
            await near.request("moveChat", {"channel": chat, "destination": back})
        assert refused.value.code == -32602, refused.value
        assert refused.value.data == {"reason": "sessionArchived"}
        assert refused.value.message == f"Session is archived: {source}"
        # Someone else's session is no destination of this member's, on either node.
        stranger = person(nodes["node-a"], "member")
        theirs = one_on_each(nodes, stranger, workdir)["node-a"]["uri"]
        with pytest.raises(RpcError) as refused:
            await near.request(
                "moveChat", {"channel": chat, "destination": {"kind": "session", "session": theirs}}
            )
        assert refused.value.code == -32009, refused.value
        await near.settle()
        assert chat in chats_of(near, target) and chat in chats_of(far, target)

        # And back again, once the source is not archived: a turn runs on node-a.
        archive["isArchived"] = False
        assert "rejectionReason" not in await near.dispatch_and_wait(source, archive)
        assert await near.request("moveChat", {"channel": chat, "destination": back}) == {
            "session": source
        }
        for client in (near, far):
            await client.wait_for(lambda c=client: chats_of(c, source)[:1] == [chat])
        again = await run_on(far, chat, "home again")
        await near.wait_action(ended(chat, again), timeout=30)
        for client in (near, far):
            for uri in (chat, source, target):
                await client.assert_conforms(uri)
        kept_turns(nodes["node-b"], member, source, chat, [first, after, again])
    finally:
        moves["config"]["chatMoves.enabled"] = False
        await admin.dispatch_and_wait("ahp-root://", moves)


async def test_a_killed_nodes_session_is_taken_over_at_its_next_use(
    nodes, connect, workdir, b_only
):
    a = nodes["node-a"]
    member = person(a, "member")
    # Node-b runs the session killed: made until one lands there (each new session goes to
    # the least loaded node, so one does).
    for _ in range(20):
        made = session_over_rest(a, member, workdir, "before")
        if detail(a, member, made["uri"])["node"] == "node-b":
            break
    holder_id, survivor_id = "node-b", "node-a"
    assert detail(a, member, made["uri"])["node"] == holder_id
    holder, survivor = nodes[holder_id], nodes[survivor_id]

    # An automation run the holder runs (it alone serves the run's folder), running when it
    # dies.
    admin = person(a, "admin")
    cataloguer = await cataloguing(connect, survivor, admin)
    starter = await cataloguing(connect, holder, admin)
    automation_uri = f"ahp-automation:/{uuid.uuid4()}"
    made_automation = {"type": "automation/createRequested", "resource": automation_uri}
    made_automation["definition"] = automation(b_only, "hold")
    assert "rejectionReason" not in await starter.dispatch_and_wait(CATALOGUE, made_automation)
    pressed = {"channel": CATALOGUE, "automation": automation_uri, "requestId": "kill"}
    run = (await starter.request("runAutomation", pressed))["resource"]
    await cataloguer.wait_for(lambda: run_status(cataloguer, automation_uri, run) == "running", 30)

    watcher, state = await watched(connect, holder, member, made["chat"])
    if state.get("activeTurn"):
        await watcher.wait_action(ended(made["chat"], made["turnId"]), timeout=30)
    # A client of the survivor watches it too, through its mirror there.
    far, _ = await watched(connect, survivor, member, made["chat"])
    status, held = call(holder, "POST", at(made["uri"]) + "messages/", member, {"message": "hold"})
    assert status == 202, held
    for client in (watcher, far):
        await client.wait_action(
            lambda e: e["channel"] == made["chat"] and e["action"]["type"] == "chat/delta",
            timeout=30,
        )
    # Written behind as it streams: the database every node reads has the running turn, and
    # some of what it said.
    deadline = time.monotonic() + 30
    while not streamed(detail(survivor, member, made["uri"])["chats"][0]["turns"]):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    await watcher.close()
    # The holder's client comes back through the survivor: piped to the holder, which met it,
    # and replayed there.
    piped, resumed = await reconnected(
        connect,
        survivor,
        member,
        watcher.client_id,
        {
            "channel": "ahp-root://",
            "lastSeenServerSeq": max(e["serverSeq"] for e in watcher.actions),
            "subscriptions": ["ahp-root://", made["chat"]],
        },
    )
    assert resumed["type"] == "replay"
    holder.kill()

    # The survivor's clients of the mirror and of the pipe are closed once the lease lapses,
    # to reconnect; and each is sent the session afresh, as the survivor took it over: the
    # turn interrupted.
    for client in (far, piped):
        await asyncio.wait_for(asyncio.shield(client._reader), LEASE_SECONDS + 15)
        assert client.ws.close_code == 1012
    deadline = time.monotonic() + 15
    while {n["id"] for n in call(survivor, "GET", "status/")[1]["nodes"]} != {survivor_id}:
        assert time.monotonic() < deadline
        time.sleep(0.25)
    again = await connect(survivor.url, token=member, client_id=far.client_id)
    recovered = await again.request(
        "reconnect",
        {
            "channel": "ahp-root://",
            "clientId": far.client_id,
            "lastSeenServerSeq": max(e["serverSeq"] for e in far.actions),
            "subscriptions": ["ahp-root://", made["chat"]],
        },
    )
    assert recovered["type"] == "snapshot"
    [chat_state] = [s["state"] for s in recovered["snapshots"] if s["resource"] == made["chat"]]
    assert [t["state"] for t in chat_state["turns"]] == ["complete", "error"]
    # The piped client's node is gone: resumed by the survivor itself, from the snapshots.
    back = await connect(survivor.url, token=member, client_id=piped.client_id)
    params = {"channel": "ahp-root://", "clientId": piped.client_id, "lastSeenServerSeq": 1}
    params["subscriptions"] = ["ahp-root://", made["chat"]]
    assert (await back.request("reconnect", params))["type"] == "snapshot"
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
    # Its automation run was failed by the node that saw it gone, and said so.
    await cataloguer.wait_for(
        lambda: run_status(cataloguer, automation_uri, run) == "failed", timeout=LEASE_SECONDS + 15
    )
    [failed] = entry_of(cataloguer, automation_uri)["runs"]
    assert failed["lifecycle"]["error"]["errorType"] == "interrupted"
    assert failed["lifecycle"]["error"]["message"].startswith("The node running this run stopped")
