"""The Django side of the engine's ports: the Store over the ORM, and the people directory."""

from __future__ import annotations

from .directory import (
    TOKEN_PREFIX,
    DjangoDirectory,
    MintedToken,
    digest,
    ensure_builtin_roles,
    held_by,
    mint_token,
    person_for_token,
    person_signed_in,
    revoke_token,
    validate_grants,
)
from .engine_store import DjangoStore
from .roles import (
    ADMIN_ROLE,
    keep_role,
    membership_change,
    memberships_of,
    set_host_roles,
    sync_admin_site,
)

__all__ = [
    "ADMIN_ROLE",
    "TOKEN_PREFIX",
    "DjangoDirectory",
    "DjangoStore",
    "MintedToken",
    "digest",
    "ensure_builtin_roles",
    "held_by",
    "keep_role",
    "membership_change",
    "memberships_of",
    "mint_token",
    "person_for_token",
    "person_signed_in",
    "revoke_token",
    "set_host_roles",
    "sync_admin_site",
    "validate_grants",
]
