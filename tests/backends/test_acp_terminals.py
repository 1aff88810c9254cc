"""The agent's terminals where the engine gave the chat host terminals, with no agent process
and no engine: a fake `HostTerminals` stands in for the host's terminal table."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.schema import EnvVariable

from hosts.backends.acp.terminals import Terminals
from hosts.backends.acp.updates import TurnUpdates
from hosts.backends.base import TerminalExit
from hosts.backends.fence import Fence
from tests.support.recording_events import RecordingEvents


@dataclass
class FakeTerminal:
    uri: str
    title: str
    argv: list[str]
    cwd: Path
    env: dict[str, str]
    turn_id: str | None
    printed: str = ""
    lost: bool = False
    ended: TerminalExit | None = None
    claimed_for: list[str] = field(default_factory=list)
    killed: int = 0
    exited: asyncio.Event = field(default_factory=asyncio.Event)

    def output(self) -> tuple[str, bool]:
        return self.printed, self.lost

    def exit_status(self) -> TerminalExit | None:
        return self.ended

    async def wait(self) -> TerminalExit:
        await self.exited.wait()
        assert self.ended is not None
        return self.ended

    async def kill(self) -> None:
        self.killed += 1
        self.end(TerminalExit(None, "SIGHUP"))

    def claim_for(self, tool_call_id: str) -> None:
        self.claimed_for.append(tool_call_id)

    def end(self, status: TerminalExit) -> None:
        self.ended = status
        self.exited.set()


@dataclass
class FakeHost:
    opened: list[FakeTerminal] = field(default_factory=list)
    refuse: bool = False

    def open(
        self,
        argv: Sequence[str],
        *,
        title: str,
        cwd: Path,
        env: Mapping[str, str],
        turn_id: str | None,
    ) -> FakeTerminal:
        if self.refuse:
            raise FileNotFoundError(argv[0])
        terminal = FakeTerminal(
            f"ahp-terminal:/t{len(self.opened)}", title, list(argv), cwd, dict(env), turn_id
        )
        self.opened.append(terminal)
        return terminal


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "sub").mkdir()
    return tmp_path


def terminals(folder: Path, host: FakeHost, turn_id: str | None = "turn-1") -> Terminals:
    return Terminals(Fence([folder]), {"PATH": "/usr/bin"}, host, lambda: turn_id)


async def test_a_command_opens_a_host_terminal_for_the_turn_in_the_chats_folder(folder) -> None:
    host = FakeHost()
    created = await terminals(folder, host).create_terminal(
        "s", "echo", ["hello", "there"], env=[EnvVariable(name="A", value="1")], cwd="sub"
    )

    [opened] = host.opened
    assert created.terminal_id
    assert opened.argv == ["echo", "hello", "there"] and opened.title == "echo hello there"
    assert opened.cwd == (folder / "sub").resolve()
    assert opened.env == {"PATH": "/usr/bin", "A": "1"}
    assert opened.turn_id == "turn-1"


async def test_a_command_without_arguments_is_a_shell_line_titled_as_written(folder) -> None:
    host = FakeHost()
    await terminals(folder, host).create_terminal("s", "ls -la | wc -l")

    [opened] = host.opened
    assert opened.argv == ["/bin/sh", "-c", "ls -la | wc -l"] and opened.title == "ls -la | wc -l"


async def test_a_folder_outside_the_fence_opens_nothing(folder) -> None:
    host = FakeHost()
    with pytest.raises(RequestError):
        await terminals(folder, host).create_terminal("s", "ls", cwd="/")
    assert host.opened == []


async def test_a_command_that_cannot_start_is_an_error_the_agent_sees(folder) -> None:
    with pytest.raises(RequestError) as refused:
        await terminals(folder, FakeHost(refuse=True)).create_terminal("s", "nope", ["x"])
    assert "Cannot run nope" in str(refused.value)


async def test_output_and_exit_come_from_the_host_terminal(folder) -> None:
    host = FakeHost()
    chat = terminals(folder, host)
    created = await chat.create_terminal("s", "make", ["it"])
    [opened] = host.opened
    opened.printed = "built\n"

    running = await chat.terminal_output("s", created.terminal_id)
    assert running.output == "built\n" and running.exit_status is None
    assert running.truncated is False

    opened.end(TerminalExit(2))
    waited = await chat.wait_for_terminal_exit("s", created.terminal_id)
    assert (waited.exit_code, waited.signal) == (2, None)
    done = await chat.terminal_output("s", created.terminal_id)
    assert done.exit_status is not None and done.exit_status.exit_code == 2


async def test_output_is_capped_at_the_limit_on_a_character_boundary(folder) -> None:
    host = FakeHost()
    chat = terminals(folder, host)
    created = await chat.create_terminal("s", "cat", ["x"], output_byte_limit=4)
    host.opened[0].printed = "abcdé€"  # é is 2 bytes, € 3: the newest 4 start inside é

    answer = await chat.terminal_output("s", created.terminal_id)

    assert answer.output == "€" and answer.truncated is True


async def test_output_the_host_terminal_lost_is_said_truncated(folder) -> None:
    host = FakeHost()
    chat = terminals(folder, host)
    created = await chat.create_terminal("s", "yes", ["y"])
    host.opened[0].printed, host.opened[0].lost = "y\n", True

    assert (await chat.terminal_output("s", created.terminal_id)).truncated is True


async def test_kill_and_release_stop_the_command_and_the_terminal_stays_on_the_host(
    folder,
) -> None:
    host = FakeHost()
    chat = terminals(folder, host)
    created = await chat.create_terminal("s", "sleep", ["60"])
    [opened] = host.opened

    await chat.kill_terminal("s", created.terminal_id)
    waited = await chat.wait_for_terminal_exit("s", created.terminal_id)
    assert (waited.exit_code, waited.signal) == (None, "SIGHUP")
    await chat.release_terminal("s", created.terminal_id)

    assert opened.killed == 2
    with pytest.raises(RequestError):
        await chat.terminal_output("s", created.terminal_id)


async def test_a_tool_call_naming_the_terminal_shows_it_and_claims_it_for_the_call(
    folder,
) -> None:
    host = FakeHost()
    chat = terminals(folder, host)
    created = await chat.create_terminal("s", "echo", ["hi"])
    [opened] = host.opened
    events = RecordingEvents()
    updates = TurnUpdates(events, terminals=chat)
    call = {"sessionUpdate": "tool_call_update", "toolCallId": "run-1", "title": "Run echo hi"}

    updates.apply({**call, "status": "in_progress"})
    updates.apply({**call, "content": [{"type": "terminal", "terminalId": created.terminal_id}]})
    opened.end(TerminalExit(0))
    text = [{"type": "content", "content": {"type": "text", "text": "hi\n"}}]
    updates.apply({**call, "status": "completed", "content": text})

    reference: dict[str, Any] = {
        "type": "terminal",
        "resource": opened.uri,
        "title": "echo hi",
        "isPty": True,
    }
    assert opened.claimed_for == ["run-1"]
    assert ("tool_content", {"call_id": "run-1", "content": [reference]}) in events.log
    [result] = [payload for kind, payload in events.log if kind == "tool_result"]
    assert result["output"] == "hi\n"
    assert result["content"] == [{**reference, "result": {"exitCode": 0}}]


def test_a_terminal_the_host_does_not_hold_is_shown_as_nothing() -> None:
    events = RecordingEvents()
    updates = TurnUpdates(events)
    update = {"sessionUpdate": "tool_call", "toolCallId": "run-1", "status": "in_progress"}
    updates.apply({**update, "content": [{"type": "terminal", "terminalId": "term-9"}]})

    assert "tool_content" not in events.kinds()
