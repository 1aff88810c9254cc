"""The engine's Store port over Django's ORM. Called from the write-behind task, never inline."""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async

from .models import RootConfig


class DjangoStore:
    async def load_root_config(self) -> dict[str, Any]:
        return await sync_to_async(_load_root_config)()

    async def save_root_config(self, values: dict[str, Any]) -> None:
        await sync_to_async(_save_root_config)(values)


def _load_root_config() -> dict[str, Any]:
    row = RootConfig.objects.filter(key="root").first()
    return dict(row.values) if row is not None else {}


def _save_root_config(values: dict[str, Any]) -> None:
    RootConfig.objects.update_or_create(key="root", defaults={"values": values})
