"""The engine's Store port over Django's ORM. Called from the write-behind task, never inline;
each call runs on the engine's database executor (engine_database.py)."""

from __future__ import annotations

import logging
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Count, Q

from ..models import RootConfig, StoredChat, StoredSession, StoredTurn
from .engine_database import db_call
from .session_nodes import take_free

log = logging.getLogger("ahpd.store")


class DjangoRootConfigStore:
    async def load_root_config(self) -> dict[str, Any]:
        return await db_call(_load_root_config)()

    async def save_root_config(self, values: dict[str, Any], *, replace: bool = False) -> None:
        await db_call(_save_root_config)(values, replace)


def _load_root_config() -> dict[str, Any]:
    row = RootConfig.objects.filter(key="root").first()
    return dict(row.values) if row is not None else {}


def _save_root_config(values: dict[str, Any], replace: bool) -> None:
    """Lay the values pushed over those kept (all of them, for a replace), the row locked
    while it is read and written: two nodes writing at once each keep what they moved."""
    with transaction.atomic():
        RootConfig.objects.get_or_create(key="root")
        row = RootConfig.objects.select_for_update().get(key="root")
        row.values = dict(values) if replace else {**row.values, **values}
        row.save(update_fields=["values", "updated_at"])


class DjangoSessionStore:
    """Sessions, chats and turns. A node of several (`node_id` set) reads the sessions it runs
    and writes only those: a write to a session another node has taken since (this one was
    thought gone) is dropped, not laid over that node's (hosts/store/session_nodes.py)."""

    def __init__(self, node_id: str = "", machine: str = "") -> None:
        self.node_id = node_id
        self.machine = machine

    async def load_sessions(self, only: str | None = None) -> list[dict[str, Any]]:
        return await db_call(_load_sessions)(self.node_id, self.machine, only)

    async def load_turns(self, chat: str) -> list[dict[str, Any]]:
        return await db_call(_load_turns)(chat)

    async def load_running_turns(
        self, session: str | None = None
    ) -> list[tuple[str, int, dict[str, Any]]]:
        return await db_call(_load_running_turns)(self.node_id, session)

    async def save_session(self, session: dict[str, Any]) -> None:
        await db_call(_save_session)(session, self.node_id)

    async def delete_session(self, uri: str) -> None:
        await db_call(_delete_session)(uri, self.node_id)

    async def save_chat(self, chat: dict[str, Any]) -> None:
        await db_call(_save_chat)(chat, self.node_id)

    async def delete_chat(self, uri: str) -> None:
        await db_call(_delete_chat)(uri)

    async def save_turn(self, chat: str, position: int, turn: dict[str, Any]) -> None:
        await db_call(_save_turn)(chat, position, turn, self.node_id)

    async def truncate_turns(self, chat: str, keep: int) -> None:
        await db_call(_truncate_turns)(chat, keep)


def _mine(node_id: str, via: str = "") -> Q:
    """The sessions a node writes (`via`: the path to the session from the row written): its
    own and those no node took yet; any, for one process alone."""
    if not node_id:
        return Q()
    return Q(**{f"{via}node__in": (node_id, "")})


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


def _load_sessions(node_id: str, machine: str, only: str | None) -> list[dict[str, Any]]:
    # Three queries whatever the count, of plain rows (no model instances), and no turns: the
    # engine reads every session before the port opens, and a chat's turns when it is watched.
    sessions, chat_rows, turn_rows = (
        StoredSession.objects.all(),
        StoredChat.objects.all(),
        StoredTurn.objects.all(),
    )
    if only is not None or node_id:
        if only is not None:
            sessions = sessions.filter(uri=only)
        else:
            take_free(node_id, machine)
            sessions = sessions.filter(node=node_id)
        chat_rows = chat_rows.filter(session__in=sessions.values("uri"))
        turn_rows = turn_rows.filter(chat__in=chat_rows.values("uri"))
    per_chat = turn_rows.order_by().values("chat_id").annotate(n=Count("id"))
    counts = dict(per_chat.values_list("chat_id", "n"))
    chats: dict[str, dict[str, Any]] = {}
    for row in chat_rows.values("uri", "session_id", *_CHAT_FIELDS):
        row["session"] = row.pop("session_id")
        row["turn_count"] = counts.get(row["uri"], 0)
        chats[row["uri"]] = row
    out = []
    for session in sessions.values("uri", *_SESSION_FIELDS).iterator(2000):
        held = [chats[uri] for uri in session["chats"] if uri in chats]
        out.append({"session": session, "chats": held})
    return out


def _load_turns(chat: str) -> list[dict[str, Any]]:
    rows = StoredTurn.objects.filter(chat_id=chat).order_by("position")
    return list(rows.values_list("data", flat=True))


def _load_running_turns(node_id: str, session: str | None) -> list[tuple[str, int, dict[str, Any]]]:
    rows = StoredTurn.objects.filter(data__state="running")
    if session is not None:
        rows = rows.filter(chat__session_id=session)
    elif node_id:
        rows = rows.filter(chat__session__node=node_id)
    return list(rows.values_list("chat_id", "position", "data"))


def _save_session(session: dict[str, Any], node_id: str) -> None:
    uri = session["uri"]
    fields = {f: session[f] for f in _SESSION_FIELDS}
    if StoredSession.objects.filter(_mine(node_id), uri=uri).update(**fields):
        return
    try:
        with transaction.atomic():
            StoredSession.objects.create(uri=uri, node=node_id, **fields)
    except IntegrityError:
        log.warning("session %s is run by another node now: this node's write of it dropped", uri)


def _delete_session(uri: str, node_id: str) -> None:
    StoredSession.objects.filter(_mine(node_id), uri=uri).delete()


def _save_chat(chat: dict[str, Any], node_id: str) -> None:
    if not StoredSession.objects.filter(_mine(node_id), uri=chat["session"]).exists():
        return
    StoredChat.objects.update_or_create(
        uri=chat["uri"],
        defaults={"session_id": chat["session"], **{f: chat[f] for f in _CHAT_FIELDS}},
    )


def _delete_chat(uri: str) -> None:
    StoredChat.objects.filter(uri=uri).delete()


def _truncate_turns(chat: str, keep: int) -> None:
    StoredTurn.objects.filter(chat_id=chat, position__gte=keep).delete()


def _save_turn(chat: str, position: int, turn: dict[str, Any], node_id: str) -> None:
    if not StoredChat.objects.filter(_mine(node_id, "session__"), uri=chat).exists():
        return
    StoredTurn.objects.update_or_create(
        chat_id=chat, position=position, defaults={"turn_id": turn["id"], "data": turn}
    )


class DjangoStore(DjangoRootConfigStore, DjangoSessionStore):
    """The engine's Store: every durable fact it keeps."""
