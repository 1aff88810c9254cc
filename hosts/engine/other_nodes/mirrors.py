"""The channels another node runs, mirrored here for this node's clients.

A client of this node that subscribes to a session or chat another node runs is served from a
mirror: a channel of this node's fan-out, seeded with the running node's state as of one of
its serverSeqs (feeds.py) and moved by every later action that node says, each sequenced, held
and ringed here as this node's own. So a client sees one serverSeq, this node's, however its
channels are spread, and a reconnect here replays the mirror's actions like any others. The
first subscriber opens the mirror; the last one leaving closes it, at once where it
unsubscribed, and after the time a client's record is kept where its socket dropped: a client
that reconnects in that time is replayed what the mirror was said meanwhile.

Whose a mirrored session is (its owner, its scope) comes with the seed, so every later
subscriber here is judged as on the node that runs it. What a client dispatches to a mirrored
channel is carried to that node (remote_clients.py), in the order it was sent, and comes back
as that node says it: applied, or refused.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from dataclasses import dataclass, field
from typing import Any

import orjson

from ...protocol.errors import ProtocolError
from .. import access
from ..channel import Channel
from ..connection import Connection
from ..fanout import Fanout
from ..placement import Elsewhere, Relay
from ..principal import Principal

log = logging.getLogger("ahpd.nodes")


def client_of(conn: Connection) -> dict[str, Any]:
    """What the node that runs a channel is told of a client of this node acting on it."""
    return {
        "clientId": conn.client_id,
        "version": conn.version_text,
        "name": conn.client_name,
        "legacyChatUris": conn.legacy_vscode_chat_uris,
    }


@dataclass(slots=True)
class Owner:
    """Whose a mirrored session is (access.Owned)."""

    uri: str
    owner: str
    scope: str


def owned_json(record: access.Owned) -> dict[str, Any]:
    """Whose a channel is, as another node is told it: a session's, or one person's own (a
    terminal no session claims, judged more strictly for reading: access.Personal)."""
    return {
        "uri": record.uri,
        "owner": record.owner,
        "scope": record.scope,
        "personal": isinstance(record, access.Personal),
    }


def owned_of(data: dict[str, Any]) -> access.Owned:
    """Whose a channel another node runs is, as it told it (owned_json)."""
    uri, owner, scope = str(data["uri"]), str(data["owner"]), str(data["scope"])
    return access.Personal(uri, owner, scope) if data.get("personal") else Owner(uri, owner, scope)


@dataclass(slots=True)
class Mirror:
    node: Elsewhere
    #: Names this opening of the mirror to the running node: a stop meant for an earlier one
    #: (crossed with a new subscriber's opening) leaves this one fed.
    token: str = field(default_factory=lambda: secrets.token_hex(8))
    channel: Channel | None = None
    owned: access.Owned | None = None
    #: The running node's serverSeq of the last action applied here.
    after: int = 0
    #: Envelopes that came before the seed did (applied after it, those past its serverSeq).
    early: list[dict[str, Any]] = field(default_factory=list)


class Mirrors:
    def __init__(
        self, fanout: Fanout, relay: Relay | None, inbox: str, kept_s: float = 300.0
    ) -> None:
        self._fanout = fanout
        self._relay = relay
        #: How long a mirror is kept open once the last client watching it dropped.
        self._kept_s = kept_s
        #: This node's inbox, where the running nodes send what they say.
        self.inbox = inbox
        self._by_uri: dict[str, Mirror] = {}
        self._opening: dict[str, asyncio.Future[None]] = {}

    def node_of(self, uri: str) -> Elsewhere | None:
        mirror = self._by_uri.get(uri)
        return mirror.node if mirror is not None and mirror.channel is not None else None

    def listing(self, chat: str) -> Elsewhere | None:
        """The node running a mirrored session that lists `chat` (one made there a moment ago,
        which that node may not have written yet for this one to find)."""
        for mirror in self._by_uri.values():
            channel = mirror.channel
            if channel is None or channel.kind != "session":
                continue
            if any(row.get("resource") == chat for row in channel.state.get("chats", ())):
                return mirror.node
        return None

    def whose(self, uri: str) -> access.Owned | None:
        mirror = self._by_uri.get(uri)
        return mirror.owned if mirror is not None else None

    async def open(self, uri: str, node: Elsewhere, principal: Principal) -> None:
        """Mirror `uri` here, seeded by `node` (asked as `principal`, who must be let watch
        it there); at once where it is mirrored already."""
        while True:
            if (mirror := self._by_uri.get(uri)) is not None and mirror.channel is not None:
                return
            opening = self._opening.get(uri)
            if opening is None:
                opening = self._opening[uri] = asyncio.ensure_future(
                    self._open(uri, node, principal)
                )
                opening.add_done_callback(lambda _: self._opening.pop(uri, None))
                await asyncio.shield(opening)
                return
            try:
                await asyncio.shield(opening)
            except ProtocolError:
                continue  # refused to whoever opened it: asked again, as this principal

    async def _open(self, uri: str, node: Elsewhere, principal: Principal) -> None:
        assert self._relay is not None, "a node mirrors over its relay"
        mirror = self._by_uri[uri] = Mirror(node)
        try:
            seed = await self._relay.call(
                node.channel,
                "feed_channel",
                principal,
                {"uri": uri, "inbox": self.inbox, "token": mirror.token},
            )
        except BaseException:
            self._by_uri.pop(uri, None)
            raise
        if self._by_uri.get(uri) is not mirror:
            return  # lost meanwhile
        self._seed(uri, mirror, seed, None)
        # What the running node said while nothing here mirrored it is in no ring here: a
        # client that reconnects from before now is sent the snapshot.
        self._fanout.state_replaced(uri)

    def _seed(
        self, uri: str, mirror: Mirror, seed: dict[str, Any], replacing: Channel | None
    ) -> None:
        mirror.owned = owned_of(seed["whose"])
        channel = Channel(uri, seed["kind"], seed["state"])
        if replacing is None:
            self._fanout.open(channel)
        else:
            self._fanout.hand_over(replacing, channel)
        mirror.channel = channel
        mirror.after = seed["fromSeq"]
        early, mirror.early = mirror.early, []
        for envelope in early:
            self._apply(mirror, envelope)

    # A chat of this node's moved to a session another node runs (services/chat_moves.py):
    # its watchers here go on watching it, mirrored from that node.

    def expect(self, uri: str, node: Elsewhere) -> Mirror:
        """A mirror of `uri` that `node` is about to feed (its seed comes in the answer to the
        call that hands it the chat): what it says before that answer is held for it."""
        mirror = self._by_uri[uri] = Mirror(node)
        return mirror

    def seeded(self, mirror: Mirror, seed: dict[str, Any], replacing: Channel) -> None:
        """Open an expected mirror from its seed, in place of the channel its watchers watched
        (its state continued by the seed's: nothing is said to them)."""
        uri = replacing.uri
        if self._by_uri.get(uri) is mirror:
            self._seed(uri, mirror, seed, replacing)

    def unexpected(self, uri: str, mirror: Mirror) -> None:
        """Forget an expected mirror no node will feed (the chat stayed here)."""
        if self._by_uri.get(uri) is mirror:
            del self._by_uri[uri]

    def forget(self, uri: str) -> Channel | None:
        """Stop mirroring `uri`, which this node runs from now on (a chat moved into one of its
        sessions): the mirror's channel, for the one opened in its place to take its watchers;
        the node that fed it stops by itself."""
        mirror = self._by_uri.pop(uri, None)
        return None if mirror is None else mirror.channel

    def moved(self, uri: str, owned: access.Owned) -> None:
        """A mirrored chat is now in another session (`owned`): its later watchers here are
        judged by that one's owner."""
        mirror = self._by_uri.get(uri)
        if mirror is not None and mirror.owned is not None:
            mirror.owned = owned

    def take(self, frames: list[str]) -> None:
        """Frames a running node sent (feeds.py): each action applied to its mirror, in order."""
        for text in frames:
            frame = orjson.loads(text)
            if frame.get("method") != "action":
                continue
            envelope = frame["params"]
            mirror = self._by_uri.get(envelope["channel"])
            if mirror is None:
                continue  # closed here since
            if mirror.channel is None:
                mirror.early.append(envelope)
                continue
            self._apply(mirror, envelope)

    def _apply(self, mirror: Mirror, envelope: dict[str, Any]) -> None:
        seq = envelope["serverSeq"]
        if seq <= mirror.after:
            return  # in the seed already
        mirror.after = seq
        assert mirror.channel is not None
        self._fanout.emit(
            mirror.channel,
            envelope["action"],
            origin=envelope.get("origin"),
            rejection=envelope.get("rejectionReason"),
        )

    def left(self, client_id: str, channels: list[Channel], dropped: bool) -> None:
        """A client stopped watching channels: a mirror nobody here watches is closed (where
        the client dropped, once it has not come back to it for a while)."""
        for channel in channels:
            mirror = self._by_uri.get(channel.uri)
            if mirror is None or mirror.channel is not channel or channel.subscribers:
                continue
            if dropped:
                asyncio.get_running_loop().call_later(
                    self._kept_s, self._close_unwatched, channel.uri, mirror
                )
            else:
                self._close(channel.uri, mirror)

    def _close_unwatched(self, uri: str, mirror: Mirror) -> None:
        if (
            self._by_uri.get(uri) is mirror
            and mirror.channel is not None
            and not mirror.channel.subscribers
        ):
            self._close(uri, mirror)

    def session_gone(self, session: str) -> None:
        """The running node disposed a session: its mirrors here close, as its channels closed
        there (their watchers here stop watching them, as they would on that node)."""
        for uri, mirror in list(self._by_uri.items()):
            if mirror.owned is not None and mirror.owned.uri == session:
                self._by_uri.pop(uri, None)
                self._fanout.close(uri)

    def nodes(self) -> set[str]:
        """The nodes whose channels are mirrored here."""
        return {mirror.node.node_id for mirror in self._by_uri.values()}

    def lost(self, node_id: str) -> set[Connection]:
        """The running node stopped feeding this one (it stopped or is gone, or dropped this
        node as too slow): its mirrors are closed, and the clients that watched them returned,
        to be closed so that they reconnect (and are sent the state afresh)."""
        watchers: set[Connection] = set()
        for uri, mirror in list(self._by_uri.items()):
            if mirror.node.node_id != node_id:
                continue
            log.warning("mirror of %s lost: node %s stopped feeding it", uri, node_id)
            self._by_uri.pop(uri, None)
            if mirror.channel is not None:
                watchers.update(mirror.channel.subscribers)
            self._fanout.close(uri)
            self._fanout.state_replaced(uri)
        return watchers

    def _close(self, uri: str, mirror: Mirror) -> None:
        self._by_uri.pop(uri, None)
        self._fanout.close(uri)
        if self._relay is None:
            return
        relay, inbox = self._relay, self.inbox

        async def stop() -> None:
            try:
                await relay.call(
                    mirror.node.channel,
                    "stop_feed",
                    NODE,
                    {"uri": uri, "inbox": inbox, "token": mirror.token},
                )
            except Exception:
                log.exception("asking node %s to stop feeding %s failed", mirror.node, uri)

        asyncio.get_running_loop().create_task(stop())

    async def dispatch(
        self, conn: Connection, node: Elsewhere, client: dict[str, Any], params: dict[str, Any]
    ) -> None:
        """Carry a client's dispatchAction to the node that runs its channel, after every
        earlier one it sent."""
        assert self._relay is not None
        await self._relay.dispatch(node.channel, conn.principal, client, params)

    async def request(
        self, conn: Connection, node: Elsewhere, client: dict[str, Any], request: dict[str, Any]
    ) -> str | None:
        """Have the node that runs a channel answer a client's request about it."""
        assert self._relay is not None
        answer = await self._relay.call(
            node.channel, "client_request", conn.principal, {"client": client, "request": request}
        )
        return None if answer is None else str(answer)


#: Who asks a node to stop feeding a channel: the node itself, not any person.
NODE = Principal("node:mirrors", ())
