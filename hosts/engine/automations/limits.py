"""How much one automation and one person's automations may hold and start, so no one person's
automations crowd out everyone else's: the schedules one automation carries, the automations
one person keeps, and the runs one person's automations start in a rolling hour.

Each bound is a setting (HostSettings; 0 sets none) and each refusal names it, here, once: the
catalogue asks these for every way in (the socket's actions and runAutomation, REST, the
admin, the scheduler and Celery alike). A person is `user:<id>`; root's automations (the
deployment's own token, the command line) answer to the operator and are held to the
schedules bound alone.
"""

from __future__ import annotations

from typing import Any

#: The settings each bound is read from, named in its refusal.
TRIGGERS_SETTING = "AHPD_AUTOMATION_TRIGGERS_MAX"
PER_PERSON_SETTING = "AHPD_AUTOMATIONS_PER_PERSON"
RUNS_SETTING = "AHPD_AUTOMATION_RUNS_PER_HOUR"

#: The rolling window the runs bound counts over.
WINDOW_MS = 3_600_000
#: A scheduled run the window refused fails with this errorType; such a run started nothing,
#: so it is not counted against the window (else refusals would keep the window full).
RUN_LIMIT_ERROR = "runLimitReached"


def is_person(owner: str) -> bool:
    return owner.startswith("user:")


def triggers_refusal(definition: Any, most: int) -> str | None:
    """Why a definition carries more schedules than one automation may, or None."""
    triggers = definition.get("triggers") if isinstance(definition, dict) else None
    if not most or not isinstance(triggers, list) or len(triggers) <= most:
        return None
    return (
        f"triggers: {len(triggers)} triggers, more than one automation may carry "
        f"({TRIGGERS_SETTING}={most})"
    )


def kept_refusal(owner: str, kept: int, most: int) -> str | None:
    """Why `owner`, who keeps `kept` automations, may not keep one more, or None."""
    if not most or not is_person(owner) or kept < most:
        return None
    return (
        f"{owner} already keeps {kept} automations, the most one person may "
        f"({PER_PERSON_SETTING}={most}): remove one first"
    )


def runs_refusal(owner: str, started: int, most: int) -> str | None:
    """Why `owner`'s automations, which started `started` runs in the last hour, may not
    start one more now, or None."""
    if not most or not is_person(owner) or started < most:
        return None
    return (
        f"{owner}'s automations started {started} runs in the last hour, the most one "
        f"person's may start in an hour ({RUNS_SETTING}={most})"
    )
