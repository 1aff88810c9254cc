"""Reducer for ``TerminalState`` (``ahp-terminal:`` channels).

Port of ``types/channels-terminal/reducer.ts`` (1.0 shape: the process state
lives in ``lifecycle``, ``{status: "running"}`` or ``{status: "exited", exitCode?}``).
"""

from __future__ import annotations

from typing import Any

from ._action_table import ActionTable, sets_field, table_reducer, unchanged
from ._common import Action, JsonObject, as_list, assign, compact


def _append_data(content: list[Any], data: str) -> list[Any]:
    """Append output to the tail part the way the canonical reducer does.

    Output belongs to a still-running command when one is at the tail;
    otherwise it extends the trailing unclassified text or starts a new one.
    """
    result = list(content)
    tail = result[-1] if result else None
    if isinstance(tail, dict) and tail.get("type") == "command" and not tail.get("isComplete"):
        result[-1] = {**tail, "output": str(tail.get("output") or "") + data}
    elif isinstance(tail, dict) and tail.get("type") == "unclassified":
        result[-1] = {**tail, "value": str(tail.get("value") or "") + data}
    else:
        result.append({"type": "unclassified", "value": data})
    return result


def _command_finished(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    """Mark the command part named by ``commandId`` complete."""
    changed = False
    content: list[Any] = []
    for part in as_list(state.get("content")):
        if (
            isinstance(part, dict)
            and part.get("type") == "command"
            and part.get("commandId") == action.get("commandId")
        ):
            part = assign(
                part,
                {
                    "isComplete": True,
                    "exitCode": action.get("exitCode"),
                    "durationMs": action.get("durationMs"),
                },
            )
            changed = True
        content.append(part)
    return {**state, "content": content} if changed else state


def _data(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    data = action.get("data")
    if not isinstance(data, str):
        return state
    return {**state, "content": _append_data(as_list(state.get("content")), data)}


def _resized(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    return assign(state, {"cols": action.get("cols"), "rows": action.get("rows")})


def _exited(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    return {**state, "lifecycle": compact(status="exited", exitCode=action.get("exitCode"))}


def _cleared(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    return {**state, "content": []}


def _command_detection_available(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    return {**state, "supportsCommandDetection": True}


def _command_executed(state: JsonObject, action: Action, now_ms: int) -> JsonObject:
    part = {
        "type": "command",
        "commandId": action.get("commandId"),
        "commandLine": action.get("commandLine"),
        # Output starts empty and grows through terminal/data.
        "output": "",
        "timestamp": action.get("timestamp"),
        "isComplete": False,
    }
    content = [*as_list(state.get("content")), part]
    return {**state, "content": content, "supportsCommandDetection": True}


TERMINAL_ACTIONS: ActionTable = {
    "terminal/data": _data,
    # Side effect only: the host forwards the bytes to the pty.
    "terminal/input": unchanged,
    "terminal/resized": _resized,
    "terminal/claimed": sets_field("claim"),
    "terminal/titleChanged": sets_field("title"),
    "terminal/cwdChanged": sets_field("cwd"),
    "terminal/exited": _exited,
    "terminal/cleared": _cleared,
    "terminal/commandDetectionAvailable": _command_detection_available,
    "terminal/commandExecuted": _command_executed,
    "terminal/commandFinished": _command_finished,
}


reduce_terminal = table_reducer(TERMINAL_ACTIONS)
