"""chat/turnResume end to end: a turn whose model call failed is run again on its own id, over a
real socket, with the openai loop against a local model that fails once (tests/support/
fake_openai.py's `flaky`) and the small ACP agent, which resumes nothing."""

from __future__ import annotations

import json
import subprocess
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_grants import cli
from tests.e2e.test_sessions import ended, message, new_session, run_turn, turn
from tests.support.agents import acp_agent, local_agent, server_with_config
from tests.support.client import Client
from tests.support.fake_openai import FakeOpenAi

ACTIVE = "Cannot resume while a turn is active."
ARCHIVED = "Cannot resume a read-only or archived chat."
NOT_LATEST = "The requested turn is not the latest resumable errored turn."


@pytest.fixture(scope="module")
def workdir():
    with tempfile.TemporaryDirectory(prefix="ahpd-resume-") as path:
        yield Path(path)


@pytest.fixture(scope="module")
def model():
    fake = FakeOpenAi()
    yield fake
    fake.close()


@pytest.fixture(scope="module")
def server(model, workdir):
    agents = [local_agent(model.url, display_name="Local model", model="fake-coder"), acp_agent()]
    with server_with_config({"agents": agents}) as process:
        yield process


@pytest.fixture(scope="module")
def tokens(server):
    made = {}
    for person, role in (("ana", "admin"), ("max", "member")):
        cli(server, "user", "add", person, "--role", role)
        made[person] = cli(server, "user", "token", person)["token"]
    return made


def flaky() -> str:
    """A message whose model call fails once: one no other conversation has asked."""
    return f"flaky {uuid.uuid4().hex}"


def resume(turn_id: str) -> dict[str, Any]:
    return {"type": "chat/turnResume", "turnId": turn_id}


def after(client: Client, predicate: Callable[[dict], bool]) -> Callable[[dict], bool]:
    """`predicate`, for an envelope that arrives after the ones the client holds now."""
    seen = {id(envelope) for envelope in client.actions}
    return lambda e: id(e) not in seen and predicate(e)


async def resumed(client: Client, chat: str, turn_id: str) -> tuple[dict, dict]:
    """Resume the turn; the echo, and the ending its second run came to."""
    finished = after(client, ended(chat, turn_id))
    echo = await client.dispatch_and_wait(chat, resume(turn_id))
    assert "rejectionReason" not in echo, echo.get("rejectionReason")
    return echo, await client.wait_action(finished, timeout=30)


def last_turn(client: Client, chat: str) -> dict:
    return client.tracked[chat][0]["turns"][-1]


def conversations(model: FakeOpenAi, marker: str) -> list[list[dict]]:
    """The message lists the model was asked, for the turn whose message is `marker`."""
    return [
        body["messages"]
        for body in model.requests
        if any(m.get("role") == "user" and m.get("content") == marker for m in body["messages"])
    ]


async def opened(server, connect, workdir, provider: str = "local") -> tuple[Client, str, str]:
    client = await connect(server.url)
    await client.initialize()
    session, chat = await new_session(client, workdir, provider)
    return client, session, chat


async def refused(client: Client, chat: str, turn_id: str, words: str) -> None:
    """The resume is refused in `words`, and the chat's state is what it was."""
    before = json.dumps(client.tracked[chat][0], sort_keys=True)
    echo = await client.dispatch_and_wait(chat, resume(turn_id))
    assert echo["rejectionReason"] == words
    assert json.dumps(client.tracked[chat][0], sort_keys=True) == before
    await client.assert_conforms(chat)


async def test_a_failed_model_call_ends_in_a_resumable_error_and_a_resume_completes_the_turn(
    server, connect, workdir, model
):
    client, _, chat = await opened(server, connect, workdir)
    marker = flaky()
    failed = await run_turn(client, chat, marker)
    turn_id = failed["action"]["turnId"]
    assert failed["action"]["type"] == "chat/error"
    assert failed["action"]["part"]["resumable"] is True
    assert "HTTP 500" in failed["action"]["part"]["error"]["message"]

    echo, end = await resumed(client, chat, turn_id)
    assert echo["origin"]["clientId"] == client.client_id
    assert end["action"]["type"] == "chat/turnComplete"
    assert end["action"]["duration"] >= failed["action"]["duration"]
    held = client.tracked[chat][0]
    assert "activeTurn" not in held
    assert [t["id"] for t in held["turns"]].count(turn_id) == 1
    finished = held["turns"][-1]
    assert finished["id"] == turn_id and finished["state"] == "complete"
    kinds = [part["kind"] for part in finished["responseParts"]]
    assert kinds[0] == "error"  # the earlier run's part is kept, the answer after it
    answer = "".join(p["content"] for p in finished["responseParts"] if p["kind"] == "markdown")
    assert answer == f"echo: {marker.partition(' ')[2]}"
    # The model was asked the same conversation again: the message was not sent twice.
    first, again = conversations(model, marker)
    assert first == again
    assert [m["content"] for m in again if m["role"] == "user"] == [marker]
    await client.assert_conforms(chat)


async def test_a_resume_keeps_the_tools_the_turn_ran_and_can_fail_resumably_again(
    server, connect, workdir, model
):
    client, _, chat = await opened(server, connect, workdir)
    (workdir / "notes.txt").write_text("kept notes\n")
    marker = "flaky read notes.txt"
    failed = await run_turn(client, chat, marker)
    turn_id = failed["action"]["turnId"]
    assert failed["action"]["part"]["resumable"] is True
    # The resume runs the read, and the call after the tool's answer fails once too.
    _, again = await resumed(client, chat, turn_id)
    assert again["action"]["type"] == "chat/error"
    assert again["action"]["part"]["resumable"] is True
    assert last_turn(client, chat)["id"] == turn_id
    _, end = await resumed(client, chat, turn_id)
    assert end["action"]["type"] == "chat/turnComplete"
    starts = [
        e
        for e in client.actions
        if e["channel"] == chat
        and e["action"]["type"] == "chat/toolCallStart"
        and e["action"]["turnId"] == turn_id
    ]
    assert len(starts) == 1  # run once, kept through the second resume
    finished = last_turn(client, chat)
    calls = [p for p in finished["responseParts"] if p["kind"] == "toolCall"]
    assert len(calls) == 1 and calls[0]["toolCall"]["status"] == "completed"
    answer = "".join(p["content"] for p in finished["responseParts"] if p["kind"] == "markdown")
    assert answer.startswith("The tool said: kept notes")
    asked = conversations(model, marker)
    assert all([m["content"] for m in c if m["role"] == "user"] == [marker] for c in asked)
    await client.assert_conforms(chat)


async def test_a_stop_of_a_resumed_turn_says_the_time_across_both_runs(server, connect, workdir):
    client, session, chat = await opened(server, connect, workdir)
    failed = await run_turn(client, chat, "flaky hold")
    turn_id = failed["action"]["turnId"]
    streaming = after(
        client,
        lambda e: (
            e["channel"] == chat
            and e["action"]["type"] in ("chat/delta", "chat/responsePart")
            and e["action"].get("turnId") == turn_id
            and (e["action"].get("part") or {}).get("kind", "markdown") == "markdown"
        ),
    )
    await client.dispatch_and_wait(chat, resume(turn_id))
    await client.wait_action(streaming, timeout=30)
    # Running again in the session's catalogue too.
    [row] = client.tracked[session][0]["chats"]
    assert row["status"] & 0b11111 == 8  # InProgress
    echo = await client.dispatch_and_wait(
        chat, {"type": "chat/turnCancelled", "turnId": turn_id, "duration": 0}
    )
    assert "rejectionReason" not in echo
    assert echo["action"]["duration"] >= failed["action"]["duration"]
    finished = last_turn(client, chat)
    assert finished["id"] == turn_id and finished["state"] == "cancelled"
    assert finished["duration"] == echo["action"]["duration"]
    await client.assert_conforms(chat)


async def test_a_resume_is_refused_in_the_reference_hosts_words_in_its_order(
    server, connect, workdir
):
    client, session, chat = await opened(server, connect, workdir)
    failed = await run_turn(client, chat, flaky())
    turn_id = failed["action"]["turnId"]

    # A turn running comes first, whatever the resume names.
    running = turn("hold")
    await client.dispatch_and_wait(chat, running)
    await refused(client, chat, turn_id, ACTIVE)
    stop = {"type": "chat/turnCancelled", "turnId": running["turnId"], "duration": 1}
    await client.dispatch_and_wait(chat, stop)
    assert last_turn(client, chat)["id"] == running["turnId"]
    # The errored turn is no longer the latest.
    await refused(client, chat, turn_id, NOT_LATEST)

    failed = await run_turn(client, chat, flaky())
    turn_id = failed["action"]["turnId"]
    # An archived session before the turn it names.
    archive = {"type": "session/isArchivedChanged", "isArchived": True}
    assert "rejectionReason" not in await client.dispatch_and_wait(session, archive)
    await refused(client, chat, "no-such-turn", ARCHIVED)
    await refused(client, chat, turn_id, ARCHIVED)
    archive = {"type": "session/isArchivedChanged", "isArchived": False}
    assert "rejectionReason" not in await client.dispatch_and_wait(session, archive)
    await refused(client, chat, "no-such-turn", NOT_LATEST)
    # A chat archived on its own is read-only too.
    other = f"ahp-chat:/{uuid.uuid4()}"
    await client.request("createChat", {"channel": session, "chat": other})
    await client.request("subscribe", {"channel": other})
    elsewhere = (await run_turn(client, other, flaky()))["action"]["turnId"]
    archive = {"type": "chat/isArchivedChanged", "isArchived": True}
    assert "rejectionReason" not in await client.dispatch_and_wait(other, archive)
    await refused(client, other, elsewhere, ARCHIVED)
    # The shape is checked before anything else of it.
    echo = await client.dispatch_and_wait(chat, {"type": "chat/turnResume"})
    assert "turnId" in echo["rejectionReason"]
    # A completed turn is no errored one.
    done = await run_turn(client, chat, "hello")
    await refused(client, chat, done["action"]["turnId"], NOT_LATEST)
    assert not client.closed


async def test_an_acp_turn_that_failed_carries_no_resumable_and_is_not_resumed(
    server, connect, workdir
):
    client, _, chat = await opened(server, connect, workdir, provider="fake")
    crashed = await run_turn(client, chat, "crash")
    assert crashed["action"]["type"] == "chat/error"
    assert "resumable" not in crashed["action"]["part"]
    await refused(client, chat, crashed["action"]["turnId"], NOT_LATEST)


async def test_another_member_may_not_resume_a_turn_in_a_session_not_theirs(
    server, connect, workdir, tokens
):
    ana = await connect(server.url, token=tokens["ana"])
    await ana.initialize()
    session, chat = await new_session(ana, workdir)
    failed = await run_turn(ana, chat, flaky())
    turn_id = failed["action"]["turnId"]
    assert failed["action"]["part"]["resumable"] is True
    max_ = await connect(server.url, token=tokens["max"])
    await max_.initialize()
    await max_.request("subscribe", {"channel": chat})
    await refused(
        max_, chat, turn_id, f"user:max may not others:work here: {session} is user:ana's"
    )
    assert last_turn(ana, chat)["state"] == "error"
    _, end = await resumed(ana, chat, turn_id)
    assert end["action"]["type"] == "chat/turnComplete"


async def test_a_queued_message_waits_behind_a_resumable_failure_and_runs_after_the_resume(
    server, connect, workdir
):
    client, _, chat = await opened(server, connect, workdir)
    failed = await run_turn(client, chat, flaky())
    turn_id = failed["action"]["turnId"]
    queued = {
        "type": "chat/pendingMessageSet",
        "kind": "queued",
        "id": "q1",
        "message": message("after the resume"),
    }
    assert "rejectionReason" not in await client.dispatch_and_wait(chat, queued)
    await client.settle()
    held = client.tracked[chat][0]
    assert [q["id"] for q in held["queuedMessages"]] == ["q1"]
    assert held["turns"][-1]["id"] == turn_id and "activeTurn" not in held

    taken = after(
        client,
        lambda e: (
            e["channel"] == chat
            and e["action"]["type"] == "chat/turnStarted"
            and e["action"].get("queuedMessageId") == "q1"
        ),
    )
    _, end = await resumed(client, chat, turn_id)
    assert end["action"]["type"] == "chat/turnComplete"
    started = await client.wait_action(taken, timeout=30)
    await client.wait_action(ended(chat, started["action"]["turnId"]), timeout=30)
    await client.assert_conforms(chat)


async def test_a_resumed_turns_changes_are_both_its_runs(server, connect, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.txt").write_text("alpha\n")
    subprocess.run(["git", "-C", str(repo), "init", "-q", "-b", "main"], check=True)
    client, session, chat = await opened(server, connect, repo)
    failed = await run_turn(client, chat, "flaky write c.txt fresh")
    turn_id = failed["action"]["turnId"]
    # Its second run writes c.txt (once asked), and fails on the call after the write.
    ready = after(
        client,
        lambda e: (
            e["channel"] == chat
            and e["action"]["type"] == "chat/toolCallReady"
            and e["action"]["turnId"] == turn_id
        ),
    )
    finished = after(client, ended(chat, turn_id))
    await client.dispatch_and_wait(chat, resume(turn_id))
    asked = await client.wait_action(ready, timeout=30)
    answer = {
        "type": "chat/toolCallConfirmed",
        "turnId": turn_id,
        "toolCallId": asked["action"]["toolCallId"],
        "approved": True,
        "confirmed": "user-action",
    }
    assert "rejectionReason" not in await client.dispatch_and_wait(chat, answer)
    again = await client.wait_action(finished, timeout=30)
    assert again["action"]["type"] == "chat/error"
    assert (repo / "c.txt").read_text() == "fresh"
    # Its third run finds c.txt written: the turn's changes are still what its first found.
    _, end = await resumed(client, chat, turn_id)
    assert end["action"]["type"] == "chat/turnComplete"
    changes = f"{session}/changeset/turn/{turn_id}"
    await client.request("subscribe", {"channel": changes})

    def files() -> list[str] | None:
        state = client.tracked[changes][0]
        names = [f["id"].rsplit("/", 1)[-1] for f in state["files"]]
        return names if state["status"] == "ready" and names else None

    assert await client.wait_for(files, timeout=20) == ["c.txt"]
