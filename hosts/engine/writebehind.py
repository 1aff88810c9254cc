"""Write-behind: durable writes leave the delivery path and are coalesced by key."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger("ahpd.engine")

Write = Callable[[], Awaitable[None]]


class WriteBehind:
    """Runs the latest write for each key, in the background, in the order keys were dirtied.

    Writes wait `delay` seconds after the first one is scheduled, so a burst of changes to one
    key (a config pushed at every keystroke, a stream of flags) costs one write.
    """

    def __init__(self, delay: float = 0.25) -> None:
        self._delay = delay
        self._pending: dict[str, Write] = {}
        self._wanted = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="ahpd-write-behind")

    def later(self, key: str, write: Write) -> None:
        """Schedule `write` for `key`, replacing a write for the same key not yet run.

        A replaced write keeps its key's place, so a row is never written after one that
        refers to it (a chat after its session) because the session was touched again.
        """
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
            if self._delay:
                await asyncio.sleep(self._delay)
            self._wanted.clear()
            # One round writes what was pending when it began; what is scheduled meanwhile
            # waits for the next round, so a steady stream of changes is still coalesced.
            batch, self._pending = self._pending, {}
            for key, write in batch.items():
                try:
                    await write()
                except Exception:
                    log.exception("write-behind of %s failed", key)
            if not self._pending:
                self._idle.set()
