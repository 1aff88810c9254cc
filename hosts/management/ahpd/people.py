"""`ahpd user add|rm|list|role` and `ahpd role list`: people and the roles they hold."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.db import transaction

from hosts.api.serializers import PersonSerializer
from hosts.models import Membership, Role
from hosts.store import membership_change, set_host_roles
from hosts.store.acts import of_command_line

from .checks import valid
from .teams import project_named, team_named
from .verbs import noun, verb


def register(nouns: Any) -> Any:
    """Add the user and role nouns; the user noun's verbs, which tokens.py adds to."""
    user = noun(nouns, "user", "people: who may sign in, with which roles")
    add = verb(user, "add", "add a person (the first admin: --role admin)", user_add)
    add.add_argument("id", help="their id (letters, digits and @.+-_): they are user:<id>")
    add.add_argument(
        "--role",
        action="append",
        default=[],
        help="a role they hold (admin, member, guest or one made since); repeat for more",
    )
    add.add_argument("--email", default="", help="their e-mail address")
    add.add_argument("--team", help="hold the roles within this team (its slug) only")
    add.add_argument("--project", help="hold the roles within this project (its slug) only")
    rm = verb(user, "rm", "remove a person; their tokens stop working at once", user_rm)
    rm.add_argument("id", help="the person's id")
    verb(user, "list", "every person, with their roles and live tokens", user_list)
    role = verb(
        user,
        "role",
        "set the roles a person holds host-wide (their team and project roles stay)",
        user_role,
    )
    role.add_argument("id", help="the person's id")
    role.add_argument("roles", nargs="+", metavar="ROLE", help="the roles, replacing theirs")

    roles = noun(nouns, "role", "roles: named sets of grants")
    verb(roles, "list", "every role with its grants", role_list)
    return user


def person_named(user_id: str) -> Any:
    person = get_user_model().objects.filter(username=user_id).first()
    if person is None:
        raise CommandError(f"no person {user_id!r}")
    return person


def role_named(name: str) -> Role:
    role = Role.objects.filter(name=name).first()
    if role is None:
        known = ", ".join(Role.objects.order_by("name").values_list("name", flat=True))
        raise CommandError(f"no role {name!r} (roles: {known})")
    return role


@transaction.atomic
def user_add(options: dict[str, Any]) -> dict[str, Any]:
    user_id = valid("person id", PersonSerializer().fields["id"], options["id"])
    roles = [role_named(name) for name in options["role"]]
    team = team_named(options["team"]) if options["team"] else None
    project = project_named(options["project"]) if options["project"] else None
    person = get_user_model().objects.create_user(username=user_id, email=options["email"])
    for index, role in enumerate(roles):
        Membership.objects.create(
            user=person, role=role, team=team, project=project, primary=index == 0
        )
    # An admin may sign in to the admin site, once given a password; the roles are audited.
    membership_change(person, [], by=of_command_line())
    return described(person)


def user_rm(options: dict[str, Any]) -> dict[str, Any]:
    person_named(options["id"]).delete()
    return {"id": options["id"], "removed": True}


def user_list(options: dict[str, Any]) -> list[dict[str, Any]]:
    return [described(p) for p in get_user_model().objects.order_by("username")]


@transaction.atomic
def user_role(options: dict[str, Any]) -> dict[str, Any]:
    person = person_named(options["id"])
    roles = [role_named(name) for name in dict.fromkeys(options["roles"])]
    set_host_roles(person, roles, by=of_command_line())
    return described(person)


def described(person: Any) -> dict[str, Any]:
    memberships = Membership.objects.filter(user=person).select_related("role", "team", "project")
    return {
        "id": person.username,
        "email": person.email,
        "roles": sorted({m.role.name for m in memberships}),
        "teams": sorted({m.team.slug for m in memberships if m.team}),
        "projects": sorted({m.project.slug for m in memberships if m.project}),
        "tokens": person.tokens.filter(revoked_at__isnull=True).count(),
    }


def role_list(options: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"name": r.name, "grants": r.grants, "builtin": r.builtin}
        for r in Role.objects.order_by("name")
    ]
