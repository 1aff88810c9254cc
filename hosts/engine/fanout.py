"""The fan-out core: channels and their held state, serverSeq, the replay ring, subscriptions,
and every connection's bounded outbound queue. It knows no sessions.

Everything here runs on one asyncio loop and nothing on the delivery path awaits: an action is
sequenced, reduced, serialized once, ringed and queued to every watcher in one synchronous
step, and one flusher task hands each connection's queue to its transport.

What else must know when a client stops watching channels (a session's presence) listens with
`on_left`; nothing outside this module writes a channel's subscribers or a connection's queue.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import orjson

from ..protocol import jsonrpc
from ..protocol.actions import action_spec
from ..protocol.reducers import reduce
from ..protocol.shapes import ActionEnvelope, Origin
from ..protocol.uris import canonical
from .channel import Channel
from .clock import now_ms
from .connection import Connection
from .malloc_trim import MemoryReturn
from .ports import Transport
from .replay import Entry, ReplayRing, View, seen

log = logging.getLogger("ahpd.engine")

#: Told when a client stops watching channels: (its client id, the channels, whether it
#: dropped rather than unsubscribed).
LeftListener = Callable[[str, list[Channel], bool], None]

_FRAME_HEAD = '{"jsonrpc":"2.0","method":"action","params":'


class Fanout:
    def __init__(
        self,
        *,
        replay_count: int,
        replay_bytes: Callable[[], int],
        queue_limit: int,
        told: Mapping[str, str],
        total_limit: int = 0,
        give_back: MemoryReturn | None = None,
    ) -> None:
        self.server_seq = 0
        self.ring = ReplayRing(replay_count, replay_bytes)
        #: A client this many bytes behind is dropped (0: no bound). Root config moves it.
        self.queue_limit = queue_limit
        #: What every client's queue may hold together (0: no bound); past it the clients
        #: furthest behind are dropped (AHPD_CLIENT_QUEUES_TOTAL_BYTES).
        self.total_limit = total_limit
        #: The running total: each connection's `queued` as last seen, summed as it moves.
        self.queued_total = 0
        #: Gives the memory dropped clients held back to the system, once they are gone.
        self._give_back = give_back if give_back is not None else MemoryReturn()
        #: What a connection must hold to be told an action of a type, where anything.
        self._told = told
        #: How a principal is shown an action, by type, and a channel's state, by kind (the
        #: state's view is the snapshot's: host.snapshot). What is held and ringed is whole.
        self.action_views: dict[str, View] = {}
        self.state_views: dict[str, View] = {}
        self._channels: dict[str, Channel] = {}
        #: The serverSeq at which a channel's state was last made again with no action.
        self._replaced: dict[str, int] = {}
        self._connections: set[Connection] = set()
        self._left_listeners: list[LeftListener] = []
        self._joined_listeners: list[Callable[[Channel], None]] = []
        #: Told each action of a type in `said_types` (not a refusal) once it is sequenced and
        #: held, before it is delivered: telemetry's turn follower (telemetry/turn_tracker.py).
        #: Any other action (a delta) costs the path one set lookup, and no call.
        self.said: Callable[[Channel, dict[str, Any]], None] | None = None
        self.said_types: frozenset[str] = frozenset()
        self._dirty: dict[Connection, None] = {}
        self._flush_wanted = asyncio.Event()
        #: Connections sent frames during the loop's current pass (see `_queue`).
        self._this_pass: list[Connection] = []
        self._pass_write_wanted = False
        self._none_left = asyncio.Event()
        self._flusher: asyncio.Task[None] | None = None
        #: What an operator reads (host_status.py), counted where it happens: one addition per
        #: envelope or per frame sent, never a pass over the watchers.
        self.connections_opened = 0
        self.envelopes = 0
        self.deliveries = 0
        self.queue_drops = 0

    # -- life -----------------------------------------------------------------------------

    def start(self) -> None:
        if self._flusher is None:
            self._flusher = asyncio.create_task(self._flush_loop(), name="ahpd-flusher")

    def stop(self) -> None:
        if self._flusher is not None:
            self._flusher.cancel()
            self._flusher = None
        self._give_back.stop()

    def on_left(self, listener: LeftListener) -> None:
        self._left_listeners.append(listener)

    def on_joined(self, listener: Callable[[Channel], None]) -> None:
        """Told each time a channel is subscribed to (a watch attaches its watcher)."""
        self._joined_listeners.append(listener)

    # -- channels -------------------------------------------------------------------------

    def open(self, channel: Channel) -> Channel:
        self._channels[channel.uri] = channel
        return channel

    def close(self, uri: str) -> None:
        """Forget a channel; whoever watched it stops watching it."""
        channel = self._channels.pop(uri, None)
        if channel is not None:
            for conn in list(channel.subscribers):
                self.unsubscribe(conn, channel)

    def hand_over(self, old: Channel, new: Channel) -> None:
        """Open `new` in place of `old` (one URI, one state, now moved elsewhere: a chat that
        moved to a session another node runs), its watchers watching it from now on with
        nothing said: what they hold is its state."""
        self._channels[new.uri] = new
        for conn in old.subscribers:
            new.subscribers[conn] = None
            conn.subscriptions[new.uri] = new
        old.subscribers.clear()

    def state_replaced(self, uri: str) -> None:
        """A channel's state was made again with no action said (read back from the store as
        a node takes its session over, a mirror lost): a reconnect of a client that last saw
        it before now is sent its snapshot, never a replay (which would hold no such move)."""
        self._replaced[canonical(uri)] = self.server_seq

    def replaced_since(self, uri: str, seen: int) -> bool:
        """Whether a channel's state was made again since the client saw serverSeq `seen`."""
        return self._replaced.get(uri, -1) >= seen

    def channel(self, uri: str) -> Channel | None:
        """The channel a URI names, in any of its spellings."""
        return self._channels.get(canonical(uri))

    def has(self, uri: str) -> bool:
        return canonical(uri) in self._channels

    # -- connections and subscriptions ----------------------------------------------------

    def connect(self, transport: Transport, peer: str) -> Connection:
        conn = Connection(transport, peer)
        self._connections.add(conn)
        self.connections_opened += 1
        return conn

    @property
    def connections(self) -> frozenset[Connection]:
        """The open connections, as they are now."""
        return frozenset(self._connections)

    def disconnect(self, conn: Connection) -> bool:
        """Stop delivering to a connection; False when it had gone already."""
        if conn not in self._connections:
            return False
        self._connections.discard(conn)
        if not self._connections:
            self._none_left.set()
        conn.closed = True
        self._unqueue(conn)
        # What it held (its socket's buffer, its queue) is freed as the socket goes: the
        # allocator is asked to hand it back to the system, not to keep it for the next.
        self._give_back.soon()
        watched = list(conn.subscriptions.values())
        for channel in watched:
            channel.subscribers.pop(conn, None)
        conn.subscriptions.clear()
        if conn.client_id is not None and watched:
            self._tell_left(conn.client_id, watched, dropped=True)
        return True

    async def close_all(self, code: int, reason: str) -> int:
        """Hand every client what it is owed, then a close frame; nothing more goes to any.

        Each connection stays open here until its socket says it is gone (`disconnect`), which
        `all_gone` waits for. How many were closed.
        """
        conns = list(self._connections)
        for conn in conns:
            await self.close_one(conn, code, reason)
        return len(conns)

    async def close_one(self, conn: Connection, code: int, reason: str) -> None:
        """Hand one client what it is owed, then a close frame; nothing more goes to it (it
        stays open here until its socket says it is gone)."""
        if conn.closed:
            return
        owed = [*conn.outbox, *conn.this_pass]
        self._unqueue(conn)
        conn.closed = True
        try:
            if owed and not conn.transport.write_now(owed):
                await conn.transport.send_batch(owed)
            await conn.transport.close(code, reason)
        except Exception:
            log.warning("closing %r failed; dropping it", conn, exc_info=True)
            self.disconnect(conn)

    def _unqueue(self, conn: Connection) -> None:
        """Nothing is queued for a connection any more (sent, or dropped)."""
        conn.this_pass = []
        conn.outbox.clear()
        conn.outbox_bytes = 0
        self.queued_total -= conn.queued
        conn.queued = 0
        self._dirty.pop(conn, None)

    async def all_gone(self, timeout: float) -> bool:
        """Wait until no connection is left, at most `timeout` seconds; whether none is."""
        if not self._connections:
            return True
        self._none_left.clear()
        try:
            await asyncio.wait_for(self._none_left.wait(), timeout)
        except TimeoutError:
            return not self._connections
        return True

    def subscribe(self, conn: Connection, channel: Channel) -> None:
        if conn.closed:
            return  # dropped while its request was handled: nothing may hold it again
        channel.subscribers[conn] = None
        conn.subscriptions[channel.uri] = channel
        for listener in self._joined_listeners:
            listener(channel)

    def unsubscribe(self, conn: Connection, channel: Channel) -> None:
        channel.subscribers.pop(conn, None)
        conn.subscriptions.pop(channel.uri, None)
        if conn.client_id is not None:
            self._tell_left(conn.client_id, [channel], dropped=False)

    def watching(self, client_id: str, uris: Iterable[str]) -> bool:
        """Whether any open connection of the client watches any of the channels."""
        for uri in uris:
            channel = self._channels.get(uri)
            if channel is not None and any(
                conn.client_id == client_id for conn in channel.subscribers
            ):
                return True
        return False

    def _tell_left(self, client_id: str, channels: list[Channel], *, dropped: bool) -> None:
        for listener in self._left_listeners:
            listener(client_id, channels, dropped)

    # -- delivery -------------------------------------------------------------------------

    def emit(
        self,
        channel: Channel,
        action: dict[str, Any],
        *,
        origin: Origin | None = None,
        sender: Connection | None = None,
        rejection: str | None = None,
        reduce_state: bool = True,
        next_state: Any = None,
        sender_only: bool = False,
    ) -> int:
        """Sequence one action on a channel, apply it, and deliver the envelope to its watchers.

        A refusal (`rejection`) takes a serverSeq and is ringed and delivered like any envelope,
        but changes no state. The sender is told even when it watches no such channel.
        `next_state` is the state the caller reduced already (to see whether it moved).
        `sender_only` says it to its sender alone (live and in replay): an echo that moves
        nothing anybody else holds.

        Nothing is taken until the envelope is said: the state is reduced and the envelope
        serialized first, and only then are the serverSeq, the state and the ring moved, so an
        action that cannot be said (raised here) leaves no gap in serverSeq and no state change.
        """
        seq = self.server_seq + 1
        state = channel.state
        if next_state is not None:
            state = next_state
        elif rejection is None and reduce_state:
            state = reduce(channel.kind, channel.state, action, now_ms=now_ms())
        envelope: ActionEnvelope = {"channel": channel.uri, "action": action, "serverSeq": seq}
        if origin is not None:
            envelope["origin"] = origin
        if rejection is not None:
            envelope["rejectionReason"] = rejection
        envelope_text = orjson.dumps(envelope).decode()
        frame = _FRAME_HEAD + envelope_text + "}"
        spec = action_spec(action["type"])
        viewed = rejection is None and action["type"] in self.action_views
        introduced = spec.introduced_in if spec is not None else None
        needed = self._told.get(action["type"])
        self.server_seq = seq
        self.envelopes += 1
        channel.state = state
        self.ring.append(
            Entry(
                seq,
                channel.uri,
                envelope_text,
                len(frame),
                introduced,
                sender.client_id if sender is not None else None,
                needed,
                sender_only,
                viewed,
            )
        )
        if action["type"] in self.said_types and rejection is None and self.said is not None:
            self.said(channel, action)
        if sender_only:
            if sender is not None:
                self._queue([sender], frame)
            return seq
        # A copy: a client found too far behind is dropped, and leaves the set, mid-loop.
        told = [
            conn
            for conn in tuple(channel.subscribers)
            if conn is sender
            or (
                introduced is not None
                and conn.version is not None
                and introduced <= conn.version
                and (needed is None or conn.principal.may(needed))
            )
        ]
        if sender is not None and sender not in channel.subscribers:
            told.append(sender)
        if not viewed:
            self._queue(told, frame)
            return seq
        # One text per principal, serialized once: a catalogue's watchers mostly share a view.
        by_principal: dict[Any, list[Connection]] = {}
        for conn in told:
            by_principal.setdefault(conn.principal, []).append(conn)
        for principal, conns in by_principal.items():
            text = seen(envelope_text, principal, self.action_views)
            self._queue(conns, _FRAME_HEAD + text + "}")
        return seq

    def notify(
        self,
        channel: Channel,
        method: str,
        params: dict[str, Any],
        to: Callable[[Connection], bool] | None = None,
    ) -> None:
        """A protocol notification: to the channel's watchers now (those `to` keeps, if
        given), never ringed or replayed."""
        watchers = tuple(channel.subscribers)
        if to is not None:
            watchers = tuple(conn for conn in watchers if to(conn))
        self._queue(watchers, jsonrpc.notification_frame(method, params))

    def send(self, conn: Connection, text: str) -> None:
        """Send a frame to one client (an answer), or drop it if it is too far behind."""
        self._queue((conn,), text)

    def _queue(self, conns: Sequence[Connection], text: str) -> None:
        """Send one frame to each of `conns`; a client past the queue limit is dropped.

        The fan-out's hot path. A connection with nothing queued for the flusher gets the frame
        at the end of the loop's current pass (`_write_pass`), together with every other frame
        the pass sends it: a burst of actions read in one pass costs each watcher one write, not
        one per action. The rest are queued behind what their socket has not taken yet.
        """
        size = len(text)
        limit = self.queue_limit
        total_limit = self.total_limit
        dirty = self._dirty
        this_pass = self._this_pass
        self.deliveries += len(conns)
        for conn in conns:
            if conn.closed:
                continue
            if limit or total_limit:
                behind = conn.outbox_bytes + (conn.transport.buffered() or 0)
                # A client that has taken everything is never behind, whatever one frame weighs.
                if limit and behind and behind + size > limit:
                    self._drop_slow(conn, behind)
                    continue
                if total_limit:
                    # One addition to the running total: what this client holds now, this frame
                    # with it when it waits behind others (with nothing behind, it goes
                    # straight to the socket).
                    held = behind + size if behind else 0
                    self.queued_total += held - conn.queued
                    conn.queued = held
                    if behind and self.queued_total > total_limit:
                        self._over_total()
                        if conn.closed:
                            continue
            if not conn.outbox:
                if not conn.this_pass:
                    this_pass.append(conn)
                conn.this_pass.append(text)
                continue
            conn.outbox.append(text)
            conn.outbox_bytes += size
            dirty[conn] = None
        if this_pass and not self._pass_write_wanted:
            self._pass_write_wanted = True
            asyncio.get_running_loop().call_soon(self._write_pass)
        if dirty:
            self._flush_wanted.set()

    def _write_pass(self) -> None:
        """The end of a pass: each connection's frames of the pass, in one write where its
        transport can; what it cannot goes to the flusher, in order."""
        self._pass_write_wanted = False
        conns, self._this_pass = self._this_pass, []
        for conn in conns:
            frames = conn.this_pass
            if not frames:
                continue
            conn.this_pass = []
            if conn.closed:
                continue
            try:
                if conn.transport.write_now(frames):
                    continue
            except Exception:
                self._failed(conn)
                continue
            conn.outbox.extend(frames)
            conn.outbox_bytes += sum(map(len, frames))
            self._dirty[conn] = None
        if self._dirty:
            self._flush_wanted.set()

    def _over_total(self) -> None:
        """The running total passed AHPD_CLIENT_QUEUES_TOTAL_BYTES: count again what each
        client holds (the total has each as last sent to, and a reader may have caught up
        since), and drop the clients furthest behind until the rest fit. Off the hot path: it
        runs only while the total is past the bound."""
        total = 0
        for conn in self._connections:
            conn.queued = conn.outbox_bytes + (conn.transport.buffered() or 0)
            total += conn.queued
        self.queued_total = total
        if total <= self.total_limit:
            return
        for conn in sorted(self._connections, key=lambda c: c.queued, reverse=True):
            if self.queued_total <= self.total_limit or not conn.queued:
                break
            self._drop_slow(conn, conn.queued, past_total=True)

    def _drop_slow(self, conn: Connection, behind: int, *, past_total: bool = False) -> None:
        """Close a client that stopped reading; it comes back with `reconnect`."""
        self.queue_drops += 1
        if past_total:
            log.warning(
                "closing client %s (%s): %d bytes behind, the furthest behind while all "
                "clients' queues together passed AHPD_CLIENT_QUEUES_TOTAL_BYTES %d",
                conn.client_id,
                conn.peer,
                behind,
                self.total_limit,
            )
        else:
            log.warning(
                "closing client %s (%s): %d bytes behind, past clientQueueBytes %d",
                conn.client_id,
                conn.peer,
                behind,
                self.queue_limit,
            )
        self.disconnect(conn)
        # Aborted rather than closed: a close frame would wait behind everything the client
        # has not read, and the point is to stop holding that.
        asyncio.get_running_loop().create_task(conn.transport.abort())

    async def _flush_loop(self) -> None:
        # One task drains every connection: a transport's write does not wait for its peer,
        # so a batch of envelopes costs one wakeup and one write per watcher, not one each.
        while True:
            await self._flush_wanted.wait()
            self._flush_wanted.clear()
            while self._dirty:
                dirty, self._dirty = self._dirty, {}
                for conn in dirty:
                    if conn.closed or not conn.outbox:
                        continue
                    batch = list(conn.outbox)
                    conn.outbox.clear()
                    conn.outbox_bytes = 0
                    try:
                        if not conn.transport.write_now(batch):
                            # Frames queued meanwhile mark the connection dirty again and go
                            # in the next round, after these.
                            await conn.transport.send_batch(batch)
                    except Exception:
                        self._failed(conn)

    def _failed(self, conn: Connection) -> None:
        log.exception("sending to %r failed; dropping it", conn)
        self.disconnect(conn)
        # The socket goes too: a client left open would wait for answers.
        asyncio.get_running_loop().create_task(conn.transport.abort())
