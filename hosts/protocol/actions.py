"""The AHP 1.0.0 action registry: every state action type, its channel, who may dispatch it,
and the protocol version that introduced it.

Source of truth: the public repository ``microsoft/agent-host-protocol`` around tag v1.0.0.

* ``introduced_in`` is ``ACTION_INTRODUCED_IN`` from ``types/version/registry.ts`` (read at
  commit 0383429, just after 1.0.0; every action there is <= 0.10.0, the only 1.1.0 entries in
  that file are notifications, so the action map equals the 1.0.0 one).
* ``client_dispatchable`` is ``IS_CLIENT_DISPATCHABLE`` from ``types/action-origin.generated.ts``
  (generated from the ``@clientDispatchable`` JSDoc tag on each action declaration). The
  generated file at exactly 1.0.0 is not stored in the reference index; the values are the
  generated map of a 0.9-era commit (a596fdd, which also carries every 0.9 action) for all
  0.1-0.9 actions, and for the two 0.10.0 canvas actions (``chat/canvasesChanged``,
  ``canvas/stateChanged``) the declarations carry no ``@clientDispatchable`` tag, so both are
  host-only.
* The type list is ``ActionType`` in ``types/common/actions.ts``.

A host SHOULD only send an action to a client when ``known_to(type, negotiated_version)``.
Clients may only dispatch ``client_dispatchable`` types.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

__all__ = [
    "ACTIONS",
    "CHANNEL_KINDS",
    "ActionSpec",
    "action_spec",
    "known_to",
]

Version = tuple[int, int, int]

#: The channel kinds an action can belong to; one per ``<prefix>/`` of the action type.
CHANNEL_KINDS: Final[frozenset[str]] = frozenset(
    {
        "root",
        "session",
        "chat",
        "terminal",
        "changeset",
        "annotations",
        "resourceWatch",
        "automation",
        "automationRun",
        "canvas",
    }
)


@dataclass(frozen=True, slots=True)
class ActionSpec:
    """One action type of the protocol."""

    type: str
    """Wire discriminant, e.g. ``"chat/turnStarted"``."""
    channel_kind: str
    """Kind of channel the action is addressed to (see :data:`CHANNEL_KINDS`)."""
    client_dispatchable: bool
    """The protocol's ``IS_CLIENT_DISPATCHABLE``: a client may send it via ``dispatchAction``."""
    introduced_in: Version
    """The protocol's ``ACTION_INTRODUCED_IN``."""


# (type, client_dispatchable, introduced_in), in the order of ACTION_INTRODUCED_IN.
# The channel kind is the part of the type before the "/".
_TABLE: Final[tuple[tuple[str, bool, Version], ...]] = (
    # root
    ("root/agentsChanged", False, (0, 1, 0)),
    ("root/activeSessionsChanged", False, (0, 1, 0)),
    # session
    ("session/ready", False, (0, 1, 0)),
    ("session/creationFailed", False, (0, 1, 0)),
    ("session/chatAdded", False, (0, 4, 0)),
    ("session/chatRemoved", False, (0, 4, 0)),
    ("session/chatUpdated", False, (0, 4, 0)),
    ("session/chatsReordered", False, (0, 9, 0)),
    ("session/defaultChatChanged", False, (0, 4, 0)),
    ("session/titleChanged", True, (0, 1, 0)),
    ("session/serverToolsChanged", False, (0, 1, 0)),
    ("session/activeClientSet", True, (0, 5, 0)),
    ("session/activeClientRemoved", True, (0, 5, 0)),
    ("session/workingDirectorySet", True, (0, 7, 0)),
    ("session/workingDirectoryRemoved", True, (0, 7, 0)),
    ("session/workingDirectoryReplaced", True, (0, 8, 0)),
    ("session/inputNeededSet", False, (0, 5, 1)),
    ("session/inputNeededRemoved", False, (0, 5, 1)),
    ("session/customizationsChanged", False, (0, 1, 0)),
    ("session/customizationToggled", True, (0, 1, 0)),
    ("session/customizationUpdated", False, (0, 1, 0)),
    ("session/customizationRemoved", False, (0, 2, 0)),
    ("session/mcpServerStateChanged", False, (0, 3, 0)),
    ("session/mcpServerStartRequested", True, (0, 5, 2)),
    ("session/mcpServerStopRequested", True, (0, 5, 2)),
    ("session/mcpServerBackgroundRequested", True, (0, 9, 0)),
    ("session/isReadChanged", True, (0, 1, 0)),
    ("session/isArchivedChanged", True, (0, 1, 0)),
    ("session/activityChanged", False, (0, 1, 0)),
    ("session/changesetsChanged", False, (0, 2, 0)),
    ("session/configChanged", True, (0, 1, 0)),
    ("session/metaChanged", False, (0, 1, 0)),
    # chat
    ("chat/turnStarted", True, (0, 4, 0)),
    ("chat/delta", False, (0, 4, 0)),
    ("chat/responsePart", False, (0, 4, 0)),
    ("chat/toolCallStart", False, (0, 4, 0)),
    ("chat/toolCallDelta", False, (0, 4, 0)),
    ("chat/toolCallReady", False, (0, 4, 0)),
    ("chat/toolCallConfirmed", True, (0, 4, 0)),
    ("chat/toolCallComplete", True, (0, 4, 0)),
    ("chat/toolCallResultConfirmed", True, (0, 4, 0)),
    ("chat/toolCallContentChanged", True, (0, 4, 0)),
    ("chat/toolCallAuthRequired", False, (0, 6, 0)),
    ("chat/toolCallAuthResolved", False, (0, 6, 0)),
    ("chat/turnComplete", False, (0, 4, 0)),
    ("chat/turnCancelled", True, (0, 4, 0)),
    ("chat/error", False, (0, 4, 0)),
    ("chat/turnResume", True, (0, 9, 0)),
    ("chat/activityChanged", False, (0, 5, 0)),
    ("chat/backgroundWorkSet", False, (0, 9, 0)),
    ("chat/backgroundWorkRemoved", False, (0, 9, 0)),
    ("chat/movableChanged", False, (0, 9, 0)),
    ("chat/changesetsChanged", False, (0, 9, 0)),
    ("chat/canvasesChanged", False, (0, 10, 0)),
    # canvas (experimental channel)
    ("canvas/stateChanged", False, (0, 10, 0)),
    # chat (continued)
    ("chat/workingDirectorySet", True, (0, 7, 0)),
    ("chat/workingDirectoryRemoved", True, (0, 7, 0)),
    ("chat/usage", False, (0, 4, 0)),
    ("chat/reasoning", False, (0, 4, 0)),
    ("chat/pendingMessageSet", True, (0, 4, 0)),
    ("chat/pendingMessageRemoved", True, (0, 4, 0)),
    ("chat/queuedMessagesReordered", True, (0, 4, 0)),
    ("chat/draftChanged", True, (0, 5, 0)),
    ("chat/isReadChanged", True, (0, 9, 0)),
    ("chat/isArchivedChanged", True, (0, 9, 0)),
    ("chat/inputRequested", False, (0, 4, 0)),
    ("chat/inputAnswerChanged", True, (0, 4, 0)),
    ("chat/inputCompleted", True, (0, 4, 0)),
    ("chat/truncated", True, (0, 4, 0)),
    ("chat/turnsLoaded", False, (0, 5, 1)),
    # changeset (filesReviewChanged is the only client-dispatchable one)
    ("changeset/statusChanged", False, (0, 2, 0)),
    ("changeset/fileSet", False, (0, 2, 0)),
    ("changeset/fileRemoved", False, (0, 2, 0)),
    ("changeset/filesReviewChanged", True, (0, 6, 0)),
    ("changeset/contentChanged", False, (0, 4, 0)),
    ("changeset/operationsChanged", False, (0, 2, 0)),
    ("changeset/operationStatusChanged", False, (0, 3, 0)),
    ("changeset/cleared", False, (0, 2, 0)),
    # annotations (all client-dispatchable)
    ("annotations/set", True, (0, 4, 0)),
    ("annotations/updated", True, (0, 4, 0)),
    ("annotations/removed", True, (0, 4, 0)),
    ("annotations/entrySet", True, (0, 4, 0)),
    ("annotations/entryRemoved", True, (0, 4, 0)),
    # root (continued)
    ("root/terminalsChanged", False, (0, 1, 0)),
    ("root/configChanged", True, (0, 1, 0)),
    # terminal
    ("terminal/data", False, (0, 1, 0)),
    ("terminal/input", True, (0, 1, 0)),
    ("terminal/resized", True, (0, 1, 0)),
    ("terminal/claimed", True, (0, 1, 0)),
    ("terminal/titleChanged", True, (0, 1, 0)),
    ("terminal/cwdChanged", False, (0, 1, 0)),
    ("terminal/exited", False, (0, 1, 0)),
    ("terminal/cleared", True, (0, 1, 0)),
    ("terminal/commandDetectionAvailable", False, (0, 1, 0)),
    ("terminal/commandExecuted", False, (0, 1, 0)),
    ("terminal/commandFinished", False, (0, 1, 0)),
    # resource watch
    ("resourceWatch/changed", False, (0, 2, 0)),
    # automation catalogue (experimental)
    ("automation/createRequested", True, (0, 8, 0)),
    ("automation/updateRequested", True, (0, 8, 0)),
    ("automation/set", False, (0, 8, 0)),
    ("automation/removed", True, (0, 8, 0)),
    # automation run (experimental; cancelRequested is the only client-dispatchable one)
    ("automationRun/lifecycleChanged", False, (0, 8, 0)),
    ("automationRun/sessionSet", False, (0, 8, 0)),
    ("automationRun/sessionRemoved", False, (0, 8, 0)),
    ("automationRun/primarySessionChanged", False, (0, 8, 0)),
    ("automationRun/cancelRequested", True, (0, 8, 0)),
)


def _build() -> Mapping[str, ActionSpec]:
    table: dict[str, ActionSpec] = {}
    for action_type, client_dispatchable, introduced_in in _TABLE:
        kind = action_type.partition("/")[0]
        if kind not in CHANNEL_KINDS:  # pragma: no cover - guards the table above
            raise ValueError(f"unknown channel kind in {action_type!r}")
        if action_type in table:  # pragma: no cover - guards the table above
            raise ValueError(f"duplicate action type {action_type!r}")
        table[action_type] = ActionSpec(action_type, kind, client_dispatchable, introduced_in)
    return MappingProxyType(table)


#: Every action type of AHP 1.0.0, keyed by its wire ``type``. Read-only.
ACTIONS: Final[Mapping[str, ActionSpec]] = _build()


def action_spec(action_type: str) -> ActionSpec | None:
    """The spec of ``action_type``, or ``None`` for a type 1.0.0 does not define."""
    return ACTIONS.get(action_type)


def known_to(action_type: str, version: tuple[int, int, int]) -> bool:
    """Whether a peer that negotiated ``version`` knows ``action_type``.

    Mirrors the protocol's ``isActionKnownToVersion``: ``introduced_in <= version``.
    An unknown type is known to no version.
    """
    spec = ACTIONS.get(action_type)
    return spec is not None and spec.introduced_in <= version
