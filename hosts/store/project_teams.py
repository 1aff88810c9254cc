"""Which team holds each project, and which teams there are: what another app reads of hosts'
teams and projects (usage names a project's pool by its team, and refuses a pool that names
none), so it never reads hosts' tables itself."""

from __future__ import annotations

from collections.abc import Iterable

from ..models import Project, Team


def teams_of_projects(slugs: Iterable[str]) -> dict[str, str]:
    """Each project's team slug, by project slug; a slug no project has is left out."""
    rows = Project.objects.filter(slug__in=list(slugs)).values_list("slug", "team__slug")
    return {slug: team for slug, team in rows}


def team_known(slug: str) -> bool:
    """Whether a team of this slug is there."""
    return Team.objects.filter(slug=slug).exists()
