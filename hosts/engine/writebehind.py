"""Write-behind: durable writes leave the delivery path and are coalesced by key."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger("ahpd.engine")

Write = Callable[[], Awaitable[None]]


class WriteBehind:
    """Runs the latest write for each key, in the background, in the order keys were dirtied."""

    def __init__(self) -> None:
        self._pending: dict[str, Write] = {}
        self._wanted = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="ahpd-write-behind")

    def later(self, key: str, write: Write) -> None:
        """Schedule `write` for `key`, replacing a write for the same key not yet run."""
        self._pending.pop(key, None)
        self._pending[key] = write
        self._idle.clear()
        self._wanted.set()

    async def drain(self) -> None:
        """Wait until every scheduled write has run."""
        await self._idle.wait()

    async def stop(self) -> None:
        if self._task is None:
            return
        await self.drain()
        self._task.cancel()
        self._task = None

    async def _run(self) -> None:
        while True:
            await self._wanted.wait()
            self._wanted.clear()
            while self._pending:
                key = next(iter(self._pending))
                write = self._pending.pop(key)
                try:
                    await write()
                except Exception:
                    log.exception("write-behind of %s failed", key)
            self._idle.set()
