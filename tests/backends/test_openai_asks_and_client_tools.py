"""The host-run agent loop's `ask_user` tool and a session's client tools, against the scripted
OpenAI-compatible server, reported through a recording TurnEvents (no engine)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from hosts.backends.base import AgentConfig, ChatContext, ClientTool, InputAnswer, TurnRequest
from hosts.backends.openai import OpenAiAgent, OpenAiChat
from hosts.backends.openai.client_tools import MAX_NAME, function_name, offered
from tests.support.fake_openai import MODEL, FakeOpenAi
from tests.support.recording_events import RecordingEvents


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAi]:
    server = FakeOpenAi()
    yield server
    server.close()


async def chat_for(fake: FakeOpenAi, folder: Path, **context: Any) -> OpenAiChat:
    agent = OpenAiAgent(
        AgentConfig(
            provider="fake", kind="openai", display_name="Fake", base_url=fake.url, model=MODEL
        )
    )
    return await agent.open_chat(
        ChatContext(chat="ahp-chat:/test", working_directories=[folder], **context)
    )


def told(fake: FakeOpenAi) -> list[str]:
    return [m["content"] for m in fake.requests[-1]["messages"] if m.get("role") == "tool"]


def payloads(events: RecordingEvents, kind: str) -> list[dict[str, Any]]:
    return [payload for method, payload in events.log if method == kind]


async def test_ask_user_puts_the_question_and_the_answer_goes_to_the_model(
    fake: FakeOpenAi, tmp_path: Path
) -> None:
    def answer(request: Mapping[str, Any]) -> InputAnswer:
        value = {"kind": "selected", "value": "tea", "freeformValues": ["no sugar"]}
        return InputAnswer("accept", {"answer": {"state": "submitted", "value": value}})

    chat = await chat_for(fake, tmp_path)
    events = RecordingEvents(answer=answer)
    end = await chat.run_turn(TurnRequest("t1", "ask Tea or coffee? | tea | coffee"), events)
    await chat.close()

    assert end.state == "complete", end.message
    [asked] = payloads(events, "ask")
    request = asked["request"]
    assert request["_meta"] == {"purpose": "askUser"}
    assert request["questions"][0]["options"] == [
        {"id": "tea", "label": "tea"},
        {"id": "coffee", "label": "coffee"},
    ]
    assert told(fake) == ["The person answered: tea; no sugar"]
    [result] = payloads(events, "tool_result")
    assert result["success"] is True


async def test_a_question_without_one_is_a_failed_call_and_nobody_is_asked(
    fake: FakeOpenAi, tmp_path: Path
) -> None:
    chat = await chat_for(fake, tmp_path)
    events = RecordingEvents()
    await chat.run_turn(TurnRequest("t1", "client ask_user {}"), events)
    await chat.close()
    assert "ask" not in events.kinds()
    assert told(fake) == ["Error: The argument 'question' must be a non-empty string."]


async def test_a_client_tool_is_offered_and_run_by_the_client_under_its_own_name(
    fake: FakeOpenAi, tmp_path: Path
) -> None:
    tools = [
        ClientTool("vscode-1", "openFile", title="Open file"),
        ClientTool("vscode-2", "openFile", description="the other window's"),
    ]

    def run(tool: ClientTool, tool_input: str) -> Mapping[str, Any]:
        return {
            "success": True,
            "pastTenseMessage": "Opened",
            "content": [{"type": "text", "text": f"{tool.client_id} ran {tool_input}"}],
        }

    chat = await chat_for(fake, tmp_path, client_tools=lambda: tools)
    events = RecordingEvents(run_tool=run)
    end = await chat.run_turn(
        TurnRequest("t1", 'client vscode-2__openFile {"path": "a.py"}'), events
    )
    await chat.close()

    assert end.state == "complete", end.message
    names = [t["function"]["name"] for t in fake.requests[-1]["tools"]]
    assert "vscode-1__openFile" in names and "vscode-2__openFile" in names
    start = payloads(events, "tool_call")[0]
    assert start["name"] == "openFile"
    assert start["contributor"] == {"kind": "client", "clientId": "vscode-2"}
    [ran] = payloads(events, "run_client_tool")
    assert ran["tool"].client_id == "vscode-2" and ran["title"] == "openFile"
    assert told(fake) == ['vscode-2 ran {"path": "a.py"}']
    # What the client said is the call's result: the loop reports no result of its own.
    assert "tool_result" not in events.kinds()


async def test_a_failed_client_call_is_told_to_the_model_as_an_error(
    fake: FakeOpenAi, tmp_path: Path
) -> None:
    chat = await chat_for(fake, tmp_path, client_tools=lambda: [ClientTool("c", "lint")])
    events = RecordingEvents()
    await chat.run_turn(TurnRequest("t1", "client c__lint {}"), events)
    await chat.close()
    assert told(fake) == ["Error: no client runs tools here"]


def test_client_function_names_are_safe_short_and_distinct() -> None:
    long_id = "x" * 80
    tools = [
        ClientTool("win dow/1", "open.file"),
        ClientTool(long_id, "a"),
        ClientTool(long_id, "b"),
        ClientTool("c", "read_file"),
    ]
    names = offered(tools, taken=("c__read_file",))
    assert "win_dow_1__open_file" in names
    assert all(len(n) <= MAX_NAME for n in names)
    assert len(names) == 4
    assert "c__read_file" not in names
    assert function_name(ClientTool("c", "x"), set()) == "c__x"


async def test_a_running_turn_keeps_the_client_tools_it_started_with(
    fake: FakeOpenAi, tmp_path: Path
) -> None:
    announced = [[ClientTool("c", "first")], [ClientTool("c", "second")]]
    reads: list[int] = []

    def client_tools() -> list[ClientTool]:
        reads.append(1)
        return announced[min(len(reads), 2) - 1]

    chat = await chat_for(fake, tmp_path, client_tools=client_tools)
    events = RecordingEvents()
    # Two model calls in one turn (the tool call, then the answer): one set, read once.
    await chat.run_turn(TurnRequest("t1", "client c__first {}"), events)
    first_turn = [[t["function"]["name"] for t in body["tools"]] for body in fake.requests[-2:]]
    await chat.run_turn(TurnRequest("t2", "hello"), RecordingEvents())
    await chat.close()
    assert len(reads) == 2
    assert all("c__first" in names and "c__second" not in names for names in first_turn)
    assert "c__second" in [t["function"]["name"] for t in fake.requests[-1]["tools"]]
