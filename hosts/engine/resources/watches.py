"""Resource watches: `createResourceWatch`'s channels, and the watchers behind them.

A watch channel names everything about its watch, as VS Code's host names one: its root,
`recursive`, and the `includes`/`excludes` globs, as base64url JSON in
`ahp-resource-watch://r/<...>`. So the channel is made again from its name whenever it is
asked for (a subscribe after a restart resumes it), and creating the same watch twice is one
channel. The watch listens to the OS watch over its folder (folder_watchers.py: one for every
watch channel over that folder, whatever their globs) from the channel's first subscriber,
which is answered once it is in place or refused where the system would not watch; it lets go
once the last has been gone for the grace (VS Code's 30 s), which a subscribe calls off; one
nobody subscribes to is released after the grace too. Its batches are said as
`resourceWatch/changed`, only of paths inside the fence. A person holds
AHPD_WATCHES_PER_PERSON watches at most. A watch whose root is a client's own
(`vscode-agent-client:`) is that client's to keep: client_watches.py.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import fnmatch
import logging
from pathlib import Path
from typing import Any

import orjson
from watchfiles import Change

from ...protocol.errors import ErrorCode, ProtocolError, invalid_params
from ...protocol.uris import ROOT_URI
from ..channel import Channel
from ..client_requests import ClientRequests, client_uri
from ..clock import Cancellable, Later, call_later
from ..connection import Connection
from ..fanout import Fanout
from ..folder_watchers import Changes, FolderWatchers, Listening, WatchRefused
from .client_watches import ClientWatch
from .served import Served

log = logging.getLogger("ahpd.engine")

PREFIX = "ahp-resource-watch://r/"
#: The setting a person's cap is read from, named in its refusal.
PER_PERSON_SETTING = "AHPD_WATCHES_PER_PERSON"
#: How long the watcher gathers changes into one batch, in milliseconds.
BATCH_MS = 100

_CHANGE = {Change.added: "added", Change.modified: "updated", Change.deleted: "deleted"}


def watch_state(params: dict[str, Any], method: str) -> dict[str, Any]:
    """The ResourceWatchState a createResourceWatch asks for, checked: -32602 naming a field."""
    uri = params.get("uri")
    if not isinstance(uri, str) or not uri:
        raise invalid_params(f"{method}: uri must be a non-empty string")
    recursive = params.get("recursive", False)
    if not isinstance(recursive, bool):
        raise invalid_params(f"{method}: recursive must be true or false")
    state: dict[str, Any] = {"root": uri, "recursive": recursive}
    for key in ("includes", "excludes"):
        value = params.get(key)
        if value is None:
            continue
        items = value.get("items") if isinstance(value, dict) else None
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise invalid_params(f"{method}: {key} must be {{items: [glob, ...]}}")
        state[key] = {"items": list(items)}
    return state


def channel_uri(state: dict[str, Any]) -> str:
    text = orjson.dumps(state, option=orjson.OPT_SORT_KEYS)
    return PREFIX + base64.urlsafe_b64encode(text).decode().rstrip("=")


def state_of(uri: str) -> dict[str, Any] | None:
    """The watch a channel URI names, or None when it names none."""
    if not uri.startswith(PREFIX):
        return None
    encoded = uri.removeprefix(PREFIX)
    try:
        raw = orjson.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
        if not isinstance(raw, dict) or set(raw) - {"root", "recursive", "includes", "excludes"}:
            return None
        # The name holds the state (its `root`), checked as the params that made it were.
        state = watch_state({**raw, "uri": raw.get("root")}, "subscribe")
        return state if channel_uri(state) == uri else None
    except (ValueError, binascii.Error, ProtocolError):
        return None


def _matches(relative: str, globs: list[str]) -> bool:
    name = relative.rsplit("/", 1)[-1]
    return any(
        fnmatch.fnmatch(relative, glob)
        or fnmatch.fnmatch(name, glob)
        or relative == glob.rstrip("/")
        or relative.startswith(glob.rstrip("/") + "/")
        for glob in globs
    )


class Watch:
    """One watch channel and, while anyone watches it, its listening on the OS watch shared
    over its folder (folder_watchers.py)."""

    def __init__(
        self,
        channel: Channel,
        root: Path,
        served: Served,
        fanout: Fanout,
        folders: FolderWatchers,
    ) -> None:
        self.channel = channel
        self.root = root
        self._served = served
        self._fanout = fanout
        self._folders = folders
        self._listening: Listening | None = None
        self._attaching: asyncio.Task[None] | None = None
        self.release_timer: Cancellable | None = None

    @property
    def running(self) -> bool:
        return self._listening is not None or (
            self._attaching is not None and not self._attaching.done()
        )

    def start(self) -> None:
        if not self.running:
            self._attaching = asyncio.create_task(self._attach(), name=f"watch {self.channel.uri}")
            self._attaching.add_done_callback(_retrieved)

    async def attached(self) -> None:
        """Return once the OS watch is in place; -32603 in the system's words where it would
        not watch the folder (the kernel's inotify limits, or the open-files limit)."""
        if self._attaching is None:
            return
        try:
            await asyncio.shield(self._attaching)
        except WatchRefused as refused:
            raise ProtocolError(
                ErrorCode.INTERNAL_ERROR,
                f"Cannot watch {self.channel.state['root']}: the system refused another file "
                f"watch ({refused.reason}); this machine's inotify limits "
                "(fs.inotify.max_user_instances, max_user_watches) or open-files limit are "
                "reached",
            ) from None

    async def stop(self) -> None:
        if self._attaching is not None and not self._attaching.done():
            self._attaching.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._attaching
        self._attaching = None
        if self._listening is not None:
            self._folders.stop_listening(self._listening)
            self._listening = None

    async def _attach(self) -> None:
        try:
            self._listening = await self._folders.listen(
                self.root, bool(self.channel.state["recursive"]), self._heard, self._lost
            )
        except WatchRefused as refused:
            # A line, not a traceback: the subscriber is told, and the next subscribe tries again.
            log.warning("not watching %s: %s", self.root, refused.reason)
            raise

    def _lost(self) -> None:
        self._listening = None

    def _heard(self, changes: Changes) -> None:
        items = self._said(changes)
        if items:
            self._fanout.emit(
                self.channel, {"type": "resourceWatch/changed", "changes": {"items": items}}
            )

    def _said(self, changes: Changes) -> list[dict[str, str]]:
        state = self.channel.state
        includes = state.get("includes", {}).get("items")
        excludes = state.get("excludes", {}).get("items", [])
        items: dict[str, dict[str, str]] = {}
        for change, raw in sorted(changes, key=lambda c: c[1]):
            path = Path(raw)
            # The OS watch is shared: what it says of folders beside this root is not this
            # watch's.
            if not (path == self.root or path.is_relative_to(self.root)):
                continue
            if not self._served.holds(path):
                continue
            relative = path.relative_to(self.root).as_posix() if path != self.root else ""
            if not state["recursive"] and "/" in relative:
                continue
            if relative and excludes and _matches(relative, excludes):
                continue
            if relative and includes is not None and not _matches(relative, includes):
                continue
            items[raw] = {"uri": path.as_uri(), "type": _CHANGE[change]}
        return list(items.values())


def _retrieved(task: asyncio.Task[None]) -> None:
    """A refusal is said to the subscribers that await it; a task nobody awaited must not warn
    that its exception went unread."""
    if not task.cancelled():
        task.exception()


class Watches:
    """Every watch channel open here, by URI: over the served folders' files, or relayed from
    a client's own (client_watches.py)."""

    def __init__(
        self,
        fanout: Fanout,
        served: Served,
        asks: ClientRequests,
        grace_s: float,
        later: Later = call_later,
        *,
        folders: FolderWatchers | None = None,
        per_person: int = 0,
    ) -> None:
        self._fanout = fanout
        self._served = served
        self._asks = asks
        self._grace_s = grace_s
        self._later = later
        #: The OS watches, one per folder however many watch channels listen to it.
        self.folders = folders if folders is not None else FolderWatchers(BATCH_MS)
        #: How many watches one person may hold open (0: no cap).
        self.per_person = per_person
        self._watches: dict[str, Watch | ClientWatch] = {}
        #: Who asked for each watch with createResourceWatch: held against them while nobody
        #: subscribes to it (a subscriber holds it once one does).
        self._made_by: dict[str, set[str]] = {}
        fanout.on_joined(self._joined)
        fanout.on_left(self._left)
        asks.on_arrived(self._arrived)
        asks.on_gone(self._gone)

    async def create(self, params: dict[str, Any], who: str) -> str:
        """The channel of the watch `params` asks for (made, not yet watching), as `who` (a
        principal's ref) asks it. The root is checked first: -32008 when it is not there,
        -32009 where it may not be read; a client's root is the client's to say."""
        state = watch_state(params, "createResourceWatch")
        uri = channel_uri(state)
        named = client_uri(state["root"])
        if named is not None:
            client_id = self._asks.permit(who, state["root"])
            check = {"channel": ROOT_URI, "uri": named[1]}
            await self._asks.ask(who, state["root"], "resourceResolve", check)
            self._check_cap(who, uri)
            self._open_client(uri, state, client_id)
        else:
            # Walked name by name, every link judged by the host (fence_walk): what is watched
            # is what was judged, not what a link swapped in later names. -32008 for nothing.
            root = await asyncio.to_thread(
                self._served.walked, state["root"], "createResourceWatch"
            )
            self._check_cap(who, uri)
            self._open(uri, state, root)
        self._made_by.setdefault(uri, set()).add(who)
        return uri

    def refusal(self, who: str, channel: Channel) -> ProtocolError | None:
        """Why `who` may not watch a watch channel beyond its grant (a client's files are its
        person's alone, client_requests.py; a person holds AHPD_WATCHES_PER_PERSON at most), or
        None."""
        if isinstance(self._watches.get(channel.uri), ClientWatch):
            try:
                self._asks.permit(who, str(channel.state["root"]))
            except ProtocolError as refused:
                return refused
        try:
            self._check_cap(who, channel.uri)
        except ProtocolError as refused:
            return refused
        return None

    def held_by(self, who: str) -> set[str]:
        """The watch channels a person holds: those they subscribe to on any connection, and
        those they asked for that nobody subscribes to yet (or any more, within the grace)."""
        return {
            uri
            for uri, watch in self._watches.items()
            if any(conn.principal.ref == who for conn in watch.channel.subscribers)
            or (not watch.channel.subscribers and who in self._made_by.get(uri, ()))
        }

    def _check_cap(self, who: str, uri: str) -> None:
        """-32009 where `who` would hold one watch more than AHPD_WATCHES_PER_PERSON."""
        if not self.per_person:
            return
        held = self.held_by(who)
        if uri in held or len(held) < self.per_person:
            return
        raise ProtocolError(
            ErrorCode.PERMISSION_DENIED,
            f"{who} already holds {len(held)} resource watches, the most one person may hold "
            f"({PER_PERSON_SETTING}={self.per_person}): unsubscribe from one (a watch nobody "
            f"subscribes to is let go {self._grace_s:g} s later)",
        )

    def wake(self, uri: str) -> None:
        """Open the watch channel a URI names, if it names one this host can watch."""
        if uri in self._watches or not uri.startswith(PREFIX):
            return
        state = state_of(uri)
        if state is None:
            return
        named = client_uri(state["root"])
        if named is not None:
            if self._asks.knows(named[0]):
                self._open_client(uri, state, named[0])
            return
        try:
            root = self._served.walked(state["root"], "subscribe")
        except ProtocolError:
            return
        self._open(uri, state, root)

    def _open(self, uri: str, state: dict[str, Any], root: Path) -> None:
        if uri not in self._watches:
            channel = self._fanout.open(Channel(uri, "resourceWatch", state))
            self._keep(Watch(channel, root, self._served, self._fanout, self.folders))

    def _open_client(self, uri: str, state: dict[str, Any], client_id: str) -> None:
        if uri not in self._watches:
            channel = self._fanout.open(Channel(uri, "resourceWatch", state))
            self._keep(ClientWatch(channel, client_id, self._asks, self._fanout))

    def _keep(self, watch: Watch | ClientWatch) -> None:
        # A watch nobody subscribes to is released after the grace as well.
        self._watches[watch.channel.uri] = watch
        self._put_off(watch)

    def _put_off(self, watch: Watch | ClientWatch) -> None:
        if watch.release_timer is None:
            watch.release_timer = self._later(self._grace_s, lambda: self._releasing(watch))

    def _joined(self, channel: Channel) -> None:
        watch = self._watches.get(channel.uri)
        if watch is None:
            return
        if watch.release_timer is not None:
            watch.release_timer.cancel()
            watch.release_timer = None
        watch.start()

    def _left(self, client_id: str, channels: list[Channel], dropped: bool) -> None:
        for channel in channels:
            watch = self._watches.get(channel.uri)
            if watch is not None and not channel.subscribers:
                self._put_off(watch)

    def _arrived(self, conn: Connection) -> None:
        for watch in list(self._watches.values()):
            if isinstance(watch, ClientWatch):
                watch.arrived(conn)

    def _gone(self, conn: Connection) -> None:
        for watch in list(self._watches.values()):
            if isinstance(watch, ClientWatch):
                watch.gone(conn)

    def _releasing(self, watch: Watch | ClientWatch) -> None:
        asyncio.get_running_loop().create_task(self._release(watch))

    async def _release(self, watch: Watch | ClientWatch) -> None:
        watch.release_timer = None
        if watch.channel.subscribers or self._watches.get(watch.channel.uri) is not watch:
            return
        self._watches.pop(watch.channel.uri, None)
        self._made_by.pop(watch.channel.uri, None)
        self._fanout.close(watch.channel.uri)
        await watch.stop()

    async def attached(self, uri: str) -> None:
        """Return once a watch channel's OS watch is in place, so a subscriber answered may
        change files and be told; -32603 where the system refused it. A client's watch returns
        once the client answered it, or raises its refusal."""
        watch = self._watches.get(uri)
        if watch is not None:
            await watch.attached()

    async def ready(self, uri: str) -> None:
        """Put a watch channel's OS watch in place before a handshake subscribes to it, or
        raise -32603 where the system refused it (a client's watch is asked at its subscribe,
        as ever). A watch nobody then subscribes to is released after the grace."""
        watch = self._watches.get(uri)
        if isinstance(watch, Watch):
            watch.start()
            await watch.attached()

    def is_open(self, uri: str) -> bool:
        """Whether a watch channel is open here (not yet released)."""
        return uri in self._watches

    @property
    def watching(self) -> int:
        """How many watchers run now."""
        return sum(1 for watch in self._watches.values() if watch.running)

    async def stop(self) -> None:
        for watch in list(self._watches.values()):
            if watch.release_timer is not None:
                watch.release_timer.cancel()
            await watch.stop()
        self._watches.clear()
        self._made_by.clear()
