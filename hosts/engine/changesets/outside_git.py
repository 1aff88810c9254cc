"""What a folder outside any git tree held when a session's turns found it: the before side of
its changes, kept by this host where no repository keeps one.

One bare repository of this host's, under its data directory (never inside the fence), holds
the objects; each folder has an index of its own there (whichever session looked last), so a
turn's start, and a read of the changes, hashes only what changed since the folder was last
looked at, and a new session in a folder another has worked in pays nothing more. Its work
tree is `/`, so a tree id read back names each file by its whole path, and the before side of
any file is `<tree>:<path>` with no folder to remember: the same `ahpd-git:///<path>?ref=<tree>`
URIs a repository's changes use. What git ignores there (a `.gitignore` in the folder) is not
kept, nor this host's own private folders, and a folder holding more than `FILE_LIMIT` files
is not kept at all (a turn's start waits for it).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import shutil
import tempfile
from pathlib import Path

from . import git

log = logging.getLogger("ahpd.engine")

#: A folder with more files than this (outside what git ignores) is not kept.
FILE_LIMIT = 20_000


class OutsideGitCopies:
    def __init__(self, root: Path, private: tuple[Path, ...] = ()) -> None:
        self.git_dir = root / "kept.git"
        #: This host's own folders: never kept, never a change.
        self.private = tuple(Path(os.path.realpath(p)) for p in (root, *private))
        self._made = asyncio.Lock()
        #: Folders found over `FILE_LIMIT` files (by real path): never counted again.
        self._too_big: set[str] = set()

    @property
    def env(self) -> dict[str, str]:
        return {"GIT_DIR": str(self.git_dir), "GIT_WORK_TREE": "/"}

    @staticmethod
    def pathspec(folder: Path) -> str:
        """A folder as the store's paths name it: relative to `/`."""
        return os.path.relpath(os.path.realpath(folder), "/")

    async def _ready(self) -> None:
        async with self._made:
            if not (self.git_dir / "HEAD").exists():
                self.git_dir.parent.mkdir(parents=True, exist_ok=True)
                await git.run(self.git_dir.parent, "init", "-q", "--bare", str(self.git_dir))
                (self.git_dir / "indexes").mkdir(exist_ok=True)

    def _index(self, folder: Path) -> Path:
        key = os.path.realpath(folder).encode()
        return self.git_dir / "indexes" / hashlib.sha256(key).hexdigest()

    def _paths(self, folder: Path) -> list[str]:
        real = Path(os.path.realpath(folder))
        excluded = [
            f":(exclude){os.path.relpath(p, '/')}" for p in self.private if p.is_relative_to(real)
        ]
        return [self.pathspec(folder), *excluded]

    async def snapshot(self, folder: Path) -> str | None:
        """The folder as it stands, as a tree id in the store, the folder's index moved on
        (two at once each start from the last saved and the later saves: both are right). None
        for a folder too large to keep."""
        await self._ready()
        saved = self._index(folder)
        if not saved.exists() and not await self._small_enough(folder):
            return None
        handle, name = tempfile.mkstemp(prefix="ahpd-index-", dir=self.git_dir)
        os.close(handle)
        index = Path(name)
        try:
            if saved.exists():
                await asyncio.to_thread(shutil.copyfile, saved, index)
            else:
                index.unlink()
            env = {**self.env, "GIT_INDEX_FILE": str(index)}
            await git.run(Path("/"), "add", "-A", "--", *self._paths(folder), env=env)
            if _entries(index) > FILE_LIMIT:
                # Grown past the limit since it was counted (an `npm install`, say): it is
                # let go now rather than hashed again at every turn and every read.
                self._let_go(folder)
                saved.unlink(missing_ok=True)
                return None
            _, out = await git.run(Path("/"), "write-tree", env=env)
            if index.exists():
                os.replace(index, saved)
            else:
                # Nothing in the folder to add, so git wrote no index: the empty tree, and
                # nothing to start from next time.
                saved.unlink(missing_ok=True)
            return out.decode().strip()
        finally:
            index.unlink(missing_ok=True)

    async def _small_enough(self, folder: Path) -> bool:
        if os.path.realpath(folder) in self._too_big:
            return False
        found = await git.count_files(Path("/"), self._paths(folder), self.env, FILE_LIMIT + 1)
        if found > FILE_LIMIT:
            self._let_go(folder)
            return False
        return True

    def _let_go(self, folder: Path) -> None:
        self._too_big.add(os.path.realpath(folder))
        log.warning("not keeping %s for its session's changes: over %d files", folder, FILE_LIMIT)


def _entries(index: Path) -> int:
    """How many files a git index holds, read off its header (`DIRC`, version, count)."""
    try:
        with index.open("rb") as file:
            head = file.read(12)
    except FileNotFoundError:
        return 0  # git writes none for a folder with nothing to add
    return int.from_bytes(head[8:12], "big") if len(head) == 12 and head[:4] == b"DIRC" else 0
