"""`ahpd team add|rm|list` and `ahpd project add|rm|list`."""

from __future__ import annotations

from typing import Any, TypeVar

from django.core.management.base import CommandError
from django.db import transaction

from hosts.api.serializers import ProjectSerializer, TeamSerializer
from hosts.models import Project, Team

from .checks import valid
from .verbs import noun, verb

TeamOrProject = TypeVar("TeamOrProject", Team, Project)


def register(nouns: Any) -> None:
    team = noun(nouns, "team", "teams: people and projects grouped")
    add = verb(team, "add", "add a team", team_add)
    add.add_argument("slug", help="its slug (letters, digits, - and _)")
    add.add_argument("--name", default="", help="its name as people read it")
    rm = verb(
        team, "rm", "remove a team (refused while it has projects, unless --cascade)", team_rm
    )
    rm.add_argument("slug", help="the team's slug")
    rm.add_argument(
        "--cascade", action="store_true", help="remove its projects (and roles held in them) too"
    )
    verb(team, "list", "every team, with its projects", team_list)

    project = noun(nouns, "project", "projects: a team's pieces of work")
    add = verb(project, "add", "add a project to a team", project_add)
    add.add_argument("slug", help="its slug (letters, digits, - and _)")
    add.add_argument("--team", required=True, help="the team it belongs to (its slug)")
    add.add_argument("--name", default="", help="its name as people read it")
    rm = verb(project, "rm", "remove a project (and the roles held in it)", project_rm)
    rm.add_argument("slug", help="the project's slug")
    verb(project, "list", "every project, with its team", project_list)


def by_slug(model: type[TeamOrProject], noun: str, slug: str) -> TeamOrProject:
    """The team or project with this slug; if there is none, a CommandError that says so."""
    row = model.objects.filter(slug=slug).first()
    if row is None:
        raise CommandError(f"no {noun} {slug!r}")
    return row


def team_named(slug: str) -> Team:
    return by_slug(Team, "team", slug)


def project_named(slug: str) -> Project:
    return by_slug(Project, "project", slug)


def team_add(options: dict[str, Any]) -> dict[str, Any]:
    slug = valid("team", TeamSerializer().fields["slug"], options["slug"])
    team = Team.objects.create(slug=slug, name=options["name"])
    return {"slug": team.slug, "name": team.name}


@transaction.atomic
def team_rm(options: dict[str, Any]) -> dict[str, Any]:
    team = team_named(options["slug"])
    projects = list(team.projects.order_by("slug").values_list("slug", flat=True))
    if projects and not options["cascade"]:
        raise CommandError(
            f"team {team.slug!r} has projects ({', '.join(projects)}): remove them first, "
            "or pass --cascade to remove them with it"
        )
    team.delete()
    return {"slug": team.slug, "removed": True, "projects": projects}


def team_list(options: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"slug": t.slug, "name": t.name, "projects": [p.slug for p in t.projects.order_by("slug")]}
        for t in Team.objects.prefetch_related("projects").order_by("slug")
    ]


def project_add(options: dict[str, Any]) -> dict[str, Any]:
    slug = valid("project", ProjectSerializer().fields["slug"], options["slug"])
    team = team_named(options["team"])
    project = Project.objects.create(slug=slug, name=options["name"], team=team)
    return {"slug": project.slug, "name": project.name, "team": team.slug}


def project_rm(options: dict[str, Any]) -> dict[str, Any]:
    project_named(options["slug"]).delete()
    return {"slug": options["slug"], "removed": True}


def project_list(options: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"slug": p.slug, "name": p.name, "team": p.team.slug}
        for p in Project.objects.select_related("team").order_by("slug")
    ]
