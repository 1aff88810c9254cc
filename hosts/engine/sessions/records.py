"""The durable records of sessions and chats, and the protocol shapes built from them.

A record is what the store keeps; a channel's held state is built from its record once, when
the channel opens, and moves only by the protocol's reducers after that.
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from ...protocol.reducers._common import (
    STATUS_IDLE,
    STATUS_IS_ARCHIVED,
    STATUS_IS_READ,
)


@lru_cache(maxsize=1 << 17)
def iso(ms: int) -> str:
    """Epoch milliseconds as the ISO-8601 text the protocol's timestamps use."""
    return (
        datetime.fromtimestamp(ms / 1000, UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


def status_bits(activity: int, *, is_read: bool, is_archived: bool) -> int:
    return (
        activity | (STATUS_IS_READ if is_read else 0) | (STATUS_IS_ARCHIVED if is_archived else 0)
    )


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

    def to_json(self) -> dict[str, Any]:
        return {
            "uri": self.uri,
            "session": self.session,
            "created_ms": self.created_ms,
            "title": self.title,
            "backend_id": self.backend_id,
            "is_read": self.is_read,
            "is_archived": self.is_archived,
            "draft": self.draft,
        }


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

    def to_json(self) -> dict[str, Any]:
        return {
            "owner": self.owner,
            "uri": self.uri,
            "provider": self.provider,
            "created_ms": self.created_ms,
            "modified_ms": self.modified_ms,
            "default_chat": self.default_chat,
            "title": self.title,
            "working_directories": list(self.working_directories),
            "config": dict(self.config),
            "is_read": self.is_read,
            "is_archived": self.is_archived,
            "announced": self.announced,
            "chats": list(self.chats),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SessionRecord:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


def chat_record_from_json(data: dict[str, Any]) -> ChatRecord:
    fields = ChatRecord.__dataclass_fields__
    return ChatRecord(**{k: data[k] for k in fields if k in data})


def file_path(uri: str) -> Path:
    """A working directory's file: URI as a path (a bare path is taken as one)."""
    parts = urlsplit(uri)
    return Path(unquote(parts.path)) if parts.scheme == "file" else Path(uri)


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
