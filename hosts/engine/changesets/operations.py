"""What a person may do with a changeset: commit, discard, stage and unstage the uncommitted
changes; revert a file of the session's changes to how the session found it.

Each is declared with the scopes it takes (the whole changeset, one file) and, where it
cannot be undone, the confirmation a client must show; every one is disabled while the
session runs a turn, and discard of the whole changeset in a repository with no commit (every
file there is new: it would delete them all). Each runs the git command line in the tree's
top, on the paths under the session's folder and nowhere else.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import git

COMMIT = "commit"
DISCARD = "discard-changes"
STAGE = "stage"
UNSTAGE = "unstage"
REVERT = "revert"

BOTH = ["changeset", "resource"]


@dataclass(frozen=True, slots=True)
class Tree:
    """Where a changeset's operations run: the tree's top and the session's folder in it."""

    top: Path
    pathspec: str
    head: str | None
    rows: tuple[git.Row, ...]
    #: What the session found (its first turn's start), for a session's changes; else None.
    base: str | None = None
    #: Where the trees are kept for a folder outside any repository (outside_git.py); else None.
    env: git.Env = None


def declared(tree: Tree, *, running: bool, subject: str) -> list[dict[str, Any]]:
    """The operations, as ChangesetOperation rows, each idle or disabled as things stand."""
    staged = sum(1 for row in tree.rows if row.staged)
    untracked = sum(1 for row in tree.rows if row.untracked)
    takes = (
        f"{staged} staged file{'s' * (staged != 1)}"
        if staged
        else f"{len(tree.rows)} file{'s' * (len(tree.rows) != 1)}, {untracked} untracked"
    )
    status = "disabled" if running else "idle"
    return [
        {
            "id": COMMIT,
            "label": "Commit",
            "description": "Commit a file as the working tree has it, or the whole changeset",
            "scopes": BOTH,
            "confirmation": f"Commit as '{subject}'? The whole changeset takes {takes}.",
            "icon": "check",
            "group": "git",
            "status": status,
        },
        {
            "id": DISCARD,
            "label": "Discard Changes",
            "description": "Put a file, or every file under the session's folder, back to HEAD",
            "scopes": BOTH if tree.head is not None else ["resource"],
            "confirmation": (
                "Discard the changes? A file goes back to HEAD and an untracked one is "
                f"deleted; the whole changeset takes {len(tree.rows)} "
                f"file{'s' * (len(tree.rows) != 1)}, {untracked} untracked. "
                "This cannot be undone."
            ),
            "icon": "discard",
            "group": "git",
            "status": status,
        },
        {
            "id": STAGE,
            "label": "Stage Changes",
            "scopes": BOTH,
            "icon": "add",
            "group": "index",
            "status": status,
        },
        {
            "id": UNSTAGE,
            "label": "Unstage Changes",
            "scopes": BOTH,
            "icon": "remove",
            "group": "index",
            "status": status,
        },
    ]


def declared_for_session(*, running: bool) -> list[dict[str, Any]]:
    """A session's changes take one operation: a file put back as the session found it."""
    return [
        {
            "id": REVERT,
            "label": "Revert",
            "description": "Put a file back as it was before the session's first turn",
            "scopes": ["resource"],
            "confirmation": (
                "Revert this file to how the session found it? What the session did to it is "
                "lost. This cannot be undone."
            ),
            "icon": "discard",
            "status": "disabled" if running else "idle",
        }
    ]


def _paths(tree: Tree, target: Path | None) -> list[str]:
    """The pathspecs an operation takes: the session's folder, or a target and, for a
    renamed row, the path it came from (so git records one rename)."""
    if target is None:
        return [tree.pathspec]
    relative = os.path.relpath(target, tree.top)
    paths = [relative]
    for row in tree.rows:
        if row.path == relative and row.origin and row.renamed:
            paths.append(row.origin)
    return paths


async def run(
    operation: str, tree: Tree, target: Path | None, message: str, who: tuple[str, str]
) -> str:
    """Do it; what it did, in a sentence."""
    paths = _paths(tree, target)
    if operation == STAGE:
        await git.run(tree.top, "add", "-A", "--", *paths)
        return f"Staged {', '.join(paths)}"
    if operation == UNSTAGE:
        if tree.head is None:
            await git.run(tree.top, "rm", "--cached", "-r", "-q", "--ignore-unmatch", "--", *paths)
        else:
            await git.run(tree.top, "reset", "-q", "--", *paths)
        return f"Unstaged {', '.join(paths)}"
    if operation == COMMIT:
        return await _commit(tree, target, paths, message, who)
    if operation == REVERT:
        return await _revert(tree, paths)
    return await _discard(tree, target, paths)


async def _commit(
    tree: Tree, target: Path | None, paths: list[str], message: str, who: tuple[str, str]
) -> str:
    env = await git.identity_env(tree.top, *who)
    if target is not None:
        # That file as the working tree has it, staged or not; the rest of the index stays.
        await git.run(tree.top, "add", "-A", "--", *paths)
        await git.run(
            tree.top, "commit", "-q", "--no-verify", "--only", "-m", message, "--", *paths, env=env
        )
    else:
        if not await git.has_staged(tree.top):
            await git.run(tree.top, "add", "-A", "--", *paths)
        await git.run(tree.top, "commit", "-q", "--no-verify", "-m", message, env=env)
    commit = await git.head(tree.top)
    return f"Committed {commit[:12] if commit else ''} '{message.splitlines()[0]}'"


async def _discard(tree: Tree, target: Path | None, paths: list[str]) -> str:
    if target is None or (target.is_dir() and tree.head is not None):
        # A folder, or the whole changeset: back to HEAD (what HEAD never had goes from the
        # index and the disk; a path git knows nothing of is no failure), then the untracked.
        assert tree.head is not None, "declared for a tree with a commit only"
        await git.run(
            tree.top, "restore", "--source=HEAD", "--staged", "--worktree", "--", *paths, ok=(0, 1)
        )
        await git.run(tree.top, "clean", "-f", "-d", "-q", "--", *paths)
        return f"Discarded every change under {paths[0]}"
    for path in paths:
        if tree.head is not None and await git.holds(tree.top, tree.head, path):
            await git.run(
                tree.top, "restore", "--source=HEAD", "--staged", "--worktree", "--", path
            )
            continue
        # New here: out of the index, off the disk.
        await git.run(tree.top, "rm", "--cached", "-q", "-r", "--ignore-unmatch", "--", path)
        await asyncio.to_thread(_remove, tree.top / path)
    return f"Discarded {', '.join(paths)}"


async def _revert(tree: Tree, paths: list[str]) -> str:
    """Each path as the session found it (the index left alone); one it did not find, gone."""
    assert tree.base is not None, "declared for a session's changes only"
    for path in paths:
        if await git.holds(tree.top, tree.base, path, tree.env):
            restore = ("restore", f"--source={tree.base}", "--worktree", "--", path)
            await git.run(tree.top, *restore, env=tree.env)
        else:
            await asyncio.to_thread(_remove, tree.top / path)
    return f"Reverted {', '.join(paths)} to how the session found it"


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
