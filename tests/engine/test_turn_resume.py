"""chat/turnResume against backends in this process: a backend that cannot run a turn again is
refused in the reference host's words, and one that holds no such turn ends it again in a
resumable error, its time and usage going on from the earlier run."""

from __future__ import annotations

from typing import Any

from hosts.backends.base import AgentConfig, ChatContext, TurnEnd, TurnEvents, TurnRequest
from hosts.engine.host import Host, HostSettings
from hosts.engine.ports import MemoryStore
from hosts.engine.services import Caller, do_send_message
from hosts.engine.services.turns import do_resume_turn
from hosts.engine.sessions import LiveChat


class FailingChat:
    """Every turn it runs fails resumably, after using some tokens; it holds nothing to resume."""

    def __init__(self, context: ChatContext) -> None:
        self.backend_id = "failing"
        self.resumed: list[str] = []

    async def run_turn(self, request: TurnRequest, events: TurnEvents) -> TurnEnd:
        events.text("partial")
        events.usage(input_tokens=10, output_tokens=2, model="m")
        return TurnEnd("error", "the model went away", resumable=True)

    async def resume_turn(self, request: TurnRequest, events: TurnEvents) -> TurnEnd:
        self.resumed.append(request.turn_id)
        events.usage(input_tokens=5, output_tokens=1, model="m")
        return TurnEnd("error", "nothing held to run again", resumable=True)

    async def cancel(self) -> None:
        pass

    async def close(self) -> None:
        pass


class FailingAgent:
    holds_process = False

    def __init__(self, provider: str, *, resumes_turns: bool) -> None:
        self.config = AgentConfig(provider=provider, kind="openai", display_name=provider)
        self.resumes_turns = resumes_turns
        self.opened: list[FailingChat] = []

    def info(self) -> dict[str, Any]:
        return {"provider": self.config.provider, "displayName": "", "models": []}

    def session_config_schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": {}}

    async def open_chat(self, context: ChatContext) -> FailingChat:
        chat = FailingChat(context)
        self.opened.append(chat)
        return chat


async def failed_turn(resumes_turns: bool) -> tuple[Host, FailingAgent, LiveChat, str]:
    agent = FailingAgent("failing", resumes_turns=resumes_turns)
    host = Host(MemoryStore(), HostSettings(), {"failing": agent})
    await host.start()
    session = host.sessions.create(
        host.root_principal.ref, "ahp-session:/resume", "failing", [], {}, None
    )
    chat = session.chats[session.record.default_chat]
    turn_id = do_send_message(host, Caller(host.root_principal), chat, "hi", method="messages")
    assert chat.task is not None
    await chat.task
    return host, agent, chat, turn_id


async def test_a_backend_that_cannot_run_a_turn_again_is_refused_and_nothing_changes():
    host, agent, chat, turn_id = await failed_turn(resumes_turns=False)
    before = chat.state()
    assert before["turns"][-1]["responseParts"][-1]["resumable"] is True
    reason = do_resume_turn(
        host, Caller(host.root_principal), chat, {"type": "chat/turnResume", "turnId": turn_id}
    )
    assert reason == "The session provider does not support turn resume."
    assert chat.state() == before and chat.runner is None
    assert agent.opened[0].resumed == []


async def test_a_backend_holding_no_such_turn_ends_it_again_resumable_with_its_whole_time():
    host, agent, chat, turn_id = await failed_turn(resumes_turns=True)
    first = chat.state()["turns"][-1]
    reason = do_resume_turn(
        host, Caller(host.root_principal), chat, {"type": "chat/turnResume", "turnId": turn_id}
    )
    assert reason is None
    assert chat.task is not None
    await chat.task
    assert agent.opened[0].resumed == [turn_id]
    turns = chat.state()["turns"]
    assert [t["id"] for t in turns] == [turn_id]
    again = turns[-1]
    assert again["state"] == "error" and again["responseParts"][-1]["resumable"] is True
    assert again["responseParts"][-1]["error"]["message"] == "nothing held to run again"
    assert again["duration"] >= first["duration"]
    # Both runs' tokens: the earlier run's usage goes on.
    assert again["usage"]["inputTokens"] == 15 and again["usage"]["outputTokens"] == 3
    # The first error part and the earlier text are kept ahead of the new ending.
    kinds = [p["kind"] for p in again["responseParts"]]
    assert kinds == ["markdown", "error", "error"]
