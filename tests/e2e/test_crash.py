"""What a client was told survives the host being killed (kill -9) the moment after: a turn's
end, a session made and its first title, a root config push; and a turn running at the crash
reads back ended in error with what it had streamed, a tool call waiting on a person too."""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.e2e.test_rest_sessions import call
from tests.e2e.test_sessions import ended, new_session, turn
from tests.e2e.test_sessions_acp import AGENT
from tests.support.client import Client
from tests.support.server import ServerProcess

ROOT = "ahp-root://"
INTERRUPTED = "The agent was interrupted before this request finished."


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ahpd-crash-work-") as path:
        yield Path(path)


@pytest.fixture(scope="module")
def server(workdir: Path) -> Iterator[ServerProcess]:
    config = workdir.parent / f"crash-agents-{uuid.uuid4().hex}.json"
    agent = {
        "provider": "fake",
        "kind": "acp",
        "displayName": "Fake ACP agent",
        "command": sys.executable,
        "args": [str(AGENT)],
    }
    config.write_text(json.dumps({"agents": [agent]}))
    process = ServerProcess(env_extra={"AHPD_CONFIG": str(config)}).start()
    yield process
    process.close()
    config.unlink()


async def killed_and_back(server: ServerProcess, connect) -> Client:
    """The host killed with nothing written on the way out, started again on the same data,
    and a client on it."""
    server.kill()
    server.start()
    client = await connect(server.url)
    await client.initialize()
    return client


async def read_back(client: Client, uri: str, chat: str) -> tuple[dict, dict]:
    """The session's and its default chat's state as the host holds them now."""
    session = (await client.request("subscribe", {"channel": uri}))["snapshot"]["state"]
    state = (await client.request("subscribe", {"channel": chat}))["snapshot"]["state"]
    return session, state


def markdown(turn_state: dict) -> str:
    return "".join(p["content"] for p in turn_state["responseParts"] if p["kind"] == "markdown")


async def commit_barrier(client: Client) -> None:
    """A root config push: committed before it is said, with every write scheduled before it,
    so once its echo is here what the host had said before it is in the database."""
    await client.dispatch_and_wait(
        ROOT, {"type": "root/configChanged", "config": {"x-barrier": uuid.uuid4().hex}}
    )


async def test_a_finished_turn_and_the_title_are_kept_when_the_host_dies_at_once(
    server, connect, workdir
):
    client = await connect(server.url)
    await client.initialize()
    uri, chat = await new_session(client, workdir, provider="fake")
    action = turn("kept across a crash")
    await client.dispatch(chat, action)
    await client.wait_action(ended(chat, action["turnId"]), timeout=30)

    again = await killed_and_back(server, connect)
    session, state = await read_back(again, uri, chat)
    assert session["title"] == "kept across a crash"
    [finished] = state["turns"]
    assert finished["id"] == action["turnId"]
    assert finished["state"] == "complete"
    assert markdown(finished) == "echo: kept across a crash"
    listed = (await again.request("listSessions", {"channel": ROOT}))["items"]
    assert uri in [row["resource"] for row in listed]


async def test_a_stop_said_is_kept_when_the_host_dies_at_once(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    uri, chat = await new_session(client, workdir, provider="fake")
    action = turn("slow")
    await client.dispatch(chat, action)
    await client.wait_action(
        lambda e: e["channel"] == chat and e["action"]["type"] == "chat/delta", timeout=30
    )
    stop = {"type": "chat/turnCancelled", "turnId": action["turnId"], "duration": 1}
    await client.dispatch_and_wait(chat, stop)

    again = await killed_and_back(server, connect)
    _, state = await read_back(again, uri, chat)
    [stopped] = state["turns"]
    assert stopped["id"] == action["turnId"]
    assert stopped["state"] == "cancelled"


async def test_a_stop_asked_over_rest_is_kept_when_the_host_dies_as_it_is_said(
    server, connect, workdir
):
    client = await connect(server.url)
    await client.initialize()
    uri, chat = await new_session(client, workdir, provider="fake")
    action = turn("slow")
    await client.dispatch(chat, action)
    await client.wait_action(
        lambda e: e["channel"] == chat and e["action"]["type"] == "chat/delta", timeout=30
    )
    # The REST answer is not waited for: the host dies once the socket is told of the stop.
    asking = asyncio.create_task(
        asyncio.to_thread(call, server, "POST", f"sessions/{quote(uri, safe='')}/cancel/")
    )
    await client.wait_action(ended(chat, action["turnId"]), timeout=30)

    again = await killed_and_back(server, connect)
    await asyncio.gather(asking, return_exceptions=True)
    _, state = await read_back(again, uri, chat)
    [stopped] = state["turns"]
    assert stopped["state"] == "cancelled"


async def test_a_session_made_is_kept_when_the_host_dies_at_once(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    uri = f"ahp-session:/{uuid.uuid4()}"
    await client.request(
        "createSession",
        {"channel": uri, "provider": "fake", "workingDirectories": [workdir.as_uri()]},
    )

    again = await killed_and_back(server, connect)
    snapshot = (await again.request("subscribe", {"channel": uri}))["snapshot"]
    assert snapshot["state"]["provider"] == "fake"


async def test_a_root_config_push_is_kept_when_the_host_dies_at_once(server, connect):
    client = await connect(server.url)
    await client.initialize()
    value = uuid.uuid4().hex
    await client.dispatch_and_wait(
        ROOT, {"type": "root/configChanged", "config": {"x-told": value}}
    )

    again = await killed_and_back(server, connect)
    root = (await again.request("subscribe", {"channel": ROOT}))["snapshot"]["state"]
    assert root["config"]["values"]["x-told"] == value


async def test_a_turn_running_at_a_crash_reads_back_interrupted_with_its_streamed_text(
    server, connect, workdir
):
    client = await connect(server.url)
    await client.initialize()
    uri, chat = await new_session(client, workdir, provider="fake")
    action = turn("slow")
    await client.dispatch(chat, action)
    await client.wait_for(
        lambda: (
            "tick" in markdown(client.tracked[chat][0].get("activeTurn") or {"responseParts": []})
        ),
        timeout=30,
    )
    seen = markdown(client.tracked[chat][0]["activeTurn"])
    await commit_barrier(client)

    again = await killed_and_back(server, connect)
    _, state = await read_back(again, uri, chat)
    assert "activeTurn" not in state
    [interrupted] = state["turns"]
    assert interrupted["id"] == action["turnId"]
    assert interrupted["state"] == "error"
    assert markdown(interrupted).startswith(seen)
    last = interrupted["responseParts"][-1]
    assert last["kind"] == "error"
    assert last["error"] == {"errorType": "executionInterrupted", "message": INTERRUPTED}
    # The chat goes on: a turn sent now runs.
    follow = turn("after the crash")
    await again.dispatch(chat, follow)
    end = await again.wait_action(ended(chat, follow["turnId"]), timeout=30)
    assert end["action"]["type"] == "chat/turnComplete"


async def test_a_tool_call_waiting_at_a_crash_reads_back_cancelled(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    uri, chat = await new_session(client, workdir, provider="fake")
    action = turn("write notes.txt never written")
    await client.dispatch(chat, action)
    ready = await client.wait_action(
        lambda e: e["channel"] == chat and e["action"]["type"] == "chat/toolCallReady",
        timeout=30,
    )
    await commit_barrier(client)

    again = await killed_and_back(server, connect)
    _, state = await read_back(again, uri, chat)
    [interrupted] = state["turns"]
    assert interrupted["state"] == "error"
    [call] = [p["toolCall"] for p in interrupted["responseParts"] if p["kind"] == "toolCall"]
    assert call["toolCallId"] == ready["action"]["toolCallId"]
    assert call["status"] == "cancelled"
    assert call["reason"] == "skipped"
    assert interrupted["responseParts"][-1]["error"]["errorType"] == "executionInterrupted"
    assert not (workdir / "notes.txt").exists()
