"""Client actions of what this host does not serve yet, each refused saying so."""

from __future__ import annotations

from .rule import ActionRule, Dispatch


def _not_yet(d: Dispatch) -> str:
    return f"{d.action['type']} is not supported by this host yet"


NOT_YET_RULES = tuple(
    ActionRule(action_type, refusal=_not_yet, not_yet=True)
    for action_type in (
        "session/workingDirectorySet",
        "session/workingDirectoryRemoved",
        "session/workingDirectoryReplaced",
    )
)
