"""The engine's one clock, so reducers and tests agree on what now is."""

from __future__ import annotations

import time


def now_ms() -> int:
    return int(time.time() * 1000)
