"""People, tokens, roles and grants over Django's ORM: who a token is, and what they may do.

The engine asks through its Directory port (`DjangoDirectory`, below), fresh for every command,
so a revoked token or a changed role takes effect on the next one.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from ..engine.grants import BUILTIN_ROLES, GrantError, check_grant
from ..engine.principal import Principal
from ..models import Membership, Role, Token
from . import acts as audit
from .acts import SYSTEM, Actor
from .engine_database import db_call

#: The protected resource `authenticate` signs a person in against.
USERS_RESOURCE = "ahpd://users"
TOKEN_PREFIX = "ahpd_"


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(frozen=True)
class MintedToken:
    token: Token
    secret: str


def ensure_builtin_roles() -> None:
    """Create (or bring back in step) the built-in roles: admin, member, guest."""
    for name, grants in BUILTIN_ROLES.items():
        Role.objects.update_or_create(name=name, defaults={"grants": grants, "builtin": True})


def validate_grants(grants: list[str]) -> list[str]:
    """The grants a role is to hold: each checked, and each once, in the order first given.

    A grant the host does not know is a ValidationError naming it, which the admin's role form
    and the API's role serializer both report against the field.
    """
    try:
        return list(dict.fromkeys(check_grant(grant) for grant in grants))
    except GrantError as error:
        raise ValidationError(str(error)) from None


@transaction.atomic
def mint_token(user_id: str, name: str, *, by: Actor = SYSTEM) -> MintedToken:
    """A new token for a person; the secret is in the result and nowhere else. On the audit
    trail, whichever way it was asked."""
    user = get_user_model().objects.get(username=user_id)
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = Token.objects.create(user=user, name=name, digest=digest(secret), prefix=secret[:10])
    audit.record("token.minted", by, "token", f"user:{user_id}/{name}", prefix=token.prefix)
    return MintedToken(token, secret)


@transaction.atomic
def revoke_token(token: Token, *, by: Actor = SYSTEM) -> None:
    """Revoke a token: it stops working on the next request or command. Revoking one already
    revoked keeps the first moment, and is no new act on the audit trail."""
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        whose = token.user.get_username()
        audit.record("token.revoked", by, "token", f"user:{whose}/{token.name}")


@dataclass(frozen=True)
class Held:
    """What a person holds: host-wide, and within each team or project they are a member of
    (a team's roles reach its projects), and the scope their sessions are made in."""

    grants: tuple[str, ...]
    scoped: dict[str, tuple[str, ...]]
    home: str


def held_by(user_id: int) -> Held:
    host: list[str] = []
    scoped: dict[str, list[str]] = {}
    home, first = "", ""
    memberships = Membership.objects.filter(user_id=user_id).select_related(
        "role", "team", "project"
    )
    for membership in memberships.order_by("-primary", "pk"):
        if membership.project is not None:
            scope = f"project:{membership.project.slug}"
            reach = [scope]
        elif membership.team is not None:
            scope = f"team:{membership.team.slug}"
            projects = membership.team.projects.values_list("slug", flat=True)
            reach = [scope, *(f"project:{slug}" for slug in projects)]
        else:
            host.extend(membership.role.grants)
            continue
        for key in reach:
            scoped.setdefault(key, []).extend(membership.role.grants)
        first = first or scope
        if membership.primary and not home:
            home = scope
    return Held(
        tuple(dict.fromkeys(host)),
        {scope: tuple(dict.fromkeys(grants)) for scope, grants in scoped.items()},
        home or first,
    )


def _principal(user: AbstractBaseUser, token_id: int | None, *extra: str) -> Principal:
    held = held_by(user.pk)
    return Principal(
        ref=f"user:{user.get_username()}",
        grants=(*extra, *held.grants),
        token_id=token_id,
        scoped=held.scoped,
        home=held.home,
    )


def person_for_token(secret: str) -> Principal | None:
    """The person a token belongs to, with their grants now; None for no live token."""
    token = (
        Token.objects.select_related("user")
        .filter(digest=digest(secret), revoked_at__isnull=True, user__is_active=True)
        .first()
    )
    if token is None:
        return None
    Token.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    return _principal(token.user, token.pk)


def person_signed_in(user: AbstractBaseUser) -> Principal:
    """A person signed in to the admin site, as the API sees them: their grants now, and every
    grant for a superuser (who may already do anything through the admin)."""
    return _principal(user, None, *(("*:*",) if getattr(user, "is_superuser", False) else ()))


def refresh(principal: Principal) -> Principal | None:
    """The same person's grants read again; None when their token was revoked or removed."""
    if principal.token_id is None:
        return principal
    token = (
        Token.objects.select_related("user")
        .filter(pk=principal.token_id, revoked_at__isnull=True, user__is_active=True)
        .first()
    )
    if token is None:
        return None
    return _principal(token.user, token.pk)


class DjangoDirectory:
    """The engine's Directory port."""

    async def principal_for_token(self, secret: str) -> Principal | None:
        result: Principal | None = await db_call(person_for_token)(secret)
        return result

    async def refresh(self, principal: Principal) -> Principal | None:
        result: Principal | None = await db_call(refresh)(principal)
        return result
