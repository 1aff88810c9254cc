"""The ACP backend against a real ACP agent subprocess (tests/agents/fake_acp_agent.py)."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError

from hosts.backends.acp import AcpAgent, AcpChat
from hosts.backends.acp.files import confine
from hosts.backends.base import (
    BackendError,
    ChatContext,
    PermissionAnswer,
    PermissionOption,
    TurnEnd,
)
from hosts.backends.fence import Fence
from tests.support.fake_acp import CONFIG, OpenChat, reports, turn
from tests.support.recording_events import RecordingEvents


@pytest.fixture(scope="module")
def shared_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("shared") / "work"
    path.mkdir()
    return path


@pytest.fixture(scope="module")
async def chat(shared_dir: Path) -> AsyncIterator[AcpChat]:
    """One agent process for the tests that need no fresh one (starting one takes ~0.7 s)."""
    agent = AcpAgent(CONFIG, shared_dir.parent / "data")
    chat = await agent.open_chat(
        ChatContext(
            chat="ahp-chat://shared",
            working_directories=[shared_dir],
            state_dir=shared_dir.parent / "state",
        )
    )
    yield chat
    await chat.close()


async def test_a_plain_turn_streams_reasoning_then_text_and_completes(chat: AcpChat) -> None:
    events = RecordingEvents()

    end = await turn(chat, "hello there", events)

    assert end == TurnEnd("complete")
    assert events.texts() == "echo: hello there"
    assert events.kinds()[0] == "reasoning"
    assert [p["content"] for p in reports(events, "text")] == ["echo:", " hello", " there"]
    usage = reports(events, "usage")
    assert usage[-1] == {"input_tokens": 2, "output_tokens": 3, "model": "fake-small"}
    assert chat.backend_id and chat.backend_id.startswith("fake-")


async def test_the_agent_reports_its_modes_models_and_commands(tmp_path: Path) -> None:
    agent = AcpAgent(CONFIG, tmp_path / "data")
    assert agent.info()["models"] == []  # nothing reported yet, so nothing claimed
    assert agent.session_config_schema() == {"type": "object", "properties": {}}

    chat = await agent.open_chat(
        ChatContext(chat="c", working_directories=[tmp_path], state_dir=tmp_path / "state")
    )
    try:
        # Like real agents, the fake announces its commands just after session/new answers.
        async with asyncio.timeout(5):
            while not chat.commands:
                await asyncio.sleep(0.01)
        info = agent.info()
        schema = agent.session_config_schema()
    finally:
        await chat.close()

    assert info["models"] == [
        {"id": "fake-small", "provider": "fake", "name": "Fake Small"},
        {"id": "fake-large", "provider": "fake", "name": "Fake Large"},
    ]
    assert schema["properties"]["mode"]["enum"] == ["default", "plan"]
    assert chat.commands == [
        {"name": "recall", "description": "Repeat earlier prompts", "hint": None},
        {"name": "read", "description": "Read a file", "hint": "path"},
    ]


async def test_a_read_tool_call_is_served_from_the_working_directory(
    chat: AcpChat, shared_dir: Path
) -> None:
    (shared_dir / "notes.txt").write_text("buy milk\n")
    events = RecordingEvents()

    end = await turn(chat, "read notes.txt", events)

    assert end.state == "complete"
    (call,) = reports(events, "tool_call")
    assert call["kind"] == "read" and call["title"] == f"Read {shared_dir / 'notes.txt'}"
    (result,) = reports(events, "tool_result")
    assert result["call_id"] == call["call_id"]
    assert result["success"] is True and result["output"] == "buy milk\n"


async def test_an_approved_write_writes_the_file(chat: AcpChat, shared_dir: Path) -> None:
    events = RecordingEvents()

    end = await turn(chat, "write out.txt hello world", events)

    assert end.state == "complete"
    assert (shared_dir / "out.txt").read_text() == "hello world"
    (question,) = reports(events, "permission")
    assert question["options"] == ["allow_once", "reject_once"]
    assert '"content": "hello world"' in (question["tool_input"] or "")
    # The approval made the call run: the agent's in_progress is not reported a second time.
    assert events.kinds().count("tool_running") == 0
    (result,) = reports(events, "tool_result")
    assert result["success"] is True


async def test_a_denied_write_does_not_write_and_the_call_fails(
    chat: AcpChat, shared_dir: Path
) -> None:
    events = RecordingEvents(decide=lambda call_id, title, options: PermissionAnswer(False))

    end = await turn(chat, "write denied.txt hello", events)

    assert end.state == "complete"
    assert not (shared_dir / "denied.txt").exists()
    (result,) = reports(events, "tool_result")
    assert result["success"] is False and result["error"] == "the user refused"
    assert "did not write" in events.texts()


async def test_a_path_outside_the_working_directory_is_refused(
    chat: AcpChat, shared_dir: Path
) -> None:
    (shared_dir.parent / "outside.txt").write_text("secret")
    (shared_dir / "escape").symlink_to(shared_dir.parent)

    for path in ("../outside.txt", "escape/outside.txt", str(shared_dir.parent / "outside.txt")):
        for prompt in (f"read {path}", f"write {path} overwritten"):
            events = RecordingEvents()
            await turn(chat, prompt, events)
            (result,) = reports(events, "tool_result")
            assert result["success"] is False, prompt
            assert "outside the chat's working directories" in result["error"], prompt
    assert (shared_dir.parent / "outside.txt").read_text() == "secret"


async def test_updates_the_sdk_would_reject_do_not_lose_the_turn(chat: AcpChat) -> None:
    events = RecordingEvents()

    end = await turn(chat, "sloppy", events)

    assert end.state == "complete"
    # A tool_call_update for an id never announced starts the call, then completes it.
    assert reports(events, "tool_call")[0]["call_id"] == "ghost-1"
    (result,) = reports(events, "tool_result")
    assert result == {
        "call_id": "ghost-1",
        "success": True,
        "message": "Ghost",
        "output": "boo",
        "error": None,
    }
    assert events.texts() == "still here"
    assert events.kinds().index("tool_result") < events.kinds().index("text")


async def test_a_command_runs_in_a_host_terminal_in_the_working_directory(
    chat: AcpChat, shared_dir: Path
) -> None:
    events = RecordingEvents()

    end = await turn(chat, "run pwd", events)

    assert end.state == "complete"
    (call,) = reports(events, "tool_call")
    assert call["kind"] == "execute"
    (running,) = reports(events, "tool_running")
    assert running["tool_input"] == '{"command": "pwd"}'
    (result,) = reports(events, "tool_result")
    assert result["success"] is True and result["output"] == f"{os.path.realpath(shared_dir)}\n"
    assert events.texts() == f"exit 0: {os.path.realpath(shared_dir)}"


async def test_cancel_ends_a_slow_turn_promptly(chat: AcpChat) -> None:
    events = RecordingEvents()
    running = asyncio.create_task(turn(chat, "slow", events))
    while "tick" not in events.texts():
        await asyncio.sleep(0.02)

    started = time.monotonic()
    await chat.cancel()
    end = await running

    assert end == TurnEnd("cancelled")
    assert time.monotonic() - started < 1.0
    assert (await turn(chat, "again")).state == "complete"


async def test_cancel_answers_an_open_permission_question(chat: AcpChat, shared_dir: Path) -> None:
    class NeverAnswered(RecordingEvents):
        async def permission(
            self,
            call_id: str,
            *,
            title: str,
            tool_input: str | None,
            options: Sequence[PermissionOption] = (),
        ) -> PermissionAnswer:
            self.asked.set()
            await asyncio.Event().wait()
            raise AssertionError("unreachable")

    events = NeverAnswered()
    running = asyncio.create_task(turn(chat, "write unanswered.txt never", events))
    await asyncio.wait_for(events.asked.wait(), 5)

    await chat.cancel()

    assert (await asyncio.wait_for(running, 5)) == TurnEnd("cancelled")
    assert not (shared_dir / "unanswered.txt").exists()


async def test_an_agent_that_ignores_cancel_is_given_up_on_and_restarted(
    open_acp_chat: OpenChat,
) -> None:
    chat = await open_acp_chat()
    chat.cancel_grace_s = 0.3
    await turn(chat, "first words")
    running = asyncio.create_task(turn(chat, "hang"))
    await asyncio.sleep(0.2)

    await chat.cancel()

    assert (await asyncio.wait_for(running, 3)) == TurnEnd("cancelled")
    events = RecordingEvents()
    assert (await turn(chat, "recall", events)).state == "complete"
    assert events.texts() == "you said: first words"


async def test_a_prompt_that_takes_too_long_times_out(open_acp_chat: OpenChat) -> None:
    chat = await open_acp_chat(replace(CONFIG, prompt_timeout_s=0.3))
    chat.cancel_grace_s = 0.3

    end = await turn(chat, "hang")

    assert end.state == "error" and "timed out" in end.message


async def test_a_crash_ends_the_turn_in_error_and_the_next_turn_restarts_the_agent(
    open_acp_chat: OpenChat,
) -> None:
    chat = await open_acp_chat()
    session = chat.backend_id
    await turn(chat, "remember this")

    end = await turn(chat, "crash")

    assert end == TurnEnd("error", "Fake agent exited with code 3")
    events = RecordingEvents()
    assert (await turn(chat, "recall", events)).state == "complete"
    assert events.texts() == "you said: remember this"
    assert chat.backend_id == session


async def test_a_new_chat_process_loads_the_conversation_without_replaying_it(
    open_acp_chat: OpenChat,
) -> None:
    first = await open_acp_chat()
    await turn(first, "hello one")
    await turn(first, "hello two")
    await first.close()

    second = await open_acp_chat(backend_id=first.backend_id)
    events = RecordingEvents()
    end = await turn(second, "recall", events)

    assert second.backend_id == first.backend_id
    assert end.state == "complete"
    # The replayed history (user and agent chunks) is not reported as this turn's text.
    assert events.texts() == "you said: hello one | hello two"


async def test_the_agent_gets_a_trimmed_environment_and_authenticates(
    open_acp_chat: OpenChat, tmp_path: Path
) -> None:
    config = replace(CONFIG, env={"FAKE_ACP_REQUIRE_AUTH": "1"}, auth_method="fake-login")
    chat = await open_acp_chat(config)
    events = RecordingEvents()

    await turn(chat, "env", events)

    names = set(events.texts().removeprefix("env: ").split())
    assert {"HOME", "PATH", "FAKE_ACP_REQUIRE_AUTH"} <= names
    assert names <= {"HOME", "PATH", "LANG", "TERM", "FAKE_ACP_REQUIRE_AUTH", "LC_CTYPE"}
    assert (tmp_path / "state" / "fake-acp" / f"{chat.backend_id}.json").exists()


async def test_an_agent_that_needs_authentication_fails_to_open_without_it(
    open_acp_chat: OpenChat,
) -> None:
    with pytest.raises(BackendError, match="Authentication required"):
        await open_acp_chat(replace(CONFIG, env={"FAKE_ACP_REQUIRE_AUTH": "1"}))


async def test_an_agent_that_cannot_start_is_a_backend_error(open_acp_chat: OpenChat) -> None:
    with pytest.raises(BackendError, match="exited with code"):
        await open_acp_chat(replace(CONFIG, args=("-c", "import sys; sys.exit(5)")))


def test_every_working_directory_is_open_and_nothing_else(tmp_path: Path) -> None:
    first, second, outside = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for folder in (first, second, outside):
        folder.mkdir()
    (first / "to-c").symlink_to(outside)
    fence = Fence([first, second])

    assert confine(fence, str(second / "x.txt")) == second / "x.txt"
    assert confine(fence, "new/file.txt") == first / "new" / "file.txt"
    for path in (str(outside / "x"), "../c/x", str(first / "to-c" / "x"), "/etc/passwd"):
        with pytest.raises(RequestError, match="outside the chat's working directories"):
            confine(fence, path)


async def test_a_turns_cost_is_what_the_agent_said_the_session_grew_by_across_restarts(
    open_acp_chat: OpenChat,
) -> None:
    def cost_said(events: RecordingEvents) -> Any:
        return [p["cost"] for p in reports(events, "usage") if "cost" in p][-1]

    chat = await open_acp_chat()
    first, second, after = RecordingEvents(), RecordingEvents(), RecordingEvents()
    await turn(chat, "pay 0.25", first)
    await turn(chat, "pay 0.5", second)
    assert (cost_said(first), cost_said(second)) == ((0.25, "USD"), (0.5, "USD"))
    await turn(chat, "crash")
    # The agent is started again and the session loaded: it says its cost so far ($0.75),
    # which is where the next turn counts from.
    await turn(chat, "pay 0.125", after)
    assert cost_said(after) == (0.125, "USD")
    # The tokens are the prompt's answer's, never the context window's fill.
    assert reports(after, "usage")[-1] == {
        "input_tokens": 2,
        "output_tokens": 2,
        "model": "fake-small",
    }
    assert all(p["input_tokens"] is None for p in reports(after, "usage") if "context" in p)


async def test_a_loaded_session_that_says_no_cost_leaves_its_first_turn_unpriced_by_it(
    open_acp_chat: OpenChat,
) -> None:
    first = await open_acp_chat()
    await turn(first, "hello")
    await first.close()
    second = await open_acp_chat(backend_id=first.backend_id)
    events = RecordingEvents()
    await turn(second, "pay 2", events)
    # Where the session's count began is unknown: no cost is said for this turn.
    assert all("cost" not in p for p in reports(events, "usage"))
    later = RecordingEvents()
    await turn(second, "pay 1", later)
    assert [p["cost"] for p in reports(later, "usage") if "cost" in p] == [(1.0, "USD")]
