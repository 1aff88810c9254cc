"""The commands an ACP agent runs (its `terminal/create`): each in a host terminal the session
claims for the turn and the tool call, which a client subscribes to and watches, and whose
output and exit the agent reads back. The small ACP agent under tests/agents runs them."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_sessions import ended, new_session, turn
from tests.e2e.test_terminals import text_of
from tests.support.agents import server_with_acp_agent
from tests.support.client import Client, RpcError
from tests.support.server import ServerProcess


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ahpd-acp-term-") as path:
        script = Path(path) / "late.sh"
        # Prints only after a client had the time to subscribe: a live watch, not a read-back.
        script.write_text("#!/bin/sh\nsleep 1\necho late from the script\n")
        script.chmod(0o755)
        yield Path(path)


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    with server_with_acp_agent() as process:
        yield process


async def run(client: Client, chat: str, text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run a turn; its end and its one tool call, as the client's tracked state holds it."""
    action = turn(text)
    await client.dispatch_and_wait(chat, action)
    end = await client.wait_action(ended(chat, action["turnId"]), timeout=30)
    [call] = tool_calls(client, chat, action["turnId"])
    return end, call


def tool_calls(client: Client, chat: str, turn_id: str) -> list[dict[str, Any]]:
    turns = client.tracked[chat][0].get("turns", [])
    held = next(t for t in turns if t["id"] == turn_id)
    return [p["toolCall"] for p in held["responseParts"] if p["kind"] == "toolCall"]


def reply(client: Client, chat: str) -> str:
    parts = client.tracked[chat][0]["turns"][-1]["responseParts"]
    return "".join(p["content"] for p in parts if p["kind"] == "markdown")


def listed(client: Client, uri: str) -> list[dict[str, Any]]:
    """Every TerminalInfo the root said of the terminal, in order."""
    return [
        info
        for e in client.actions
        if e["action"]["type"] == "root/terminalsChanged"
        for info in e["action"]["terminals"]
        if info["resource"] == uri
    ]


async def test_an_agents_command_runs_in_a_terminal_the_session_claims(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    session, chat = await new_session(client, workdir, provider="fake")
    end, call = await run(client, chat, "run echo hello")
    assert end["action"]["type"] == "chat/turnComplete"
    # The agent read what the terminal printed, and its exit.
    assert reply(client, chat) == "exit 0: hello"
    assert call["status"] == "completed" and call["success"] is True
    [shown] = [item for item in call["content"] if item["type"] == "terminal"]
    assert shown["title"] == "echo hello" and shown["isPty"] is True
    assert shown["result"] == {"exitCode": 0}
    uri = shown["resource"]
    # Claimed by the session and the turn when it opened; by the tool call once the agent
    # named the terminal in the call's content.
    turn_id = end["action"]["turnId"]
    claim = {"kind": "session", "session": session, "chat": chat, "turnId": turn_id}
    infos = listed(client, uri)
    assert infos[0]["claim"] == claim
    assert {**claim, "toolCallId": call["toolCallId"]} in [info["claim"] for info in infos]
    # Read back after it exited: what it printed, and how it ended.
    state = (await client.request("subscribe", {"channel": uri}))["snapshot"]["state"]
    assert state["lifecycle"] == {"status": "exited", "exitCode": 0}
    assert "hello" in text_of(state)
    assert state["claim"] == {**claim, "toolCallId": call["toolCallId"]}
    assert state["cwd"] == workdir.resolve().as_uri()
    await client.assert_conforms(chat)


async def test_a_client_watches_an_agents_command_as_it_runs(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    _, chat = await new_session(client, workdir, provider="fake")
    action = turn("run ./late.sh")
    await client.dispatch_and_wait(chat, action)
    named = await client.wait_action(
        lambda e: e["channel"] == chat and e["action"]["type"] == "chat/toolCallContentChanged",
        timeout=15,
    )
    [shown] = named["action"]["content"]
    assert shown["type"] == "terminal" and shown["title"] == "./late.sh"
    uri = shown["resource"]
    snapshot = (await client.request("subscribe", {"channel": uri}))["snapshot"]["state"]
    assert snapshot["lifecycle"]["status"] == "running"
    await client.wait_action(
        lambda e: e["channel"] == uri and "late from the script" in e["action"].get("data", ""),
        timeout=15,
    )
    await client.wait_action(ended(chat, action["turnId"]), timeout=30)
    assert reply(client, chat) == "exit 0: late from the script"
    await client.assert_conforms(uri)


async def test_a_failing_command_gives_the_agent_its_exit_code(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    _, chat = await new_session(client, workdir, provider="fake")
    end, call = await run(client, chat, "run ls /no/such/folder")
    assert end["action"]["type"] == "chat/turnComplete"
    assert reply(client, chat).startswith("exit 2: ")
    assert "/no/such/folder" in reply(client, chat)
    assert call["success"] is False
    [shown] = [item for item in call["content"] if item["type"] == "terminal"]
    assert shown["result"] == {"exitCode": 2}
    state = (await client.request("subscribe", {"channel": shown["resource"]}))["snapshot"]
    assert state["state"]["lifecycle"] == {"status": "exited", "exitCode": 2}


async def test_a_command_that_cannot_start_is_refused_to_the_agent(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    _, chat = await new_session(client, workdir, provider="fake")
    end, call = await run(client, chat, "run no-such-program-here at all")
    assert end["action"]["type"] == "chat/turnComplete"
    assert reply(client, chat) == "could not run"
    assert call["success"] is False


async def test_disposing_the_session_closes_its_agents_terminals(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    session, chat = await new_session(client, workdir, provider="fake")
    _, call = await run(client, chat, "run echo bye")
    [shown] = [item for item in call["content"] if item["type"] == "terminal"]
    uri = shown["resource"]
    start = len(client.actions)
    await client.request("disposeSession", {"channel": session})

    def closed() -> bool:
        return any(
            e["action"]["type"] == "root/terminalsChanged"
            and all(t["resource"] != uri for t in e["action"]["terminals"])
            for e in client.actions[start:]
        )

    await client.wait_for(closed)
    with pytest.raises(RpcError) as gone:
        await client.request("subscribe", {"channel": uri})
    assert gone.value.code == -32001
