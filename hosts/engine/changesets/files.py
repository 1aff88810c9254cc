"""A changeset's files, as the protocol's ChangesetFile rows, read from git.

Both sides of every edit: the after side is the file on disk (`file:`), the before side is
what HEAD holds, behind an `ahpd-git:` URI this host resolves itself (resourceRead asks the
changeset source first), pinned to the commit it was read at. A rename's before is the path
it came from; a copy keeps the new path on both sides. A row carries `_meta['ahpd.staged']`
and `['ahpd.unstaged']`, git status's two letters, so a client tells what the index holds
from what only the working tree does.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from ...protocol.errors import invalid_params
from . import git

#: A file's `_meta` key naming the blob it holds after (a session's and a turn's changes).
BLOB = "ahpd.blob"
#: The scheme of a file's before side: `ahpd-git:///<path>?ref=<commit>`.
CONTENT_SCHEME = "ahpd-git"
_COMMIT = re.compile(r"^[0-9a-f]{7,64}$")
#: An untracked file's lines are counted up to this size; a larger one shows no count.
COUNT_LIMIT = 4 * 1024 * 1024


def before_uri(path: Path, commit: str) -> str:
    return CONTENT_SCHEME + path.as_uri().removeprefix("file") + f"?ref={commit}"


def parse_before_uri(uri: str, method: str) -> tuple[Path, str]:
    """The file and commit an `ahpd-git:` URI names; -32602 naming what is wrong."""
    parts = urlsplit(uri)
    ref = dict(p.partition("=")[::2] for p in parts.query.split("&") if p).get("ref", "")
    if parts.scheme != CONTENT_SCHEME or not parts.path.startswith("/") or not _COMMIT.match(ref):
        raise invalid_params(f"{method}: {uri} is no {CONTENT_SCHEME}:///<path>?ref=<commit>")
    return Path(unquote(parts.path)), ref


def _lines(path: Path) -> int | None:
    """How many lines a file has (a last line without a newline counts), or None for a file
    too large to count or not text."""
    try:
        if path.stat().st_size > COUNT_LIMIT:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


async def rows(top: Path, pathspec: str) -> tuple[list[git.Row], str | None]:
    """What differs from HEAD under the pathspec, and HEAD (None with no commit yet)."""
    head, found = await asyncio.gather(git.head(top), git.status(top, pathspec))
    return found, head


async def read(top: Path, pathspec: str) -> tuple[list[dict[str, Any]], list[git.Row], str | None]:
    """The changeset's files, in git's order, with the rows they came from and HEAD."""
    found, head = await rows(top, pathspec)
    stats = await git.numstat(top, head, pathspec) if head is not None and found else {}
    counted = {
        row.path: await asyncio.to_thread(_lines, top / row.path)
        for row in found
        if (row.untracked or head is None) and not row.deleted
    }
    files = [_file(top, row, head, stats, counted) for row in found]
    return files, found, head


def _file(
    top: Path,
    row: git.Row,
    head: str | None,
    stats: dict[str, tuple[int, int]],
    counted: dict[str, int | None],
) -> dict[str, Any]:
    after = top / row.path
    before_path = top / row.origin if row.renamed and row.origin else after
    new = row.untracked or head is None or row.index in ("A", "C")
    edit: dict[str, Any] = {}
    if not new:
        edit["before"] = {
            "uri": before_path.as_uri(),
            "content": {"uri": before_uri(before_path, head or "")},
        }
    if after.exists() or after.is_symlink():
        edit["after"] = {"uri": after.as_uri(), "content": {"uri": after.as_uri()}}
    if row.path in stats:
        added, removed = stats[row.path]
        edit["diff"] = {"added": added, "removed": removed}
    elif (count := counted.get(row.path)) is not None:
        edit["diff"] = {"added": count, "removed": 0}
    return {
        "id": (after if "after" in edit else before_path).as_uri(),
        "edit": edit,
        "_meta": {"ahpd.staged": row.staged, "ahpd.unstaged": row.unstaged},
    }


async def read_between(
    top: Path,
    pathspec: str,
    base: str,
    then: str | None,
    env: git.Env = None,
    current: Callable[[], Awaitable[str | None]] | None = None,
) -> tuple[list[dict[str, Any]], list[git.Row]]:
    """What changed between the tree `base` and the tree `then` (a turn's end), or the working
    tree as it stands (None: `current`, else the repository's own snapshot): the before side
    read from `base`, the after side from `then`, or the file on disk. `env` names where the
    trees are kept, for a folder outside any repository (outside_git.py)."""
    now = then if then is not None else await (current or (lambda: git.snapshot(top)))()
    if now is None:
        return [], []
    found, stats = await asyncio.gather(
        git.changed(top, base, now, pathspec, env), git.numstat(top, base, pathspec, now, env)
    )
    files = []
    for row in found:
        after = top / row.path
        before_path = top / row.origin if row.renamed and row.origin else after
        edit: dict[str, Any] = {}
        if row.index not in ("A", "C"):
            edit["before"] = {
                "uri": before_path.as_uri(),
                "content": {"uri": before_uri(before_path, base)},
            }
        if row.index != "D":
            content = after.as_uri() if then is None else before_uri(after, then)
            edit["after"] = {"uri": after.as_uri(), "content": {"uri": content}}
        if row.path in stats:
            added, removed = stats[row.path]
            edit["diff"] = {"added": added, "removed": removed}
        file: dict[str, Any] = {
            "id": (after if "after" in edit else before_path).as_uri(),
            "edit": edit,
        }
        if row.blob is not None:
            # What the file holds after, as git names it: a content version, which the
            # protocol's file has none of; a review tick holds while this does.
            file["_meta"] = {BLOB: row.blob}
        files.append(file)
    return files, found


def counts(files: list[dict[str, Any]]) -> dict[str, int]:
    """A session summary's `changes`: lines added and removed, and how many files."""
    added = sum(f["edit"].get("diff", {}).get("added", 0) for f in files)
    removed = sum(f["edit"].get("diff", {}).get("removed", 0) for f in files)
    return {"additions": added, "deletions": removed, "files": len(files)}
