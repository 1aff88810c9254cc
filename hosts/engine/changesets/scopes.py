"""A session's changesets, one per scope, at `<session>/changeset/<scope>`:

- `uncommitted`: what differs from HEAD under the session's folder, with the index's part
  told apart (git status), and commit, discard, stage and unstage;
- `session`: what changed since the session's first turn began (the tree it found, kept as a
  git tree id), with revert;
- `turn/<turnId>`: what one turn changed, from the tree it found to the tree it left (or the
  working tree while it runs);
- `compare/<originalTurnId>/<modifiedTurnId>`: what changed from the tree one turn left to the
  tree another left (the working tree for either while it runs), the protocol's compare-turns.

A folder in a git working tree has all four, its trees kept in its own repository; one
outside any has the last three where this host keeps trees of its own (outside_git.py), the before
side of each file the content its first turn found. A changeset is a scope nested under its
session's URI, so what is a session's is a prefix.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

from ..sessions.records import SessionRecord, file_path
from . import files, git
from .operations import Tree, declared, declared_for_session
from .outside_git import OutsideGitCopies

SEGMENT = "/changeset/"
UNCOMMITTED = "uncommitted"
SESSION = "session"
TURN = "turn/"
COMPARE = "compare/"
#: The key of `SessionRecord.snapshots` holding the tree the session's first turn found (no
#: turn id is empty, and `turn/` names no changeset).
SESSION_FOUND = ""


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
    if compared(scope) is not None:
        return head, scope
    return None


def compared(scope: str) -> tuple[str, str] | None:
    """The two turn ids a compare scope names, original first; None for any other scope."""
    if not scope.startswith(COMPARE):
        return None
    original, slash, modified = scope.removeprefix(COMPARE).partition("/")
    if not (original and slash and modified) or "/" in modified:
        return None
    return original, modified


def session_uri_of(uri: str) -> str | None:
    parsed = parse(uri)
    return parsed[0] if parsed is not None else None


def folder_of(record: SessionRecord) -> Path | None:
    return file_path(record.working_directories[0]) if record.working_directories else None


def in_git(record: SessionRecord) -> bool:
    folder = folder_of(record)
    return folder is not None and git.repository_of(folder) is not None


def catalogue(record: SessionRecord, kept: bool = False) -> list[dict[str, Any]] | None:
    """A session's changeset catalogue: where its folder is in a git working tree, or outside
    one where this host keeps trees (`kept`); None where it has none."""
    folder = folder_of(record)
    if folder is None or not (kept or in_git(record)):
        return None
    # A session's and a turn's changes keep review ticks (changeset_table.py: reviews); the
    # working tree's do not.
    ours = [
        {
            "label": "Session Changes",
            "uriTemplate": uri_of(record.uri, SESSION),
            "changeKind": "session",
            "description": "What changed since the session's first turn began",
            "capabilities": {"review": {}},
        },
        {
            "label": "Turn Changes",
            "uriTemplate": uri_of(record.uri, TURN + "{turnId}"),
            "changeKind": "turn",
            "description": "What one turn changed",
            "capabilities": {"review": {}},
        },
        {
            "label": "Compare Turns",
            "uriTemplate": uri_of(record.uri, COMPARE + "{originalTurnId}/{modifiedTurnId}"),
            "changeKind": "compare-turns",
            "description": "What changed from the end of one turn to the end of another",
            "capabilities": {"review": {}},
        },
    ]
    if not in_git(record):
        return ours
    uncommitted = {
        "label": "Uncommitted Changes",
        "uriTemplate": uri_of(record.uri, UNCOMMITTED),
        "changeKind": "uncommitted",
        "description": f"What differs from HEAD under {folder}",
    }
    return [uncommitted, *ours]


def served(record: SessionRecord, scope: str, kept: bool = False) -> bool:
    """Whether this session has that changeset: a turn's only once the turn has begun."""
    if not catalogue(record, kept):
        return False
    if scope == UNCOMMITTED:
        return in_git(record)
    if (turns := compared(scope)) is not None:
        return all(turn in record.snapshots for turn in turns)
    return not scope.startswith(TURN) or scope.removeprefix(TURN) in record.snapshots


async def read(
    scope: str,
    folder: Path,
    record: SessionRecord,
    *,
    running: bool,
    subject: str,
    kept: OutsideGitCopies | None = None,
) -> tuple[Tree, list[dict[str, Any]], list[dict[str, Any]]]:
    """The scope as git has it now: the tree the operations run on, the files, the
    operations as things stand."""
    env: git.Env = None
    current = None
    if in_git(record):
        top = await git.top_of(folder)
        pathspec = os.path.relpath(folder.resolve(), top.resolve())
    elif kept is not None:
        top, pathspec, env = Path("/"), OutsideGitCopies.pathspec(folder), kept.env

        def current() -> Awaitable[str | None]:
            return kept.snapshot(folder)

    else:
        raise git.GitError(f"{folder} is in no git working tree")
    if scope == UNCOMMITTED:
        found, rows, head = await files.read(top, pathspec)
        tree = Tree(top, pathspec, head, tuple(rows))
        return tree, found, declared(tree, running=running, subject=subject)
    if scope == SESSION:
        # A record from before SESSION_FOUND was kept: its first turn, in the order read back.
        first = record.snapshots.get(SESSION_FOUND) or next(iter(record.snapshots.values()), None)
        if first is None:  # no turn yet: nothing changed
            return Tree(top, pathspec, None, ()), [], []
        found, rows = await files.read_between(top, pathspec, first[0], None, env, current)
        tree = Tree(top, pathspec, None, tuple(rows), base=first[0], env=env)
        return tree, found, declared_for_session(running=running)
    if (turns := compared(scope)) is not None:
        original, modified = (record.snapshots.get(turn, []) for turn in turns)
        if not original or not modified:
            return Tree(top, pathspec, None, ()), [], []
        # Each side the tree its turn left; one that runs still, the working tree.
        base = original[1] if len(original) > 1 else None
        if base is None:
            # Outside git (env set), the tree is kept where this host keeps its own.
            outside = kept if env is not None else None
            base = await (outside.snapshot(folder) if outside is not None else git.snapshot(top))
        if base is None:  # too large to keep
            return Tree(top, pathspec, None, ()), [], []
        then = modified[1] if len(modified) > 1 else None
        found, rows = await files.read_between(top, pathspec, base, then, env, current)
        return Tree(top, pathspec, None, tuple(rows), env=env), found, []
    snaps = record.snapshots.get(scope.removeprefix(TURN), [])
    if not snaps:
        return Tree(top, pathspec, None, ()), [], []
    then = snaps[1] if len(snaps) > 1 else None
    found, rows = await files.read_between(top, pathspec, snaps[0], then, env, current)
    return Tree(top, pathspec, None, tuple(rows), env=env), found, []
