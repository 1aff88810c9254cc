"""Fixtures of the API tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from hosts.edge import engine_client, runtime
from hosts.engine.host import Host


@pytest.fixture
def engine_here(settings: Any) -> Iterator[None]:
    """This process's engine, started on a thread of its own by the first view that asks for
    it (as in a process with no server loop), and stopped after the test. A test using it
    needs `django_db(transaction=True)`: the engine reads the database from its own thread."""
    settings.AHPD_CONFIG = None
    runtime.configured_agents.cache_clear()
    runtime.configured_mcp_servers.cache_clear()
    yield
    if runtime._host is not None:

        async def stop(host: Host) -> None:
            # The engine's database threads let go of their connections too: the test
            # database can be dropped.
            await runtime.shutdown()

        engine_client.read(stop, what="the engine stopped")
    loop = runtime._loop
    runtime._host = runtime._router = runtime._loop = runtime._inbox = None
    if loop is not None:
        loop.call_soon_threadsafe(loop.stop)
    runtime.configured_agents.cache_clear()
    runtime.configured_mcp_servers.cache_clear()
