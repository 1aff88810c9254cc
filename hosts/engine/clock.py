"""The engine's one clock, so reducers and tests agree on what now is, and its one spelling
of an instant (the protocol's ISO-8601 timestamps)."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from functools import lru_cache


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
