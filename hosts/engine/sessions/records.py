"""The durable records of sessions and chats, and the protocol shapes built from them.

A record is what the store keeps; a channel's held state is built from its record once, when
the channel opens, and moves only by the protocol's reducers after that.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

from ...protocol.reducers._common import (
    STATUS_IDLE,
    STATUS_IS_ARCHIVED,
    STATUS_IS_READ,
)
from ..clock import iso


def status_bits(activity: int, *, is_read: bool, is_archived: bool) -> int:
    return (
        activity | (STATUS_IS_READ if is_read else 0) | (STATUS_IS_ARCHIVED if is_archived else 0)
    )


R = TypeVar("R", "ChatRecord", "SessionRecord")


@dataclass
class ChatRecord:
    uri: str
    session: str
    created_ms: int
    title: str = ""
    backend_id: str | None = None
    is_read: bool = False
    is_archived: bool = False
    draft: dict[str, Any] | None = None
    #: Finished turns, oldest first, as the protocol's Turn objects.
    turns: list[dict[str, Any]] = field(default_factory=list)
    #: How many turns the store holds for a chat whose turns are not read yet (dormant).
    turn_count: int = 0

    def to_json(self) -> dict[str, Any]:
        # The turns are kept one by one (Store.save_turn), not with the chat's row.
        return kept_fields(self, leave_out=("turns", "turn_count"))


@dataclass
class SessionRecord:
    uri: str
    provider: str
    created_ms: int
    modified_ms: int
    default_chat: str
    title: str = ""
    working_directories: list[str] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    is_read: bool = False
    is_archived: bool = False
    #: A session made fresh is provisional (unlisted, unannounced) until its first message.
    announced: bool = False
    chats: list[str] = field(default_factory=list)
    #: Whose session it is: `user:<id>` or `root:<host>`.
    owner: str = ""
    #: The team or project it belongs to (`team:<slug>`, `project:<slug>`); "" the host's.
    scope: str = ""
    #: The working tree (a git tree id) as each turn found it and left it, by turn id; what the
    #: session found (its first turn's start) under "" (changesets/scopes.SESSION_FOUND).
    snapshots: dict[str, list[str]] = field(default_factory=dict)
    #: Review ticks by changeset scope (`session`, `turn/<id>`): file id -> the blob the file
    #: held when it was ticked; a file that holds another since has its tick taken off.
    reviews: dict[str, dict[str, str]] = field(default_factory=dict)
    #: Its annotations channel's marks (annotations.py), as the last action left them.
    annotations: list[dict[str, Any]] = field(default_factory=list)
    #: The enablement decisions people made for its customizations (session/
    #: customizationToggled), by customization id, each list as the last toggle sent it.
    enablement: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: A run's session: {kind: automation, automation, run}. Read back from the run's record
    #: (automations/), not from the session's row.
    origin: dict[str, Any] | None = None
    #: Made by a window of a multi-root workspace (createSession's `_meta.multiRoot`): it works
    #: in that workspace's folders, which may change under it (services/working_directories.py).
    multi_root: bool = False

    def to_json(self) -> dict[str, Any]:
        return kept_fields(self)


def kept_fields(record: Any, leave_out: tuple[str, ...] = ()) -> dict[str, Any]:
    """A record's fields as the store keeps them; lists and dicts are copied, so the store's
    thread never reads what the loop goes on changing."""
    out: dict[str, Any] = {}
    for f in fields(record):
        if f.name in leave_out:
            continue
        value = getattr(record, f.name)
        out[f.name] = (
            list(value)
            if isinstance(value, list)
            else (dict(value) if isinstance(value, dict) else value)
        )
    return out


def record_from_json(cls: type[R], data: dict[str, Any]) -> R:
    """A record from what the store kept; a field it did not keep takes its default."""
    return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})


def file_path(uri: str) -> Path:
    """A working directory's file: URI as a path (a bare path is taken as one)."""
    parts = urlsplit(uri)
    return Path(unquote(parts.path)) if parts.scheme == "file" else Path(uri)


def first_folder(directories: Any) -> Path | None:
    """The first of a session's working directories (file: URIs, as kept and as asked for)
    as a path; None where there is none."""
    if not isinstance(directories, list) or not directories or not isinstance(directories[0], str):
        return None
    return file_path(directories[0])


def opaque_chat_uri() -> str:
    return f"ahp-chat:/{uuid.uuid4()}"


def derived_default_chat_uri(session_uri: str) -> str:
    """The default chat URI an older VS Code window computes from its session's URI."""
    encoded = base64.urlsafe_b64encode(session_uri.encode()).decode().rstrip("=")
    return f"ahp-chat://default/{encoded}"


def chat_summary(chat: ChatRecord, modified_ms: int) -> dict[str, Any]:
    return {
        "resource": chat.uri,
        "title": chat.title,
        "status": status_bits(STATUS_IDLE, is_read=chat.is_read, is_archived=chat.is_archived),
        "modifiedAt": iso(modified_ms),
    }


def chat_state(chat: ChatRecord, modified_ms: int) -> dict[str, Any]:
    state = chat_summary(chat, modified_ms)
    state["turns"] = list(chat.turns)
    if chat.draft is not None:
        state["draft"] = chat.draft
    return state


def assistant_text(turn: Mapping[str, Any]) -> str:
    """What the agent answered in a turn: its markdown parts' text."""
    return "".join(
        p.get("content", "") for p in turn.get("responseParts", []) if p.get("kind") == "markdown"
    )
