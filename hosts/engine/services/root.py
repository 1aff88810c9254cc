"""The root channel's config, as a client changes it."""

from __future__ import annotations

from typing import Any

from ..host import Host
from .caller import Caller


async def do_change_root_config(host: Host, caller: Caller, action: dict[str, Any]) -> str | None:
    """A client's root/configChanged, committed before it is said; why not, or None."""
    return await host.change_root_config(action, origin=caller.origin, sender=caller.sender)
