"""The AHP 1.0.0 notification registry: every JSON-RPC notification method, its direction and
the protocol version that introduced it.

Source of truth: ``NOTIFICATION_INTRODUCED_IN`` in ``types/version/registry.ts`` of the public
repository ``microsoft/agent-host-protocol`` (read at commit 0383429, just after 1.0.0). That
map covers the server -> client protocol notifications; its 1.1.0 entries (``channel/frame``,
``channel/credit``, ``channel/ready``, ``channel/reset``, ``channel/snapshot``, ``tcp/data``,
``tcp/eof``: windowed delivery and TCP forwarding) are not part of 1.0.0 and are left out.

Three methods are outside that map: ``action`` (the action envelope; its payload is versioned
per action type by ``ACTION_INTRODUCED_IN``, see :mod:`hosts.protocol.actions`) and the
client -> server notifications ``dispatchAction`` and ``unsubscribe``. All three are part of the
protocol from its first version, so they are recorded here as introduced in 0.1.0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal

__all__ = [
    "NOTIFICATIONS",
    "NotificationSpec",
    "notification_known_to",
    "notification_spec",
]

Version = tuple[int, int, int]
Direction = Literal["server", "client"]


@dataclass(frozen=True, slots=True)
class NotificationSpec:
    """One notification method of the protocol."""

    method: str
    """JSON-RPC method name, e.g. ``"root/sessionAdded"``."""
    direction: Direction
    """Who sends it: ``"server"`` (server -> client) or ``"client"`` (client -> server)."""
    introduced_in: Version
    """The protocol's ``NOTIFICATION_INTRODUCED_IN`` (0.1.0 for methods outside that map)."""


_TABLE: Final[tuple[NotificationSpec, ...]] = (
    # server -> client
    NotificationSpec("action", "server", (0, 1, 0)),
    NotificationSpec("root/sessionAdded", "server", (0, 1, 0)),
    NotificationSpec("root/sessionRemoved", "server", (0, 1, 0)),
    NotificationSpec("root/sessionSummaryChanged", "server", (0, 1, 0)),
    NotificationSpec("root/progress", "server", (0, 5, 0)),
    NotificationSpec("auth/required", "server", (0, 1, 0)),
    NotificationSpec("otlp/exportLogs", "server", (0, 2, 0)),
    NotificationSpec("otlp/exportTraces", "server", (0, 2, 0)),
    NotificationSpec("otlp/exportMetrics", "server", (0, 2, 0)),
    # client -> server (notifications, so no response: the echo of a dispatched action is its ack)
    NotificationSpec("dispatchAction", "client", (0, 1, 0)),
    NotificationSpec("unsubscribe", "client", (0, 1, 0)),
)

#: Every notification method of AHP 1.0.0, keyed by method name. Read-only.
NOTIFICATIONS: Final[Mapping[str, NotificationSpec]] = MappingProxyType(
    {spec.method: spec for spec in _TABLE}
)


def notification_spec(method: str) -> NotificationSpec | None:
    """The spec of ``method``, or ``None`` for a method 1.0.0 does not define."""
    return NOTIFICATIONS.get(method)


def notification_known_to(method: str, version: tuple[int, int, int]) -> bool:
    """Whether a peer that negotiated ``version`` knows ``method`` (``introduced_in <= version``).

    Mirrors the protocol's ``isNotificationKnownToVersion``; an unknown method is known to no
    version.
    """
    spec = NOTIFICATIONS.get(method)
    return spec is not None and spec.introduced_in <= version
