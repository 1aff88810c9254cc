"""Resource watches: `createResourceWatch`'s channels, and the watchers behind them.

A watch channel names everything about its watch, as VS Code's host names one: its root,
`recursive`, and the `includes`/`excludes` globs, as base64url JSON in
`ahp-resource-watch://r/<...>`. So the channel is made again from its name whenever it is
asked for (a subscribe after a restart resumes it), and creating the same watch twice is one
channel. The watcher (watchfiles, the OS's own notifications) is attached at the channel's
first subscriber and released once the last has been gone for the grace (VS Code's 30 s),
which a subscribe calls off. Its batches are said as `resourceWatch/changed`, only of paths
inside the fence.
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
from watchfiles import Change, awatch

from ...protocol.errors import ErrorCode, ProtocolError, invalid_params
from ..channel import Channel
from ..fanout import Fanout
from .served import Served

log = logging.getLogger("ahpd.engine")

PREFIX = "ahp-resource-watch://r/"
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
        return watch_state(raw, "subscribe") if isinstance(raw, dict) else None
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
    """One watch channel and, while anyone watches it, its watcher."""

    def __init__(self, channel: Channel, root: Path, served: Served, fanout: Fanout) -> None:
        self.channel = channel
        self.root = root
        self._served = served
        self._fanout = fanout
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self.release_timer: asyncio.TimerHandle | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        if not self.running:
            self._stop = asyncio.Event()
            self._task = asyncio.create_task(self._run(), name=f"watch {self.channel.uri}")

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None

    async def _run(self) -> None:
        state = self.channel.state
        try:
            async for changes in awatch(
                self.root,
                watch_filter=None,
                debounce=BATCH_MS,
                step=25,
                stop_event=self._stop,
                recursive=bool(state["recursive"]),
                ignore_permission_denied=True,
            ):
                items = self._said(changes)
                if items:
                    self._fanout.emit(
                        self.channel, {"type": "resourceWatch/changed", "changes": {"items": items}}
                    )
        except Exception:
            log.exception("watching %s failed; the watch says no more", self.root)

    def _said(self, changes: set[tuple[Change, str]]) -> list[dict[str, str]]:
        state = self.channel.state
        includes = state.get("includes", {}).get("items")
        excludes = state.get("excludes", {}).get("items", [])
        items: dict[str, dict[str, str]] = {}
        for change, raw in sorted(changes, key=lambda c: c[1]):
            path = Path(raw)
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


class Watches:
    """Every watch channel open here, by URI."""

    def __init__(self, fanout: Fanout, served: Served, grace_s: float) -> None:
        self._fanout = fanout
        self._served = served
        self._grace_s = grace_s
        self._watches: dict[str, Watch] = {}
        fanout.on_joined(self._joined)
        fanout.on_left(self._left)

    def create(self, params: dict[str, Any]) -> str:
        """The channel of the watch `params` asks for (made, not yet watching)."""
        state = watch_state(params, "createResourceWatch")
        root = self._served.path_of(state["root"], "createResourceWatch")
        if not root.exists():
            raise ProtocolError(ErrorCode.NOT_FOUND, f"Resource not found: {state['root']}")
        uri = channel_uri(state)
        self._open(uri, state, root)
        return uri

    def wake(self, uri: str) -> None:
        """Open the watch channel a URI names, if it names one this host can watch."""
        if uri in self._watches or not uri.startswith(PREFIX):
            return
        state = state_of(uri)
        if state is None:
            return
        try:
            root = self._served.path_of(state["root"], "subscribe")
        except ProtocolError:
            return
        if root.exists():
            self._open(uri, state, root)

    def _open(self, uri: str, state: dict[str, Any], root: Path) -> None:
        if uri not in self._watches:
            channel = self._fanout.open(Channel(uri, "resourceWatch", state))
            self._watches[uri] = Watch(channel, root, self._served, self._fanout)

    def _joined(self, channel: Channel) -> None:
        watch = self._watches.get(channel.uri)
        if watch is None:
            return
        if watch.release_timer is not None:
            watch.release_timer.cancel()
            watch.release_timer = None
        watch.start()

    def _left(self, client_id: str, channels: list[Channel], dropped: bool) -> None:
        loop = asyncio.get_running_loop()
        for channel in channels:
            watch = self._watches.get(channel.uri)
            if watch is None or channel.subscribers or watch.release_timer is not None:
                continue
            watch.release_timer = loop.call_later(self._grace_s, self._releasing, watch)

    def _releasing(self, watch: Watch) -> None:
        asyncio.get_running_loop().create_task(self._release(watch))

    async def _release(self, watch: Watch) -> None:
        watch.release_timer = None
        if watch.channel.subscribers:
            return
        self._watches.pop(watch.channel.uri, None)
        self._fanout.close(watch.channel.uri)
        await watch.stop()

    async def attached(self, uri: str) -> None:
        """Return once a watch channel's watcher has taken its first step, in which watchfiles
        registers the OS's watch: a subscriber answered may change files and be told. (A task
        made runs before what awaits after it: the loop runs ready callbacks in order.)"""
        watch = self._watches.get(uri)
        if watch is not None and watch.running:
            await asyncio.sleep(0)

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
