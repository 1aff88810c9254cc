"""The audit trail on the Django side of hosts: `record` is called by the one function that
makes each change (the store's, usage/policy_rows.py's), in the change's own transaction, so
every way in (socket, REST, admin, CLI, a task) records it once; `of_request` and
`of_command_line` say who asked and from where.

hosts imports nothing of the audit app: the composition root names the function that keeps
a record (settings.AHPD_AUDIT_RECORDER, audit.trail.record_act), as it names the engine's
adapters.
"""

from __future__ import annotations

import functools
import getpass
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string

from ..edge import control
from ..engine.audit_trail import SYSTEM, Act, Actor

__all__ = ["SYSTEM", "Actor", "of_command_line", "of_request", "record"]


@functools.cache
def _recorder() -> Callable[[Act], Any]:
    recorder: Callable[[Act], Any] = import_string(settings.AHPD_AUDIT_RECORDER)
    return recorder


def record(act: str, by: Actor, target_kind: str, target_id: str, **detail: Any) -> None:
    """Keep one act (in the caller's transaction, if it has one)."""
    _recorder()(Act(by.ref, act, target_kind, str(target_id), by.via, by.address, detail))


def of_request(request: Any, via: str) -> Actor:
    """Who a REST or admin request is from: its principal (REST) or its signed-in person. A
    REST call with the server's control token is `manage.py ahpd`'s (`sessions --cancel`), so
    it came from the command line."""
    principal = getattr(request.user, "principal", None)
    ref = principal.ref if principal is not None else f"user:{request.user.get_username()}"
    token = getattr(request, "auth", None)
    if isinstance(token, str) and control.admits(token):
        via = "cli"
    return Actor(ref, via, request.META.get("REMOTE_ADDR") or "")


def of_command_line() -> Actor:
    """`manage.py ahpd`: the operator's login on the machine, who holds the data directory."""
    try:
        login = getpass.getuser()
    except (KeyError, OSError):
        login = "unknown"
    return Actor(f"os:{login}", "cli")
