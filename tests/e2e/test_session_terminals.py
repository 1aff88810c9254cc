"""Terminals a session owns: a `!command` in a chat runs in a terminal the session claims,
never reaching the model, its output shown in the turn; the session's dispose closes them."""

from __future__ import annotations

import json
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_sessions import ended, new_session, turn
from tests.e2e.test_terminals import text_of
from tests.support.agents import local_agent_config
from tests.support.client import Client, RpcError
from tests.support.fake_openai import FakeOpenAi
from tests.support.server import ServerProcess

ROOT = "ahp-root://"


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="ahpd-bang-"))
    (path / "hello-from-the-folder.txt").write_text("hi\n")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def model() -> Iterator[FakeOpenAi]:
    fake = FakeOpenAi()
    yield fake
    fake.close()


@pytest.fixture(scope="module")
def server(model: FakeOpenAi, workdir: Path) -> Iterator[ServerProcess]:
    config = workdir.parent / f"agents-{uuid.uuid4().hex}.json"
    config.write_text(json.dumps(local_agent_config(model.url)))
    process = ServerProcess(
        env_extra={"AHPD_CONFIG": str(config), "SHELL": shutil.which("bash") or "/bin/sh"}
    ).start()
    yield process
    process.close()
    config.unlink()


def tool_calls(client: Client, chat: str, turn_id: str) -> list[dict[str, Any]]:
    turns = client.tracked[chat][0].get("turns", [])
    held = next(t for t in turns if t["id"] == turn_id)
    return [p["toolCall"] for p in held["responseParts"] if p["kind"] == "toolCall"]


async def bang(client: Client, chat: str, text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Send a `!` message and wait for its turn's end; the end and the turn's one tool call."""
    action = turn(text)
    await client.dispatch_and_wait(chat, action)
    end = await client.wait_action(ended(chat, action["turnId"]), timeout=30)
    [call] = tool_calls(client, chat, action["turnId"])
    return end, call


async def test_initialize_says_the_terminal_command_prefix(server, connect):
    client = await connect(server.url)
    assert (await client.initialize())["terminalCommandPrefix"] == "!"


async def test_a_bang_message_runs_in_a_terminal_the_session_claims(
    server, connect, workdir, model
):
    client = await connect(server.url)
    await client.initialize()
    session, chat = await new_session(client, workdir)
    asked = len(model.requests)
    end, call = await bang(client, chat, "!ls")
    assert end["action"]["type"] == "chat/turnComplete"
    # Never the model's question.
    assert len(model.requests) == asked
    assert call["status"] == "completed" and call["success"] is True
    [shown] = call["content"]
    assert shown["type"] == "terminal" and shown["title"] == "ls" and shown["isPty"] is True
    assert shown["result"]["exitCode"] == 0
    assert "hello-from-the-folder.txt" in shown["result"]["preview"]
    # It was said as soon as the terminal opened, so a client could watch it run.
    live = await client.wait_action(
        lambda e: e["channel"] == chat and e["action"]["type"] == "chat/toolCallContentChanged"
    )
    assert live["action"]["content"] == [
        {"type": "terminal", "resource": shown["resource"], "title": "ls"}
    ]
    listed = await client.wait_action(
        lambda e: (
            e["action"]["type"] == "root/terminalsChanged"
            and any(t["resource"] == shown["resource"] for t in e["action"]["terminals"])
        )
    )
    info = next(t for t in listed["action"]["terminals"] if t["resource"] == shown["resource"])
    assert info["claim"] == {
        "kind": "session",
        "session": session,
        "chat": chat,
        "turnId": end["action"]["turnId"],
        "toolCallId": call["toolCallId"],
    }
    # Read back after it exited: the output it kept.
    state = (await client.request("subscribe", {"channel": shown["resource"]}))["snapshot"]
    assert state["state"]["lifecycle"] == {"status": "exited", "exitCode": 0}
    assert "hello-from-the-folder.txt" in text_of(state["state"])
    await client.assert_conforms(chat)


async def test_a_failing_bang_command_completes_its_call_unsuccessfully(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    _, chat = await new_session(client, workdir)
    end, call = await bang(client, chat, "!ls /no/such/folder")
    assert end["action"]["type"] == "chat/turnComplete"
    assert call["success"] is False
    assert call["content"][0]["result"]["exitCode"] == 2


async def test_stopping_a_bang_turn_hangs_up_its_command(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    _, chat = await new_session(client, workdir)
    action = turn("!sleep 30")
    await client.dispatch_and_wait(chat, action)
    live = await client.wait_action(
        lambda e: e["channel"] == chat and e["action"]["type"] == "chat/toolCallContentChanged"
    )
    terminal = live["action"]["content"][0]["resource"]
    await client.request("subscribe", {"channel": terminal})
    stop = {"type": "chat/turnCancelled", "turnId": action["turnId"], "duration": 1}
    await client.dispatch_and_wait(chat, stop)
    exited = await client.wait_action(
        lambda e: e["channel"] == terminal and e["action"]["type"] == "terminal/exited",
        timeout=15,
    )
    assert exited["action"]["exitCode"] == 129


async def test_disposing_a_session_closes_its_terminals(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    session, chat = await new_session(client, workdir)
    _, call = await bang(client, chat, "!echo one")
    first = call["content"][0]["resource"]
    _, call = await bang(client, chat, "!echo two")
    second = call["content"][0]["resource"]
    start = len(client.actions)
    await client.request("disposeSession", {"channel": session})
    said: list[set[str]] = []

    def both_gone() -> bool:
        said[:] = [
            {t["resource"] for t in e["action"]["terminals"]}
            for e in client.actions[start:]
            if e["action"]["type"] == "root/terminalsChanged"
        ]
        return bool(said) and not {first, second} & said[-1]

    await client.wait_for(both_gone)
    # Said one at a time, as each went.
    assert len(said) == 2 and len({first, second} & said[0]) == 1
    for uri in (first, second):
        with pytest.raises(RpcError) as gone:
            await client.request("subscribe", {"channel": uri})
        assert gone.value.code == -32001
