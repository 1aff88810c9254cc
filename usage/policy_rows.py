"""Policy rows read and written whole (softov/ahpd docs/POLICY.md): a write names the fields
it changes, the others keep what the row had, and the id is the address's, never the body's.
Shared by the `policy:` scheme, the REST API, the admin and `manage.py ahpd policy`."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from hosts.engine.principal import Principal
from hosts.store import acts as audit
from hosts.store.acts import SYSTEM, Actor

from .decide import PolicyError, Row, check_id, holds, parse_row, row_json
from .ledger import exhausted, row_of, spent, where_of
from .models import Policy


class NoSuchPolicy(LookupError):
    pass


class PolicyExists(ValueError):
    pass


def all_rows() -> list[dict[str, Any]]:
    return [row_json(row_of(p)) for p in Policy.objects.all()]


def row_of_id(policy_id: str) -> Row:
    policy = Policy.objects.filter(pk=policy_id).first()
    if policy is None:
        raise NoSuchPolicy(f"no policy {policy_id}")
    return row_of(policy)


def one_row(policy_id: str) -> dict[str, Any]:
    return row_json(row_of_id(policy_id))


def write_row(
    policy_id: str, body: Any, *, create_only: bool = False, by: Actor = SYSTEM
) -> dict[str, Any]:
    """Make the row or merge the body over the one there; the row as kept, and the write on
    the audit trail."""
    check_id(policy_id)
    if not isinstance(body, dict):
        raise PolicyError(f"policy {policy_id}: the body must be a JSON object")
    with transaction.atomic():
        existing = Policy.objects.select_for_update().filter(pk=policy_id).first()
        if existing is not None and create_only:
            raise PolicyExists(f"policy {policy_id} already exists")
        merged = {**(row_json(row_of(existing)) if existing is not None else {}), **body}
        merged.pop("id", None)
        row = parse_row(policy_id, merged)
        fields = {
            "scope": row.scope,
            "kind": row.kind,
            "effect": row.effect,
            "match": {k: list(v) for k, v in row.match.items()},
            "limits": row_json(row)["limits"],
            "pool": row.pool,
            "cap": row.cap,
            "valid_from": row.starts,
            "valid_until": row.ends,
        }
        Policy.objects.update_or_create(pk=policy_id, defaults=fields)
        kept = one_row(policy_id)
        audit.record("policy.set", by, "policy", policy_id, made=existing is None, row=kept)
    return kept


@transaction.atomic
def delete_row(policy_id: str, *, by: Actor = SYSTEM) -> None:
    deleted, _ = Policy.objects.filter(pk=policy_id).delete()
    if not deleted:
        raise NoSuchPolicy(f"no policy {policy_id}")
    audit.record("policy.removed", by, "policy", policy_id)


def limits_json(row: Row, person: str) -> dict[str, Any]:
    """A row's limits with what has been spent of each now (`person`'s, for an each limit;
    the shared figure otherwise)."""
    now = timezone.now()
    return {
        "id": row.id,
        "scope": row.scope,
        "effect": row.effect,
        "limits": [
            {**shown, "spent": float(spent(row, limit, person, now))}
            for limit, shown in zip(row.limits, row_json(row)["limits"], strict=True)
        ],
        "room": exhausted(row, person, now, starting=False) is None,
    }


def limits_for(principal: Principal, scope: str = "") -> list[dict[str, Any]]:
    """The limits whose scope holds the reader (in their home scope's team and project)."""
    from .decide import Ask

    where = where_of(scope or principal.home)
    ask = Ask(principal.ref, where.team, where.project, {})
    rows = [row_of(p) for p in Policy.objects.all()]
    return [
        limits_json(row, principal.ref)
        for row in rows
        if row.limits and (holds(row, ask) or _member_of(principal, row.scope))
    ]


def _member_of(principal: Principal, scope: str) -> bool:
    kind, _, rest = scope.partition(":")
    if kind == "team":
        return f"team:{rest}" in principal.scoped
    if kind == "project":
        return f"project:{rest.partition(':')[2]}" in principal.scoped
    return False
