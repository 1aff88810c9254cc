"""The child processes backends start, each the leader of a process group of its own.

An agent, a terminal it asked for and a command a model wrote can all start processes of their
own; stopping only the one the host started would leave the rest running. So every child is
started in a new session (it leads its own process group) and is stopped by signalling the group.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .sandbox import Jail

#: The umask children start with (-1: the host's own). `serve` runs with 077, so that what the
#: server writes is its alone, and hands agents the one it was started with: the files an agent
#: writes in a person's workspace are as that person's shell would make them.
_child_umask = -1


def set_child_umask(mask: int) -> None:
    global _child_umask
    _child_umask = mask


def child_umask() -> int:
    """The umask children start with; -1: the host's own."""
    return _child_umask


def host_env(keys: Iterable[str]) -> dict[str, str]:
    """The host's values for `keys`: a child gets these, never the host's whole environment."""
    return {key: os.environ[key] for key in keys if key in os.environ}


async def start_group(
    argv: Sequence[str],
    *,
    cwd: str | Path,
    env: Mapping[str, str],
    jail: Jail | None = None,
    needs: Sequence[str] = (),
    **kwargs: Any,
) -> asyncio.subprocess.Process:
    """Start `argv` in `cwd` with exactly `env` as the leader of a new session and process
    group, in `jail` (a person's sandbox; None: as the server's user); `needs`: what it needs
    to start beyond the system (sandbox.py); `kwargs` go to the subprocess."""
    kwargs.setdefault("umask", _child_umask)
    if jail is not None:
        argv, env = jail.wrap(argv, cwd=cwd, env=env, needs=needs)
    return await asyncio.create_subprocess_exec(
        *argv, cwd=cwd, env=dict(env), start_new_session=True, **kwargs
    )


async def start_command(
    argv: Sequence[str], *, cwd: str | Path, env: Mapping[str, str], jail: Jail | None = None
) -> asyncio.subprocess.Process:
    """Start a command run for an agent: no input, its output and errors as one stream."""
    return await start_group(
        argv,
        cwd=cwd,
        env=env,
        jail=jail,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )


def kill_group(process: asyncio.subprocess.Process, sig: int = signal.SIGKILL) -> None:
    """Signal the process and everything it started, unless it has already been reaped."""
    if process.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


async def stop_group(
    process: asyncio.subprocess.Process,
    signals: Sequence[int] = (signal.SIGTERM, signal.SIGKILL),
    grace: float | None = None,
) -> None:
    """Signal the group with each of `signals` in turn until its leader exits.

    After each signal the leader is given `grace` seconds (None: as long as it takes).
    """
    for sig in signals:
        if process.returncode is not None:
            return
        kill_group(process, sig)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), grace)


def signal_name(returncode: int | None) -> str | None:
    """The name of the signal a process died of (a negative return code), else None."""
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return str(-returncode)
