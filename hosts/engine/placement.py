"""Which engine holds a session: the one seam sharding sessions over processes would change.

Today one engine holds every session (`HereOnly`). A sharded deployment answers `holder` from
its own map and gives the host a `Relay` that carries a service call to the engine named,
over the channel layer (Redis between processes), so the services never change.
"""

from __future__ import annotations

from typing import Any, Protocol

from .principal import Principal


class Placement(Protocol):
    def holder(self, uri: str) -> str | None:
        """The engine that holds the session (or chat) a URI names; None for this one."""
        ...

    def place_new(self) -> str | None:
        """The engine a new session is made on; None for this one."""
        ...


class Relay(Protocol):
    async def call(
        self, engine: str, service: str, principal: Principal, args: dict[str, Any]
    ) -> Any:
        """Run a service by name on another engine, as `principal`, and return its answer."""
        ...


class HereOnly:
    """Every session is this engine's."""

    def holder(self, uri: str) -> str | None:
        return None

    def place_new(self) -> str | None:
        return None
