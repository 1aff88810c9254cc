"""Which node runs each session (hosts/store/session_nodes.py), against the database: a session
is taken only where no live node runs it, by one conditional update (four nodes racing for one:
one wins); a node gone on this machine (its pid no process among this one's) is let go at
once; a new session goes to the least loaded node serving its folder; and a node's writes of a
session another node took meanwhile are dropped (hosts/store/engine_store.py)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from datetime import timedelta

import pytest
from django.utils import timezone

from hosts.edge.control import pid_space
from hosts.models import Node, StoredChat, StoredSession
from hosts.store import engine_store
from hosts.store.session_nodes import held, others, place, session_of, take, take_free

SESSION = "ahp-session:/one"
CHAT = "ahp-chat:/one-default"


def node(
    node_id: str, *, live: bool = True, folders=("/srv/work",), agents=0, runs=("local",), **kw
) -> Node:
    now = timezone.now()
    return Node.objects.create(
        node_id=node_id,
        instance=f"{node_id}-start",
        address=f"ws://{node_id}:9187/",
        machine=kw.get("machine", "machine-a"),
        pid=kw.get("pid", os.getpid()),
        pid_space=kw.get("pid_space", pid_space()),
        folders=list(folders),
        agents_max=agents,
        agents=list(runs),
        started_at=now,
        renewed_at=now,
        lease_until=now + (timedelta(seconds=15) if live else -timedelta(seconds=1)),
    )


def session(
    uri: str = SESSION, held_by: str = "", folder: str = "/srv/work/app", provider: str = "local"
) -> None:
    StoredSession.objects.create(
        uri=uri,
        provider=provider,
        created_ms=1,
        modified_ms=1,
        default_chat=f"{uri}-default",
        working_directories=[f"file://{folder}"],
        chats=[],
        node=held_by,
    )


@pytest.mark.django_db
def test_a_session_no_live_node_runs_is_taken_and_one_a_live_node_runs_is_not():
    node("a")
    node("b")
    node("gone", live=False)
    session("ahp-session:/free")
    session("ahp-session:/gones", held_by="gone")
    session("ahp-session:/as", held_by="a")
    assert take("ahp-session:/free", "b", "machine-b") is None
    assert take("ahp-session:/gones", "b", "machine-b") is None
    holder = take("ahp-session:/as", "b", "machine-b")
    assert holder is not None and (holder.node_id, holder.address) == ("a", "ws://a:9187/")
    assert sorted(held("b")) == ["ahp-session:/free", "ahp-session:/gones"]
    assert held("a") == ["ahp-session:/as"]
    # Its own, taken again, is its own.
    assert take("ahp-session:/as", "a", "machine-a") is None
    # A node starting takes every session no live node runs, and only those.
    session("ahp-session:/free-2")
    assert take_free("a", "machine-a") == 2
    assert others("a", "machine-a") == ["b"]


@pytest.mark.django_db
def test_a_node_gone_on_this_machine_is_let_go_at_once_but_not_one_counting_other_pids():
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    here = socket.gethostname()
    node("me", machine=here)
    node("killed", machine=here, pid=dead.pid)
    node("elsewhere", machine=here, pid=dead.pid, pid_space="pid:[1]")
    session("ahp-session:/killeds", held_by="killed")
    session("ahp-session:/elsewheres", held_by="elsewhere")
    assert take("ahp-session:/killeds", "me", here) is None
    assert not Node.objects.filter(node_id="killed").exists()
    holder = take("ahp-session:/elsewheres", "me", here)
    assert holder is not None and holder.node_id == "elsewhere"


@pytest.mark.django_db(transaction=True)
def test_nodes_racing_for_one_session_one_wins():
    from concurrent.futures import ThreadPoolExecutor
    from threading import Barrier

    from django.db import connections

    racers = 4
    for n in range(racers):
        node(f"n{n}")
    session(held_by="lapsed")
    barrier = Barrier(racers)

    def race(node_id: str) -> bool:
        try:
            barrier.wait()
            return take(SESSION, node_id, "machine-x") is None
        finally:
            connections.close_all()

    with ThreadPoolExecutor(racers) as pool:
        won = list(pool.map(race, [f"n{n}" for n in range(racers)]))
    assert won.count(True) == 1
    assert StoredSession.objects.get().node == f"n{won.index(True)}"


@pytest.mark.django_db
def test_a_session_is_taken_over_by_a_node_serving_its_folder():
    node("a", folders=("/srv/work",))
    node("b", folders=("/srv/other",))
    session("ahp-session:/works", held_by="gone", folder="/srv/work/app")
    session("ahp-session:/nowhere", held_by="gone", folder="/opt/nobody")
    # b serves no folder of it: a does, and takes it at its first use there.
    holder = take("ahp-session:/works", "b", "machine-b")
    assert holder is not None and holder.node_id == "a"
    assert StoredSession.objects.get(uri="ahp-session:/works").node == "gone"
    assert take("ahp-session:/works", "a", "machine-a") is None
    # One no live node serves is taken by whichever uses it: never left nowhere to run.
    assert take("ahp-session:/nowhere", "b", "machine-b") is None
    # A node starting takes only what it may run.
    session("ahp-session:/other", held_by="gone", folder="/srv/other/x")
    session("ahp-session:/work-2", held_by="gone", folder="/srv/work/y")
    assert take_free("b", "machine-b") == 2
    assert sorted(held("b")) == ["ahp-session:/nowhere", "ahp-session:/other"]


@pytest.mark.django_db
def test_a_new_session_goes_to_the_least_loaded_node_serving_its_folder():
    node("a")
    node("b")
    node("c", folders=("/srv/other",))
    node("full", agents=1)
    node("gone", live=False)
    session("ahp-session:/1", held_by="a")
    session("ahp-session:/2", held_by="full")
    # b runs none and serves the folder; c runs none but does not serve it; full is full.
    assert place("/srv/work/app", "local", "a") == ("b", "ws://b:9187/")
    session("ahp-session:/3", held_by="b")
    # A tie is this node's own.
    assert place("/srv/work/app", "local", "a")[0] == "a"
    assert place("/srv/work/app", "local", "b")[0] == "b"
    # A folder no live node serves is this node's to refuse or run, as one node alone would.
    assert place("/elsewhere", "local", "a") == ("a", "")
    assert place("/srv/other/x", "local", "a") == ("c", "ws://c:9187/")


@pytest.mark.django_db
def test_a_session_goes_to_and_is_taken_over_by_a_node_running_its_agent():
    node("a", runs=("local",))
    node("b", runs=("local", "claude"))
    session("ahp-session:/busy-b", held_by="b")
    # a is the least loaded, but runs no Claude: a Claude session goes to b.
    assert place("/srv/work/app", "local", "b")[0] == "a"
    assert place("/srv/work/app", "claude", "a") == ("b", "ws://b:9187/")
    # With no folder named, the agent alone decides.
    assert place(None, "claude", "a")[0] == "b"
    # An agent no live node runs is this node's to refuse, as one node alone would.
    assert place("/srv/work/app", "codex", "a") == ("a", "")
    # Its node gone, a Claude session is taken over by the node running Claude, wherever it
    # is used; one of an agent no live node runs by whichever uses it.
    session("ahp-session:/claude", held_by="gone", provider="claude")
    session("ahp-session:/codex", held_by="gone", provider="codex")
    holder = take("ahp-session:/claude", "a", "machine-a")
    assert holder is not None and holder.node_id == "b"
    assert take("ahp-session:/codex", "a", "machine-a") is None
    # A node starting takes only the sessions of the agents it runs.
    session("ahp-session:/claude-2", held_by="gone", provider="claude")
    session("ahp-session:/local", held_by="gone")
    take_free("a", "machine-a")
    assert sorted(held("a")) == ["ahp-session:/codex", "ahp-session:/local"]


@pytest.mark.django_db
def test_the_session_a_uri_names_is_found_by_its_chats_and_channels():
    session()
    StoredChat.objects.create(uri=CHAT, session_id=SESSION, created_ms=1)
    assert session_of(SESSION) == SESSION
    assert session_of(CHAT) == SESSION
    assert session_of(f"{SESSION}/annotations") == SESSION
    assert session_of(f"{SESSION}/changeset/turn/x") == SESSION
    assert session_of("ahp-session:/none") is None
    assert session_of("ahp-session:/on") is None  # a prefix of a URI is not its session


@pytest.mark.django_db
def test_a_node_writes_only_the_sessions_it_runs():
    node("a")
    node("b")
    session(held_by="a")
    StoredChat.objects.create(uri=CHAT, session_id=SESSION, created_ms=1)
    row = dict(
        StoredSession.objects.values("uri", *engine_store._SESSION_FIELDS).get(uri=SESSION),
        title="from b",
    )
    # b was thought gone's own (a took it since): what b writes of it is dropped.
    engine_store._save_session(row, "b")
    engine_store._save_turn(CHAT, 0, {"id": "t1", "state": "complete"}, "b")
    engine_store._delete_session(SESSION, "b")
    kept = StoredSession.objects.get(uri=SESSION)
    assert (kept.title, kept.node) == ("", "a")
    assert not StoredChat.objects.get(uri=CHAT).turn_rows.exists()
    # a's own writes land; a new session is made as the writing node's.
    engine_store._save_session({**row, "title": "from a"}, "a")
    engine_store._save_turn(CHAT, 0, {"id": "t1", "state": "complete"}, "a")
    assert StoredSession.objects.get(uri=SESSION).title == "from a"
    assert StoredChat.objects.get(uri=CHAT).turn_rows.count() == 1
    engine_store._save_session({**row, "uri": "ahp-session:/new"}, "b")
    assert StoredSession.objects.get(uri="ahp-session:/new").node == "b"
    # One process alone (no node) writes any.
    engine_store._save_session({**row, "title": "alone"}, "")
    assert StoredSession.objects.get(uri=SESSION).title == "alone"
