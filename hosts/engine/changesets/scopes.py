"""A session's changesets, one per scope, at `<session>/changeset/<scope>`:

- `uncommitted`: what differs from HEAD under the session's folder, with the index's part
  told apart (git status), and commit, discard, stage and unstage;
- `session`: what changed since the session's first turn began (the tree it found, kept as a
  git tree id), with revert;
- `turn/<turnId>`: what one turn changed, from the tree it found to the tree it left (or the
  working tree while it runs).

A changeset is a scope nested under its session's URI, so what is a session's is a prefix.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..sessions.records import SessionRecord, file_path
from . import files, git
from .operations import Tree, declared, declared_for_session

SEGMENT = "/changeset/"
UNCOMMITTED = "uncommitted"
SESSION = "session"
TURN = "turn/"


def uri_of(session_uri: str, scope: str) -> str:
    return f"{session_uri}{SEGMENT}{scope}"


def parse(uri: str) -> tuple[str, str] | None:
    """The session a changeset URI is under and its scope, or None for any other URI."""
    head, found, scope = uri.rpartition(SEGMENT)
    if not found or not head:
        return None
    turn = scope.removeprefix(TURN)
    if scope in (UNCOMMITTED, SESSION) or (scope.startswith(TURN) and turn and "/" not in turn):
        return head, scope
    return None


def session_uri_of(uri: str) -> str | None:
    parsed = parse(uri)
    return parsed[0] if parsed is not None else None


def folder_of(record: SessionRecord) -> Path | None:
    return file_path(record.working_directories[0]) if record.working_directories else None


def in_git(record: SessionRecord) -> bool:
    folder = folder_of(record)
    return folder is not None and git.repository_of(folder) is not None


def catalogue(record: SessionRecord) -> list[dict[str, Any]] | None:
    """A session's changeset catalogue, where its folder is in a git working tree."""
    if not in_git(record):
        return None
    return [
        {
            "label": "Uncommitted Changes",
            "uriTemplate": uri_of(record.uri, UNCOMMITTED),
            "changeKind": "uncommitted",
            "description": f"What differs from HEAD under {folder_of(record)}",
        },
        {
            "label": "Session Changes",
            "uriTemplate": uri_of(record.uri, SESSION),
            "changeKind": "session",
            "description": "What changed since the session's first turn began",
        },
        {
            "label": "Turn Changes",
            "uriTemplate": uri_of(record.uri, TURN + "{turnId}"),
            "changeKind": "turn",
            "description": "What one turn changed",
        },
    ]


def served(record: SessionRecord, scope: str) -> bool:
    """Whether this session has that changeset: a turn's only once the turn has begun."""
    return in_git(record) and (
        not scope.startswith(TURN) or scope.removeprefix(TURN) in record.snapshots
    )


async def read(
    scope: str, folder: Path, record: SessionRecord, *, running: bool, subject: str
) -> tuple[Tree, list[dict[str, Any]], list[dict[str, Any]]]:
    """The scope as git has it now: the tree the operations run on, the files, the
    operations as things stand."""
    top = await git.top_of(folder)
    pathspec = os.path.relpath(folder.resolve(), top.resolve())
    if scope == UNCOMMITTED:
        found, rows, head = await files.read(top, pathspec)
        tree = Tree(top, pathspec, head, tuple(rows))
        return tree, found, declared(tree, running=running, subject=subject)
    if scope == SESSION:
        first = next(iter(record.snapshots.values()), None)
        if first is None:  # no turn yet: nothing changed
            return Tree(top, pathspec, None, ()), [], []
        found, rows = await files.read_between(top, pathspec, first[0], None)
        tree = Tree(top, pathspec, None, tuple(rows), base=first[0])
        return tree, found, declared_for_session(running=running)
    snaps = record.snapshots.get(scope.removeprefix(TURN), [])
    if not snaps:
        return Tree(top, pathspec, None, ()), [], []
    found, rows = await files.read_between(
        top, pathspec, snaps[0], snaps[1] if len(snaps) > 1 else None
    )
    return Tree(top, pathspec, None, tuple(rows)), found, []
