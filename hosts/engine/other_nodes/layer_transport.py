"""A connection whose frames go to another node, as the fan-out's transport: frames are taken
at once and sent in order over the channel layer by a task of their own, every frame waiting
then in one layer message; the end is said after the last of them (a close) or at once,
what waits dropped (an abort). A send that fails ends it: what followed could only arrive
after a gap.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from ..placement import Relay

log = logging.getLogger("ahpd.nodes")


class LayerTransport:
    def __init__(
        self,
        relay: Relay,
        inbox: str,
        framed: Callable[[list[str]], dict[str, Any]],
        ended: Callable[[int | None, str], dict[str, Any]],
    ) -> None:
        """Frames go to `inbox` as `framed(frames)` says them; the end as `ended(code,
        reason)` does (code None: dropped, not closed)."""
        self._relay = relay
        self._inbox = inbox
        self._framed = framed
        self._ended = ended
        #: Told once a send failed (the end is then said, where the other node hears it).
        self.on_failed: Callable[[], None] = lambda: None
        self._waiting: list[str] = []
        self._bytes = 0
        self._wanted = asyncio.Event()
        self._closed = False
        self._end: dict[str, Any] | None = None
        self._task = asyncio.get_running_loop().create_task(self._send_loop())

    def write_now(self, texts: list[str]) -> bool:
        if self._closed:
            return True
        self._waiting.extend(texts)
        self._bytes += sum(map(len, texts))
        self._wanted.set()
        return True

    async def send_batch(self, texts: list[str]) -> None:
        self.write_now(texts)

    def buffered(self) -> int | None:
        return self._bytes

    async def close(self, code: int, reason: str) -> None:
        self._finish(self._ended(code, reason), drop=False)

    async def abort(self) -> None:
        self._finish(self._ended(None, "dropped"), drop=True)

    def _finish(self, end: dict[str, Any], *, drop: bool) -> None:
        if self._closed:
            return
        self._closed = True
        if drop:
            self._waiting, self._bytes = [], 0
        self._end = end
        self._wanted.set()

    async def _send_loop(self) -> None:
        while True:
            await self._wanted.wait()
            self._wanted.clear()
            frames, self._waiting, self._bytes = self._waiting, [], 0
            try:
                if frames:
                    await self._relay.send(self._inbox, self._framed(frames))
                if self._end is not None and not self._waiting:
                    await self._relay.send(self._inbox, self._end)
                    return
            except Exception:
                log.exception("sending to %s failed; what it was sent ends here", self._inbox)
                self._closed = True
                self.on_failed()
                try:
                    await self._relay.send(self._inbox, self._ended(None, "a send failed"))
                except Exception:
                    pass  # not there to hear it either
                return
