"""Which chats' backends the engine lets go, with backends in this process: only those that
hold a process of their own are let go on time or counted against a person's cap."""

from __future__ import annotations

import asyncio
from typing import Any

from hosts.backends.base import AgentConfig, ChatContext, TurnEnd, TurnEvents, TurnRequest
from hosts.engine.host import Host, HostSettings
from hosts.engine.ports import MemoryStore
from hosts.engine.services import Caller, do_send_message
from hosts.engine.sessions import LiveChat


class ScriptedChat:
    def __init__(self, context: ChatContext) -> None:
        self.backend_id = context.backend_id or "kept-id"
        self.context = context
        self.closed = asyncio.Event()
        self.release = asyncio.Event()

    async def run_turn(self, request: TurnRequest, events: TurnEvents) -> TurnEnd:
        if request.text == "wait":
            await self.release.wait()
        events.text("ok")
        return TurnEnd("complete")

    async def cancel(self) -> None:
        self.release.set()

    async def close(self) -> None:
        self.closed.set()


class ScriptedAgent:
    def __init__(self, provider: str, *, holds_process: bool) -> None:
        self.config = AgentConfig(provider=provider, kind="acp", display_name=provider)
        self.holds_process = holds_process
        self.opened: list[ScriptedChat] = []

    def info(self) -> dict[str, Any]:
        return {"provider": self.config.provider, "displayName": "", "models": []}

    def session_config_schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": {}}

    async def open_chat(self, context: ChatContext) -> ScriptedChat:
        chat = ScriptedChat(context)
        self.opened.append(chat)
        return chat


async def started(**settings: Any) -> tuple[Host, ScriptedAgent, ScriptedAgent]:
    process = ScriptedAgent("process", holds_process=True)
    loop = ScriptedAgent("loop", holds_process=False)
    host = Host(MemoryStore(), HostSettings(**settings), {"process": process, "loop": loop})
    await host.start()
    return host, process, loop


def new_chat(host: Host, provider: str, name: str) -> LiveChat:
    session = host.sessions.create(
        host.root_principal.ref, f"ahp-session:/{name}", provider, [], {}, None
    )
    return session.chats[session.record.default_chat]


async def send(host: Host, chat: LiveChat, text: str) -> None:
    do_send_message(host, Caller(host.root_principal), chat, text, method="messages")
    if text != "wait":
        assert chat.task is not None
        await chat.task


async def test_an_in_process_backend_is_kept_while_one_holding_a_process_sleeps():
    host, process, loop = await started(sleep_after_s=0.01)
    kept = new_chat(host, "loop", "kept")
    sleeper = new_chat(host, "process", "sleeper")
    await send(host, kept, "hi")
    await send(host, sleeper, "hi")
    # The sleeper's backend going is the clock: it rested after the other did.
    await asyncio.wait_for(process.opened[0].closed.wait(), 10)
    assert sleeper.agent_chat is None and kept.agent_chat is loop.opened[0]
    assert not loop.opened[0].closed.is_set()
    # Woken by the next turn, by the backend id it had.
    await send(host, sleeper, "again")
    assert [c.context.backend_id for c in process.opened] == [None, "kept-id"]
    await host.stop()


async def test_the_cap_counts_only_backends_that_hold_a_process():
    host, _, _ = await started(agents_per_person=1, sleep_after_s=0)
    loops = [new_chat(host, "loop", f"loop-{n}") for n in range(3)]
    for chat in loops:
        await send(host, chat, "wait")
    first = new_chat(host, "process", "first")
    await send(host, first, "wait")
    second = new_chat(host, "process", "second")
    refusal = host.running_agents.refusal(host.root_principal.ref, "process", second)
    assert refusal is not None and "(AHPD_AGENTS_PER_PERSON=1)" in refusal
    assert host.running_agents.refusal(host.root_principal.ref, "loop", None) is None
    # Three loops and one process at work: the process's one is what the cap counts.
    assert host.running_agents.running(host.root_principal.ref) == 1
    await host.stop()
