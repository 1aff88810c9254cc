"""The Claude Code CLI as one chat runs it: started in its session owner's sandbox, with exactly
the environment the host hands it, in a process group of its own.

claude-agent-sdk starts the CLI itself (`SubprocessCLITransport.connect`), with the server's
whole environment beneath the caller's and no way to put a wrapper command in front. Its seam
is the transport a `ClaudeSDKClient` may be given: this one is the SDK's own subprocess
transport (its command line built from the options, its line framing, its writes and its
close, unchanged) with only the start replaced, so the CLI runs `jail.wrap`ped like every
agent, gets no variable of the server's it was not handed, and leads a process group the
host can stop whole. A `cli_path` launcher script could not have kept the server's
environment away from the launcher itself.

The SDK's transport attributes set here are its private ones, read from the version pinned
in requirements.txt; tests/backends/test_claude.py starts the real CLI through this class.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from subprocess import PIPE
from typing import Any

import anyio
from anyio.streams.text import TextReceiveStream, TextSendStream
from claude_agent_sdk import ClaudeAgentOptions
from claude_agent_sdk import __version__ as sdk_version
from claude_agent_sdk._internal._task_compat import spawn_detached
from claude_agent_sdk._internal.transport.subprocess_cli import SubprocessCLITransport

from hosts.backends.process import child_umask
from hosts.backends.sandbox import Jail


def bundled_cli() -> Path | None:
    """The `claude` executable inside the claude-agent-sdk wheel, where the wheel has one."""
    import claude_agent_sdk

    path = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    return path if path.is_file() else None


def sdk_env(cwd: str) -> dict[str, str]:
    """What the SDK's own start adds to the CLI's environment, which the CLI and the SDK's
    reading of it count on (the session-state frames that tell a run's end, its entrypoint)."""
    return {
        "CLAUDE_CODE_ENTRYPOINT": "sdk-py",
        "CLAUDE_AGENT_SDK_VERSION": sdk_version,
        "CLAUDE_CODE_SDK_READS_SESSION_STATE": "1",
        "PWD": cwd,
    }


async def _no_prompt() -> AsyncIterator[dict[str, Any]]:
    """The transport's prompt stream: unused, every prompt is written by `query`."""
    return
    yield {}  # pragma: no cover - makes this an async generator


class JailedCliTransport(SubprocessCLITransport):
    """The SDK's subprocess transport, started by the host: `argv` in `jail` (None: as the
    server's user), in `cwd`, with exactly `env`, leading a process group of its own."""

    def __init__(
        self,
        options: ClaudeAgentOptions,
        *,
        env: Mapping[str, str],
        jail: Jail | None,
        needs: Sequence[str] = (),
    ) -> None:
        super().__init__(prompt=_no_prompt(), options=options)
        self._env = dict(env)
        self._jail = jail
        self._needs = tuple(needs)
        #: The CLI's process id, which is also its process group's (it leads a new session).
        self.pid: int | None = None

    async def connect(self) -> None:
        if self._process:
            return
        assert self._cli_path is not None and self._cwd is not None
        argv = self._build_command()
        env = {**self._env, **sdk_env(self._cwd)}
        if self._jail is not None:
            # The CLI's HOME is its own folder (bound read-write as one of the jail's
            # writable paths by the chat), not the person's sandbox home.
            argv, env = self._jail.wrap(argv, cwd=self._cwd, env=env, needs=self._needs, home=False)
        self._process = process = await anyio.open_process(
            argv,
            stdin=PIPE,
            stdout=PIPE,
            stderr=PIPE,
            cwd=self._cwd,
            env=env,
            start_new_session=True,
            umask=child_umask(),
        )
        self.pid = process.pid
        assert process.stdout is not None and process.stdin is not None
        assert process.stderr is not None
        self._stdout_stream = TextReceiveStream(process.stdout)
        self._stderr_stream = TextReceiveStream(process.stderr)
        self._stderr_task = spawn_detached(self._handle_stderr())
        self._stdin_stream = TextSendStream(process.stdin)
        self._ready = True

    def running(self) -> bool:
        """Whether the CLI can be written to: started, not ended."""
        return self._ready and self._process is not None and self._process.returncode is None

    def kill_group(self) -> None:
        """SIGKILL whatever the CLI left running in its group (a command it started)."""
        if self.pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
            self.pid = None
