"""The wire shapes this host builds, typed: what the protocol's JSON Schemas say of them.

Field names follow microsoft/agent-host-protocol `types/` (AHP 1.0.0); every frame the tests
receive is checked against the protocol's schemas (tests/schema_check.py). `_meta` is spelt
with the functional syntax, the only one that takes a leading underscore.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict


class Origin(TypedDict):
    """Who dispatched an action: the client and its own sequence number."""

    clientId: str
    clientSeq: int


class ActionEnvelope(TypedDict):
    """The params of an `action` notification."""

    channel: str
    action: dict[str, Any]
    serverSeq: int
    origin: NotRequired[Origin]
    rejectionReason: NotRequired[str]


class Snapshot(TypedDict):
    resource: str
    state: Any
    fromSeq: int


class ChatRow(TypedDict):
    """A chat as its session's summary lists it."""

    resource: str
    title: str
    status: int


#: Where a session's git working tree stands, in the keys VS Code's host writes under
#: `_meta.git` (changesets/git.py: branch_facts).
class SessionGit(TypedDict, total=False):
    branchName: str
    upstreamBranchName: str
    outgoingChanges: int
    incomingChanges: int
    uncommittedChanges: int
    baseBranchName: str


SessionMeta = TypedDict(
    "SessionMeta", {"ahpd.owner": NotRequired[str], "git": NotRequired[SessionGit]}
)


class SessionSummary(TypedDict):
    resource: str
    provider: str
    title: str
    status: int
    createdAt: str
    modifiedAt: str
    workingDirectories: list[str]
    chats: list[ChatRow]
    defaultChat: str
    _meta: NotRequired[SessionMeta]
    #: A run's session: {kind: "automation", automation, run}.
    origin: NotRequired[dict[str, str]]


class ServerInfo(TypedDict):
    name: str
    version: str


class InitializeResult(TypedDict):
    protocolVersion: str
    serverSeq: int
    snapshots: list[Snapshot]
    serverInfo: ServerInfo
    _meta: dict[str, Any]


class ListSessionsResult(TypedDict):
    items: list[SessionSummary]
    nextCursor: NotRequired[str]


class ReplayResult(TypedDict):
    type: str
    actions: list[Any]
    missing: list[str]


class SnapshotsResult(TypedDict):
    type: str
    snapshots: list[Snapshot]
