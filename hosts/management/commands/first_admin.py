"""`python manage.py first_admin`: `make run`'s check before it serves. While no one holds the
admin role host-wide, it says how to add the first admin person; once someone does, nothing."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand
from django.db import DatabaseError

from hosts.management.ahpd.first_run import first_admin_lines


class Command(BaseCommand):
    help = "Say how to add the first admin person, while there is none (make run runs it)."

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            lines = first_admin_lines()
        except DatabaseError:  # not migrated: `serve`, next, refuses to start and says why
            return
        for line in lines:
            self.stdout.write(line)
