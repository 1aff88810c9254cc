"""`python manage.py coverage`: print the README's protocol coverage table."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Print the protocol coverage table, generated from the method and action registries."

    def handle(self, *args: Any, **options: Any) -> None:
        from hosts.engine.coverage import markdown

        self.stdout.write(markdown())
