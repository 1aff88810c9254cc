"""The turns running now, as an operator asks after them: which session and chat, whose, since
when. Only the engine that runs a turn knows it runs; this is read on its loop."""

from __future__ import annotations

from typing import Any

from .table import Sessions


def running_turns(sessions: Sessions) -> list[dict[str, Any]]:
    """One entry a running turn, by session URI then chat URI."""
    found: list[dict[str, Any]] = []
    for session in sessions.sessions.values():
        for chat in session.chats.values():
            if not chat.busy or chat.runner is None:
                continue
            active = chat.channel.state.get("activeTurn") or {}
            message = active.get("message") or {}
            meta = active.get("_meta") or message.get("_meta") or {}
            found.append(
                {
                    "session": session.uri,
                    "chat": chat.uri,
                    "turnId": chat.runner.turn_id,
                    "sender": meta.get("ahpd.sender"),
                    "owner": session.record.owner or None,
                    "startedAt": active.get("startedAt"),
                    "title": session.channel.state.get("title"),
                }
            )
    found.sort(key=lambda turn: (turn["session"], turn["chat"]))
    return found
