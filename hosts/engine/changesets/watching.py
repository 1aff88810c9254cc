"""A watched changeset's watcher: the OS's file notifications (watchfiles) over the session's
folder and, in a git tree, git's own index, HEAD and refs, each batch a nudge to read again.
Outside any git tree, the folder alone; this host's own files never count (a read writes
what it keeps there, and a write that nudged a read would never end)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

from watchfiles import Change, awatch

from . import git

log = logging.getLogger("ahpd.engine")


async def watch(
    folder: Path,
    stop: asyncio.Event,
    ours: tuple[Path, ...],
    batch_ms: int,
    nudge: Callable[[], None],
    ready: asyncio.Event,
) -> None:
    """Nudge at each batch of moves until `stop` is set. `ready` is set once the OS's watches
    are registered (or there will be none): watchfiles registers them as its iteration starts,
    in the same step, before anything awaits."""
    folder = folder.resolve()
    gitdir = folder / ".git"
    try:
        if git.repository_of(folder) is not None:
            gitdir = await git.git_dir(await git.top_of(folder))
    except (git.GitError, OSError) as error:
        log.warning("not watching %s: %s", folder, error)
        ready.set()
        return
    roots = [folder] if gitdir.is_relative_to(folder) else [folder, gitdir]

    def moved(change: Change, raw: str) -> bool:
        path = Path(raw)
        if any(path.is_relative_to(p) for p in ours):
            return False
        if not path.is_relative_to(gitdir):
            return True
        inside = path.relative_to(gitdir).as_posix()
        # git's own files: only where the index, HEAD or a branch moves.
        return not inside.endswith(".lock") and (
            inside in ("index", "HEAD") or inside.startswith("refs/")
        )

    ready.set()
    try:
        async for _ in awatch(
            *roots,
            watch_filter=moved,
            debounce=batch_ms,
            step=25,
            stop_event=stop,
            ignore_permission_denied=True,
        ):
            nudge()
    except Exception:
        log.exception("watching %s failed; its changeset is read on request only", folder)
