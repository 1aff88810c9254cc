"""The ports through which the engine reaches what it does not own (the database, mostly)."""

from __future__ import annotations

from typing import Any, Protocol


class Store(Protocol):
    """Durable facts the engine keeps. Implemented over Django's ORM in `hosts.store`."""

    async def load_root_config(self) -> dict[str, Any]: ...

    async def save_root_config(self, values: dict[str, Any]) -> None: ...


class MemoryStore:
    """A store that keeps everything for the life of the process (engine tests, benchmarks)."""

    def __init__(self) -> None:
        self.root_config: dict[str, Any] = {}

    async def load_root_config(self) -> dict[str, Any]:
        return dict(self.root_config)

    async def save_root_config(self, values: dict[str, Any]) -> None:
        self.root_config = dict(values)


class Transport(Protocol):
    """One client's socket, as the engine sees it.

    `send` must not wait for the peer to read: the engine bounds what a slow client holds by
    asking `buffered` before each frame, and closes the client past its limit.
    """

    async def send(self, text: str) -> None: ...

    async def send_batch(self, texts: list[str]) -> None:
        """Send several frames in order, as one write where the transport can."""
        ...

    async def close(self, code: int, reason: str) -> None: ...

    async def abort(self) -> None:
        """Drop the socket at once, discarding whatever it still holds unsent."""
        ...

    def buffered(self) -> int | None:
        """Bytes written to this socket and not yet taken by the kernel, or None if unknown."""
        ...
