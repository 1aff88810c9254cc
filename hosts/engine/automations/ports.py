"""The automation store port: what the engine keeps of automations and their runs.

Records are plain dicts. An automation: uri, owner, definition, created_ms, modified_ms,
cursors ({triggerId: ISO instant last evaluated}), run_count, next_run_at (ISO or None). A
run: uri, automation, owner, origin, lifecycle, sessions, primary_session (or None),
request_id (or None), node (the node that runs it, where a host has several; "" for none).
Implemented over the ORM in `automations/store.py`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from ..principal import Principal


class AutomationStore(Protocol):
    async def load_automations(self) -> list[dict[str, Any]]: ...

    async def load_automation(self, uri: str) -> dict[str, Any] | None: ...

    async def save_automation(self, record: dict[str, Any]) -> None: ...

    async def delete_automation(self, uri: str) -> None: ...

    async def load_runs(self, automation: str, limit: int) -> list[dict[str, Any]]:
        """The automation's newest `limit` runs, newest first."""
        ...

    async def load_run(self, uri: str) -> dict[str, Any] | None: ...

    async def add_run(self, run: dict[str, Any]) -> dict[str, Any]:
        """Keep a manual run; the one kept already under its request_id, where there is one."""
        ...

    async def save_run(self, run: dict[str, Any]) -> None: ...

    async def runs_started(self, owner: str, since_ms: int, besides: list[str]) -> int:
        """How many runs of `owner`'s automations were made since `since_ms` (epoch ms), those
        the runs window refused (limits.RUN_LIMIT_ERROR) and those in `besides` left out."""
        ...

    async def fail_unfinished_runs(
        self, message: str, kept: tuple[str, ...] = (), *, blank: bool = True
    ) -> list[str]:
        """Every run kept pending or running, failed with `message`, but those the nodes in
        `kept` run (and those no node took, unless `blank`); the automations whose runs
        moved."""
        ...

    async def take_runs(self, uris: list[str], node: str) -> None:
        """Runs no node took yet (claimed by a Celery worker) are `node`'s now."""
        ...

    async def claim_due(self, now: datetime) -> list[tuple[str, list[str]]]:
        """Claim the scheduled runs due at `now`, each once whoever else claims; for each
        automation that moved, (its uri, the runs claimed for it)."""
        ...

    async def owner_principal(self, ref: str) -> Principal | None:
        """Who `user:<id>` is now (their grants), or None for someone no longer here."""
        ...
