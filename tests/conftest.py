"""Fixtures shared by every test package."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from tests.support.client import Client
from tests.support.server import ServerProcess


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    """One started server shared by the end-to-end tests of a module."""
    process = ServerProcess().start()
    yield process
    process.close()


@pytest.fixture
async def connect() -> AsyncIterator[Callable[..., Any]]:
    """Open clients that are closed, and checked against the schemas, after the test."""
    clients: list[Client] = []

    async def open_client(url: str, **kwargs: Any) -> Client:
        client = await Client.open(url, **kwargs)
        clients.append(client)
        return client

    yield open_client
    for client in clients:
        await client.close()
    for client in clients:
        client.assert_schema_clean()
