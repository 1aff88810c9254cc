"""The roles a person holds, and the admin site's rights that follow from them.

One rule, whichever surface changes a person's roles (the REST API, `manage.py ahpd`, the
admin's memberships): whoever holds the `admin` role host-wide may use the admin site with
every right (`is_staff` and `is_superuser`), and whoever does not, may not. Every change of
memberships ends in `sync_admin_site`, so the flags never disagree with the roles for long
enough to be read: each caller does both in one transaction.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction

from ..edge import principal_changes
from ..models import Membership, Role
from . import acts as audit
from .acts import SYSTEM, Actor

#: The built-in role whose holders are the admin site's superusers.
ADMIN_ROLE = "admin"


def sync_admin_site(user: Any) -> None:
    """Make `is_staff` and `is_superuser` say whether the person holds the admin role
    host-wide.

    An admin role held within a team or project grants within that scope only (its sessions,
    hosts/engine/access.py), so it is no admin of the host, and the admin site, which manages
    the whole host, is not theirs.
    """
    admin = Membership.objects.filter(
        user=user, role__name=ADMIN_ROLE, team__isnull=True, project__isnull=True
    ).exists()
    if user.is_staff != admin or user.is_superuser != admin:
        user.is_staff = user.is_superuser = admin
        user.save(update_fields=["is_staff", "is_superuser"])


def memberships_of(user: Any) -> list[str]:
    """A person's memberships as the audit trail says them: `role`, `role@team:<slug>`,
    `role@project:<slug>`, sorted."""
    said = []
    for m in Membership.objects.filter(user=user).select_related("role", "team", "project"):
        where = (
            f"@team:{m.team.slug}" if m.team else f"@project:{m.project.slug}" if m.project else ""
        )
        said.append(m.role.name + where)
    return sorted(said)


@transaction.atomic
def membership_change(user: Any, before: list[str], *, by: Actor = SYSTEM) -> None:
    """After a person's memberships were changed (from `before`, memberships_of's words): their
    admin-site rights follow, the engine's kept principals are told, and the change, if any,
    is on the audit trail."""
    principal_changes.noted(people=[user.pk])
    sync_admin_site(user)
    after = memberships_of(user)
    if after != before:
        whose = f"user:{user.get_username()}"
        audit.record("membership.changed", by, "person", whose, before=before, after=after)


@transaction.atomic
def keep_role(role: Role, *, by: Actor = SYSTEM, removed: bool = False) -> None:
    """Save a role made or changed (or remove one), on the audit trail."""
    grants = list(role.grants)
    if removed:
        role.delete()
    else:
        role.save()
    audit.record("role.changed", by, "role", role.name, grants=grants, removed=removed)


@transaction.atomic
def set_host_roles(user: Any, roles: Iterable[Role], *, by: Actor = SYSTEM) -> None:
    """Make the person's host-wide memberships exactly `roles` (team and project ones stay),
    and their admin-site rights follow."""
    before = memberships_of(user)
    roles = list(roles)
    kept = Membership.objects.filter(user=user, team__isnull=True, project__isnull=True)
    kept.exclude(role__in=roles).delete()
    held = set(kept.values_list("role_id", flat=True))
    Membership.objects.bulk_create(
        [Membership(user=user, role=role) for role in roles if role.pk not in held]
    )
    # bulk_create sends no post_save: the engine's kept principals are told (membership_change).
    membership_change(user, before, by=by)
