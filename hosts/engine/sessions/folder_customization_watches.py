"""Each session's `folders` customizations (folder_customizations.py) kept current: read when
the session opens (made, or read back at a start), and again whenever what its working
folders hold for the agent changes, while anyone watches the session.

The changes are the host's shared OS watches' (folder_watchers.py): one recursive listener per
working folder, from the session channel's first subscriber until the last has been gone for
the grace (as a resource watch is let go), so a window's own recursive watch of the folder, or
its changeset's, costs no inotify instance more. A batch reads the folders again only where it
touches what is read: AGENTS.md, CLAUDE.md, `.claude` and `.github` at a folder's root, and the
folders the last read went through (a link inside the folder included). Once the listeners are
in place the folders are read again, so nothing written before they were is missed; a read
asked for while one runs runs once more after it. Reads run off the loop, a few at a time (a
start reads every session's folders).

What a session lists is what its own working folders hold: the fence of a read is those
folders, inside what this host serves (never its data directory).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import weakref
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..channel import Channel
from ..clock import Cancellable, Later, call_later
from ..fanout import Fanout
from ..folder_watchers import Changes, FolderWatchers, Listening, WatchRefused
from ..resources.served import Served
from .folder_customizations import Found, scan
from .live_session import LiveSession
from .records import file_path

log = logging.getLogger("ahpd.engine")

SOURCE = "folders"
#: The names at a folder's root whose change means reading again.
ROOT_NAMES = frozenset({"AGENTS.md", "CLAUDE.md", ".claude", ".github"})
#: How many sessions' folders are read at once.
READS_AT_ONCE = 4
#: How long a command naming a session waits for its first read (a start reads them all).
FIRST_READ_S = 10.0


@dataclass(eq=False)
class _Kept:
    """What is kept for one session: its folders' real paths and what the last read went
    through, its listeners, its read running, and its release timer."""

    uri: str
    roots: list[Path] = field(default_factory=list)
    places: set[Path] = field(default_factory=set)
    #: Set once the folders were read once.
    read_once: asyncio.Event = field(default_factory=asyncio.Event)
    reading: asyncio.Task[None] | None = None
    again: bool = False
    listening: list[Listening] = field(default_factory=list)
    attaching: asyncio.Task[None] | None = None
    release: Cancellable | None = None


class FolderCustomizations:
    def __init__(
        self,
        fanout: Fanout,
        session_of: Callable[[str], LiveSession | None],
        served: Served,
        folders: FolderWatchers,
        grace_s: float,
        later: Later = call_later,
    ) -> None:
        self._session_of = session_of
        self._later = later
        self._served = served
        self._folders = folders
        self._grace_s = grace_s
        # Kept by the session object, so a disposed session takes its entry with it.
        self._kept: weakref.WeakKeyDictionary[LiveSession, _Kept] = weakref.WeakKeyDictionary()
        self._reads = asyncio.Semaphore(READS_AT_ONCE)
        self._tasks: set[asyncio.Task[None]] = set()
        fanout.on_joined(self._joined)
        fanout.on_left(self._left)

    # -- a session opens ------------------------------------------------------------------

    def opened(self, session: LiveSession) -> None:
        """A session opened (made, read back, or made for a moved chat): its folders read."""
        kept = self._kept[session] = _Kept(session.record.uri)
        self._read(kept)

    async def wake(self, uri: str) -> None:
        """Return once a session's folders were read once (a command reading its state right
        after a start or its creation reads them listed); at once for any other URI."""
        session = self._session_of(uri)
        kept = self._kept.get(session) if session is not None else None
        if kept is not None and not kept.read_once.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(kept.read_once.wait(), FIRST_READ_S)

    # -- reading --------------------------------------------------------------------------

    def _read(self, kept: _Kept) -> None:
        """Read the session's folders, once more after the read running if one is."""
        if kept.reading is not None and not kept.reading.done():
            kept.again = True
            return
        kept.reading = self._spawn(self._reading(kept), f"customizations {kept.uri}")

    async def _reading(self, kept: _Kept) -> None:
        try:
            while True:
                kept.again = False
                session = self._session_of(kept.uri)
                if session is None or self._kept.get(session) is not kept:
                    return  # disposed, or opened again, meanwhile
                folders = [file_path(uri) for uri in session.record.working_directories]
                async with self._reads:
                    roots, found = await asyncio.to_thread(self._scan, folders)
                if self._session_of(kept.uri) is not session:
                    return
                kept.roots, kept.places = roots, found.places
                session.customizations.set_part(SOURCE, found.containers)
                kept.read_once.set()
                if not kept.again:
                    return
        finally:
            # A read that failed (logged as the task ends) holds no command up after it.
            kept.read_once.set()

    def _scan(self, folders: list[Path]) -> tuple[list[Path], Found]:
        """The folders' real paths (those this host serves) and what they hold, fenced to
        them. Blocking file work."""
        roots = [Path(os.path.realpath(folder)) for folder in folders]
        roots = [root for root in roots if self._served.holds(root)]

        def holds(real: Path) -> bool:
            return self._served.holds(real) and any(
                real == root or real.is_relative_to(root) for root in roots
            )

        return roots, scan(folders, holds)

    # -- watching -------------------------------------------------------------------------

    def _joined(self, channel: Channel) -> None:
        if channel.kind != "session":
            return
        session = self._session_of(channel.uri)
        kept = self._kept.get(session) if session is not None else None
        if kept is None:
            return
        if kept.release is not None:
            kept.release.cancel()
            kept.release = None
        if not kept.listening and (kept.attaching is None or kept.attaching.done()):
            kept.attaching = self._spawn(self._attach(kept), f"customization watch {kept.uri}")

    async def _attach(self, kept: _Kept) -> None:
        await kept.read_once.wait()

        def heard(changes: Changes) -> None:
            self._heard(kept, changes)

        def lost() -> None:
            # The system stopped an OS watch (folder_watchers.py says why): the rest go too,
            # and the next subscriber puts them in place again.
            self._let_go(kept)

        for root in kept.roots:
            try:
                kept.listening.append(await self._folders.listen(root, True, heard, lost))
            except WatchRefused as refused:
                # Read at the next subscribe instead; a line, not a traceback.
                log.warning(
                    "not watching %s for %s's customizations: %s", root, kept.uri, refused.reason
                )
        # What was written before the listeners were in place is read now.
        self._read(kept)

    def _heard(self, kept: _Kept, changes: Changes) -> None:
        if any(self._touches(kept, Path(raw)) for _, raw in changes):
            self._read(kept)

    @staticmethod
    def _touches(kept: _Kept, path: Path) -> bool:
        """Whether a change at `path` touches what the session's folders hold for its agent."""
        for root in kept.roots:
            if path.parent == root and path.name in ROOT_NAMES:
                return True
            if path.is_relative_to(root / ".claude") or path.is_relative_to(root / ".github"):
                return True
        # A folder the last read went through (a linked one too), what is in it, and what is
        # in a folder new in it (a skill's SKILL.md in a skill's new folder).
        return bool({path, path.parent, path.parent.parent} & kept.places)

    async def attached(self, uri: str) -> None:
        """Return once a session's listeners are in place (or refused), and its folders read
        again after."""
        session = self._session_of(uri)
        kept = self._kept.get(session) if session is not None else None
        if kept is not None and kept.attaching is not None:
            # A failure is logged as its task ends; the waiter is only told it is over.
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.shield(kept.attaching)
            if kept.reading is not None:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await asyncio.shield(kept.reading)

    def _left(self, client_id: str, channels: list[Channel], dropped: bool) -> None:
        for channel in channels:
            if channel.kind != "session" or channel.subscribers:
                continue
            session = self._session_of(channel.uri)
            kept = self._kept.get(session) if session is not None else None
            if kept is None:
                # Disposed: its listeners go with it.
                kept = next((k for k in self._kept.values() if k.uri == channel.uri), None)
                if kept is not None:
                    self._let_go(kept)
                continue
            if kept.release is None:
                kept.release = self._later(self._grace_s, self._released(kept, channel))

    def _released(self, kept: _Kept, channel: Channel) -> Callable[[], None]:
        """What lets the session's listeners go once the grace is over, unless someone came
        back."""

        def release() -> None:
            kept.release = None
            if not channel.subscribers:
                self._let_go(kept)

        return release

    def _let_go(self, kept: _Kept) -> None:
        if kept.release is not None:
            kept.release.cancel()
            kept.release = None
        if kept.attaching is not None:
            kept.attaching.cancel()
            kept.attaching = None
        for listening in kept.listening:
            self._folders.stop_listening(listening)
        kept.listening.clear()

    # -- life -----------------------------------------------------------------------------

    def _spawn(self, work: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(work, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (error := task.exception()) is not None:
            log.error("reading a session's folder customizations failed", exc_info=error)

    async def stop(self) -> None:
        for kept in list(self._kept.values()):
            self._let_go(kept)
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
