"""A chat's history and where it lives, end to end: turn windows (`view.turns`,
`turnsNextCursor`, `fetchTurns`) and the config completions a new session is started with
(`sessionConfigCompletions`), over a started server with the OpenAI-compatible backend against
a local chat-completions server."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

from tests.support.client import Client, RpcError, drop_nulls
from tests.support.fake_openai import FakeOpenAi
from tests.support.server import ServerProcess

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
    config = workdir.parent / f"agents-{uuid.uuid4().hex}.json"
    agent = {"kind": "openai", "baseUrl": model.url, "model": "fake-coder", "apiKey": "none"}
    config.write_text(
        json.dumps(
            {
                "agents": [
                    {**agent, "provider": "local", "displayName": "Local model"},
                    {**agent, "provider": "other", "displayName": "Another model"},
                ]
            }
        )
    )
    process = ServerProcess(env_extra={"AHPD_CONFIG": str(config)}).start()
    yield process
    process.close()
    config.unlink()


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
