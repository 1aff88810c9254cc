"""Tools a client provides, reached by an ACP agent (issue 26.5), end to end: the fake ACP agent,
a real subprocess in the person's sandbox, calls a client's tool through the MCP server named
`client` the host serves for its session, the call is run by the client that provides it over a
real socket, another client's completion is refused, and a client that leaves fails the call."""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from hosts.engine.sessions.client_tool_calls import CLIENT_LEFT
from tests.e2e.test_client_tools import calls, two_providers
from tests.e2e.test_questions import of_type
from tests.e2e.test_sessions import ended, turn
from tests.support.agents import server_with_acp_agent
from tests.support.client import Client
from tests.support.server import ServerProcess

PRESENCE_GRACE_MS = 300


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ahpd-acp-client-tools-") as path:
        yield Path(path)


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    with server_with_acp_agent(AHPD_PRESENCE_GRACE_MS=str(PRESENCE_GRACE_MS)) as process:
        yield process


def listed(client: Client) -> str:
    """The name the `client` server lists a client's openFile under."""
    return re.sub(r"[^a-zA-Z0-9_-]", "_", f"{client.client_id}__openFile")[:52]


def reply(client: Client, chat: str) -> str:
    parts = client.tracked[chat][0]["turns"][-1]["responseParts"]
    return "".join(p["content"] for p in parts if p["kind"] == "markdown")


async def test_the_owning_client_runs_the_agents_call_and_another_may_not_complete_it(
    server, connect, workdir
):
    a, b, uri, chat = await two_providers(server, connect, workdir, provider="fake")
    start = turn(f'clienttool {listed(a)} {{"path": "notes.md"}}')
    await a.dispatch(chat, start)
    ready = await a.wait_action(
        of_type(chat, "chat/toolCallReady", turnId=start["turnId"]), timeout=60
    )
    call_id = ready["action"]["toolCallId"]
    assert ready["action"]["confirmed"] == "not-needed"
    assert json.loads(ready["action"]["toolInput"]) == {"path": "notes.md"}
    # One row, the agent's own call, said as the client's with the tool's own name.
    [call] = calls(a, chat)
    assert call["toolCallId"] == call_id
    assert call["toolName"] == "openFile"
    assert call["contributor"] == {"kind": "client", "clientId": a.client_id}
    needed = await b.wait_action(of_type(uri, "session/inputNeededSet"), timeout=10)
    assert needed["action"]["request"]["kind"] == "toolClientExecution"
    assert needed["action"]["request"]["clientId"] == a.client_id

    result = {
        "success": True,
        "pastTenseMessage": "Opened notes.md",
        "content": [{"type": "text", "text": "the notes say 42"}],
    }
    complete = {
        "type": "chat/toolCallComplete",
        "turnId": start["turnId"],
        "toolCallId": call_id,
        "result": result,
    }
    forged = {**complete, "result": {**result, "content": [{"type": "text", "text": "forged"}]}}
    refusal = await b.dispatch_and_wait(chat, forged)
    assert refusal["rejectionReason"] == (
        "chat/toolCallComplete: only the client a call names as its contributor may send it"
    )
    assert "rejectionReason" not in await a.dispatch_and_wait(chat, complete)
    end = await a.wait_action(ended(chat, start["turnId"]), timeout=60)
    assert end["action"]["type"] == "chat/turnComplete"
    # The agent was answered with a's result, through the MCP server it was handed.
    assert reply(a, chat) == "clienttool: the notes say 42"
    for client in (a, b):
        await client.assert_conforms(chat)
        await client.assert_conforms(uri)
    assert calls(a, chat)[0]["status"] == "completed"
    completions = [
        e
        for e in a.actions
        if of_type(chat, "chat/toolCallComplete", toolCallId=call_id)(e)
        and "rejectionReason" not in e
    ]
    # The client's completion is the only one: what the agent said of the call is not said.
    assert [e["origin"]["clientId"] for e in completions] == [a.client_id]


async def test_a_client_that_leaves_mid_call_fails_it_and_the_agent_is_told(
    server, connect, workdir
):
    a, b, uri, chat = await two_providers(server, connect, workdir, provider="fake")
    start = turn(f"clienttool {listed(a)} {{}}")
    await b.dispatch(chat, start)
    needed = await b.wait_action(of_type(uri, "session/inputNeededSet"), timeout=60)
    call_id = needed["action"]["request"]["toolCall"]["toolCallId"]
    await a.close()
    await b.wait_action(
        of_type(uri, "session/activeClientRemoved", clientId=a.client_id), timeout=10
    )
    failed = await b.wait_action(of_type(chat, "chat/toolCallComplete", toolCallId=call_id))
    assert "origin" not in failed
    assert failed["action"]["result"]["error"] == {"message": CLIENT_LEFT}
    end = await b.wait_action(ended(chat, start["turnId"]), timeout=60)
    assert end["action"]["type"] == "chat/turnComplete"
    assert reply(b, chat) == f"clienttool error: {CLIENT_LEFT}"
    await b.assert_conforms(chat)
    await b.assert_conforms(uri)
    # The set changed: at the next send the agent's session is loaded with b's tools alone.
    start = turn(f"clienttool {listed(a)} {{}}")
    await b.dispatch(chat, start)
    await b.wait_action(ended(chat, start["turnId"]), timeout=60)
    assert reply(b, chat).startswith("clienttool error: No client of this session provides")
