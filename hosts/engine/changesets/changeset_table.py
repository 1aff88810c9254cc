"""Every session's changesets (scopes.py): their channels, re-reads and watchers, and the trees
turns found and left.

A changeset's channel opens when somebody names it, says `computing` to its first subscriber
and then what git read (`changeset/contentChanged`, then `ready`). While anybody watches it,
the OS's file notifications (watchfiles) over the session's folder and git's own index, HEAD
and refs nudge a re-read, coalesced per changeset: an agent's write, a tool call's, a
terminal's `git add`, a commit somewhere else. Only a move is said: a file's row set or
removed, or the whole set where that is the smaller thing. As a turn begins (awaited before
its agent runs) and ends, the working tree is kept as a git tree id on the session's record
(in the folder's repository, or outside any in this host's own, outside_git.py), and the session's
catalogue is said again where the folder entered or left a git tree; each flip of the
session's running state reads its changesets again, so their operations are disabled
mid-turn, and a rename re-declares them, so commit's confirmation names the new title.
Released after the grace once nobody watches, cleared when the session goes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from ...protocol.errors import ErrorCode, ProtocolError, invalid_params
from ..channel import Channel
from ..fanout import Fanout
from ..folder_watchers import FolderWatchers
from ..sessions.live_session import LiveChat, LiveSession
from ..sessions.records import SessionRecord
from . import files, git, scopes, watching
from .operations import Tree
from .outside_git import OutsideGitCopies

log = logging.getLogger("ahpd.engine")

#: What makes two invocations one run: operation, target as sent, words, who (name, email).
InFlight = tuple[str, str, str | None, tuple[str, str]]
#: How long the watcher gathers notifications into one re-read, in milliseconds.
BATCH_MS = 150
#: How long a subscribe waits for a changeset's watcher to be in place (git asked first).
ATTACH_S = 10.0


class Changeset:
    """One changeset channel and, while anybody watches it, its watcher."""

    def __init__(self, channel: Channel, session: str, scope: str, folder: Path) -> None:
        self.channel = channel
        self.session = session
        self.scope = scope
        self.folder = folder
        #: Whether its session ran a turn when it was last read.
        self.running = False
        self.tree: Tree | None = None
        self.read_lock = asyncio.Lock()
        self.pending = False
        self.lanes: dict[str, asyncio.Lock] = {}
        #: The runs under way, by what was asked (operation, target, words), to share.
        self.in_flight: dict[InFlight, asyncio.Future[str]] = {}
        self.watcher: asyncio.Task[None] | None = None
        self.stop_watching = asyncio.Event()
        #: Set once the watcher's OS watches are registered.
        self.watching = asyncio.Event()
        self.release_timer: asyncio.TimerHandle | None = None


class Changesets:
    def __init__(
        self,
        fanout: Fanout,
        session_of: Callable[[str], LiveSession | None],
        save: Callable[[LiveSession], None],
        grace_s: float,
        kept: OutsideGitCopies | None = None,
        folders: FolderWatchers | None = None,
    ) -> None:
        self.fanout = fanout
        #: The OS watches, shared with the resource watches over the same folders.
        self.folders = folders if folders is not None else FolderWatchers(BATCH_MS)
        #: Where trees are kept for folders outside any git tree; None: those have none.
        self.kept = kept
        self._session_of = session_of
        self._save = save
        self._grace_s = grace_s
        self._snapping: dict[str, asyncio.Lock] = {}
        self._open: dict[str, Changeset] = {}
        #: Reads and snapshots under way, held so none is collected before it is done.
        self._tasks: set[asyncio.Task[None]] = set()
        fanout.on_joined(self._joined)
        fanout.on_left(self._left)

    def get(self, uri: str) -> Changeset | None:
        return self._open.get(uri)

    def catalogue(self, record: SessionRecord) -> list[dict[str, Any]] | None:
        """A session's changeset catalogue (scopes.py), as this host can serve it."""
        return scopes.catalogue(record, self.kept is not None)

    def wake(self, uri: str) -> None:
        """Open the changeset a URI names, if its session is here and has that changeset."""
        parsed = scopes.parse(uri) if uri not in self._open else None
        session = self._session_of(parsed[0]) if parsed is not None else None
        if session is None or parsed is None:
            return
        if not scopes.served(session.record, parsed[1], self.kept is not None):
            return
        folder = scopes.folder_of(session.record)
        assert folder is not None, "a session with changesets has a folder"
        channel = self.fanout.open(Channel(uri, "changeset", {"status": "computing", "files": []}))
        self._open[uri] = Changeset(channel, session.record.uri, parsed[1], folder)

    # -- reading ----------------------------------------------------------------------------

    def nudge(self, changeset: Changeset) -> None:
        """Read it again soon; nudges while that read waits are that one read."""
        if changeset.pending:
            return
        changeset.pending = True
        self._spawn(self.read(changeset))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def read(self, changeset: Changeset) -> None:
        async with changeset.read_lock:
            changeset.pending = False
            if self._open.get(changeset.channel.uri) is not changeset:
                return  # released or cleared meanwhile
            session = self._session_of(changeset.session)
            if session is None:
                return
            running = session.running
            try:
                tree, found, operations = await scopes.read(
                    changeset.scope,
                    changeset.folder,
                    session.record,
                    running=running,
                    subject=self.subject(changeset),
                    kept=self.kept,
                )
            except (git.GitError, OSError) as error:
                self._failed(changeset, str(error))
                return
            # What it was read as, once said: a failed read leaves it to be read again.
            changeset.tree, changeset.running = tree, running
            self._say(changeset, found, operations)

    def running(self, changeset: Changeset) -> bool:
        """Whether the changeset's session runs a turn now."""
        session = self._session_of(changeset.session)
        return session is not None and session.running

    def subject(self, changeset: Changeset) -> str:
        """The words a commit goes in with when nobody gives any: the session's title."""
        session = self._session_of(changeset.session)
        title = str(session.channel.state.get("title") or "") if session is not None else ""
        return title or "Changes made in an ahpd session"

    # -- review ---------------------------------------------------------------------------

    def keep_review(
        self, changeset: Changeset, session: LiveSession, ids: list[str], reviewed: bool
    ) -> None:
        """Keep the ticks a client gave (or took off) the files `ids` of a changeset, each
        against the blob its file holds now (a file with none, or not held, keeps nothing)."""
        held = {f["id"]: f for f in changeset.channel.state["files"]}
        ticks = dict(session.record.reviews.get(changeset.scope, {}))
        for file_id in ids:
            blob = (held.get(file_id, {}).get("_meta") or {}).get(files.BLOB)
            if reviewed and blob is not None:
                ticks[file_id] = blob
            else:
                ticks.pop(file_id, None)
        self._keep_ticks(session, changeset.scope, ticks)

    def _ticked(self, changeset: Changeset, found: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The files as read, each ticked where its tick still holds: a file that holds
        another blob since it was ticked (a turn changed it again), or is gone, loses it."""
        session = self._session_of(changeset.session)
        ticks = session.record.reviews.get(changeset.scope) if session is not None else None
        if session is None or not ticks:
            return found
        still: dict[str, str] = {}
        out = []
        for file in found:
            blob = (file.get("_meta") or {}).get(files.BLOB)
            if blob is not None and ticks.get(file["id"]) == blob:
                still[file["id"]] = blob
                file = {**file, "reviewed": True}
            out.append(file)
        if still != ticks:
            self._keep_ticks(session, changeset.scope, still)
        return out

    def _keep_ticks(self, session: LiveSession, scope: str, ticks: dict[str, str]) -> None:
        # Replaced, never changed in place: the store's thread may be copying the record.
        reviews = {k: v for k, v in session.record.reviews.items() if k != scope}
        if ticks:
            reviews[scope] = ticks
        session.record.reviews = reviews
        self._save(session)

    def _say(
        self, changeset: Changeset, found: list[dict[str, Any]], operations: list[dict[str, Any]]
    ) -> None:
        found = self._ticked(changeset, found)
        channel = changeset.channel
        state = channel.state
        held = {f["id"]: f for f in state["files"]}
        fresh = {f["id"] for f in found}
        moves: list[dict[str, Any]] = [
            {"type": "changeset/fileSet", "file": f} for f in found if held.get(f["id"]) != f
        ]
        moves += [{"type": "changeset/fileRemoved", "fileId": i} for i in held if i not in fresh]
        whole = moves and (not found or len(moves) > len(found))
        if state["status"] == "computing" or whole:
            content: dict[str, Any] = {"type": "changeset/contentChanged", "files": found}
            if state.get("operations") != operations:
                content["operations"] = operations
            if moves or "operations" in content or state["status"] == "computing":
                self.fanout.emit(channel, content)
        else:
            for move in moves:
                self.fanout.emit(channel, move)
            if state.get("operations") != operations:
                self.fanout.emit(
                    channel, {"type": "changeset/operationsChanged", "operations": operations}
                )
        if channel.state["status"] != "ready":
            self.fanout.emit(channel, {"type": "changeset/statusChanged", "status": "ready"})

    def _failed(self, changeset: Changeset, why: str) -> None:
        if changeset.folder.is_dir():
            log.warning("reading the changes under %s failed: %s", changeset.folder, why)
        if changeset.channel.state["status"] == "computing":
            error = {"errorType": "computeFailed", "message": why}
            action = {"type": "changeset/statusChanged", "status": "error", "error": error}
            self.fanout.emit(changeset.channel, action)

    def retitled(self, session_uri: str) -> None:
        """The session's title moved: its changesets are read again, so the commit's
        confirmation names the words a commit would now go in with."""
        for changeset in self._open.values():
            if changeset.session == session_uri and changeset.tree is not None:
                self.nudge(changeset)

    def activity(self) -> None:
        """A session's running state may have flipped (a turn began or ended): each of its
        changesets is read again, so its operations are said disabled mid-turn and idle
        after, and a turn's changes end where the turn left the tree."""
        for changeset in self._open.values():
            if changeset.tree is not None and self.running(changeset) != changeset.running:
                self.nudge(changeset)

    # -- the trees turns found and left ----------------------------------------------------

    async def starting(self, chat: LiveChat, turn_id: str) -> None:
        """A turn begins: the tree it finds is kept, before its agent touches anything."""
        await self._snap(chat.session, turn_id, first=True)

    def ended(self, chat: LiveChat, turn_id: str) -> None:
        self._spawn(self._snap(chat.session, turn_id, first=False))

    async def _snap(self, session: LiveSession, turn_id: str, *, first: bool) -> None:
        record = session.record
        # A session's folder may have entered a git tree (or left one) since it was last
        # looked at: a `git init`, a clone, a terminal's `rm -rf .git`.
        if self._session_of(record.uri) is session:
            self.recatalogue(session)
        folder = scopes.folder_of(record)
        in_git = scopes.in_git(record)
        if folder is None or not (in_git or self.kept is not None):
            return
        if not first and turn_id not in record.snapshots:
            return
        async with self._snapping.setdefault(record.uri, asyncio.Lock()):
            try:
                if in_git:
                    tree: str | None = await git.snapshot(await git.top_of(folder))
                else:
                    assert self.kept is not None
                    tree = await self.kept.snapshot(folder)
            except (git.GitError, OSError) as error:
                log.warning("keeping the tree under %s failed: %s", folder, error)
                return
            if tree is None:
                return  # too large to keep
            found = record.snapshots.get(turn_id, [])
            if first and not record.snapshots:
                # What the session found, under a key no turn has: the store's JSON need not
                # keep the turns' order (PostgreSQL's jsonb sorts keys), so which turn was
                # first cannot be read back from it.
                record.snapshots[scopes.SESSION_FOUND] = [tree]
            record.snapshots[turn_id] = [tree] if first else [found[0], tree]
            self._save(session)
        for changeset in list(self._open.values()):
            if changeset.session == record.uri:
                self.nudge(changeset)

    def first_folder_moved(self, session: LiveSession) -> None:
        """The session's first folder is another now (a replacement of it): what its open
        changesets read was the other's, and so were the trees its turns kept. Each says
        `changeset/cleared`, the trees and ticks go, and the catalogue is said where it moved;
        the session's changes start again at its next turn."""
        record = session.record
        self._spawn(self._clear_open(record.uri))
        record.snapshots.clear()
        record.reviews.clear()
        self._save(session)
        self.recatalogue(session)

    def recatalogue(self, session: LiveSession) -> None:
        """Say the session's changeset catalogue, and each of its chats', where it moved."""
        record = session.record
        found = self.catalogue(record)
        held = session.channel.state.get("changesets")
        if held and found != held:
            # Into git or out of it: what it listed goes, said cleared to whoever holds one,
            # and the trees its turns found were kept elsewhere (a session's changes start
            # again at its next turn).
            self._spawn(self._clear_open(record.uri))
            record.snapshots.clear()
            self._save(session)
        targets = [
            (session.channel, "session/changesetsChanged"),
            *((c.channel, "chat/changesetsChanged") for c in session.chats.values()),
        ]
        for channel, said in targets:
            if channel.state.get("changesets") != found:
                action: dict[str, Any] = {"type": said}
                if found is not None:
                    action["changesets"] = found
                self.fanout.emit(channel, action)

    # -- watching ---------------------------------------------------------------------------

    def _joined(self, channel: Channel) -> None:
        changeset = self._open.get(channel.uri)
        if changeset is None:
            return
        if changeset.release_timer is not None:
            changeset.release_timer.cancel()
            changeset.release_timer = None
        if changeset.watcher is None or changeset.watcher.done():
            changeset.stop_watching = asyncio.Event()
            changeset.watching = asyncio.Event()
            changeset.watcher = asyncio.get_running_loop().create_task(
                self._watch(changeset), name=f"changeset {channel.uri}"
            )
        if changeset.tree is None:
            self.nudge(changeset)

    async def _watch(self, changeset: Changeset) -> None:
        ours = self.kept.private if self.kept is not None else ()
        await watching.watch(
            self.folders,
            changeset.folder,
            changeset.stop_watching,
            ours,
            lambda: self.nudge(changeset),
            changeset.watching,
        )

    async def attached(self, uri: str) -> None:
        """Return once a changeset's watcher has registered the OS's watches (it asks git where
        the repository is first), so a subscriber answered may change files and be told."""
        changeset = self._open.get(uri)
        if changeset is not None and changeset.watcher is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changeset.watching.wait(), ATTACH_S)

    def _left(self, client_id: str, channels: list[Channel], dropped: bool) -> None:
        loop = asyncio.get_running_loop()
        for channel in channels:
            changeset = self._open.get(channel.uri)
            if changeset is None or channel.subscribers or changeset.release_timer is not None:
                continue
            changeset.release_timer = loop.call_later(self._grace_s, self._release, changeset)

    def _release(self, changeset: Changeset) -> None:
        changeset.release_timer = None
        if not changeset.channel.subscribers:
            self._spawn(self._drop(changeset))

    async def _drop(self, changeset: Changeset) -> None:
        if self._open.get(changeset.channel.uri) is not changeset:
            return
        del self._open[changeset.channel.uri]
        if changeset.release_timer is not None:
            changeset.release_timer.cancel()
        self.fanout.close(changeset.channel.uri)
        changeset.stop_watching.set()
        if changeset.watcher is not None:
            changeset.watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await changeset.watcher

    async def clear(self, session_uri: str) -> None:
        """The session goes: each of its changesets says `changeset/cleared`, then closes."""
        self._snapping.pop(session_uri, None)
        await self._clear_open(session_uri)

    async def _clear_open(self, session_uri: str) -> None:
        for changeset in [c for c in self._open.values() if c.session == session_uri]:
            self.fanout.emit(changeset.channel, {"type": "changeset/cleared"})
            await self._drop(changeset)

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for changeset in list(self._open.values()):
            await self._drop(changeset)

    # -- a file's before side -----------------------------------------------------------------

    async def before(self, path: Path, commit: str, uri: str, limit: int = 0) -> bytes:
        """What `commit` holds at `path` (a path the fence let through); -32008 without. One
        over `limit` bytes (0: none) is refused by its size, never read whole."""
        existing = next((p for p in (path, *path.parents) if p.exists()), None)
        top = git.repository_of(existing) if existing is not None else None
        env: git.Env = None
        if top is None and self.kept is not None:
            top, env = Path("/"), self.kept.env  # a folder outside git: what this host kept
        data = None
        if top is not None:
            relative = os.path.relpath(path, top.resolve())
            size = await git.size(top, commit, relative, env)
            if size is not None and limit and size > limit:
                raise invalid_params(
                    f"resourceRead: {uri} is {size} bytes, over this host's read limit of "
                    f"{limit} (AHPD_RESOURCE_READ_LIMIT_BYTES)"
                )
            data = await git.show(top, commit, relative, env) if size is not None else None
        if data is None:
            raise ProtocolError(ErrorCode.NOT_FOUND, f"Resource not found: {uri}")
        return data
