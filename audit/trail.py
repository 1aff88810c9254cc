"""Writing the audit trail: `record` is called by the one function that makes each change
(hosts/store, usage/policy_rows.py, the engine's services through audit/engine_trail.py), in
the change's own transaction, so every way in (socket, REST, admin, CLI, a task) records it
once. `Actor` says who asked and from where."""

from __future__ import annotations

import getpass
from dataclasses import dataclass
from typing import Any

from hosts.engine.audit_trail import Act

from .models import AuditRecord


@dataclass(frozen=True, slots=True)
class Actor:
    """Who asks for a change (a principal's ref) and from where (audit_trail.INTERFACES, and
    the peer's address where there is one)."""

    ref: str
    via: str
    address: str = ""


#: The host itself (setup, fixtures, a data migration): no one's say.
SYSTEM = Actor("system", "system")


def of_request(request: Any, via: str) -> Actor:
    """Who a REST or admin request is from: its principal (REST) or its signed-in person."""
    principal = getattr(request.user, "principal", None)
    ref = principal.ref if principal is not None else f"user:{request.user.get_username()}"
    return Actor(ref, via, request.META.get("REMOTE_ADDR") or "")


def of_command_line() -> Actor:
    """`manage.py ahpd`: the operator's login on the machine, who holds the data directory."""
    try:
        login = getpass.getuser()
    except (KeyError, OSError):
        login = "unknown"
    return Actor(f"os:{login}", "cli")


def record(act: str, by: Actor, target_kind: str, target_id: str, **detail: Any) -> AuditRecord:
    """Keep one act (in the caller's transaction, if it has one)."""
    return AuditRecord.objects.create(
        by=by.ref,
        act=act,
        target_kind=target_kind,
        target_id=str(target_id),
        via=by.via,
        address=by.address,
        detail=detail,
    )


def record_act(act: Act) -> AuditRecord:
    """Keep an act the engine made."""
    return record(
        act.act, Actor(act.by, act.via, act.address), act.target_kind, act.target_id, **act.detail
    )
