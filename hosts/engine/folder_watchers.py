"""The OS's watches over folders (watchfiles' RustNotify: one inotify instance each), shared.

An inotify instance is a file descriptor and a count against the user's
`fs.inotify.max_user_instances` (128 on most machines), for every process of that user: one per
client watch let a guest with 150 watches use them all up, and every watch after (a
changeset's included) was answered and never said anything. So one OS watch serves every
listener over its folder: a recursive one serves any listener on that folder or under it, a
flat one the listeners on that folder that are flat too; each listener filters the shared
batches by its own root and globs.

An OS watch is made on a thread of its own, which then waits on it for as long as it is
listened to: RustNotify's wait blocks a thread, and a pool shared by every watch (anyio's
40, asyncio's default executor) would leave the watch past the pool's size waiting forever.
Its construction registers the kernel's watches, so a listener is answered only once the
watch is in place, or told why the system refused it (`WatchRefused`), never left holding a
watch that says nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from watchfiles import Change

log = logging.getLogger("ahpd.engine")

#: How often the waiting thread looks at its stop flag and at what arrived, in milliseconds.
STEP_MS = 50
#: How long a stop waits for each watch's thread (it sees the stop within a step).
STOP_WAIT_S = 5.0

#: One batch of changes: (what happened, the real path it happened to).
Changes = set[tuple[Change, str]]


class Notifier(Protocol):
    """What a watch thread needs of RustNotify."""

    def watch(
        self, debounce_ms: int, step_ms: int, timeout_ms: int, stop_event: Any
    ) -> set[tuple[int, str]] | str: ...

    def close(self) -> None: ...


#: Makes the OS watch over a folder (recursive or not); raises what the system refused.
MakeNotifier = Callable[[Path, bool], Notifier]


def rust_notifier(folder: Path, recursive: bool) -> Notifier:
    from watchfiles._rust_notify import RustNotify

    notifier: Notifier = RustNotify([str(folder)], False, False, 300, recursive, True)
    return notifier


class WatchRefused(Exception):
    """The system would not watch a folder: out of inotify instances or watches, or of file
    descriptors. `reason` is the system's own words."""

    def __init__(self, folder: Path, reason: str) -> None:
        super().__init__(f"the system refused to watch {folder}: {reason}")
        self.folder = folder
        self.reason = reason


class Listening:
    """One listener on a shared OS watch: what it is told, and what it is told if the watch
    breaks later (the system ran out of watches for a folder made since)."""

    __slots__ = ("watcher", "heard", "lost")

    def __init__(
        self, watcher: FolderWatcher, heard: Callable[[Changes], None], lost: Callable[[], None]
    ) -> None:
        self.watcher = watcher
        self.heard = heard
        self.lost = lost


class FolderWatcher:
    """One OS watch over one real folder, and the listeners it serves."""

    def __init__(
        self,
        folder: Path,
        recursive: bool,
        batch_ms: int,
        make: MakeNotifier,
        gone: Callable[[FolderWatcher], None],
    ) -> None:
        self.folder = folder
        self.recursive = recursive
        self.listeners: dict[Listening, None] = {}
        self._batch_ms = batch_ms
        self._make = make
        self._gone = gone
        self._stop = threading.Event()
        self._loop = asyncio.get_running_loop()
        #: Done once the OS watch is in place, or with the WatchRefused that says why not.
        self.ready: asyncio.Future[None] = self._loop.create_future()
        # A refusal nobody awaited any more (its listeners cancelled) must not warn unread.
        self.ready.add_done_callback(lambda f: f.cancelled() or f.exception())
        self._thread = threading.Thread(target=self._run, name=f"ahpd-watch {folder}", daemon=True)
        self._thread.start()

    def serves(self, folder: Path, recursive: bool) -> bool:
        """Whether a listener on `folder` is served by this watch."""
        if self.recursive:
            return folder == self.folder or folder.is_relative_to(self.folder)
        return folder == self.folder and not recursive

    def stop(self) -> None:
        """Let the OS watch go; its thread closes it within a step."""
        self._stop.set()

    def join(self, timeout: float) -> None:
        """Wait (blocking) for its thread to have closed the OS watch."""
        self._thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    # -- on the watch's own thread --------------------------------------------------------

    def _run(self) -> None:
        try:
            notifier = self._make(self.folder, self.recursive)
        except Exception as error:  # WatchfilesRustInternalError, OSError: the system's no
            self._call(self._refused, str(error))
            return
        self._call(self._started)
        try:
            while not self._stop.is_set():
                raw = notifier.watch(self._batch_ms, STEP_MS, 0, self._stop)
                if isinstance(raw, set) and raw:
                    self._call(self._heard, {(Change(change), path) for change, path in raw})
        except Exception as error:
            self._call(self._broke, str(error))
        finally:
            notifier.close()

    def _call(self, callback: Callable[..., None], *args: Any) -> None:
        # The loop may have closed under a watch still stopping as the server exits.
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(callback, *args)

    # -- on the loop ----------------------------------------------------------------------

    def _started(self) -> None:
        if not self.ready.done():
            self.ready.set_result(None)

    def _refused(self, reason: str) -> None:
        self._gone(self)
        if not self.ready.done():
            self.ready.set_exception(WatchRefused(self.folder, reason))

    def _heard(self, changes: Changes) -> None:
        for listening in list(self.listeners):
            listening.heard(changes)

    def _broke(self, reason: str) -> None:
        # Said once, without a traceback: the system's words say it all, and the listeners
        # attach a new watch at their next subscribe.
        log.warning("watching %s stopped: %s", self.folder, reason)
        self._gone(self)
        for listening in list(self.listeners):
            listening.lost()
        self.listeners.clear()


class FolderWatchers:
    """Every OS watch this host holds, shared by the listeners over each folder."""

    def __init__(self, batch_ms: int, make: MakeNotifier = rust_notifier) -> None:
        self._batch_ms = batch_ms
        self._make = make
        self._watchers: list[FolderWatcher] = []
        #: Every watch whose thread may still run, let go or not (waited for at the stop).
        self._threads: list[FolderWatcher] = []

    async def listen(
        self,
        folder: Path,
        recursive: bool,
        heard: Callable[[Changes], None],
        lost: Callable[[], None] = lambda: None,
    ) -> Listening:
        """Listen to the changes under a real folder (its subfolders too, where `recursive`):
        the OS watch serving it, made if none does, is in place when this returns. Raises
        WatchRefused where the system would not watch it."""
        watcher = next((w for w in self._watchers if w.serves(folder, recursive)), None)
        if watcher is None:
            watcher = FolderWatcher(folder, recursive, self._batch_ms, self._make, self._forget)
            self._watchers.append(watcher)
            self._threads = [w for w in self._threads if w.running]
            self._threads.append(watcher)
        listening = Listening(watcher, heard, lost)
        # Held before the wait, so a listener leaving meanwhile does not stop it under this one.
        watcher.listeners[listening] = None
        try:
            await asyncio.shield(watcher.ready)
        except BaseException:
            self.stop_listening(listening)
            raise
        return listening

    def stop_listening(self, listening: Listening) -> None:
        """A listener leaves; the OS watch goes with its last."""
        watcher = listening.watcher
        watcher.listeners.pop(listening, None)
        if not watcher.listeners:
            self._forget(watcher)
            watcher.stop()

    def _forget(self, watcher: FolderWatcher) -> None:
        if watcher in self._watchers:
            self._watchers.remove(watcher)

    @property
    def count(self) -> int:
        """How many OS watches are held (each one inotify instance)."""
        return len(self._watchers)

    async def stop(self) -> None:
        """Let every OS watch go and wait for their threads to have closed them: a watch
        thread still inside the notifier as the interpreter exits aborts the process."""
        for watcher in self._threads:
            watcher.stop()
        self._watchers.clear()
        threads, self._threads = self._threads, []
        deadline = STOP_WAIT_S

        def join_all() -> None:
            for watcher in threads:
                watcher.join(deadline)

        await asyncio.to_thread(join_all)
