"""A channel: a URI, the kind of state it holds, that state, and who watches it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .connection import Connection


@dataclass(eq=False, slots=True)
class Channel:
    uri: str
    kind: str
    #: Held state: the protocol's reducer applied to every accepted action, from a seed.
    state: Any
    #: Insertion-ordered set of subscribed connections.
    subscribers: dict[Connection, None] = field(default_factory=dict)

    def snapshot(self, server_seq: int, resource: str | None = None) -> dict[str, Any]:
        return {"resource": resource or self.uri, "state": self.state, "fromSeq": server_seq}
