"""The engine's Store port over Django's ORM. Called from the write-behind task, never inline;
each call runs on the engine's database executor (engine_database.py)."""

from __future__ import annotations

from typing import Any

from django.db.models import Count

from ..models import RootConfig, StoredChat, StoredSession, StoredTurn
from .engine_database import db_call


class DjangoRootConfigStore:
    async def load_root_config(self) -> dict[str, Any]:
        return await db_call(_load_root_config)()

    async def save_root_config(self, values: dict[str, Any]) -> None:
        await db_call(_save_root_config)(values)


def _load_root_config() -> dict[str, Any]:
    row = RootConfig.objects.filter(key="root").first()
    return dict(row.values) if row is not None else {}


def _save_root_config(values: dict[str, Any]) -> None:
    RootConfig.objects.update_or_create(key="root", defaults={"values": values})


class DjangoSessionStore:
    """Sessions, chats and turns."""

    async def load_sessions(self) -> list[dict[str, Any]]:
        return await db_call(_load_sessions)()

    async def load_turns(self, chat: str) -> list[dict[str, Any]]:
        return await db_call(_load_turns)(chat)

    async def load_running_turns(self) -> list[tuple[str, int, dict[str, Any]]]:
        return await db_call(_load_running_turns)()

    async def save_session(self, session: dict[str, Any]) -> None:
        await db_call(_save_session)(session)

    async def delete_session(self, uri: str) -> None:
        await db_call(_delete_session)(uri)

    async def save_chat(self, chat: dict[str, Any]) -> None:
        await db_call(_save_chat)(chat)

    async def delete_chat(self, uri: str) -> None:
        await db_call(_delete_chat)(uri)

    async def save_turn(self, chat: str, position: int, turn: dict[str, Any]) -> None:
        await db_call(_save_turn)(chat, position, turn)

    async def truncate_turns(self, chat: str, keep: int) -> None:
        await db_call(_truncate_turns)(chat, keep)


_SESSION_FIELDS = (
    "provider",
    "title",
    "created_ms",
    "modified_ms",
    "default_chat",
    "working_directories",
    "config",
    "is_read",
    "is_archived",
    "announced",
    "chats",
    "owner",
    "scope",
    "snapshots",
    "reviews",
    "annotations",
    "enablement",
    "multi_root",
)
_CHAT_FIELDS = ("title", "created_ms", "backend_id", "is_read", "is_archived", "draft")


def _load_sessions() -> list[dict[str, Any]]:
    # Three queries whatever the count, of plain rows (no model instances), and no turns: the
    # engine reads every session before the port opens, and a chat's turns when it is watched.
    per_chat = StoredTurn.objects.order_by().values("chat_id").annotate(n=Count("id"))
    counts = dict(per_chat.values_list("chat_id", "n"))
    chats: dict[str, dict[str, Any]] = {}
    for row in StoredChat.objects.values("uri", "session_id", *_CHAT_FIELDS):
        row["session"] = row.pop("session_id")
        row["turn_count"] = counts.get(row["uri"], 0)
        chats[row["uri"]] = row
    out = []
    for session in StoredSession.objects.values("uri", *_SESSION_FIELDS).iterator(2000):
        held = [chats[uri] for uri in session["chats"] if uri in chats]
        out.append({"session": session, "chats": held})
    return out


def _load_turns(chat: str) -> list[dict[str, Any]]:
    rows = StoredTurn.objects.filter(chat_id=chat).order_by("position")
    return list(rows.values_list("data", flat=True))


def _load_running_turns() -> list[tuple[str, int, dict[str, Any]]]:
    rows = StoredTurn.objects.filter(data__state="running")
    return list(rows.values_list("chat_id", "position", "data"))


def _save_session(session: dict[str, Any]) -> None:
    StoredSession.objects.update_or_create(
        uri=session["uri"], defaults={f: session[f] for f in _SESSION_FIELDS}
    )


def _delete_session(uri: str) -> None:
    StoredSession.objects.filter(uri=uri).delete()


def _save_chat(chat: dict[str, Any]) -> None:
    if not StoredSession.objects.filter(uri=chat["session"]).exists():
        return
    StoredChat.objects.update_or_create(
        uri=chat["uri"],
        defaults={"session_id": chat["session"], **{f: chat[f] for f in _CHAT_FIELDS}},
    )


def _delete_chat(uri: str) -> None:
    StoredChat.objects.filter(uri=uri).delete()


def _truncate_turns(chat: str, keep: int) -> None:
    StoredTurn.objects.filter(chat_id=chat, position__gte=keep).delete()


def _save_turn(chat: str, position: int, turn: dict[str, Any]) -> None:
    if not StoredChat.objects.filter(uri=chat).exists():
        return
    StoredTurn.objects.update_or_create(
        chat_id=chat, position=position, defaults={"turn_id": turn["id"], "data": turn}
    )


class DjangoStore(DjangoRootConfigStore, DjangoSessionStore):
    """The engine's Store: every durable fact it keeps."""
