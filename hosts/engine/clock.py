"""The engine's one clock, so reducers and tests agree on what now is, its one spelling of an
instant (the protocol's ISO-8601 timestamps), and how a part puts something off (`Later`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import lru_cache
from typing import Protocol


def now_ms() -> int:
    return int(time.time() * 1000)


@lru_cache(maxsize=1 << 17)
def iso(ms: int) -> str:
    """Epoch milliseconds as the ISO-8601 text the protocol's timestamps use."""
    return (
        datetime.fromtimestamp(ms / 1000, UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


class Cancellable(Protocol):
    def cancel(self) -> None: ...


#: How something is put off: (delay in seconds, what to call) -> a handle that calls it off.
#: A test hands its own, to move time on by hand.
Later = Callable[[float, Callable[[], None]], Cancellable]


def call_later(delay: float, callback: Callable[[], None]) -> Cancellable:
    """The running loop's timer."""
    return asyncio.get_running_loop().call_later(delay, callback)
