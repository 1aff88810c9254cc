"""A chat's history and where it lives, end to end: turn windows (`view.turns`,
`turnsNextCursor`, `fetchTurns`) and the config completions a new session is started with
(`sessionConfigCompletions`), over a started server with the OpenAI-compatible backend against
a local chat-completions server."""

from __future__ import annotations

import os
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

from tests.support.agents import local_agent, server_with_config
from tests.support.client import Client, RpcError, drop_nulls
from tests.support.fake_openai import FakeOpenAi

ROOT = "ahp-root://"


@pytest.fixture(scope="module")
def workdir():
    with tempfile.TemporaryDirectory(prefix="ahpd-work-") as path:
        yield Path(path)


@pytest.fixture(scope="module")
def model():
    fake = FakeOpenAi()
    yield fake
    fake.close()


@pytest.fixture(scope="module")
def server(model, workdir):
    agents = [
        local_agent(model.url, display_name="Local model", model="fake-coder"),
        local_agent(model.url, "other", "Another model", "fake-coder"),
    ]
    with server_with_config({"agents": agents}) as process:
        yield process


def turn(text: str) -> dict:
    return {
        "type": "chat/turnStarted",
        "turnId": str(uuid.uuid4()),
        "startedAt": "2026-11-30T10:00:00.000Z",
        "message": {"text": text, "origin": {"kind": "user"}},
    }


async def new_session(client: Client, workdir: Path, provider: str = "local") -> tuple[str, str]:
    uri = f"ahp-session:/{uuid.uuid4()}"
    await client.request(
        "createSession",
        {"channel": uri, "provider": provider, "workingDirectories": [workdir.as_uri()]},
    )
    snapshot = (await client.request("subscribe", {"channel": uri}))["snapshot"]
    chat = snapshot["state"]["defaultChat"]
    await client.request("subscribe", {"channel": chat})
    return uri, chat


async def run_turn(client: Client, chat: str, text: str) -> str:
    action = turn(text)
    await client.dispatch_and_wait(chat, action)
    await client.wait_action(
        lambda e: (
            e["channel"] == chat
            and e["action"]["type"] == "chat/turnComplete"
            and e["action"].get("turnId") == action["turnId"]
        ),
        timeout=30,
    )
    return str(action["turnId"])


async def chat_with_turns(client: Client, workdir: Path, count: int) -> tuple[str, str, list[str]]:
    session, chat = await new_session(client, workdir)
    ids = [await run_turn(client, chat, f"turn {n}") for n in range(count)]
    return session, chat, ids


# -- turn windows ----------------------------------------------------------------------------


async def test_a_windowed_snapshot_carries_the_newest_turns_and_fetch_turns_walks_back(
    server, connect, workdir
):
    owner = await connect(server.url)
    await owner.initialize()
    _, chat, ids = await chat_with_turns(owner, workdir, 4)

    reader = await connect(server.url)
    await reader.initialize()
    window = (await reader.request("subscribe", {"channel": chat, "view": {"turns": 2}}))[
        "snapshot"
    ]["state"]
    assert [t["id"] for t in window["turns"]] == ids[2:]
    cursor = window["turnsNextCursor"]

    assert await reader.request("fetchTurns", {"channel": chat, "cursor": cursor}) == {}
    # The page was said on the channel before the answer, to every client watching the chat.
    for client in (reader, owner):
        loaded = await client.wait_action(
            lambda e: e["channel"] == chat and e["action"]["type"] == "chat/turnsLoaded"
        )
        assert [t["id"] for t in loaded["action"]["turns"]] == ids[:2]
        assert "turnsNextCursor" not in loaded["action"]
    # The window and the page read the same as a snapshot of every turn.
    await reader.settle()
    whole = (await reader.request("subscribe", {"channel": chat}))["snapshot"]["state"]
    assert "turnsNextCursor" not in whole
    assert [t["id"] for t in whole["turns"]] == ids
    windowed = reader.tracked[chat][0]
    assert drop_nulls(windowed["turns"]) == drop_nulls(whole["turns"])


async def test_a_window_as_large_as_the_chat_carries_no_cursor(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    _, chat, ids = await chat_with_turns(client, workdir, 2)
    for view in ({}, {"turns": 2}, {"turns": 5}, {"turns": 0}, {"turns": "all"}):
        state = (await client.request("subscribe", {"channel": chat, "view": view}))["snapshot"][
            "state"
        ]
        # No count, a count the chat fits in, or a count that is no count (the newest page).
        assert [t["id"] for t in state["turns"]] == ids, view
        assert "turnsNextCursor" not in state, view


async def test_fetch_turns_with_no_cursor_loads_nothing_older(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    _, chat, _ = await chat_with_turns(client, workdir, 1)
    assert await client.request("fetchTurns", {"channel": chat}) == {}
    loaded = await client.wait_action(
        lambda e: e["channel"] == chat and e["action"]["type"] == "chat/turnsLoaded"
    )
    assert loaded["action"]["turns"] == []
    await client.assert_conforms(chat)


@pytest.mark.parametrize(
    "cursor", ["not-ours", "turns-before:", "turns-before:bm8tc3VjaC10dXJu", 7, "turns-before:%%"]
)
async def test_a_cursor_this_host_did_not_issue_is_refused_and_nothing_is_said(
    server, connect, workdir, cursor
):
    client = await connect(server.url)
    await client.initialize()
    _, chat, _ = await chat_with_turns(client, workdir, 1)
    before = len(client.actions)
    with pytest.raises(RpcError) as refused:
        await client.request("fetchTurns", {"channel": chat, "cursor": cursor})
    assert refused.value.code == -32602
    assert "cursor" in refused.value.message
    await client.settle()
    assert not [e for e in client.actions[before:] if e["channel"] == chat]


async def test_a_view_that_is_no_object_is_refused(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    _, chat, _ = await chat_with_turns(client, workdir, 1)
    with pytest.raises(RpcError) as refused:
        await client.request("subscribe", {"channel": chat, "view": 3})
    assert refused.value.code == -32602 and "view must be an object" in refused.value.message


# -- session config completions --------------------------------------------------------------


@pytest.fixture(scope="module")
def repo(workdir):
    """A repository whose 23 branches were committed to a day apart, `topic-00` first."""
    top = workdir / "repo"
    top.mkdir()
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
        "GIT_CONFIG_GLOBAL": "/dev/null",
    }

    def git(*args: str, day: int = 1) -> None:
        when = {"GIT_COMMITTER_DATE": f"2026-01-{day:02d}T10:00:00Z"}
        subprocess.run(["git", "-C", str(top), *args], check=True, env={**env, **when})

    git("init", "-q", "-b", "main")
    git("commit", "-q", "--allow-empty", "-m", "root", day=1)
    for n in range(23):
        git("checkout", "-q", "-b", f"topic-{n:02d}", "main")
        git("commit", "-q", "--allow-empty", "-m", f"topic {n}", day=n + 2)
    git("checkout", "-q", "main")
    return top


async def completions(client: Client, **params: object) -> list[dict]:
    result = await client.request("sessionConfigCompletions", {"channel": ROOT, **params})
    return result["items"]


async def test_branch_completions_match_a_substring_newest_first_twenty_at_most(
    server, connect, repo
):
    client = await connect(server.url)
    await client.initialize()
    items = await completions(
        client, property="branch", workingDirectory=repo.as_uri(), query="TOPIC"
    )
    assert [item["value"] for item in items] == [f"topic-{n:02d}" for n in range(22, 2, -1)]
    assert all(item["label"] == item["value"] for item in items)
    items = await completions(
        client, property="branch", workingDirectory=repo.as_uri(), query="-1", provider="other"
    )
    assert [item["value"] for item in items] == [f"topic-{n:02d}" for n in range(19, 9, -1)]
    everything = await completions(client, property="branch", workingDirectory=repo.as_uri())
    assert len(everything) == 20 and everything[0]["value"] == "topic-22"


async def test_branch_completions_outside_a_repository_are_none(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    plain = workdir / "plain"
    plain.mkdir(exist_ok=True)
    items = await completions(client, property="branch", workingDirectory=plain.as_uri())
    assert items == []


async def test_a_key_whose_values_the_schema_lists_is_answered_with_nothing(server, connect):
    client = await connect(server.url)
    await client.initialize()
    assert await completions(client, property="model", provider="local", query="fake") == []


@pytest.mark.parametrize(
    ("params", "code", "words"),
    [
        ({}, -32602, "sessionConfigCompletions: property must be a string"),
        ({"property": 3}, -32602, "sessionConfigCompletions: property must be a string"),
        ({"property": "branch", "query": 3}, -32602, "query must be a string"),
        ({"property": "branch", "config": []}, -32602, "config must be an object"),
        ({"property": "branch", "provider": "nobody"}, -32002, "Provider not found: nobody"),
        (
            {"property": "branch", "workingDirectory": "file:///etc"},
            -32602,
            "file:///etc is not inside a folder this host serves",
        ),
    ],
)
async def test_session_config_completions_refusals(server, connect, params, code, words):
    client = await connect(server.url)
    await client.initialize()
    with pytest.raises(RpcError) as refused:
        await client.request("sessionConfigCompletions", {"channel": ROOT, **params})
    assert refused.value.code == code
    assert words in refused.value.message


# -- moving chats ----------------------------------------------------------------------------


async def set_moves(client: Client, enabled: bool) -> None:
    echo = await client.dispatch_and_wait(
        ROOT, {"type": "root/configChanged", "config": {"chatMoves.enabled": enabled}}
    )
    assert "rejectionReason" not in echo


async def side_chat_with_a_turn(client: Client, session: str) -> str:
    """A chat beside the default one, with one finished turn."""
    chat = f"ahp-chat:/{uuid.uuid4()}"
    await client.request("createChat", {"channel": session, "chat": chat})
    await client.request("subscribe", {"channel": chat})
    await run_turn(client, chat, "hello")
    return chat


async def move(client: Client, chat: str, **destination: object) -> dict:
    result: dict = await client.request("moveChat", {"channel": chat, "destination": destination})
    return result


def catalogue(client: Client, session: str) -> list[str]:
    return [row["resource"] for row in client.tracked[session][0]["chats"]]


async def test_moves_are_refused_disabled_until_root_config_turns_them_on(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    session, default = await new_session(client, workdir)
    chat = await side_chat_with_a_turn(client, session)
    with pytest.raises(RpcError) as refused:
        await move(client, chat, kind="session", session=session)
    assert refused.value.code == -32602
    assert refused.value.message == "Moving chats is not enabled."
    assert refused.value.data == {"reason": "disabled"}
    assert catalogue(client, session) == [default, chat]
    assert not client.tracked[chat][0].get("movable")


@pytest.fixture
async def moves_on(server, connect):
    admin = await connect(server.url)
    await admin.initialize()
    await set_moves(admin, True)
    yield
    await set_moves(admin, False)


async def test_a_chat_moves_first_or_after_an_anchor_within_its_session(
    server, connect, workdir, moves_on
):
    client = await connect(server.url)
    await client.initialize()
    session, default = await new_session(client, workdir)
    first = await side_chat_with_a_turn(client, session)
    second = await side_chat_with_a_turn(client, session)
    # A chat that has had a turn and runs none is said movable; the default chat never is.
    await client.wait_for(lambda: client.tracked[second][0].get("movable"))
    rows = {row["resource"]: row for row in client.tracked[session][0]["chats"]}
    assert rows[first].get("movable") is True and not rows[default].get("movable")

    assert await move(client, second, kind="session", session=session) == {"session": session}
    reordered = await client.wait_action(
        lambda e: e["channel"] == session and e["action"]["type"] == "session/chatsReordered"
    )
    assert reordered["action"]["chats"] == [second, default, first]
    assert catalogue(client, session) == [second, default, first]

    await move(client, second, kind="session", session=session, after=first)
    await client.settle()
    assert catalogue(client, session) == [default, first, second]
    await client.assert_conforms(session)
    await client.assert_conforms(second)


async def test_a_chat_moves_into_another_session_of_the_same_agent(
    server, connect, workdir, moves_on
):
    client = await connect(server.url)
    await client.initialize()
    source, source_default = await new_session(client, workdir)
    chat = await side_chat_with_a_turn(client, source)
    await run_turn(client, source_default, "make it real")
    target, target_default = await new_session(client, workdir)
    await run_turn(client, target_default, "make it real too")
    turns = client.tracked[chat][0]["turns"]

    assert await move(client, chat, kind="session", session=target, after=target_default) == {
        "session": target
    }
    await client.settle()
    assert catalogue(client, source) == [source_default]
    assert catalogue(client, target) == [target_default, chat]
    # The chat keeps its URI and its turns, and its next turn runs under the destination.
    assert client.tracked[chat][0]["turns"] == turns
    await run_turn(client, chat, "after the move")
    for uri in (source, target, chat):
        await client.assert_conforms(uri)
    listed = (await client.request("listSessions", {"channel": ROOT}))["items"]
    rows = {s["resource"]: [c["resource"] for c in s["chats"]] for s in listed}
    assert rows[target] == [target_default, chat] and rows[source] == [source_default]


async def test_an_archived_session_holds_no_movable_chat_and_none_moves_into_it(
    server, connect, workdir, moves_on
):
    client = await connect(server.url)
    await client.initialize()
    session, _ = await new_session(client, workdir)
    chat = await side_chat_with_a_turn(client, session)
    target, target_default = await new_session(client, workdir)
    await run_turn(client, target_default, "make it real")
    await client.wait_for(lambda: client.tracked[chat][0].get("movable") is True)
    await client.dispatch_and_wait(
        target, {"type": "session/isArchivedChanged", "isArchived": True}
    )
    with pytest.raises(RpcError) as refused:
        await move(client, chat, kind="session", session=target)
    assert refused.value.data == {"reason": "sessionArchived"}
    await client.dispatch_and_wait(
        session, {"type": "session/isArchivedChanged", "isArchived": True}
    )
    await client.wait_for(lambda: client.tracked[chat][0].get("movable") is False)
    # A reorder within the session is refused for none of this, as the reference's is not.
    assert await move(client, chat, kind="session", session=session) == {"session": session}
    assert catalogue(client, session)[0] == chat
    await client.dispatch_and_wait(
        session, {"type": "session/isArchivedChanged", "isArchived": False}
    )
    await client.wait_for(lambda: client.tracked[chat][0].get("movable") is True)
    await client.assert_conforms(session)
    await client.assert_conforms(chat)


async def test_move_refusals_name_their_reason_and_change_nothing(
    server, connect, workdir, moves_on
):
    client = await connect(server.url)
    await client.initialize()
    session, default = await new_session(client, workdir)
    chat = await side_chat_with_a_turn(client, session)
    fresh = f"ahp-chat:/{uuid.uuid4()}"
    await client.request("createChat", {"channel": session, "chat": fresh})
    other, _ = await new_session(client, workdir, provider="other")
    cases = [
        (default, {"kind": "session", "session": session}, "notMovable"),
        (fresh, {"kind": "session", "session": session}, "notStarted"),
        (chat, {"kind": "session", "session": f"ahp-session:/{uuid.uuid4()}"}, None),
        (chat, {"kind": "session", "session": session, "after": chat}, "invalidAnchor"),
        (chat, {"kind": "session", "session": session, "after": "ahp-chat:/x"}, "invalidAnchor"),
        (chat, {"kind": "session", "session": other}, "differentProvider"),
    ]
    before = catalogue(client, session)
    for source, destination, reason in cases:
        with pytest.raises(RpcError) as refused:
            await client.request("moveChat", {"channel": source, "destination": destination})
        assert refused.value.code == -32602, (source, destination)
        expected = reason or "destinationNotFound"
        assert refused.value.data == {"reason": expected}, refused.value.message
    for destination in (
        "x",
        {"kind": "elsewhere"},
        {"kind": "session"},
        {"kind": "session", "session": session, "after": 3},
    ):
        with pytest.raises(RpcError) as refused:
            await client.request("moveChat", {"channel": chat, "destination": destination})
        assert refused.value.code == -32602 and "moveChat: destination" in refused.value.message
    await client.settle()
    assert catalogue(client, session) == before
    assert not [
        e
        for e in client.actions
        if e["action"]["type"] == "session/chatsReordered" and e["channel"] in (session, other)
    ]


async def test_turning_moves_off_says_every_chat_not_movable(server, connect, workdir):
    admin = await connect(server.url)
    await admin.initialize()
    session, _ = await new_session(admin, workdir)
    chat = await side_chat_with_a_turn(admin, session)
    await set_moves(admin, True)
    await admin.wait_for(lambda: admin.tracked[chat][0].get("movable") is True)
    await set_moves(admin, False)
    await admin.wait_for(lambda: admin.tracked[chat][0].get("movable") is False)
    row = next(r for r in admin.tracked[session][0]["chats"] if r["resource"] == chat)
    assert row["movable"] is False
    await admin.assert_conforms(chat)
    await admin.assert_conforms(session)


async def test_a_chat_moves_into_a_new_session_of_its_own_as_its_default_chat(
    server, connect, workdir, moves_on
):
    client = await connect(server.url)
    await client.initialize()
    source, source_default = await new_session(client, workdir)
    await run_turn(client, source_default, "make it real")
    chat = await side_chat_with_a_turn(client, source)
    await client.wait_for(lambda: client.tracked[chat][0].get("movable"))

    made = (await move(client, chat, kind="newSession"))["session"]
    assert made != source
    added = await client.wait_for(
        lambda: next(
            (
                p
                for m, p in client.notifications
                if m == "root/sessionAdded" and p["summary"]["resource"] == made
            ),
            None,
        )
    )
    assert added["summary"]["provider"] == "local"
    state = (await client.request("subscribe", {"channel": made}))["snapshot"]["state"]
    assert state["defaultChat"] == chat
    assert [row["resource"] for row in state["chats"]] == [chat]
    assert state["workingDirectories"] == [workdir.as_uri()]
    # The default chat of its session now: never movable.
    await client.wait_for(lambda: client.tracked[chat][0].get("movable") is False)
    await client.settle()
    assert catalogue(client, source) == [source_default]
    await run_turn(client, chat, "in its own session")
    for uri in (source, made, chat):
        await client.assert_conforms(uri)


async def test_a_moved_chat_is_where_the_move_left_it_after_a_restart(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    await set_moves(client, True)
    source, source_default = await new_session(client, workdir)
    await run_turn(client, source_default, "make it real")
    first = await side_chat_with_a_turn(client, source)
    second = await side_chat_with_a_turn(client, source)
    target, target_default = await new_session(client, workdir)
    await run_turn(client, target_default, "make it real too")
    await client.wait_for(lambda: client.tracked[second][0].get("movable"))
    await move(client, second, kind="session", session=source)
    await move(client, first, kind="session", session=target, after=target_default)
    await client.close()
    server.restart()
    again = await connect(server.url)
    await again.initialize()
    try:
        for uri, chats in ((source, [second, source_default]), (target, [target_default, first])):
            state = (await again.request("subscribe", {"channel": uri}))["snapshot"]["state"]
            assert [row["resource"] for row in state["chats"]] == chats
            # Moves are still on: a chat read back is said movable as it was.
            rows = {row["resource"]: row for row in state["chats"]}
            assert rows[chats[0] if uri == source else chats[1]].get("movable") is True
        moved = (await again.request("subscribe", {"channel": first}))["snapshot"]["state"]
        assert [t["message"]["text"] for t in moved["turns"]] == ["hello"]
        # A chat not watched since the restart is not read back yet: its row alone is told.
        await set_moves(again, False)

        def row_of_second() -> dict:
            rows = again.tracked[source][0]["chats"]
            return next(row for row in rows if row["resource"] == second)

        await again.wait_for(lambda: row_of_second().get("movable") is False)
        await again.assert_conforms(source)
    finally:
        await set_moves(again, False)
