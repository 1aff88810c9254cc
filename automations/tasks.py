"""The Celery task beat fires every few seconds: claim the due runs, and ask the server to
start them through the channel layer (the engine reads ENGINE_CHANNEL; relay.py)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from asgiref.sync import async_to_sync
from celery import shared_task
from channels.layers import get_channel_layer
from django.conf import settings

from hosts.edge.relay import LayerRelay
from hosts.edge.runtime import ENGINE_CHANNEL
from hosts.engine.principal import root

from .store import claim_due

log = logging.getLogger("ahpd.automations")


@shared_task(name="automations.tasks.fire_due_automations", ignore_result=True)
def fire_due_automations() -> int:
    """Claim what is due now (each due time once, whoever else claims it) and have the
    engine start it; how many runs were claimed."""
    moved = claim_due(datetime.now(UTC))
    if not moved:
        return 0
    layer = get_channel_layer()
    if layer is None:
        log.error("no channel layer: %d automations' claimed runs cannot be started", len(moved))
        return 0
    relay = LayerRelay(layer, timeout_s=30.0)
    principal = root(settings.AHPD_HOST_NAME)
    claimed = 0
    for uri, runs in moved:
        async_to_sync(relay.call)(
            ENGINE_CHANNEL, "automation_claimed", principal, {"automation": uri, "runs": runs}
        )
        claimed += len(runs)
    return claimed
