"""The Celery task beat fires every few seconds: claim the due runs, and ask the server to
start them through the engine client (from a worker: over the channel layer to the server's
engine; hosts/edge/engine_client.py).

Nothing is claimed unless the server answers first: a due time claimed while no server runs
would be a pending run nobody starts, failed at the server's next start (a pending run then
may be one its last process had begun, its session perhaps made, and the store cannot tell
the two apart: starting it again could run one due time twice). Left unclaimed, it is claimed
once the server is back, on time or caught up as its trigger's misfirePolicy says.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from celery import shared_task
from django.conf import settings

from hosts.edge import engine_client
from hosts.engine.principal import root
from hosts.protocol.errors import ProtocolError

from .store import claim_due

log = logging.getLogger("ahpd.automations")

#: How long the server has to say it is there before a tick claims nothing.
HERE_TIMEOUT_S = 5.0
#: How long it has to take one automation's claimed runs.
CLAIMED_TIMEOUT_S = 30.0


@shared_task(name="automations.tasks.fire_due_automations", ignore_result=True)
def fire_due_automations() -> int:
    """Claim what is due now (each due time once, whoever else claims it) and have the
    engine start it, through the engine client; how many runs the engine took."""
    principal = root(settings.AHPD_HOST_NAME)
    try:
        engine_client.perform("automations_here", principal, timeout=HERE_TIMEOUT_S)
    except (ProtocolError, engine_client.EngineUnavailable) as exc:
        log.warning("no automation claimed: the server did not answer (%s)", exc)
        return 0
    taken = 0
    for uri, runs in claim_due(datetime.now(UTC)):
        # Each on its own: one the server was slow to take leaves the others to be told.
        try:
            engine_client.perform(
                "automation_claimed",
                principal,
                timeout=CLAIMED_TIMEOUT_S,
                automation=uri,
                runs=runs,
            )
        except Exception:
            log.exception(
                "the server was not told of %s's claimed runs %s: they stay pending until it "
                "reads its channel, or read back failed at its next start",
                uri,
                runs,
            )
            continue
        taken += len(runs)
    return taken
