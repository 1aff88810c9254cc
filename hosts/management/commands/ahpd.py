"""`python manage.py ahpd ...`: people, their tokens, teams, projects and roles.

    ahpd user add <id> [--role admin] [--email E] [--team T] [--project P]
    ahpd user token <id> [--name N]      the secret once, and the ready URL
    ahpd user rm <id> | ahpd user list
    ahpd team add <slug> [--name N] | team rm <slug> | team list
    ahpd project add <slug> --team <slug> [--name N] | project rm <slug> | project list
    ahpd role list

Every verb takes --json for output a script can rely on. The commands act on the database the
server uses (AHPD_DATA_DIR or DATABASE_URL).
"""

from __future__ import annotations

import argparse
import json
from typing import Any, TypeVar

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from hosts.models import Membership, Project, Role, Team
from hosts.store import ensure_builtin_roles, mint_token

TeamOrProject = TypeVar("TeamOrProject", Team, Project)


class Command(BaseCommand):
    help = "Manage the people, tokens, teams, projects and roles of this host."

    def add_arguments(self, parser: CommandParser) -> None:
        # --json goes on every verb, where a script writes it: `ahpd user list --json`.
        common = argparse.ArgumentParser(add_help=False)
        common.add_argument("--json", action="store_true", help="machine-readable output")
        nouns = parser.add_subparsers(dest="noun", required=True)

        user = nouns.add_parser("user", parents=[common]).add_subparsers(dest="verb", required=True)
        add = user.add_parser("add", parents=[common])
        add.add_argument("id")
        add.add_argument("--role", action="append", default=[])
        add.add_argument("--email", default="")
        add.add_argument("--team")
        add.add_argument("--project")
        token = user.add_parser("token", parents=[common])
        token.add_argument("id")
        token.add_argument("--name", default="default")
        user.add_parser("rm", parents=[common]).add_argument("id")
        user.add_parser("list", parents=[common])

        team = nouns.add_parser("team", parents=[common]).add_subparsers(dest="verb", required=True)
        team_add = team.add_parser("add", parents=[common])
        team_add.add_argument("slug")
        team_add.add_argument("--name", default="")
        team.add_parser("rm", parents=[common]).add_argument("slug")
        team.add_parser("list", parents=[common])

        project = nouns.add_parser("project", parents=[common]).add_subparsers(
            dest="verb", required=True
        )
        project_add = project.add_parser("add", parents=[common])
        project_add.add_argument("slug")
        project_add.add_argument("--team", required=True)
        project_add.add_argument("--name", default="")
        project.add_parser("rm", parents=[common]).add_argument("slug")
        project.add_parser("list", parents=[common])

        role = nouns.add_parser("role", parents=[common]).add_subparsers(dest="verb", required=True)
        role.add_parser("list", parents=[common])

    def handle(self, *args: Any, **options: Any) -> None:
        ensure_builtin_roles()
        handler = getattr(self, f"_{options['noun']}_{options['verb']}")
        result = handler(options)
        if options["json"]:
            self.stdout.write(json.dumps(result))
        elif isinstance(result, list):
            for row in result:
                self.stdout.write("  ".join(f"{k}={v}" for k, v in row.items()))
        elif isinstance(result, dict) and "token" in result:
            self.stdout.write(result["token"])
            self.stderr.write(
                "ahpd: the token is shown once; only its hash is kept.\n"
                f"ahpd: connect with {result['url']}"
            )
        else:
            self.stdout.write(json.dumps(result))

    # -- people ---------------------------------------------------------------------------

    @transaction.atomic
    def _user_add(self, options: dict[str, Any]) -> dict[str, Any]:
        people = get_user_model()
        if people.objects.filter(username=options["id"]).exists():
            raise CommandError(f"a person {options['id']!r} exists already")
        roles = [self._role(name) for name in options["role"]]
        team = self._team(options["team"]) if options["team"] else None
        project = self._project(options["project"]) if options["project"] else None
        person = people.objects.create_user(username=options["id"], email=options["email"])
        if any(role.name == "admin" for role in roles):
            # An admin person may sign in to the admin site once a password is set.
            person.is_staff = person.is_superuser = True
            person.save(update_fields=["is_staff", "is_superuser"])
        for index, role in enumerate(roles):
            Membership.objects.create(
                user=person, role=role, team=team, project=project, primary=index == 0
            )
        return self._person(person)

    def _user_token(self, options: dict[str, Any]) -> dict[str, Any]:
        if not get_user_model().objects.filter(username=options["id"]).exists():
            raise CommandError(f"no person {options['id']!r}")
        minted = mint_token(options["id"], options["name"])
        host = settings.AHPD_HOST
        shown = f"[{host}]" if ":" in host else host
        url = f"ws://{shown}:{settings.AHPD_PORT}/?tkn={minted.secret}"
        return {"id": options["id"], "name": options["name"], "token": minted.secret, "url": url}

    def _user_rm(self, options: dict[str, Any]) -> dict[str, Any]:
        deleted, _ = get_user_model().objects.filter(username=options["id"]).delete()
        if not deleted:
            raise CommandError(f"no person {options['id']!r}")
        return {"id": options["id"], "removed": True}

    def _user_list(self, options: dict[str, Any]) -> list[dict[str, Any]]:
        return [self._person(p) for p in get_user_model().objects.order_by("username")]

    def _person(self, person: Any) -> dict[str, Any]:
        memberships = Membership.objects.filter(user=person).select_related(
            "role", "team", "project"
        )
        return {
            "id": person.username,
            "email": person.email,
            "roles": [m.role.name for m in memberships],
            "teams": sorted({m.team.slug for m in memberships if m.team}),
            "projects": sorted({m.project.slug for m in memberships if m.project}),
            "tokens": person.tokens.filter(revoked_at__isnull=True).count(),
        }

    # -- teams, projects, roles -----------------------------------------------------------

    def _team_add(self, options: dict[str, Any]) -> dict[str, Any]:
        team, created = Team.objects.get_or_create(
            slug=options["slug"], defaults={"name": options["name"]}
        )
        if not created:
            raise CommandError(f"a team {options['slug']!r} exists already")
        return {"slug": team.slug, "name": team.name}

    def _team_rm(self, options: dict[str, Any]) -> dict[str, Any]:
        self._team(options["slug"]).delete()
        return {"slug": options["slug"], "removed": True}

    def _team_list(self, options: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"slug": t.slug, "name": t.name} for t in Team.objects.order_by("slug")]

    def _project_add(self, options: dict[str, Any]) -> dict[str, Any]:
        team = self._team(options["team"])
        if Project.objects.filter(slug=options["slug"]).exists():
            raise CommandError(f"a project {options['slug']!r} exists already")
        project = Project.objects.create(slug=options["slug"], name=options["name"], team=team)
        return {"slug": project.slug, "name": project.name, "team": team.slug}

    def _project_rm(self, options: dict[str, Any]) -> dict[str, Any]:
        self._project(options["slug"]).delete()
        return {"slug": options["slug"], "removed": True}

    def _project_list(self, options: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            {"slug": p.slug, "name": p.name, "team": p.team.slug}
            for p in Project.objects.select_related("team").order_by("slug")
        ]

    def _role_list(self, options: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            {"name": r.name, "grants": r.grants, "builtin": r.builtin}
            for r in Role.objects.order_by("name")
        ]

    @staticmethod
    def _role(name: str) -> Role:
        role = Role.objects.filter(name=name).first()
        if role is None:
            known = ", ".join(Role.objects.order_by("name").values_list("name", flat=True))
            raise CommandError(f"no role {name!r} (roles: {known})")
        return role

    @staticmethod
    def _team(slug: str) -> Team:
        return by_slug(Team, "team", slug)

    @staticmethod
    def _project(slug: str) -> Project:
        return by_slug(Project, "project", slug)


def by_slug(model: type[TeamOrProject], noun: str, slug: str) -> TeamOrProject:
    """The team or project with this slug; if there is none, a CommandError that says so."""
    row = model.objects.filter(slug=slug).first()
    if row is None:
        raise CommandError(f"no {noun} {slug!r}")
    return row
