"""Telling the engine that what a person's principal is read from changed.

The engine keeps each signed-in token's principal (hosts/engine/permissions.py) instead of reading
it from the database on every command. Whatever changes a token, a person, a membership, a role, a
team or a project, in whichever process, tells every engine that may hold it once the change is
committed, and waits until it is taken: so a revoked token or a changed role holds on the next
command of a connection that is already open.

- In the server's own process (the REST API, the admin): the engine is called on its loop.
- In another process (`manage.py ahpd ...`, `manage.py shell`): the running server is told over
  its REST API as root, with the control token it wrote into the data directory
  (hosts/edge/control.py), as the management commands reach it for what only it knows. A
  server that runs but does not answer is an error the command reports; one that is not running
  holds nothing to forget.

The models' save and delete signals are the trigger; a write that sends none (a queryset's
`update`, `bulk_create`) calls `noted` itself (hosts/store/roles.py, the admin's bulk revoke).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models.signals import post_delete, post_save

from ..engine.permissions import PRINCIPAL_MAX_AGE_S
from ..models import Membership, Project, Role, Team, Token

log = logging.getLogger("ahpd.principals")

#: The REST path a server in another process is told at (hosts/api/views.py).
REST_PATH = "principals/changed/"


class _Pending(threading.local):
    """What this thread changed and has not told yet: by token, by person, or everyone's."""

    def __init__(self) -> None:
        self.tokens: set[int] = set()
        self.people: set[int] = set()
        self.everyone = False


_pending = _Pending()


def noted(
    *, tokens: Iterable[int] = (), people: Iterable[int] = (), everyone: bool = False
) -> None:
    """Something these tokens' (or people's, by user pk; or everyone's) principals are read
    from changed: told once the transaction commits (at once outside one). Changes made in one
    transaction are told together."""
    _pending.tokens.update(tokens)
    _pending.people.update(people)
    _pending.everyone = _pending.everyone or everyone
    # One callback per change; the first to run tells everything pending and the rest find
    # nothing. A change rolled back is told with the next commit: a principal read again for
    # nothing, never one kept that should not be.
    transaction.on_commit(_tell_pending)


def _tell_pending() -> None:
    if not (_pending.tokens or _pending.people or _pending.everyone):
        return
    tokens: list[int] | None
    if _pending.everyone:
        tokens = None
    else:
        found = Token.objects.filter(user_id__in=_pending.people).values_list("pk", flat=True)
        tokens = sorted({*_pending.tokens, *found})
    _pending.tokens, _pending.people, _pending.everyone = set(), set(), False
    if tokens == []:
        return
    tell(tokens)


def tell(tokens: list[int] | None) -> None:
    """Tell this process's engine, and the server of this data directory when that is another
    process, that these tokens' principals (None: any) changed; return once they have taken
    it. Raises CommandError when a server runs and does not take it."""
    from . import control, runtime

    runtime.forget_principals(tokens)
    if control.published() is not None:
        return  # this process is the server: its engine was told above
    record = control.running()
    if record is None:
        return  # no server: nothing holds a principal to forget
    from django.core.management.base import CommandError

    from ..management.ahpd import server

    try:
        server.call("POST", REST_PATH, {"tokens": tokens})
    except CommandError as error:
        raise CommandError(
            f"the change is saved, but the running server (pid {record.pid}) was not told of "
            f"it: {error}. Connections already open keep what they held until it is told "
            f"(at most {PRINCIPAL_MAX_AGE_S:.0f} s) or restarted."
        ) from None


def _token_saved(sender: Any, instance: Token, created: bool, **kwargs: Any) -> None:
    if not created:  # a new token is nobody's principal yet
        noted(tokens=[instance.pk])


def _token_deleted(sender: Any, instance: Token, **kwargs: Any) -> None:
    noted(tokens=[instance.pk])


def _membership_changed(sender: Any, instance: Membership, **kwargs: Any) -> None:
    noted(people=[instance.user_id])


def _person_saved(sender: Any, instance: Any, created: bool, **kwargs: Any) -> None:
    fields = kwargs.get("update_fields")
    if created or (fields is not None and set(fields) <= {"last_login", "password"}):
        return  # nobody signed in as them yet; a sign-in to the admin changes no grant
    noted(people=[instance.pk])


def _everyone(sender: Any, **kwargs: Any) -> None:
    # A role's grants, a team's projects and a slug reach whoever holds them: every principal
    # is read again (these change rarely, and each token is read once).
    noted(everyone=True)


def connect() -> None:
    """Connect the signals (hosts/apps.py, once the models are ready)."""
    post_save.connect(_token_saved, sender=Token, dispatch_uid="ahpd-principals-token-saved")
    post_delete.connect(_token_deleted, sender=Token, dispatch_uid="ahpd-principals-token-gone")
    for signal, name in ((post_save, "saved"), (post_delete, "gone")):
        signal.connect(
            _membership_changed, sender=Membership, dispatch_uid=f"ahpd-principals-member-{name}"
        )
        for model in (Role, Team, Project):
            signal.connect(
                _everyone, sender=model, dispatch_uid=f"ahpd-principals-{model.__name__}-{name}"
            )
    person = get_user_model()
    # A person removed takes their tokens with them, each told by its own delete.
    post_save.connect(_person_saved, sender=person, dispatch_uid="ahpd-principals-person-saved")
