"""What Claude's CLI runs in the background of a chat: its shells (`Bash` with
`run_in_background`) and its subagents (`Task`/`Agent`, which this CLI runs in the background).

The CLI's `background_tasks_changed` system message is the whole live set; its `task_started`
says what each one is (the call that started it, whose `command` a shell carries), and a task
is listed once it has said so, so that each is said once, whole; a terminal
`task_updated` or `task_notification` ends one whatever the set says. Only shells
(`local_bash`) and subagents (`local_agent`) are listed: the CLI's ambient tasks (a monitor, a
workflow) are none of the person's work. A change is said as the whole set again; a set that
did not change says nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Literal

from claude_agent_sdk import (
    TERMINAL_TASK_STATUSES,
    SystemMessage,
    TaskNotificationMessage,
    TaskStartedMessage,
    TaskUpdatedMessage,
)

from hosts.backends.base import BackgroundTask

#: The CLI's task types, by the kind of work they are.
KINDS: dict[str, Literal["shell", "subagent"]] = {
    "local_bash": "shell",
    "local_agent": "subagent",
}


def _started_at(start_time: Any) -> str:
    """The CLI's start time (ms since the epoch) in ISO 8601; now where it gave none."""
    if isinstance(start_time, int | float) and not isinstance(start_time, bool):
        moment = datetime.fromtimestamp(start_time / 1000, UTC)
    else:
        moment = datetime.now(UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class BackgroundTasks:
    """One CLI's background tasks, as far as it has said them."""

    def __init__(self, command_of: Callable[[str], str | None]) -> None:
        #: The command of the Bash call with this tool-use id, where a turn saw it.
        self._command_of = command_of
        self.tasks: dict[str, BackgroundTask] = {}
        #: What task_started said of a task: its call, its type, its description.
        self._started: dict[str, Mapping[str, Any]] = {}
        #: The tasks listed that ended: the CLI tells the model of each, in a call of its own.
        self.ended: set[str] = set()
        #: The live set's rows as the CLI last said them, by task id.
        self._level_rows: dict[str, Mapping[str, Any]] = {}

    @property
    def subagents_running(self) -> bool:
        return any(task.kind == "subagent" for task in self.tasks.values())

    def apply(self, message: Any) -> bool:
        """Take one message of the CLI's; whether the set (or what one task is) changed."""
        if not isinstance(message, SystemMessage):
            return False
        before = dict(self.tasks)
        if isinstance(message, TaskStartedMessage):
            self._started[message.task_id] = message.data
            level = self._level_rows.get(message.task_id)
            if level is not None:
                task = self._task(message.task_id, level)
                if task is not None:
                    self.tasks[message.task_id] = task
        elif isinstance(message, TaskNotificationMessage):
            self._end(message.task_id)
        elif isinstance(message, TaskUpdatedMessage):
            status = message.status or message.patch.get("status")
            if status in TERMINAL_TASK_STATUSES:
                self._end(message.task_id)
        elif message.subtype == "background_tasks_changed":
            level = message.data.get("tasks")
            if isinstance(level, list):
                self._level(level)
        return self.tasks != before

    def _level(self, level: list[Any]) -> None:
        live: dict[str, BackgroundTask] = {}
        self._level_rows = {
            row["task_id"]: row
            for row in level
            if isinstance(row, Mapping) and isinstance(row.get("task_id"), str)
        }
        for task_id, row in self._level_rows.items():
            task = self._task(task_id, row)
            if task is not None:
                live[task.task_id] = task
        self.tasks = live

    def _task(self, task_id: str, row: Mapping[str, Any]) -> BackgroundTask | None:
        started = self._started.get(task_id)
        if started is None:
            return None
        kind = KINDS.get(str(row.get("task_type") or started.get("task_type") or ""))
        if kind is None:
            return None
        known = self.tasks.get(task_id)
        call = started.get("tool_use_id") or row.get("tool_use_id")
        call_id = call if isinstance(call, str) else None
        label = row.get("description") or started.get("description") or kind
        command = self._command_of(call_id) if call_id and kind == "shell" else None
        return BackgroundTask(
            task_id=task_id,
            kind=kind,
            label=str(label),
            started_at=known.started_at if known else _started_at(row.get("start_time")),
            command=command or (known.command if known else None),
            tool_call_id=call_id,
        )

    def _end(self, task_id: str) -> None:
        if self.tasks.pop(task_id, None) is not None:
            self.ended.add(task_id)
        self._started.pop(task_id, None)
        self._level_rows.pop(task_id, None)
