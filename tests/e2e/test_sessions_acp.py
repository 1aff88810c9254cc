"""Sessions with an Agent Client Protocol agent: the small ACP agent under tests/agents, run as
a real subprocess by the server, end to end over the socket."""

from __future__ import annotations

import base64
import json
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from tests.e2e.test_sessions import (
    ended,
    fork_at,
    message,
    new_session,
    run_turn,
    start_streaming,
    turn,
)
from tests.support.client import Client
from tests.support.server import REPO, ServerProcess

AGENT = REPO / "tests" / "agents" / "fake_acp_agent.py"
#: A file attached is read for the agent up to this many bytes; a larger one is left as sent.
FETCH_LIMIT = 1024


@pytest.fixture(scope="module")
def workdir():
    with tempfile.TemporaryDirectory(prefix="ahpd-acp-work-") as path:
        yield Path(path)


@pytest.fixture(scope="module")
def server(workdir):
    config = workdir.parent / f"acp-agents-{uuid.uuid4().hex}.json"
    config.write_text(
        json.dumps(
            {
                "agents": [
                    {
                        "provider": "fake",
                        "kind": "acp",
                        "displayName": "Fake ACP agent",
                        "command": sys.executable,
                        "args": [str(AGENT)],
                        "promptTimeoutSeconds": 60,
                    },
                ]
            }
        )
    )
    process = ServerProcess(
        env_extra={
            "AHPD_CONFIG": str(config),
            "AHPD_ATTACHMENT_FETCH_LIMIT_BYTES": str(FETCH_LIMIT),
        }
    ).start()
    yield process
    process.close()
    config.unlink()


async def acp_session(client: Client, workdir: Path) -> tuple[str, str]:
    return await new_session(client, workdir, provider="fake")


def last_reply(client: Client, chat: str) -> str:
    """The markdown text of the chat's last turn, as the client's tracked state holds it."""
    parts = client.tracked[chat][0]["turns"][-1]["responseParts"]
    return "".join(p["content"] for p in parts if p["kind"] == "markdown")


async def heard(client: Client, chat: str) -> list[list[str]]:
    """Every prompt the chat's agent session received, as its text blocks (the fake's `heard`)."""
    end = await run_turn(client, chat, "heard")
    assert end["action"]["type"] == "chat/turnComplete"
    prompts: list[list[str]] = json.loads(last_reply(client, chat).removeprefix("heard: "))
    return prompts


# First in the module: the agent has not run yet, so it has reported no models.
async def test_the_agents_models_are_said_once_it_reports_them(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    root = client.tracked["ahp-root://"][0]
    assert root["agents"][0]["models"] == []  # nothing claimed before the agent says it
    _, chat = await acp_session(client, workdir)
    await run_turn(client, chat, "hello")
    changed = await client.wait_action(lambda a: a["action"]["type"] == "root/agentsChanged")
    [agent] = changed["action"]["agents"]
    assert agent["provider"] == "fake" and agent["models"]
    assert client.tracked["ahp-root://"][0]["agents"] == changed["action"]["agents"]
    late = await connect(server.url)
    snapshot = (await late.initialize())["snapshots"][0]["state"]
    assert snapshot["agents"][0]["models"] == agent["models"]


async def test_a_turn_streams_thinking_and_text_from_the_agent(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    uri, chat = await acp_session(client, workdir)
    end = await run_turn(client, chat, "hello agent")
    assert end["action"]["type"] == "chat/turnComplete"
    await client.assert_conforms(chat)
    await client.assert_conforms(uri)
    [last] = client.tracked[chat][0]["turns"][-1:]
    kinds = [p["kind"] for p in last["responseParts"]]
    assert kinds[0] == "reasoning"
    text = "".join(p["content"] for p in last["responseParts"] if p["kind"] == "markdown")
    assert text == "echo: hello agent"


async def test_the_agent_asks_and_a_person_approves_or_refuses(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    _, chat = await acp_session(client, workdir)
    for approved, name in ((True, "acp-yes.txt"), (False, "acp-no.txt")):
        action = turn(f"write {name} written by the agent")
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
        pick = next(o for o in options if o["kind"] == ("approve" if approved else "deny"))
        answer = {
            "type": "chat/toolCallConfirmed",
            "turnId": turn_id,
            "toolCallId": ready["action"]["toolCallId"],
            "approved": approved,
            "selectedOptionId": pick["id"],
        }
        answer.update({"confirmed": "user-action"} if approved else {"reason": "denied"})
        await client.dispatch_and_wait(chat, answer)
        await client.wait_action(ended(chat, turn_id), timeout=30)
        assert (workdir / name).exists() is approved
    await client.assert_conforms(chat)


async def test_a_read_outside_the_working_directory_is_refused_to_the_agent(
    server, connect, workdir
):
    client = await connect(server.url)
    await client.initialize()
    _, chat = await acp_session(client, workdir)
    end = await run_turn(client, chat, "read ../../etc/passwd")
    await client.assert_conforms(chat)
    calls = [
        p["toolCall"]
        for p in client.tracked[chat][0]["turns"][-1]["responseParts"]
        if p["kind"] == "toolCall"
    ]
    assert calls and calls[0]["status"] == "completed"
    assert calls[0]["success"] is False
    assert end["action"]["type"] == "chat/turnComplete"


async def test_a_stop_cancels_the_agents_turn(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    _, chat = await acp_session(client, workdir)
    action = await start_streaming(client, chat, "slow")
    await client.dispatch_and_wait(
        chat, {"type": "chat/turnCancelled", "turnId": action["turnId"], "duration": 5}
    )
    # The next turn runs once the agent has let the stopped one go.
    assert (await run_turn(client, chat, "after the stop"))["action"]["type"] == "chat/turnComplete"
    await client.assert_conforms(chat)


async def test_a_crash_ends_the_turn_in_error_and_the_next_turn_starts_the_agent_again(
    server, connect, workdir
):
    client = await connect(server.url)
    await client.initialize()
    _, chat = await acp_session(client, workdir)
    crashed = await run_turn(client, chat, "crash")
    assert crashed["action"]["type"] == "chat/error"
    assert crashed["action"]["duration"] >= 0
    again = await run_turn(client, chat, "still there?")
    assert again["action"]["type"] == "chat/turnComplete"
    await client.assert_conforms(chat)


async def test_a_restart_resumes_the_conversation_with_session_load(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    uri, chat = await acp_session(client, workdir)
    await run_turn(client, chat, "remember pineapple")
    await client.close()
    server.restart()
    again = await Client.open(server.url)
    try:
        await again.initialize()
        state = (await again.request("subscribe", {"channel": chat}))["snapshot"]["state"]
        assert state["turns"][0]["message"]["text"] == "remember pineapple"
        await again.request("subscribe", {"channel": uri})
        await run_turn(again, chat, "recall")
        await again.assert_conforms(chat)
        assert "remember pineapple" in last_reply(again, chat)
    finally:
        await again.close()
        again.assert_schema_clean()


async def test_a_turn_running_when_the_server_died_reads_back_ended_in_error(
    server, connect, workdir
):
    client = await connect(server.url)
    await client.initialize()
    _, chat = await acp_session(client, workdir)
    action = turn("slow")
    await client.dispatch(chat, action)
    # Enough of the turn has run for the host to have written that it is running.
    await client.wait_for(
        lambda: (
            len(
                [
                    e
                    for e in client.actions
                    if e["channel"] == chat and e["action"]["type"] == "chat/delta"
                ]
            )
            >= 10
        ),
        timeout=30,
    )
    await client.close()
    server.kill()
    server.start()
    again = await Client.open(server.url)
    try:
        await again.initialize()
        state = (await again.request("subscribe", {"channel": chat}))["snapshot"]["state"]
        assert "activeTurn" not in state
        last = state["turns"][-1]
        assert last["id"] == action["turnId"]
        assert last["state"] == "error"
        assert last["responseParts"][-1]["kind"] == "error"
        assert (await run_turn(again, chat, "after the crash"))["action"]["type"] == (
            "chat/turnComplete"
        )
    finally:
        await again.close()
        again.assert_schema_clean()


async def test_a_queued_message_starts_when_the_running_turn_completes(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    _, chat = await acp_session(client, workdir)
    action = turn("write queued-wait.txt x")
    await client.dispatch(chat, action)
    ready = await client.wait_action(
        lambda e: e["channel"] == chat and e["action"]["type"] == "chat/toolCallReady",
        timeout=30,
    )
    await client.dispatch_and_wait(
        chat,
        {
            "type": "chat/pendingMessageSet",
            "kind": "queued",
            "id": "next",
            "message": message("queued behind"),
        },
    )
    await client.dispatch_and_wait(
        chat,
        {
            "type": "chat/toolCallConfirmed",
            "turnId": action["turnId"],
            "toolCallId": ready["action"]["toolCallId"],
            "approved": True,
            "confirmed": "user-action",
        },
    )
    started = await client.wait_action(
        lambda e: (
            e["channel"] == chat
            and e["action"]["type"] == "chat/turnStarted"
            and e["action"].get("queuedMessageId") == "next"
        ),
        timeout=30,
    )
    await client.wait_action(ended(chat, started["action"]["turnId"]), timeout=30)
    await client.assert_conforms(chat)


async def test_a_session_whose_agent_cannot_start_is_said_failed(connect, workdir):
    config = workdir.parent / f"broken-{uuid.uuid4().hex}.json"
    config.write_text(
        json.dumps(
            {
                "agents": [
                    {
                        "provider": "broken",
                        "kind": "acp",
                        "displayName": "Broken",
                        "command": "/nonexistent/agent-binary",
                    }
                ]
            }
        )
    )
    process = ServerProcess(env_extra={"AHPD_CONFIG": str(config)}).start()
    try:
        client = await connect(process.url)
        await client.initialize()
        uri, chat = await new_session(client, workdir, provider="broken")
        end = await run_turn(client, chat, "hello")
        assert end["action"]["type"] == "chat/error"
        failed = await client.wait_action(
            lambda e: e["channel"] == uri and e["action"]["type"] == "session/creationFailed"
        )
        assert failed["action"]["error"]["message"]
        await client.assert_conforms(uri)
        assert client.tracked[uri][0]["lifecycle"] == "failed"
        listed = (await client.request("listSessions", {"channel": "ahp-root://"}))["items"]
        assert uri in [s["resource"] for s in listed]
    finally:
        process.close()
        config.unlink()


async def test_a_turn_sent_right_after_a_stop_keeps_both_turns_after_a_restart(
    server, connect, workdir
):
    client = await connect(server.url)
    await client.initialize()
    _, chat = await acp_session(client, workdir)
    action = await start_streaming(client, chat, "slow")
    await client.dispatch_and_wait(
        chat, {"type": "chat/turnCancelled", "turnId": action["turnId"], "duration": 5}
    )
    # Said at once, while the agent still lets the stopped turn go.
    assert (await run_turn(client, chat, "right after"))["action"]["type"] == "chat/turnComplete"
    await client.close()
    server.restart()
    again = await Client.open(server.url)
    try:
        await again.initialize()
        state = (await again.request("subscribe", {"channel": chat}))["snapshot"]["state"]
        assert [t["message"]["text"] for t in state["turns"]][-2:] == ["slow", "right after"]
        assert [t["state"] for t in state["turns"]][-2:] == ["cancelled", "complete"]
    finally:
        await again.close()
        again.assert_schema_clean()


async def test_a_fork_gives_its_new_agent_session_the_turns_it_carries_through_once(
    server, connect, workdir
):
    client = await connect(server.url)
    await client.initialize()
    uri, default = await acp_session(client, workdir)
    first = await run_turn(client, default, "remember apples")
    await run_turn(client, default, "remember pears")
    fork = await fork_at(client, uri, default, first["action"]["turnId"])
    await client.request("subscribe", {"channel": fork})
    await heard(client, fork)
    [[seed, message], again] = await heard(client, fork)
    assert (message, again) == ("heard", ["heard"])
    assert "<user>\nremember apples\n</user>" in seed
    assert "<assistant>\necho: remember apples\n</assistant>" in seed
    assert "pears" not in seed
    await client.assert_conforms(fork)


async def test_a_truncation_gives_the_agent_the_kept_turns_and_a_restart_resumes_there(
    server, connect, workdir
):
    client = await connect(server.url)
    await client.initialize()
    _, chat = await acp_session(client, workdir)
    first = await run_turn(client, chat, "keep this one")
    await run_turn(client, chat, "drop this one")
    await client.dispatch_and_wait(
        chat, {"type": "chat/truncated", "turnId": first["action"]["turnId"]}
    )
    [[seed, message]] = await heard(client, chat)
    assert message == "heard"
    assert "keep this one" in seed and "drop this one" not in seed
    await client.assert_conforms(chat)
    await client.close()
    server.restart()
    again = await Client.open(server.url)
    try:
        await again.initialize()
        await again.request("subscribe", {"channel": chat})
        # The rewound conversation is the one resumed, and it is not given the turns again.
        assert await heard(again, chat) == [[seed, "heard"], ["heard"]]
    finally:
        await again.close()
        again.assert_schema_clean()


async def test_attachments_reach_the_agent_as_its_prompt_capabilities_allow(
    server, connect, workdir
):
    client = await connect(server.url)
    await client.initialize()
    _, chat = await acp_session(client, workdir)
    (workdir / "notes.txt").write_text("the notes")
    png = bytes([0x89, 0x50, 0x4E, 0x47, 0, 1, 2, 3])
    # The sender's own client holds one file (asked of it); another's is not asked at all.
    own = f"vscode-agent-client://{client.client_id}/file/-/home/me/y.txt"
    elsewhere = "vscode-agent-client://someone-else/file/-/home/me/z.txt"

    async def serves(method: str, params: dict) -> dict:
        assert (method, params["uri"]) == ("resourceRead", "file:///home/me/y.txt")
        return {"data": base64.b64encode(b"from the laptop").decode(), "encoding": "base64"}

    client.serves = serves
    action = turn("heard")
    action["message"]["attachments"] = [
        {"type": "resource", "uri": (workdir / "notes.txt").as_uri(), "label": "notes.txt"},
        {
            "type": "embeddedResource",
            "label": "dot.png",
            "data": base64.b64encode(png).decode(),
            "contentType": "image/png",
        },
        {"type": "resource", "uri": own, "label": "y.txt"},
        {"type": "resource", "uri": elsewhere, "label": "z.txt"},
        {"type": "simple", "label": "selection", "modelRepresentation": "selected text"},
    ]
    await client.dispatch_and_wait(chat, action)
    await client.wait_action(ended(chat, action["turnId"]), timeout=30)
    prompts = json.loads(last_reply(client, chat).removeprefix("heard: "))
    assert prompts[-1] == [
        f"[resource {(workdir / 'notes.txt').as_uri()}] the notes",
        "[image image/png 8 bytes]",
        f"[resource {own}] from the laptop",
        f"[link {elsewhere}]",
        '<attachment name="selection">\nselected text\n</attachment>',
        "heard",
    ]


async def test_an_attachment_over_the_fetch_limit_is_left_as_sent_and_kept_past_a_restart(
    server, connect, workdir
):
    client = await connect(server.url)
    await client.initialize()
    _, chat = await acp_session(client, workdir)
    big = workdir / "big.txt"
    big.write_text("x" * (FETCH_LIMIT + 1))
    # The sender's client says one is too big (never asked), and answers another too big.
    hinted = f"vscode-agent-client://{client.client_id}/file/-/home/me/huge.bin"
    grown = f"vscode-agent-client://{client.client_id}/file/-/home/me/grown.txt"

    async def serves(method: str, params: dict) -> dict:
        return {"data": "y" * (FETCH_LIMIT + 1), "encoding": "utf-8"}

    client.serves = serves
    action = turn("heard")
    attachments = [
        {"type": "resource", "uri": big.as_uri(), "label": "big.txt"},
        {"type": "resource", "uri": hinted, "label": "huge.bin", "sizeHint": FETCH_LIMIT + 1},
        {"type": "resource", "uri": grown, "label": "grown.txt"},
    ]
    action["message"]["attachments"] = attachments
    await client.dispatch_and_wait(chat, action)
    await client.wait_action(ended(chat, action["turnId"]), timeout=30)
    prompts = json.loads(last_reply(client, chat).removeprefix("heard: "))
    assert prompts[-1] == [f"[link {big.as_uri()}]", f"[link {hinted}]", f"[link {grown}]", "heard"]
    assert client.asked == [
        (
            "resourceRead",
            {"channel": "ahp-root://", "uri": "file:///home/me/grown.txt", "encoding": "base64"},
        )
    ]
    await client.close()

    # The stored turn keeps its message's attachments as sent: a restart shows them.
    server.restart()
    again = await Client.open(server.url)
    try:
        await again.initialize()
        state = (await again.request("subscribe", {"channel": chat}))["snapshot"]["state"]
        [kept] = [t for t in state["turns"] if t["id"] == action["turnId"]]
        assert kept["message"]["attachments"] == attachments
    finally:
        await again.close()
        again.assert_schema_clean()
