"""A channel: a URI, the kind of state it holds, that state, and who watches it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..protocol.shapes import Snapshot


@dataclass(eq=False, slots=True)
class Channel:
    uri: str
    kind: str
    #: Held state: the protocol's reducer applied to every accepted action, from a seed.
    state: Any
    #: Insertion-ordered set of subscribed connections (fanout.Connection; typed loosely here
    #: so a channel needs nothing of a connection's module).
    subscribers: dict[Any, None] = field(default_factory=dict)

    def snapshot(self, server_seq: int, resource: str | None = None) -> Snapshot:
        return {"resource": resource or self.uri, "state": self.state, "fromSeq": server_seq}
