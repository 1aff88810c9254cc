"""The replay ring: the newest envelopes, bounded by count and by bytes."""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from ..protocol.versions import Version

#: An action (or a channel's state) as one principal is shown it, where that is less than all
#: of it: an automation entry's operations are the ones their grants allow.
View = Callable[[Any, Any], Any]


def seen(envelope_text: str, principal: Any, views: Mapping[str, View]) -> str:
    """An envelope (ringed, or being said) as `principal` is told it: through its action's
    view, where it has one."""
    envelope = orjson.loads(envelope_text)
    view = views.get(envelope["action"]["type"])
    if view is None:
        return envelope_text
    envelope["action"] = view(principal, envelope["action"])
    return orjson.dumps(envelope).decode()


@dataclass(frozen=True, slots=True)
class Entry:
    server_seq: int
    channel: str
    #: The envelope as JSON text: the `params` of the `action` notification.
    envelope: str
    #: The frame's length, the weight the byte bound counts.
    size: int
    introduced_in: Version | None
    #: The client whose dispatch this answers, told even when it watches no such channel.
    sender: str | None
    #: What a connection must hold to be told it (grants.TOLD), if anything.
    grant: str | None = None
    #: Said to its sender alone (an echo that moved nothing): replayed to nobody else.
    sender_only: bool = False
    #: Told through its action's view (fanout.action_views): replayed through it too.
    viewed: bool = False

    def owed(
        self,
        client_id: str,
        watched: set[str],
        version: Version | None,
        may: Callable[[str], bool],
    ) -> bool:
        """Whether a client coming back at `version`, watching `watched`, is replayed this: one
        it must hold a grant to be told, only with that grant; on a channel it watches, its own
        dispatch's answer, or what its version knows and was said to all; elsewhere, only its own
        answer (whether it may read that channel now is the caller's to check).
        """
        if self.grant is not None and not may(self.grant):
            return False
        own = self.sender is not None and self.sender == client_id
        if self.channel not in watched:
            return own
        return own or (
            not self.sender_only
            and self.introduced_in is not None
            and version is not None
            and self.introduced_in <= version
        )


class ReplayRing:
    """Holds the last `max_count` envelopes, or fewer when they pass `max_bytes()` together.

    `max_bytes` is read at every append, so a pushed `replayBytes` takes effect on the next one.
    0 means no byte bound. The newest envelope is kept whatever it weighs.
    """

    def __init__(self, max_count: int, max_bytes: Callable[[], int]) -> None:
        self._entries: deque[Entry] = deque()
        self._bytes = 0
        self._max_count = max_count
        self._max_bytes = max_bytes

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def bytes(self) -> int:
        return self._bytes

    @property
    def oldest_seq(self) -> int | None:
        return self._entries[0].server_seq if self._entries else None

    def append(self, entry: Entry) -> None:
        self._entries.append(entry)
        self._bytes += entry.size
        limit = self._max_bytes()
        while len(self._entries) > 1 and (
            len(self._entries) > self._max_count or (limit and self._bytes > limit)
        ):
            self._bytes -= self._entries.popleft().size

    def covers(self, last_seen: int, current: int) -> bool:
        """Whether every envelope after `last_seen` is still held."""
        oldest = self.oldest_seq
        return oldest is None or last_seen >= current or last_seen >= oldest - 1

    def since(self, last_seen: int) -> Iterator[Entry]:
        """Envelopes with serverSeq greater than `last_seen`, oldest first."""
        if not self._entries or last_seen >= self._entries[-1].server_seq:
            return iter(())
        # Found by serverSeq, not by arithmetic: the fan-out takes a serverSeq only for an
        # envelope it rings, but a replay that assumed no gaps would skip envelopes silently.
        start = bisect_right(self._entries, last_seen, key=_seq)
        return (self._entries[i] for i in range(start, len(self._entries)))


def _seq(entry: Entry) -> int:
    return entry.server_seq
