"""The root channel's config, as a client changes it."""

from __future__ import annotations

from typing import Any

from ..host import Host
from .caller import Caller


async def do_change_root_config(host: Host, caller: Caller, action: dict[str, Any]) -> str | None:
    """A client's root/configChanged, committed before it is said; why not, or None. One that
    moves a value is on the audit trail, naming the keys it moved."""
    before = host.root_values_ahead()
    reason = await host.change_root_config(action, origin=caller.origin, sender=caller.sender)
    if reason is None:
        after = host.root_values_ahead()
        moved = sorted(k for k in {*before, *after} if before.get(k) != after.get(k))
        if moved:
            # Kept with the write-behind round that commits the change (a burst of pushes is
            # one insert), not awaited here: every push waited on an insert of its own.
            host.audit_later(caller.act("rootConfig.changed", "root", "config", keys=moved))
    return reason
