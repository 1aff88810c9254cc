"""The host-run agent loop against a scripted OpenAI-compatible server on loopback."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hosts.backends.base import AgentConfig, ChatContext, PermissionAnswer, TurnRequest
from hosts.backends.openai import OpenAiAgent, OpenAiChat
from tests.support.fake_openai import COST_PER_CALL, MODEL, FakeOpenAi
from tests.support.recording_events import RecordingEvents

OpenChat = Callable[..., Awaitable[OpenAiChat]]


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAi]:
    server = FakeOpenAi()
    yield server
    server.close()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work


def agent_for(url: str) -> OpenAiAgent:
    return OpenAiAgent(
        AgentConfig(
            provider="fake",
            kind="openai",
            display_name="Fake model",
            base_url=url,
            model=MODEL,
            models=(MODEL, "other-model"),
        )
    )


@pytest.fixture
async def open_chat(fake: FakeOpenAi, folder: Path) -> AsyncIterator[OpenChat]:
    chats: list[OpenAiChat] = []

    async def open_one(url: str | None = None, **context: Any) -> OpenAiChat:
        chat = await agent_for(url or fake.url).open_chat(
            ChatContext(chat="ahp-chat:/test", working_directories=[folder], **context)
        )
        chats.append(chat)
        return chat

    yield open_one
    for chat in chats:
        await chat.close()


def denying() -> RecordingEvents:
    return RecordingEvents(decide=lambda call_id, title, options: PermissionAnswer(False, "deny"))


def payloads(events: RecordingEvents, kind: str) -> list[dict[str, Any]]:
    return [payload for method, payload in events.log if method == kind]


class NeverAnswered(RecordingEvents):
    """Nobody answers the permission question: the turn waits until it is cancelled."""

    async def permission(self, call_id: str, **kwargs: Any) -> PermissionAnswer:
        await super().permission(call_id, **kwargs)
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


async def turn(chat: OpenAiChat, text: str, events: RecordingEvents) -> None:
    end = await chat.run_turn(TurnRequest(turn_id="t1", text=text), events)
    assert end.state == "complete", end.message


async def test_a_plain_turn_streams_text_and_reasoning_and_ends_complete_with_usage(
    open_chat: OpenChat,
) -> None:
    chat = await open_chat()
    events = RecordingEvents()

    await turn(chat, "hello there", events)

    assert events.texts() == "echo: hello there"
    assert len(payloads(events, "text")) == 3  # word by word
    assert payloads(events, "reasoning") == [{"content": "Echoing 'hello there'."}]
    assert events.kinds().index("reasoning") < events.kinds().index("text")
    [usage] = payloads(events, "usage")
    assert usage["model"] == MODEL
    assert usage["input_tokens"] and usage["output_tokens"]
    assert "cost" not in usage  # OpenAI's own format says no cost


async def test_a_cost_the_endpoint_says_as_openrouter_does_is_reported_in_dollars(
    open_chat: OpenChat,
) -> None:
    chat = await open_chat()
    events = RecordingEvents()

    await turn(chat, "costly hello", events)

    [usage] = payloads(events, "usage")
    assert usage["cost"] == (COST_PER_CALL, "USD")


async def test_read_file_runs_without_asking_and_the_model_answers_after(
    open_chat: OpenChat, fake: FakeOpenAi, folder: Path
) -> None:
    (folder / "notes.txt").write_text("buy milk")
    chat = await open_chat()
    events = RecordingEvents()

    await turn(chat, "read notes.txt", events)

    assert "permission" not in events.kinds()
    calls = payloads(events, "tool_call")
    assert calls[0]["name"] == "read_file" and calls[0]["partial_input"] is None
    fragments = [c["partial_input"] for c in calls[1:]]
    assert len(fragments) >= 2 and json.loads("".join(fragments)) == {"path": "notes.txt"}
    [running] = payloads(events, "tool_running")
    assert running["title"] == "Read notes.txt"
    [result] = payloads(events, "tool_result")
    assert result["success"] and result["output"] == "buy milk"
    assert events.texts() == "The tool said: buy milk"
    tool_message = fake.requests[-1]["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == calls[0]["call_id"]


async def test_write_file_asks_and_writes_when_approved(open_chat: OpenChat, folder: Path) -> None:
    chat = await open_chat()
    events = RecordingEvents()

    await turn(chat, "write out/hello.txt hi there", events)

    [asked] = payloads(events, "permission")
    assert asked["title"] == "Write out/hello.txt"
    assert json.loads(asked["tool_input"]) == {"path": "out/hello.txt", "content": "hi there"}
    assert asked["options"] == ["allow", "deny"]
    assert "tool_running" not in events.kinds()  # the engine marks an approved call running
    [result] = payloads(events, "tool_result")
    assert result["success"]
    assert (folder / "out" / "hello.txt").read_text() == "hi there"


async def test_a_denied_write_does_not_touch_the_file_and_the_model_is_told(
    open_chat: OpenChat, folder: Path
) -> None:
    chat = await open_chat()
    events = denying()

    await turn(chat, "write hello.txt hi", events)

    assert not (folder / "hello.txt").exists()
    [result] = payloads(events, "tool_result")
    assert not result["success"] and result["error"] == "denied by the user"
    assert "denied" in result["message"]
    assert events.texts().startswith("The tool said: The user denied this tool call")


async def test_bypass_permissions_writes_without_asking(open_chat: OpenChat, folder: Path) -> None:
    chat = await open_chat(config={"permissionMode": "bypassPermissions"})
    events = RecordingEvents()

    await turn(chat, "write hello.txt hi", events)

    assert "permission" not in events.kinds()
    assert events.kinds().index("tool_running") < events.kinds().index("tool_result")
    assert (folder / "hello.txt").read_text() == "hi"


async def test_accept_edits_writes_without_asking_but_asks_before_a_command(
    open_chat: OpenChat, folder: Path
) -> None:
    chat = await open_chat(config={"permissionMode": "acceptEdits"})
    write, run = RecordingEvents(), denying()

    await turn(chat, "write hello.txt hi", write)
    await turn(chat, "run touch ran.txt", run)

    assert "permission" not in write.kinds() and (folder / "hello.txt").exists()
    assert "permission" in run.kinds() and not (folder / "ran.txt").exists()


@pytest.mark.parametrize("target", ["../secret.txt", "ABSOLUTE", "link/secret.txt"])
async def test_a_path_outside_the_folder_is_refused(
    open_chat: OpenChat, folder: Path, target: str
) -> None:
    secret = folder.parent / "secret.txt"
    secret.write_text("top secret")
    (folder / "link").symlink_to(folder.parent)
    target = str(secret) if target == "ABSOLUTE" else target
    chat = await open_chat()
    events = RecordingEvents()

    await turn(chat, f"read {target}", events)

    [result] = payloads(events, "tool_result")
    assert not result["success"] and "outside the working folder" in result["error"]
    assert result["output"] is None
    assert "top secret" not in events.texts()
    assert events.texts().startswith("The tool said: Error: ")


async def test_run_command_asks_and_returns_its_output(open_chat: OpenChat, folder: Path) -> None:
    chat = await open_chat()
    events = RecordingEvents()

    await turn(chat, "run echo hello-from-shell && pwd", events)

    [asked] = payloads(events, "permission")
    assert asked["title"] == "Run echo hello-from-shell && pwd"
    [result] = payloads(events, "tool_result")
    assert result["success"]
    assert result["output"] == f"hello-from-shell\n{folder.resolve()}\n"
    assert events.texts().startswith("The tool said: The command exited with code 0.")


async def test_cancel_ends_a_slow_turn_promptly_and_the_chat_goes_on(open_chat: OpenChat) -> None:
    chat = await open_chat()
    events = RecordingEvents()
    running = asyncio.create_task(chat.run_turn(TurnRequest("t1", "slow"), events))
    while not events.texts():
        await asyncio.sleep(0.01)

    started = time.monotonic()
    await chat.cancel()
    end = await asyncio.wait_for(running, 2)

    assert end.state == "cancelled"
    assert time.monotonic() - started < 1
    assert events.texts().startswith("word1 ")
    await turn(chat, "still there?", RecordingEvents())


async def test_cancel_while_a_person_is_asked_ends_the_turn_and_the_chat_goes_on(
    open_chat: OpenChat, fake: FakeOpenAi, folder: Path
) -> None:
    chat = await open_chat()
    events = NeverAnswered()
    running = asyncio.create_task(chat.run_turn(TurnRequest("t1", "write a.txt x"), events))
    await asyncio.wait_for(events.asked.wait(), 2)

    await chat.cancel()

    assert (await asyncio.wait_for(running, 2)).state == "cancelled"
    assert not (folder / "a.txt").exists()
    await turn(chat, "hello again", RecordingEvents())
    roles = [m["role"] for m in fake.requests[-1]["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "user"]


async def test_a_failing_endpoint_ends_the_turn_in_an_error_naming_it(
    open_chat: OpenChat, fake: FakeOpenAi
) -> None:
    chat = await open_chat()

    end = await chat.run_turn(TurnRequest("t1", "fail"), RecordingEvents())

    assert end.state == "error"
    assert fake.url in end.message and "500" in end.message


async def test_a_failed_model_call_is_resumable_and_a_resume_asks_the_same_conversation(
    open_chat: OpenChat, fake: FakeOpenAi
) -> None:
    chat = await open_chat()
    marker = f"flaky {uuid.uuid4().hex}"

    failed = await chat.run_turn(TurnRequest("t1", marker), RecordingEvents())
    asked = len(fake.requests)
    end = await chat.resume_turn(TurnRequest("t1", marker), RecordingEvents())

    assert (failed.state, failed.resumable) == ("error", True)
    assert end.state == "complete"
    assert fake.requests[asked - 1]["messages"] == fake.requests[asked]["messages"]
    users = [m for m in fake.requests[-1]["messages"] if m["role"] == "user"]
    assert [m["content"] for m in users] == [marker]


async def test_a_resume_of_a_turn_the_conversation_does_not_hold_ends_resumable_unasked(
    open_chat: OpenChat, fake: FakeOpenAi
) -> None:
    chat = await open_chat()
    await chat.run_turn(TurnRequest("t1", "hello"), RecordingEvents())
    asked = len(fake.requests)

    end = await chat.resume_turn(TurnRequest("t1", "hello"), RecordingEvents())

    assert (end.state, end.resumable) == ("error", True)
    assert len(fake.requests) == asked


async def test_an_unreachable_endpoint_ends_the_turn_in_an_error_naming_it(
    open_chat: OpenChat,
) -> None:
    closed = FakeOpenAi()
    closed.close()
    chat = await open_chat(url=closed.url)

    end = await chat.run_turn(TurnRequest("t1", "hello"), RecordingEvents())

    assert end.state == "error"
    assert end.message.startswith(f"Could not reach the model endpoint {closed.url}")


async def test_history_from_the_context_is_sent_to_the_model(
    open_chat: OpenChat, fake: FakeOpenAi, folder: Path
) -> None:
    history = [{"user": "what is 2+2?", "assistant": "4"}]
    chat = await open_chat(history=history)

    await turn(chat, "and 3+3?", RecordingEvents())

    messages = fake.requests[-1]["messages"]
    assert messages[0]["role"] == "system" and str(folder.resolve()) in messages[0]["content"]
    assert messages[1:] == [
        {"role": "user", "content": "what is 2+2?"},
        {"role": "assistant", "content": "4"},
        {"role": "user", "content": "and 3+3?"},
    ]
    assert fake.requests[-1]["model"] == MODEL
    assert fake.requests[-1]["stream_options"] == {"include_usage": True}


async def test_the_chat_keeps_its_conversation_across_turns(
    open_chat: OpenChat, fake: FakeOpenAi, folder: Path
) -> None:
    (folder / "a.txt").write_text("alpha")
    chat = await open_chat(config={"model": "other-model"})

    await turn(chat, "read a.txt", RecordingEvents())
    await turn(chat, "thanks", RecordingEvents())

    roles = [m["role"] for m in fake.requests[-1]["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert fake.requests[-1]["model"] == "other-model"


def test_info_and_session_config_schema_list_the_models(fake: FakeOpenAi) -> None:
    agent = agent_for(fake.url)

    info = agent.info()
    schema = agent.session_config_schema()

    assert info["provider"] == "fake" and info["displayName"] == "Fake model"
    assert [m["id"] for m in info["models"]] == [MODEL, "other-model"]
    assert schema["properties"]["model"]["enum"] == [MODEL, "other-model"]
    assert schema["properties"]["model"]["default"] == MODEL
    mode = schema["properties"]["permissionMode"]
    assert mode["enum"] == ["default", "acceptEdits", "bypassPermissions"]
    assert len(mode["enumLabels"]) == 3 and mode["default"] == "default"
