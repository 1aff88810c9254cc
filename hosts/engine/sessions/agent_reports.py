"""What a chat's agent says outside its turns (ChatReports): the work it runs in the
background, as the chat's backgroundWork rows, and what it is doing, as its session's
activity.

The backend reports its whole background set each time; this host builds every row from it, so
a row is one shape whoever's backend says it, and says only what moved against the chat's held
rows: chat/backgroundWorkSet for a task new or changed (`shell:<task_id>`, with its command;
`subagent:<task_id>`, with the chat it works for, which is this chat: a subagent here has no
worker chat of its own), chat/backgroundWorkRemoved for one that stopped. The activity is said
as session/activityChanged where it changed; none is a field left off.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ...backends.base import BackgroundTask


class ReportSink(Protocol):
    """The chat the agent reports on (sessions/live_session.py's LiveChat)."""

    @property
    def uri(self) -> str: ...

    def state(self) -> dict[str, Any]: ...

    def say(self, action: dict[str, Any]) -> None: ...

    def say_on_session(self, action: dict[str, Any]) -> None: ...


def work_row(task: BackgroundTask, chat: str) -> dict[str, Any]:
    """The BackgroundWork row of one task."""
    row: dict[str, Any] = {
        "id": f"{task.kind}:{task.task_id}",
        "kind": task.kind,
        "label": task.label,
        "startedAt": task.started_at,
    }
    if task.kind == "shell":
        # Required of a shell: what it runs, or what it is for where the command is unknown.
        row["command"] = task.command or task.label
    else:
        row["chat"] = chat
    return row


class AgentReports:
    """One chat's ChatReports: its agent's background work and activity, said as actions."""

    def __init__(self, chat: ReportSink) -> None:
        self.chat = chat
        self._activity: str | None = None

    def background_work(self, tasks: Sequence[BackgroundTask]) -> None:
        rows = {row["id"]: row for row in (work_row(t, self.chat.uri) for t in tasks)}
        held = {
            row.get("id"): row
            for row in self.chat.state().get("backgroundWork") or []
            if isinstance(row, dict)
        }
        for work_id in held.keys() - rows.keys():
            self.chat.say({"type": "chat/backgroundWorkRemoved", "id": work_id})
        for work_id, row in rows.items():
            if held.get(work_id) != row:
                self.chat.say({"type": "chat/backgroundWorkSet", "work": row})

    def activity(self, activity: str | None) -> None:
        if activity == self._activity:
            return
        self._activity = activity
        action: dict[str, Any] = {"type": "session/activityChanged"}
        if activity:
            action["activity"] = activity
        self.chat.say_on_session(action)
