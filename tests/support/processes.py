"""The agent processes a server under test runs, read from /proc, and waiting for one to exit.

A process's exit is waited for as an event (a pidfd that becomes readable when it exits), never
by polling or sleeping.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path

from tests.support.agents import ACP_AGENT
from tests.support.server import ServerProcess


def children(parent: int, marker: str) -> set[int]:
    """The live (not yet exited) children of `parent` whose command line holds `marker`."""
    found: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue  # gone meanwhile
        # comm may hold spaces and parentheses: the fields after it follow the last ')'.
        state, ppid = stat.rpartition(")")[2].split()[:2]
        if int(ppid) == parent and state not in ("Z", "X") and marker in cmdline:
            found.add(int(entry.name))
    return found


async def exited(pid: int, timeout: float = 30.0) -> None:
    """Return once process `pid` has exited (at once if it has already)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    loop.add_reader(fd, lambda: done.done() or done.set_result(None))
    try:
        await asyncio.wait_for(done, timeout)
    finally:
        loop.remove_reader(fd)
        with contextlib.suppress(OSError):
            os.close(fd)


def agents_of(server: ServerProcess) -> set[int]:
    """The fake ACP agent processes the server runs now."""
    return children(server.pid, ACP_AGENT.name)
