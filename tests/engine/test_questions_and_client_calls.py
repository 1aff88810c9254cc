"""A turn's questions and its clients' calls, on the engine's TurnRunner without a server: a
chat that reduces what the runner says with the protocol's reducers, and a session list of
inputNeeded entries."""

from __future__ import annotations

import asyncio
from typing import Any

from hosts.backends.base import ClientTool, InputAnswer
from hosts.engine.sessions.client_tool_calls import CLIENT_LEFT, RESULT_DENIED, TURN_ENDED
from hosts.engine.sessions.runner import TurnRunner
from hosts.protocol.reducers import reduce

CHAT = "ahp-chat:/c"
TURN = "t1"


class FakeChat:
    """A chat and its session's inputNeeded, moved only by what is said."""

    uri = CHAT

    def __init__(self) -> None:
        self._state: dict[str, Any] = {
            "resource": CHAT,
            "turns": [],
            "activeTurn": {
                "id": TURN,
                "startedAt": "2026-12-06T00:00:00Z",
                "message": {"text": "hi", "origin": {"kind": "user"}},
                "responseParts": [],
                "state": "running",
            },
            "status": 8,
        }
        self.needed: dict[str, dict[str, Any]] = {}
        self.clients = {"a", "b"}
        self.said: list[dict[str, Any]] = []

    def say(self, action: dict[str, Any]) -> None:
        self.said.append(action)
        self._state = reduce("chat", self._state, action, now_ms=0)

    def state(self) -> dict[str, Any]:
        return self._state

    def set_input_needed(self, request: dict[str, Any]) -> None:
        self.needed[request["id"]] = request

    def remove_input_needed(self, request_id: str) -> None:
        self.needed.pop(request_id, None)

    def tool_call_state(self, turn_id: str, call_id: str) -> dict[str, Any] | None:
        for part in self._state["activeTurn"]["responseParts"]:
            if part["kind"] == "toolCall" and part["toolCall"]["toolCallId"] == call_id:
                call: dict[str, Any] = part["toolCall"]
                return call
        return None

    def raise_input_needed(self, turn_id: str, call_id: str) -> None:
        self.needed[f"toolConfirmation:{CHAT}:{turn_id}:{call_id}"] = {"kind": "toolConfirmation"}

    def settle_input_needed(self, turn_id: str, call_id: str) -> None:
        self.needed.pop(f"toolConfirmation:{CHAT}:{turn_id}:{call_id}", None)

    def active_client_ids(self) -> set[str]:
        return self.clients


def runner_on(chat: FakeChat) -> TurnRunner:
    return TurnRunner(chat, TURN, 0, 0)


async def settled() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_question_is_mirrored_answered_and_taken_down() -> None:
    chat = FakeChat()
    runner = runner_on(chat)
    asking = asyncio.create_task(runner.ask({"id": "q1", "message": "Sure?"}))
    await settled()
    assert list(chat.needed) == [f"chatInput:{CHAT}:q1"]
    assert runner.asked.answer("q1", InputAnswer("decline"))
    assert (await asking).response == "decline"
    assert chat.needed == {}
    # Answered once: a second answer hands nothing to anybody.
    assert not runner.asked.answer("q1", InputAnswer("accept"))


async def test_a_turn_that_ends_or_is_replaced_answers_its_questions_cancel() -> None:
    for end in ("stop", "supersede"):
        chat = FakeChat()
        runner = runner_on(chat)
        asking = asyncio.create_task(runner.ask({"message": "no id given"}))
        await settled()
        [entry] = chat.needed.values()
        assert entry["request"]["id"].startswith("input-")
        getattr(runner, end)()
        assert (await asking).response == "cancel"
        assert chat.needed == {}
        # Nothing more is asked of a turn nobody can answer.
        assert (await runner.ask({"id": "late"})).response == "cancel"


async def test_a_client_that_leaves_fails_only_its_own_calls() -> None:
    chat = FakeChat()
    runner = runner_on(chat)
    runs = {
        client: asyncio.create_task(
            runner.run_client_tool(
                f"call-{client}", ClientTool(client, "t"), title="T", tool_input="{}"
            )
        )
        for client in ("a", "b")
    }
    await settled()
    assert {e["kind"] for e in chat.needed.values()} == {"toolClientExecution"}
    runner.client_calls.client_left("a")
    result = await runs["a"]
    assert result["error"] == {"message": CLIENT_LEFT}
    assert not runs["b"].done()
    # The host said the failed call's completion; b's still runs.
    assert chat.tool_call_state(TURN, "call-a")["status"] == "completed"
    assert chat.tool_call_state(TURN, "call-b")["status"] == "running"
    runner.stop()
    assert (await runs["b"])["error"] == {"message": TURN_ENDED}
    assert chat.needed == {}


async def test_a_held_result_waits_for_a_person_even_if_its_client_leaves() -> None:
    chat = FakeChat()
    runner = runner_on(chat)
    run = asyncio.create_task(
        runner.run_client_tool("c1", ClientTool("a", "t"), title="T", tool_input="{}")
    )
    await settled()
    given = {"success": True, "pastTenseMessage": "Ran", "content": []}
    chat.say(
        {
            "type": "chat/toolCallComplete",
            "turnId": TURN,
            "toolCallId": "c1",
            "result": given,
            "requiresResultConfirmation": True,
        }
    )
    assert runner.client_calls.completed("c1", given, confirm=True)
    assert list(chat.needed) == [f"toolConfirmation:{CHAT}:{TURN}:c1"]
    runner.client_calls.client_left("a")
    await settled()
    assert not run.done()
    assert runner.client_calls.result_confirmed("c1", approved=False)
    assert (await run)["error"] == {"message": RESULT_DENIED}
    assert chat.needed == {}


async def test_a_client_whose_tool_is_called_after_it_left_fails_at_once() -> None:
    chat = FakeChat()
    chat.clients = {"b"}
    runner = runner_on(chat)
    result = await runner.run_client_tool("c1", ClientTool("a", "t"), title="T", tool_input="")
    assert result["error"] == {"message": CLIENT_LEFT}
    assert chat.needed == {}
    assert chat.tool_call_state(TURN, "c1")["status"] == "completed"
