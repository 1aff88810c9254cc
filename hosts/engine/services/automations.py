"""What other processes ask of the automations (services by name, calls.py)."""

from __future__ import annotations

from typing import Any

from ..host import Host
from .caller import Caller


async def do_automation_claimed(
    host: Host, caller: Caller, automation: str, runs: list[str]
) -> dict[str, Any]:
    """Runs claimed for `automation` elsewhere (a Celery worker): read again and started. Only
    the deployment's own principal asks this (the layer is the trust boundary)."""
    caller.may("automation:run")
    if host.automations is not None:
        await host.automations.claimed(automation, [str(r) for r in runs])
    return {"started": len(runs)}
