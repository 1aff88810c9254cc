"""The agent's `terminal/*` requests: commands the host runs for it, in the chat's folders.

Where the engine handed the chat its host terminals, each command runs in one (a pty a client
may subscribe to and watch), claimed by the session and the turn, and the agent's requests are
answered from it; otherwise (a backend's own tests) it runs as a plain subprocess here.

Only a terminal's working directory is fenced: the command itself is the agent's, and this is no
sandbox (the agent process could run it on its own anyway). Each terminal leads its own process
group (a subprocess's) or session (a pty's), so killing or releasing it also ends what the
command started.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from acp import RequestError
from acp.schema import (
    CreateTerminalResponse,
    EnvVariable,
    KillTerminalResponse,
    ReleaseTerminalResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
)

from hosts.backends.base import HostTerminal, HostTerminals
from hosts.backends.fence import Fence
from hosts.backends.process import kill_group, signal_name, start_command, stop_group

from .files import confine

#: The default cap on what one terminal keeps of its output.
TERMINAL_OUTPUT_LIMIT = 1024 * 1024
#: How long a killed terminal may take to exit.
KILL_GRACE_S = 2.0


def keep_newest(output: bytearray, limit: int) -> bool:
    """Keep the newest `limit` bytes of `output`, cut at a character boundary as ACP asks;
    whether anything was cut."""
    if len(output) <= limit:
        return False
    del output[: len(output) - limit]
    while output and output[0] & 0xC0 == 0x80:
        del output[0]
    return True


class Running(Protocol):
    """One command the agent asked for, however it runs."""

    async def output(self) -> TerminalOutputResponse: ...
    async def wait(self) -> WaitForTerminalExitResponse: ...
    async def kill(self) -> None: ...
    async def stop(self) -> None: ...


@dataclass(slots=True)
class Terminal:
    """A command run as a plain subprocess of the backend's (no host terminals to run it in)."""

    process: asyncio.subprocess.Process
    limit: int
    reader: asyncio.Task[None] | None = None
    held: bytearray = field(default_factory=bytearray)
    truncated: bool = False

    def append(self, data: bytes) -> None:
        self.held += data
        self.truncated = keep_newest(self.held, self.limit) or self.truncated

    def exit_status(self) -> TerminalExitStatus | None:
        """How the command ended, or None while it runs."""
        code = self.process.returncode
        if code is None:
            return None
        return TerminalExitStatus(exit_code=code if code >= 0 else None, signal=signal_name(code))

    async def drained(self) -> None:
        """Wait (a little) for the reader to take what is left in the pipe of an ended command."""
        if self.reader is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self.reader), 1.0)

    async def output(self) -> TerminalOutputResponse:
        if self.process.returncode is not None:
            await self.drained()
        return TerminalOutputResponse(
            output=self.held.decode("utf-8", errors="replace"),
            truncated=self.truncated,
            exit_status=self.exit_status(),
        )

    async def wait(self) -> WaitForTerminalExitResponse:
        code = await self.process.wait()
        await self.drained()
        return WaitForTerminalExitResponse(
            exit_code=code if code >= 0 else None, signal=signal_name(code)
        )

    async def kill(self) -> None:
        kill_group(self.process, signal.SIGKILL)

    async def stop(self) -> None:
        """Kill the command's group and let its reader go."""
        await stop_group(self.process, (signal.SIGKILL,), KILL_GRACE_S)
        if self.reader is not None:
            self.reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.reader


@dataclass(slots=True)
class InHostTerminal:
    """A command run in a host terminal, which clients may watch; it stays there, exited,
    after the agent let it go."""

    host: HostTerminal
    limit: int

    async def output(self) -> TerminalOutputResponse:
        text, lost = self.host.output()
        held = bytearray(text.encode())
        cut = keep_newest(held, self.limit)
        ended = self.host.exit_status()
        return TerminalOutputResponse(
            output=held.decode("utf-8", errors="replace"),
            truncated=cut or lost,
            exit_status=None
            if ended is None
            else TerminalExitStatus(exit_code=ended.exit_code, signal=ended.signal),
        )

    async def wait(self) -> WaitForTerminalExitResponse:
        ended = await self.host.wait()
        return WaitForTerminalExitResponse(exit_code=ended.exit_code, signal=ended.signal)

    async def kill(self) -> None:
        await self.host.kill()

    async def stop(self) -> None:
        await self.host.kill()


class Terminals:
    """The ACP terminal callbacks, by their ACP names, over the terminals of one chat: in host
    terminals where the engine gave some (`host`), else as subprocesses of the backend's."""

    def __init__(
        self,
        fence: Fence,
        env: Mapping[str, str],
        host: HostTerminals | None = None,
        turn_id: Callable[[], str | None] = lambda: None,
    ) -> None:
        self.fence = fence
        self._env = dict(env)
        self._host = host
        #: The turn running, whose claim a host terminal opened now carries.
        self._turn_id = turn_id
        self._terminals: dict[str, Running] = {}
        self._next_terminal = 0

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[EnvVariable] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:
        """Start the command in the chat's first folder, or in `cwd` when that is inside."""
        workdir = confine(self.fence, cwd) if cwd else self.fence.roots[0]
        if not workdir.is_dir():
            raise RequestError.invalid_params({"cwd": cwd, "details": "not a directory"})
        # A command without arguments is taken as a shell line, which is what agents that send
        # `{"command": "ls -la"}` mean.
        argv = [command, *args] if args else ["/bin/sh", "-c", command]
        process_env = {**self._env, **{variable.name: variable.value for variable in env or ()}}
        limit = output_byte_limit or TERMINAL_OUTPUT_LIMIT
        try:
            terminal = await self._start(argv, workdir, process_env, limit)
        except OSError as error:
            raise RequestError(-32603, f"Cannot run {command}: {error}") from None
        self._next_terminal += 1
        terminal_id = f"term-{self._next_terminal}"
        if isinstance(terminal, Terminal):
            terminal.reader = asyncio.create_task(_pump(terminal), name=f"acp {terminal_id}")
        self._terminals[terminal_id] = terminal
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def _start(
        self, argv: list[str], workdir: Path, env: dict[str, str], limit: int
    ) -> Running:
        if self._host is None:
            return Terminal(await start_command(argv, cwd=workdir, env=env), limit)
        title = argv[2] if argv[:2] == ["/bin/sh", "-c"] else shlex.join(argv)
        opened = self._host.open(argv, title=title, cwd=workdir, env=env, turn_id=self._turn_id())
        return InHostTerminal(opened, limit)

    def shown(self, terminal_id: str, tool_call_id: str) -> HostTerminal | None:
        """The host terminal an agent's terminal runs in, now claimed for the tool call whose
        content names it; None when it runs in none (or the agent names no terminal of its)."""
        terminal = self._terminals.get(terminal_id)
        if not isinstance(terminal, InHostTerminal):
            return None
        terminal.host.claim_for(tool_call_id)
        return terminal.host

    def _terminal(self, terminal_id: str) -> Running:
        terminal = self._terminals.get(terminal_id)
        if terminal is None:
            raise RequestError.invalid_params({"terminalId": terminal_id, "details": "unknown"})
        return terminal

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        """What the command wrote so far (its newest bytes), and how it ended if it did."""
        return await self._terminal(terminal_id).output()

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        """Wait for the command to end."""
        return await self._terminal(terminal_id).wait()

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> KillTerminalResponse:
        """Kill the command; the terminal stays until it is released."""
        await self._terminal(terminal_id).kill()
        return KillTerminalResponse()

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> ReleaseTerminalResponse:
        """Kill the command if it still runs, and forget the terminal."""
        terminal = self._terminal(terminal_id)
        del self._terminals[terminal_id]
        await terminal.stop()
        return ReleaseTerminalResponse()

    async def close_terminals(self) -> None:
        """Kill every terminal the agent left behind (it died, or the chat closes)."""
        terminals = list(self._terminals.values())
        self._terminals.clear()
        for terminal in terminals:
            await terminal.stop()


async def _pump(terminal: Terminal) -> None:
    stdout = terminal.process.stdout
    assert stdout is not None
    while chunk := await stdout.read(65536):
        terminal.append(chunk)
