"""The engine's McpServerDirectory port (hosts/engine/ports.py) over the registry: which MCP
servers a session is offered when it opens. The operator's AHPD_CONFIG servers first (the
composition root hands them over, as hosts/edge/runtime.py read them at start), then the
registry's enabled rows offered host-wide, to the session's owner, to its scope, and, for a
project's session, to the project's team. A row whose name the file has is left out: the file's
is the host's own. A running session keeps what it was offered when it opened, so nothing here
tells the engine of a change."""

from __future__ import annotations

from collections.abc import Iterable

from hosts.backends.base import McpServerSpec
from hosts.store.engine_database import db_call
from hosts.store.project_teams import teams_of_projects

from .models import McpServer
from .registry import spec_of


def audience(owner: str, scope: str) -> set[str]:
    """The refs a session of `owner` in `scope` is offered what is offered to: the person, the
    scope, and a project's team."""
    refs = {ref for ref in (owner, scope) if ref.startswith(("user:", "team:", "project:"))}
    kind, _, slug = scope.partition(":")
    if kind == "project":
        team = teams_of_projects([slug]).get(slug)
        if team is not None:
            refs.add(f"team:{team}")
    return refs


def offered_rows(owner: str, scope: str) -> list[McpServerSpec]:
    """The registry's servers a session of `owner` in `scope` is offered, by name."""
    refs = audience(owner, scope)
    return [
        spec_of(row)
        for row in McpServer.objects.filter(enabled=True).order_by("name")
        if row.host_wide or refs.intersection(row.offered_to)
    ]


class DjangoMcpDirectory:
    """The file's servers and the registry's, read when a session opens, on the engine's own
    database executor."""

    def __init__(self, listed: Iterable[McpServerSpec] = ()) -> None:
        self.listed = tuple(listed)

    async def offered(self, owner: str, scope: str) -> list[McpServerSpec]:
        rows: list[McpServerSpec] = await db_call(offered_rows)(owner, scope)
        taken = {spec.name for spec in self.listed}
        return [*self.listed, *(spec for spec in rows if spec.name not in taken)]
