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
    validate_grants,
)
from .engine_store import DjangoStore

__all__ = [
    "TOKEN_PREFIX",
    "DjangoDirectory",
    "DjangoStore",
    "MintedToken",
    "digest",
    "ensure_builtin_roles",
    "held_by",
    "mint_token",
    "person_for_token",
    "person_signed_in",
    "validate_grants",
]
