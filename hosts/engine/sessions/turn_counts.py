"""What the host's turns came to, counted and logged as each starts and ends: for the
operator's figures (engine/host_status.py) and log, never read on a turn's own path."""

from __future__ import annotations

import logging
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass, field

log = logging.getLogger("ahpd.turns")

#: Upper bounds (seconds) of the turn-duration buckets: an answer, a task, a long job.
DURATION_BUCKETS: tuple[float, ...] = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600)

#: A turn's endings: the protocol's three.
ENDINGS = ("complete", "cancelled", "error")


@dataclass
class Durations:
    """One provider's turn durations: a count per bucket (the last is past every bound)."""

    buckets: list[int] = field(default_factory=lambda: [0] * (len(DURATION_BUCKETS) + 1))
    total_s: float = 0.0
    count: int = 0

    def add(self, seconds: float) -> None:
        self.buckets[bisect_left(DURATION_BUCKETS, seconds)] += 1
        self.total_s += seconds
        self.count += 1

    def cumulative(self) -> list[tuple[float, int]]:
        """(bound, turns that took at most that long), the last bound +inf: Prometheus's."""
        running, out = 0, []
        for bound, count in zip([*DURATION_BUCKETS, float("inf")], self.buckets, strict=True):
            running += count
            out.append((bound, running))
        return out


@dataclass
class TurnCounts:
    """Turns started, ended (by provider and ending), backend failures and durations."""

    started: Counter[str] = field(default_factory=Counter)
    finished: Counter[tuple[str, str]] = field(default_factory=Counter)
    backend_errors: Counter[str] = field(default_factory=Counter)
    durations: dict[str, Durations] = field(default_factory=dict)

    def start(self, provider: str, turn: str, chat: str, sender: str | None) -> None:
        self.started[provider] += 1
        log.info(
            "turn %s started in %s (%s) by %s",
            turn,
            chat,
            provider,
            sender or "nobody named",
            extra={"turn": turn, "chat": chat, "provider": provider, "sender": sender},
        )

    def end(
        self,
        provider: str,
        turn: str,
        chat: str,
        ending: str,
        seconds: float,
        *,
        error_type: str | None,
    ) -> None:
        """A turn's end: `error_type` is its error's (backendError counts as the backend's
        failure; executionInterrupted, the host going away, does not)."""
        self.finished[provider, ending] += 1
        if error_type == "backendError":
            self.backend_errors[provider] += 1
        self.durations.setdefault(provider, Durations()).add(seconds)
        log.info(
            "turn %s in %s ended %s after %.1f s%s",
            turn,
            chat,
            ending,
            seconds,
            f" ({error_type})" if error_type else "",
            extra={
                "turn": turn,
                "chat": chat,
                "provider": provider,
                "ending": ending,
                "errorType": error_type,
                "seconds": round(seconds, 3),
            },
        )
