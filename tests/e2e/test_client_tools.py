"""Tools a client provides (issue 26.5), end to end: a client's activeClients[].tools offered to
the host's agent loop against the local chat-completions server, the call run by the client
that provides the tool over a real socket, and what is refused (another client streaming into
or completing it), what a result confirmation does, and a client that leaves mid-call."""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hosts.engine.sessions.client_tool_calls import CLIENT_LEFT, RESULT_DENIED
from tests.e2e.test_questions import of_type, tool_messages
from tests.e2e.test_sessions import ended, turn
from tests.support.agents import local_agent, server_with_config
from tests.support.client import Client
from tests.support.fake_openai import FakeOpenAi
from tests.support.server import ServerProcess

PRESENCE_GRACE_MS = 300

OPEN_FILE = {
    "name": "openFile",
    "title": "Open file",
    "description": "Open a file in the editor and return its text.",
    "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
}


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ahpd-client-tools-") as path:
        yield Path(path)


@pytest.fixture(scope="module")
def model() -> Iterator[FakeOpenAi]:
    fake = FakeOpenAi()
    yield fake
    fake.close()


@pytest.fixture(scope="module")
def server(model: FakeOpenAi, workdir: Path) -> Iterator[ServerProcess]:
    agents = [local_agent(model.url, display_name="Local model", model="fake-coder")]
    with server_with_config(
        {"agents": agents}, AHPD_PRESENCE_GRACE_MS=str(PRESENCE_GRACE_MS)
    ) as process:
        yield process


async def two_providers(
    server: ServerProcess, connect: Any, workdir: Path, provider: str = "local"
) -> tuple:
    """`a` made a session of `provider`'s providing openFile; `b` joined it providing an
    openFile of its own."""
    a = await connect(server.url)
    await a.initialize()
    uri = f"ahp-session:/{uuid.uuid4()}"
    await a.request(
        "createSession",
        {
            "channel": uri,
            "provider": provider,
            "workingDirectories": [workdir.as_uri()],
            "activeClient": {"clientId": a.client_id, "tools": [OPEN_FILE]},
        },
    )
    chat = (await a.request("subscribe", {"channel": uri}))["snapshot"]["state"]["defaultChat"]
    await a.request("subscribe", {"channel": chat})
    b = await connect(server.url)
    await b.initialize()
    await b.request("subscribe", {"channel": uri})
    await b.request("subscribe", {"channel": chat})
    joined = {
        "type": "session/activeClientSet",
        "activeClient": {"clientId": b.client_id, "displayName": "B", "tools": [OPEN_FILE]},
    }
    assert "rejectionReason" not in await b.dispatch_and_wait(uri, joined)
    return a, b, uri, chat


def function(client: Client) -> str:
    """The function a client's openFile is offered to the model as."""
    return f"{client.client_id}__openFile"


async def call_started(client: Client, chat: str, start: dict[str, Any]) -> dict[str, Any]:
    """`start` dispatched by `client`; the client tool call's running state once ready."""
    await client.dispatch(chat, start)
    ready = await client.wait_action(
        of_type(chat, "chat/toolCallReady", turnId=start["turnId"]), timeout=30
    )
    return ready["action"]


def calls(client: Client, chat: str) -> list[dict[str, Any]]:
    state = client.tracked[chat][0]
    turn_ = state.get("activeTurn") or state["turns"][-1]
    return [p["toolCall"] for p in turn_["responseParts"] if p["kind"] == "toolCall"]


async def test_the_owning_client_runs_the_call_and_its_result_reaches_the_model(
    server, connect, workdir, model
):
    a, b, uri, chat = await two_providers(server, connect, workdir)
    start = turn(f'client {function(a)} {{"path": "notes.md"}}')
    ready = await call_started(a, chat, start)
    offered = [t["function"]["name"] for t in model.requests[-1]["tools"]]
    # Two clients' same-named tools, each offered under its own name.
    assert function(a) in offered and function(b) in offered
    call_id = ready["toolCallId"]
    assert ready["confirmed"] == "not-needed"
    [call] = calls(a, chat)
    assert call["toolName"] == "openFile"
    assert call["contributor"] == {"kind": "client", "clientId": a.client_id}
    entry_id = f"toolClientExecution:{chat}:{start['turnId']}:{call_id}"
    needed = await b.wait_action(of_type(uri, "session/inputNeededSet"))
    request = needed["action"]["request"]
    assert request["kind"] == "toolClientExecution" and request["id"] == entry_id
    assert request["clientId"] == a.client_id and request["turnId"] == start["turnId"]
    assert request["toolCall"]["status"] == "running"

    streamed = {
        "type": "chat/toolCallContentChanged",
        "turnId": start["turnId"],
        "toolCallId": call_id,
        "content": [{"type": "text", "text": "opening notes.md"}],
    }
    echo = await a.dispatch_and_wait(chat, streamed)
    assert "rejectionReason" not in echo
    seen = await b.wait_action(lambda e: e["serverSeq"] == echo["serverSeq"])
    assert seen["origin"]["clientId"] == a.client_id
    await b.assert_conforms(chat)
    assert calls(b, chat)[0]["content"] == streamed["content"]

    complete = {
        "type": "chat/toolCallComplete",
        "turnId": start["turnId"],
        "toolCallId": call_id,
        "result": {
            "success": True,
            "pastTenseMessage": "Opened notes.md",
            "content": [{"type": "text", "text": "the notes say 42"}],
        },
    }
    assert "rejectionReason" not in await a.dispatch_and_wait(chat, complete)
    await b.wait_action(of_type(uri, "session/inputNeededRemoved", id=entry_id))
    end = await a.wait_action(ended(chat, start["turnId"]), timeout=30)
    assert end["action"]["type"] == "chat/turnComplete"
    assert "the notes say 42" in tool_messages(model)
    # The completion is the client's: this host says none of its own for the call.
    completions = [
        e
        for e in a.actions
        if of_type(chat, "chat/toolCallComplete", toolCallId=call_id)(e)
        and "rejectionReason" not in e
    ]
    assert [e["origin"]["clientId"] for e in completions] == [a.client_id]
    for client in (a, b):
        await client.assert_conforms(chat)
        await client.assert_conforms(uri)
    assert calls(a, chat)[0]["status"] == "completed"


async def test_another_client_may_not_stream_into_or_complete_the_call(
    server, connect, workdir, model
):
    a, b, uri, chat = await two_providers(server, connect, workdir)
    start = turn(f'client {function(a)} {{"path": "secret.txt"}}')
    ready = await call_started(a, chat, start)
    call_id = ready["toolCallId"]
    forged = {
        "type": "chat/toolCallComplete",
        "turnId": start["turnId"],
        "toolCallId": call_id,
        "result": {
            "success": True,
            "pastTenseMessage": "Opened",
            "content": [{"type": "text", "text": "forged by b"}],
        },
    }
    streamed = {
        "type": "chat/toolCallContentChanged",
        "turnId": start["turnId"],
        "toolCallId": call_id,
        "content": [{"type": "text", "text": "forged by b"}],
    }
    for action in (forged, streamed):
        refusal = await b.dispatch_and_wait(chat, action)
        assert refusal["rejectionReason"] == (
            f"{action['type']}: only the client a call names as its contributor may send it"
        )
    # A third party, not in the session's activeClients at all, fares no better.
    c = await connect(server.url)
    await c.initialize()
    refusal = await c.dispatch_and_wait(chat, forged)
    assert "only the client a call names as its contributor" in refusal["rejectionReason"]
    # A completion naming a call the chat does not hold is said, and unblocks nothing.
    stray = {**forged, "toolCallId": "call_forged"}
    assert "rejectionReason" not in await b.dispatch_and_wait(chat, stray)
    # A malformed completion is refused naming the field, from the owner too.
    bad = {**forged, "result": {"success": "yes", "pastTenseMessage": "x"}}
    refusal = await a.dispatch_and_wait(chat, bad)
    assert refusal["rejectionReason"] == "chat/toolCallComplete: result.success must be a boolean"

    # Nothing of it moved the call, and every connection is still up.
    for client in (a, b):
        await client.assert_conforms(chat)
    assert calls(a, chat)[0]["status"] == "running"
    assert "content" not in calls(a, chat)[0]
    assert "items" in await b.request("listSessions", {"channel": "ahp-root://"})
    assert "items" in await c.request("listSessions", {"channel": "ahp-root://"})
    owned = {**forged, "result": {"success": True, "pastTenseMessage": "Opened", "content": []}}
    owned["result"]["content"] = [{"type": "text", "text": "from a"}]
    assert "rejectionReason" not in await a.dispatch_and_wait(chat, owned)
    await a.wait_action(ended(chat, start["turnId"]), timeout=30)
    assert "from a" in tool_messages(model)
    assert "forged by b" not in tool_messages(model)
    # Once the turn is over, the call is still a's alone to answer.
    refusal = await b.dispatch_and_wait(chat, forged)
    assert "only the client a call names" in refusal["rejectionReason"]


@pytest.mark.parametrize("approved", [True, False])
async def test_a_result_its_client_wants_confirmed_goes_on_once_a_person_says(
    server, connect, workdir, model, approved
):
    a, b, uri, chat = await two_providers(server, connect, workdir)
    marker = f"result {uuid.uuid4().hex[:8]}"
    start = turn(f'client {function(a)} {{"path": "review.md"}}')
    ready = await call_started(a, chat, start)
    call_id = ready["toolCallId"]
    complete = {
        "type": "chat/toolCallComplete",
        "turnId": start["turnId"],
        "toolCallId": call_id,
        "requiresResultConfirmation": True,
        "result": {
            "success": True,
            "pastTenseMessage": "Opened review.md",
            "content": [{"type": "text", "text": marker}],
        },
    }
    assert "rejectionReason" not in await a.dispatch_and_wait(chat, complete)
    confirmation_id = f"toolConfirmation:{chat}:{start['turnId']}:{call_id}"
    needed = await b.wait_action(of_type(uri, "session/inputNeededSet"), timeout=10)
    assert needed["action"]["request"]["kind"] in ("toolClientExecution", "toolConfirmation")
    await b.wait_action(
        lambda e: (
            e["channel"] == uri
            and e["action"]["type"] == "session/inputNeededSet"
            and e["action"]["request"]["id"] == confirmation_id
        )
    )
    await b.assert_conforms(chat)
    assert calls(b, chat)[0]["status"] == "pending-result-confirmation"
    confirm = {
        "type": "chat/toolCallResultConfirmed",
        "turnId": start["turnId"],
        "toolCallId": call_id,
        "approved": approved,
    }
    # A confirmation of a call that holds no result is refused in the reference's words.
    wrong = {**confirm, "toolCallId": "call_other"}
    refusal = await b.dispatch_and_wait(chat, wrong)
    assert (
        refusal["rejectionReason"] == "Tool call call_other has no result waiting for confirmation"
    )
    assert "rejectionReason" not in await b.dispatch_and_wait(chat, confirm)
    await a.wait_action(of_type(uri, "session/inputNeededRemoved", id=confirmation_id))
    end = await a.wait_action(ended(chat, start["turnId"]), timeout=30)
    assert end["action"]["type"] == "chat/turnComplete"
    told = tool_messages(model)
    if approved:
        assert marker in told
    else:
        assert f"Error: {RESULT_DENIED}" in told and marker not in told
    for client in (a, b):
        await client.assert_conforms(chat)
        await client.assert_conforms(uri)
    call = calls(a, chat)[0]
    assert call["status"] == ("completed" if approved else "cancelled")
    assert a.tracked[uri][0].get("inputNeeded", []) == []


async def test_a_client_that_leaves_mid_call_fails_it_and_the_turn_goes_on(
    server, connect, workdir, model
):
    a, b, uri, chat = await two_providers(server, connect, workdir)
    start = turn(f'client {function(a)} {{"path": "gone.md"}}')
    await a.dispatch(chat, start)
    needed = await b.wait_action(of_type(uri, "session/inputNeededSet"), timeout=30)
    call_id = needed["action"]["request"]["toolCall"]["toolCallId"]
    await a.close()
    # After its grace, the host takes it out and fails its call in its own words.
    await b.wait_action(
        of_type(uri, "session/activeClientRemoved", clientId=a.client_id), timeout=10
    )
    failed = await b.wait_action(of_type(chat, "chat/toolCallComplete", toolCallId=call_id))
    assert "origin" not in failed
    assert failed["action"]["result"]["success"] is False
    assert failed["action"]["result"]["error"] == {"message": CLIENT_LEFT}
    await b.wait_action(of_type(uri, "session/inputNeededRemoved"))
    end = await b.wait_action(ended(chat, start["turnId"]), timeout=30)
    assert end["action"]["type"] == "chat/turnComplete"
    assert f"Error: {CLIENT_LEFT}" in tool_messages(model)
    await b.assert_conforms(chat)
    await b.assert_conforms(uri)
    # The tools it provided are offered no more.
    start = turn("hello again")
    await b.dispatch(chat, start)
    await b.wait_action(ended(chat, start["turnId"]), timeout=30)
    offered = [t["function"]["name"] for t in model.requests[-1]["tools"]]
    assert function(a) not in offered and function(b) in offered


async def test_a_call_open_when_the_turn_is_stopped_is_taken_down(server, connect, workdir):
    a, b, uri, chat = await two_providers(server, connect, workdir)
    start = turn(f'client {function(b)} {{"path": "later.md"}}')
    await a.dispatch(chat, start)
    needed = await a.wait_action(of_type(uri, "session/inputNeededSet"), timeout=30)
    entry_id = needed["action"]["request"]["id"]
    assert needed["action"]["request"]["clientId"] == b.client_id
    stop = {"type": "chat/turnCancelled", "turnId": start["turnId"], "duration": 5}
    assert "rejectionReason" not in await a.dispatch_and_wait(chat, stop)
    await b.wait_action(of_type(uri, "session/inputNeededRemoved", id=entry_id))
    for client in (a, b):
        await client.assert_conforms(chat)
        await client.assert_conforms(uri)
    assert calls(a, chat)[0]["status"] == "cancelled"
    # Its client's late completion is said, reduces to nothing, and runs nothing.
    late = {
        "type": "chat/toolCallComplete",
        "turnId": start["turnId"],
        "toolCallId": needed["action"]["request"]["toolCall"]["toolCallId"],
        "result": {"success": True, "pastTenseMessage": "Opened"},
    }
    assert "rejectionReason" not in await b.dispatch_and_wait(chat, late)
    await a.assert_conforms(chat)


async def test_tools_announced_in_another_clients_name_are_not_offered(
    server, connect, workdir, model
):
    a, b, uri, chat = await two_providers(server, connect, workdir)
    # c writes an entry under b's id: held and shown as the protocol keys it, but the agent is
    # not handed a tool b would be asked to run without ever having offered it.
    c = await connect(server.url)
    await c.initialize()
    spoof = {
        "type": "session/activeClientSet",
        "activeClient": {
            "clientId": b.client_id,
            "tools": [{"name": "runInTerminal", "description": "Run anything the model says"}],
        },
    }
    assert "rejectionReason" not in await c.dispatch_and_wait(uri, spoof)
    start = turn("hello")
    await a.dispatch(chat, start)
    await a.wait_action(ended(chat, start["turnId"]), timeout=30)
    offered = [t["function"]["name"] for t in model.requests[-1]["tools"]]
    assert f"{b.client_id}__runInTerminal" not in offered
    assert function(a) in offered
    # b announcing itself again is its own announcement: its tools are offered again.
    again = {
        "type": "session/activeClientSet",
        "activeClient": {"clientId": b.client_id, "tools": [OPEN_FILE]},
    }
    assert "rejectionReason" not in await b.dispatch_and_wait(uri, again)
    start = turn("hello again")
    await a.dispatch(chat, start)
    await a.wait_action(ended(chat, start["turnId"]), timeout=30)
    offered = [t["function"]["name"] for t in model.requests[-1]["tools"]]
    assert function(b) in offered
