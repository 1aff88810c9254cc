"""Sessions on the claude backend end to end: a started server runs the real Claude Code CLI
(claude-agent-sdk's bundled one) against a local fake Anthropic Messages API, and a client
drives it over a real socket."""

from __future__ import annotations

import json
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_sessions import ended, new_session, run_turn, start_streaming, turn
from tests.e2e.test_turn_resume import resumed
from tests.support.agents import server_with_config
from tests.support.client import Client
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.server import ServerProcess


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeAnthropic]:
    server = FakeAnthropic()
    yield server
    server.close()


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ahpd-claude-work-") as path:
        yield Path(path)


@pytest.fixture(scope="module")
def server(fake: FakeAnthropic, workdir: Path) -> Iterator[ServerProcess]:
    entry = {
        "provider": "claude",
        "kind": "claude",
        "displayName": "Claude",
        "env": {
            "ANTHROPIC_BASE_URL": fake.url,
            "ANTHROPIC_API_KEY": "sk-ant-fake",
            # Root outside a sandbox too (AHPD_SANDBOX may be off where bwrap cannot start).
            "IS_SANDBOX": "1",
        },
        "promptTimeoutSeconds": 60,
    }
    with server_with_config({"agents": [entry]}) as process:
        yield process


def reply(client: Client, chat: str) -> tuple[list[str], str]:
    """The kinds of the chat's last turn's parts, and its markdown text."""
    parts = client.tracked[chat][0]["turns"][-1]["responseParts"]
    text = "".join(p["content"] for p in parts if p["kind"] == "markdown")
    return [p["kind"] for p in parts], text


async def test_a_turn_streams_claudes_thinking_and_text_and_its_usage(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    [agent] = client.tracked["ahp-root://"][0]["agents"]
    assert agent["provider"] == "claude"
    uri, chat = await new_session(client, workdir, provider="claude")
    end = await run_turn(client, chat, "think pears")
    assert end["action"]["type"] == "chat/turnComplete", end
    kinds, text = reply(client, chat)
    assert kinds[0] == "reasoning" and text == "echo: pears"
    usage = client.tracked[chat][0]["turns"][-1].get("usage") or {}
    assert usage.get("inputTokens") and usage.get("outputTokens")
    await client.assert_conforms(chat)
    await client.assert_conforms(uri)


async def test_claude_asks_and_a_person_approves_then_skips(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    _, chat = await new_session(client, workdir, provider="claude")
    for approved, name in ((True, "claude-yes.txt"), (False, "claude-no.txt")):
        action = turn(f"write {workdir / name} written by claude")
        turn_id = action["turnId"]
        await client.dispatch(chat, action)
        ready = await client.wait_action(
            lambda e: (
                e["channel"] == chat
                and e["action"]["type"] == "chat/toolCallReady"
                and e["action"]["turnId"] == turn_id  # noqa: B023
                and "confirmed" not in e["action"]
            ),
            timeout=30,
        )
        options = ready["action"]["options"]
        assert [o["label"] for o in options] == ["Allow in this Session", "Allow Once", "Skip"]
        pick = next(o for o in options if o["id"] == ("allowOnce" if approved else "skip"))
        answer = {
            "type": "chat/toolCallConfirmed",
            "turnId": turn_id,
            "toolCallId": ready["action"]["toolCallId"],
            "approved": approved,
            "selectedOptionId": pick["id"],
        }
        answer.update({"confirmed": "user-action"} if approved else {"reason": "denied"})
        await client.dispatch_and_wait(chat, answer)
        end = await client.wait_action(ended(chat, turn_id), timeout=30)
        assert end["action"]["type"] == "chat/turnComplete"
        assert (workdir / name).exists() is approved
    await client.assert_conforms(chat)


async def test_a_stop_interrupts_claude_and_the_chat_goes_on(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    _, chat = await new_session(client, workdir, provider="claude")
    action = await start_streaming(client, chat, "hold")
    await client.dispatch_and_wait(
        chat, {"type": "chat/turnCancelled", "turnId": action["turnId"], "duration": 5}
    )
    after = await run_turn(client, chat, "after the stop")
    assert after["action"]["type"] == "chat/turnComplete"
    assert reply(client, chat)[1] == "echo: after the stop"
    await client.assert_conforms(chat)


async def test_claudes_own_question_is_answered_over_the_socket_and_reaches_the_model(
    server, connect, workdir, fake
):
    client = await connect(server.url)
    await client.initialize()
    uri, chat = await new_session(client, workdir, provider="claude")
    start = turn("ask Which colour, over the socket?")
    await client.dispatch(chat, start)
    seen = await client.wait_action(
        lambda e: e["channel"] == chat and e["action"]["type"] == "chat/inputRequested",
        timeout=30,
    )
    request = seen["action"]["request"]
    assert request["_meta"] == {"purpose": "askUser"}
    [question] = request["questions"]
    assert [o["id"] for o in question["options"]] == ["Red", "Blue"]
    needed = await client.wait_action(
        lambda e: e["channel"] == uri and e["action"]["type"] == "session/inputNeededSet",
        timeout=30,
    )
    assert needed["action"]["request"]["request"]["id"] == request["id"]
    answer = {"state": "submitted", "value": {"kind": "selected", "value": "Red"}}
    await client.dispatch_and_wait(
        chat,
        {
            "type": "chat/inputCompleted",
            "requestId": request["id"],
            "response": "accept",
            "answers": {question["id"]: answer},
        },
    )
    end = await client.wait_action(ended(chat, start["turnId"]), timeout=30)
    assert end["action"]["type"] == "chat/turnComplete"
    told = json.dumps(fake.turns[-1]["messages"][-1])
    assert '\\"Which colour, over the socket?\\"=\\"Red\\"' in told
    await client.assert_conforms(chat)
    await client.assert_conforms(uri)


OPEN_FILE = {
    "name": "openFile",
    "title": "Open File",
    "description": "Open a file in the editor",
    "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
}


async def test_a_clients_tool_called_by_claude_is_run_by_that_client(
    server, connect, workdir, fake
):
    client = await connect(server.url)
    await client.initialize()
    uri = f"ahp-session:/{uuid.uuid4()}"
    await client.request(
        "createSession",
        {
            "channel": uri,
            "provider": "claude",
            "workingDirectories": [workdir.as_uri()],
            "activeClient": {"clientId": client.client_id, "tools": [OPEN_FILE]},
        },
    )
    snapshot = await client.request("subscribe", {"channel": uri})
    chat = snapshot["snapshot"]["state"]["defaultChat"]
    await client.request("subscribe", {"channel": chat})
    start = turn(f'call mcp__client__{client.client_id}__openFile {{"path": "notes.md"}}')
    await client.dispatch(chat, start)
    ready = await client.wait_action(
        lambda e: (
            e["channel"] == chat
            and e["action"]["type"] == "chat/toolCallReady"
            and e["action"]["turnId"] == start["turnId"]
        ),
        timeout=30,
    )
    assert ready["action"]["confirmed"] == "not-needed"
    call_id = ready["action"]["toolCallId"]
    assert json.loads(ready["action"]["toolInput"]) == {"path": "notes.md"}
    active = client.tracked[chat][0]["activeTurn"]
    [call] = [p["toolCall"] for p in active["responseParts"] if p["kind"] == "toolCall"]
    assert call["contributor"] == {"kind": "client", "clientId": client.client_id}
    assert call["displayName"] == "Open File"
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
    assert "rejectionReason" not in await client.dispatch_and_wait(chat, complete)
    end = await client.wait_action(ended(chat, start["turnId"]), timeout=30)
    assert end["action"]["type"] == "chat/turnComplete"
    assert "the notes say 42" in json.dumps(fake.turns[-1]["messages"][-1])
    await client.assert_conforms(chat)
    await client.assert_conforms(uri)


async def test_claudes_background_shell_is_the_chats_background_work_until_it_ends(
    server, connect, workdir
):
    client = await connect(server.url)
    await client.initialize()
    uri, chat = await new_session(client, workdir, provider="claude")
    command = "sleep 1; echo done in the background"
    start = turn(f"background {command}")
    await client.dispatch(chat, start)
    # Bash asks first; allowed, it starts in the background.
    ready = await client.wait_action(
        lambda e: e["channel"] == chat and e["action"]["type"] == "chat/toolCallReady",
        timeout=30,
    )
    call_id = ready["action"]["toolCallId"]
    await client.dispatch_and_wait(
        chat,
        {
            "type": "chat/toolCallConfirmed",
            "turnId": start["turnId"],
            "toolCallId": call_id,
            "approved": True,
            "confirmed": "user-action",
            "selectedOptionId": "allowOnce",
        },
    )
    working = await client.wait_action(
        lambda e: e["channel"] == chat and e["action"]["type"] == "chat/backgroundWorkSet",
        timeout=30,
    )
    work = working["action"]["work"]
    assert work["id"].startswith("shell:") and work["kind"] == "shell"
    assert work["command"] == command and work["label"] == "Run it" and work["startedAt"]
    thinking = await client.wait_action(
        lambda e: e["channel"] == uri and e["action"]["type"] == "session/activityChanged",
        timeout=30,
    )
    assert thinking["action"]["activity"] == "Thinking"
    await client.wait_action(ended(chat, start["turnId"]), timeout=30)
    removed = await client.wait_action(
        lambda e: e["channel"] == chat and e["action"]["type"] == "chat/backgroundWorkRemoved",
        timeout=30,
    )
    assert removed["action"]["id"] == work["id"]
    assert not client.tracked[chat][0].get("backgroundWork")
    await client.assert_conforms(chat)
    await client.assert_conforms(uri)


async def test_claudes_subagent_is_background_work_of_the_chat_it_works_for(
    server, connect, workdir
):
    client = await connect(server.url)
    await client.initialize()
    uri, chat = await new_session(client, workdir, provider="claude")
    start = turn("delegate count the plums")
    await client.dispatch(chat, start)
    working = await client.wait_action(
        lambda e: e["channel"] == chat and e["action"]["type"] == "chat/backgroundWorkSet",
        timeout=30,
    )
    work = working["action"]["work"]
    assert work["id"].startswith("subagent:") and work["kind"] == "subagent"
    assert work["chat"] == chat and work["label"] == "Delegate it"
    end = await client.wait_action(ended(chat, start["turnId"]), timeout=30)
    assert end["action"]["type"] == "chat/turnComplete"
    # The turn waited for the subagent and for Claude's answer to it.
    assert any(
        e["channel"] == chat
        and e["action"]["type"] == "chat/backgroundWorkRemoved"
        and e["action"]["id"] == work["id"]
        and e["serverSeq"] < end["serverSeq"]
        for e in client.actions
    )
    await client.assert_conforms(chat)
    await client.assert_conforms(uri)


async def test_a_claude_turn_whose_model_call_failed_is_resumed_over_the_socket(
    server, connect, workdir, fake
):
    client = await connect(server.url)
    await client.initialize()
    _, chat = await new_session(client, workdir, provider="claude")
    marker = f"flaky {uuid.uuid4().hex}"
    failed = await run_turn(client, chat, marker)
    assert failed["action"]["type"] == "chat/error"
    assert failed["action"]["part"]["resumable"] is True
    turn_id = failed["action"]["turnId"]
    _, end = await resumed(client, chat, turn_id)
    assert end["action"]["type"] == "chat/turnComplete"
    finished = client.tracked[chat][0]["turns"][-1]
    assert finished["id"] == turn_id and finished["state"] == "complete"
    assert reply(client, chat)[1] == f"echo: {marker}"
    # Claude was asked with the prompt once: the failed one was cut from the conversation.
    [asked] = [
        m for m in fake.turns[-1]["messages"] if m["role"] == "user" and marker in json.dumps(m)
    ]
    await client.assert_conforms(chat)
