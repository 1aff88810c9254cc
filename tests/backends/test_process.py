"""Children start with the umask the server was started with, not the server's own 077."""

from __future__ import annotations

import asyncio
import os

from hosts.backends import process


async def test_a_child_gets_the_umask_the_server_handed_on():
    before = os.umask(0o077)
    process.set_child_umask(0o022)
    try:
        child = await process.start_group(
            ["sh", "-c", "umask"], cwd="/", env=os.environ, stdout=asyncio.subprocess.PIPE
        )
        out, _ = await child.communicate()
    finally:
        process.set_child_umask(-1)
        os.umask(before)
    assert out.decode().strip() == "0022"
