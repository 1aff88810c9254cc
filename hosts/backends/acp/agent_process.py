"""One run of the agent command, and the ACP connection on its stdio.

The process is spawned here, not with `acp.spawn_agent_process`, because that helper always adds
the host's USER, LOGNAME and SHELL to the child's environment and pipes the child's stderr
without ever reading it (a chatty agent then blocks on a full pipe). The agent gets exactly the
environment it is handed, and its stderr is drained here, its last lines kept to explain why it
died.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

import acp
from acp.client.connection import ClientSideConnection

from hosts.backends.base import BackendError
from hosts.backends.process import signal_name, start_group, stop_group
from hosts.backends.sandbox import Jail

from .errors import AgentGone
from .pipe import AgentPipe

log = logging.getLogger(__name__)

T = TypeVar("T")

#: The read buffer for the agent's stdout: a whole file can travel in one message (longer
#: lines are still read, in pieces).
STDOUT_LIMIT = 50 * 1024 * 1024
#: How long a closing agent may take to exit after its stdin closed, and again after SIGTERM.
SHUTDOWN_GRACE_S = 2.0
#: How many of the agent's last stderr lines are kept to explain why it died.
STDERR_TAIL_LINES = 20


class AgentProcess:
    """The agent process and its connection, from `start` until `stop`."""

    def __init__(self, name: str) -> None:
        #: The agent's name in messages.
        self.name = name
        self.process: asyncio.subprocess.Process | None = None
        self.conn: ClientSideConnection | None = None
        self._stderr: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self._stderr_task: asyncio.Task[None] | None = None

    @property
    def alive(self) -> bool:
        """Whether the agent can be talked to."""
        return (
            self.conn is not None and self.process is not None and self.process.returncode is None
        )

    async def start(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str,
        client: acp.Client,
        on_update: Callable[[Any], None],
        on_session: Callable[[Any], None],
        jail: Jail | None = None,
        needs: Sequence[str] = (),
    ) -> ClientSideConnection:
        """Spawn the agent in a process group of its own, in `jail`, and connect `client`."""
        try:
            process = await start_group(
                argv,
                cwd=cwd,
                env=env,
                jail=jail,
                needs=needs,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                limit=STDOUT_LIMIT,
            )
        except OSError as error:
            raise BackendError(f"Cannot start {self.name}: {error}") from None
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self._stderr_task = asyncio.create_task(self._drain_stderr(process))
        self.conn = acp.connect_to_agent(client, AgentPipe(process, on_update, on_session))
        return self.conn

    async def rpc(self, call: Awaitable[T]) -> T:
        """Await one request to the agent; a dead agent becomes `AgentGone` with its last words."""
        try:
            return await call
        except ConnectionError:
            raise AgentGone(await self.exit_message()) from None

    async def exit_message(self) -> str:
        """Why the agent is gone: its exit code or signal, and the last line it wrote to stderr."""
        process = self.process
        code: int | None = None
        if process is not None:
            with contextlib.suppress(TimeoutError):
                code = await asyncio.wait_for(process.wait(), SHUTDOWN_GRACE_S)
        if self._stderr_task is not None:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._stderr_task), 0.5)
        if code is None:
            message = f"{self.name} closed its connection"
        elif code < 0:
            message = f"{self.name} exited on signal {signal_name(code)}"
        else:
            message = f"{self.name} exited with code {code}"
        if self._stderr:
            message += f": {self._stderr[-1]}"
        return message

    async def _drain_stderr(self, process: asyncio.subprocess.Process) -> None:
        """Read the agent's stderr so it never blocks on a full pipe; keep the tail for errors."""
        stream = process.stderr
        assert stream is not None
        with contextlib.suppress(ValueError, ConnectionError):
            while line := await stream.readline():
                text = line.decode("utf-8", errors="replace").rstrip()[:500]
                if text:
                    self._stderr.append(text)
                    log.debug("%s stderr: %s", self.name, text)

    async def stop(
        self, *, kill: bool = False, first: Callable[[], Awaitable[None]] | None = None
    ) -> None:
        """End the process (EOF first, then SIGTERM, then SIGKILL) and its connection.

        `first` (what was run for the agent, its terminals) is ended once the agent no longer
        counts as alive and before it is signalled.
        """
        conn, process = self.conn, self.process
        self.conn = self.process = None
        if first is not None:
            await first()
        if process is not None and process.returncode is None:
            if not kill and process.stdin is not None:
                with contextlib.suppress(OSError, RuntimeError, AttributeError):
                    process.stdin.write_eof()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(process.wait(), SHUTDOWN_GRACE_S)
            await stop_group(process, grace=SHUTDOWN_GRACE_S)
        if conn is not None:
            # The pipes are closed now, so closing cannot block on a write the agent never reads.
            with contextlib.suppress(Exception):
                await conn.close()
        if self._stderr_task is not None:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(self._stderr_task, 1.0)
            self._stderr_task = None
