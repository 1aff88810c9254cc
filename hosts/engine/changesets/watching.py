"""A watched changeset's watcher: the OS's file notifications over the session's folder and, in
a git tree, git's own index, HEAD and refs, each batch a nudge to read again. Outside any git
tree, the folder alone; this host's own files never count (a read writes what it keeps there,
and a write that nudged a read would never end).

The OS watches are the host's shared ones (folder_watchers.py): a changeset over a folder a
resource watch already watches costs no inotify instance more. Where the system refuses one,
the changeset is still served, read when a turn ends or a client asks, and the refusal is said
once as a warning (not again for that folder until a watch of it is in place again).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

from ..folder_watchers import Changes, FolderWatchers, Listening, WatchRefused
from . import git

log = logging.getLogger("ahpd.engine")

#: The folders whose refusal was said, so a changeset subscribed again says it no more.
_refused: set[Path] = set()


async def watch(
    folders: FolderWatchers,
    folder: Path,
    stop: asyncio.Event,
    ours: tuple[Path, ...],
    nudge: Callable[[], None],
    ready: asyncio.Event,
) -> None:
    """Nudge at each batch of moves until `stop` is set. `ready` is set once the OS's watches
    are in place (or there will be none)."""
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

    def moved(path: Path) -> bool:
        if not (path.is_relative_to(folder) or path.is_relative_to(gitdir)):
            return False  # a shared watch's news of a folder beside this one
        if any(path.is_relative_to(p) for p in ours):
            return False
        if not path.is_relative_to(gitdir):
            return True
        inside = path.relative_to(gitdir).as_posix()
        # git's own files: only where the index, HEAD or a branch moves.
        return not inside.endswith(".lock") and (
            inside in ("index", "HEAD") or inside.startswith("refs/")
        )

    def heard(changes: Changes) -> None:
        if any(moved(Path(raw)) for _, raw in changes):
            nudge()

    listening: list[Listening] = []
    try:
        try:
            for root in roots:
                listening.append(await folders.listen(root, True, heard))
        except WatchRefused as refused:
            if refused.folder not in _refused:
                _refused.add(refused.folder)
                log.warning(
                    "not watching %s for its changeset (read when a turn ends or a client "
                    "asks): %s",
                    folder,
                    refused.reason,
                )
            ready.set()
            return
        _refused.difference_update(roots)
        ready.set()
        await stop.wait()
    finally:
        for one in listening:
            folders.stop_listening(one)
