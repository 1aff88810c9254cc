"""Reducer for ``TerminalState`` (``ahp-terminal:`` channels).

Port of ``types/channels-terminal/reducer.ts`` (1.0 shape: the process state
lives in ``lifecycle``, ``{status: "running"}`` or ``{status: "exited", exitCode?}``).
"""

from __future__ import annotations

from typing import Any

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


def _finish_command(state: JsonObject, action: Action) -> JsonObject:
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


def reduce_terminal(state: JsonObject, action: Action, *, now_ms: int) -> JsonObject:
    """Apply one terminal action to ``state`` and return the resulting state.

    ``now_ms`` is accepted for a uniform signature; command timestamps come
    from the action. Unknown action types leave the state unchanged.
    """
    kind: Any = action.get("type")
    if kind == "terminal/data":
        data = action.get("data")
        if not isinstance(data, str):
            return state
        return {**state, "content": _append_data(as_list(state.get("content")), data)}
    if kind == "terminal/input":
        # Side effect only: the host forwards the bytes to the pty.
        return state
    if kind == "terminal/resized":
        return assign(state, {"cols": action.get("cols"), "rows": action.get("rows")})
    if kind == "terminal/claimed":
        return assign(state, {"claim": action.get("claim")})
    if kind == "terminal/titleChanged":
        return assign(state, {"title": action.get("title")})
    if kind == "terminal/cwdChanged":
        return assign(state, {"cwd": action.get("cwd")})
    if kind == "terminal/exited":
        lifecycle = compact(status="exited", exitCode=action.get("exitCode"))
        return {**state, "lifecycle": lifecycle}
    if kind == "terminal/cleared":
        return {**state, "content": []}
    if kind == "terminal/commandDetectionAvailable":
        return {**state, "supportsCommandDetection": True}
    if kind == "terminal/commandExecuted":
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
    if kind == "terminal/commandFinished":
        return _finish_command(state, action)
    return state
