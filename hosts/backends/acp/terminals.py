"""The agent's `terminal/*` requests: commands the host runs for it, in the chat's folders.

Only a terminal's working directory is fenced: the command itself is the agent's, and this is no
sandbox (the agent process could run it on its own anyway). Each terminal leads its own process
group, so killing or releasing it also ends what the command started.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

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

from hosts.backends.fence import Fence
from hosts.backends.process import kill_group, signal_name, start_command, stop_group

from .files import confine

#: The default cap on what one terminal keeps of its output.
TERMINAL_OUTPUT_LIMIT = 1024 * 1024
#: How long a killed terminal may take to exit.
KILL_GRACE_S = 2.0


@dataclass(slots=True)
class Terminal:
    process: asyncio.subprocess.Process
    limit: int
    reader: asyncio.Task[None] | None = None
    output: bytearray = field(default_factory=bytearray)
    truncated: bool = False

    def append(self, data: bytes) -> None:
        """Keep the newest `limit` bytes, cut at a character boundary as ACP asks."""
        self.output += data
        if len(self.output) > self.limit:
            del self.output[: len(self.output) - self.limit]
            while self.output and self.output[0] & 0xC0 == 0x80:
                del self.output[0]
            self.truncated = True

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

    async def stop(self) -> None:
        """Kill the command's group and let its reader go."""
        await stop_group(self.process, (signal.SIGKILL,), KILL_GRACE_S)
        if self.reader is not None:
            self.reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.reader


class Terminals:
    """The ACP terminal callbacks, by their ACP names, over the terminals of one chat."""

    def __init__(self, fence: Fence, env: Mapping[str, str]) -> None:
        self.fence = fence
        self._env = dict(env)
        self._terminals: dict[str, Terminal] = {}
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
        try:
            process = await start_command(argv, cwd=workdir, env=process_env)
        except OSError as error:
            raise RequestError(-32603, f"Cannot run {command}: {error}") from None
        self._next_terminal += 1
        terminal_id = f"term-{self._next_terminal}"
        terminal = Terminal(process, output_byte_limit or TERMINAL_OUTPUT_LIMIT)
        terminal.reader = asyncio.create_task(_pump(terminal), name=f"acp {terminal_id}")
        self._terminals[terminal_id] = terminal
        return CreateTerminalResponse(terminal_id=terminal_id)

    def _terminal(self, terminal_id: str) -> Terminal:
        terminal = self._terminals.get(terminal_id)
        if terminal is None:
            raise RequestError.invalid_params({"terminalId": terminal_id, "details": "unknown"})
        return terminal

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        """What the command wrote so far (its newest bytes), and how it ended if it did."""
        terminal = self._terminal(terminal_id)
        if terminal.process.returncode is not None:
            await terminal.drained()
        return TerminalOutputResponse(
            output=terminal.output.decode("utf-8", errors="replace"),
            truncated=terminal.truncated,
            exit_status=terminal.exit_status(),
        )

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        """Wait for the command to end."""
        terminal = self._terminal(terminal_id)
        code = await terminal.process.wait()
        await terminal.drained()
        return WaitForTerminalExitResponse(
            exit_code=code if code >= 0 else None, signal=signal_name(code)
        )

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> KillTerminalResponse:
        """Kill the command; the terminal stays until it is released."""
        kill_group(self._terminal(terminal_id).process, signal.SIGKILL)
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
