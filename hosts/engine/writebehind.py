"""Write-behind: durable writes leave the delivery path and are coalesced by key."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger("ahpd.engine")

Write = Callable[[], Awaitable[None]]
Say = Callable[[], None]


class WriteBehind:
    """Runs the latest write for each key, in the background, in the order keys were dirtied.

    Writes wait `delay` seconds after the first one is scheduled, so a burst of changes to one
    key (a config pushed at every keystroke, a stream of flags) costs one write. What a client
    would miss after a crash is committed with `flush` before it is said instead.
    """

    def __init__(self, delay: float = 0.25) -> None:
        self._delay = delay
        self._pending: dict[str, Write] = {}
        #: What waits to be said once what was scheduled before it is committed (`then_say`),
        #: in the order asked, each with the future its asker may wait on.
        self._to_say: list[tuple[Say, asyncio.Future[None]]] = []
        self._sayer: asyncio.Task[None] | None = None
        self._wanted = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        #: One round writes at a time, so a flush never overtakes a write scheduled before it.
        self._round = asyncio.Lock()
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

    async def flush(self) -> None:
        """Run every scheduled write now, in its order, and return once they have run.

        For the rare facts a client must not lose once told (a turn's end, a session made,
        root config changed): everything scheduled before goes first, so the row a fact refers
        to is there when it is written.
        """
        # A task of its own, shielded: a caller that stops waiting (its request timed out)
        # leaves the round to finish, and the writes behind it with it.
        await asyncio.shield(asyncio.create_task(self._locked_round()))

    def then_say(self, say: Say) -> asyncio.Future[None]:
        """Run `say` once everything scheduled so far is committed, without waiting here: a
        group commit. Facts that arrive while one commit runs wait for the next, which covers
        them all, so a burst of them costs one round (one write per key) rather than one
        each; each is said in the order asked, after its commit. The future is done once
        `say` ran (a failed write is logged, as every write here, and the fact still said).
        """
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._to_say.append((say, done))
        if self._sayer is None:
            self._sayer = asyncio.create_task(self._say_committed(), name="ahpd-group-commit")
        return done

    async def _say_committed(self) -> None:
        try:
            while self._to_say:
                batch, self._to_say = self._to_say, []
                await self._locked_round()
                for say, done in batch:
                    try:
                        say()
                    except Exception:
                        log.exception("saying a committed fact failed")
                    if not done.done():
                        done.set_result(None)
        finally:
            self._sayer = None

    async def _locked_round(self) -> None:
        async with self._round:
            await self._write_pending()

    async def drain(self) -> None:
        """Wait until every scheduled write has run, and every fact waiting on one is said."""
        while self._sayer is not None:
            await asyncio.shield(self._sayer)
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
            await self._locked_round()

    async def _write_pending(self) -> None:
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
