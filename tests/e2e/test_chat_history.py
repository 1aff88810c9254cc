"""A chat's history end to end: turn windows (`view.turns`, `turnsNextCursor`, `fetchTurns`),
over a started server with the OpenAI-compatible backend against a local chat-completions
server."""

from __future__ import annotations

import json
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

