"""What every command checks before it acts: a database that is there and migrated, and ids
that the REST API would take (its serializers' own validators: one rule, two doors)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError
from django.db import connection
from rest_framework import serializers

from ahpsite.env import EnvError
from hosts.edge.preflight import check_database


def database_ready() -> None:
    """The database the server uses answers and is migrated; if not, one line saying so.

    The embedded database's file is made (empty) when the settings are read: a command that
    finds there was none is refused, and leaves_nothing_behind removes it again, rather than
    leave an empty database that looks like the server's.
    """
    try:
        check_database()
    except EnvError as error:
        if not settings.SQLITE_MADE:
            raise CommandError(str(error)) from None
        path = Path(settings.DATABASES["default"]["NAME"])
        raise CommandError(
            f"no database at {path} (AHPD_DATA_DIR): no server has run with this data "
            "directory; start it (make run) or run manage.py migrate"
        ) from None


def leave_nothing_behind() -> None:
    """What reading the settings made, taken away again after a command that did not run: the
    embedded database's empty file, the secret key, the data directory itself. Only where no
    server kept anything: the data directory was made by this command, or (embedded) it held
    no database. A data directory that was there stays, with whatever else is in it."""
    if not (settings.AHPD_DATA_DIR_MADE or settings.SQLITE_MADE):
        return
    connection.close()
    data = Path(settings.AHPD_DATA_DIR)
    if settings.SQLITE_MADE:
        path = Path(settings.DATABASES["default"]["NAME"])
        for suffix in ("", "-wal", "-shm", "-journal"):
            path.with_name(path.name + suffix).unlink(missing_ok=True)
    if settings.SECRET_KEY_MADE:
        (data / "secret-key").unlink(missing_ok=True)
    if settings.AHPD_DATA_DIR_MADE:
        try:
            data.rmdir()
        except OSError:  # something else was put there meanwhile: it stays, and so does it
            pass


def valid(what: str, field: serializers.Field, value: Any) -> Any:  # type: ignore[type-arg]
    """`value` as the API's field takes it, or a CommandError naming what was wrong."""
    try:
        return field.run_validation(value)
    except serializers.ValidationError as error:
        detail = error.detail
        words = " ".join(str(d) for d in detail) if isinstance(detail, list) else str(detail)
        raise CommandError(f"{what} {value!r}: {words}") from None
