"""Every session this host holds, by URI, and every chat, by URI: opened, made, announced,
listed, touched, disposed, and kept (written behind to the store).

Held state moves only by the protocol's reducers over the actions said through the fan-out;
a record is what the store keeps. Turns are run by `turns.Turns`, presence by
`presence.Presence`; both use this table and nothing here knows them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any, cast

from ...backends.base import Agent
from ...protocol.shapes import SessionSummary
from ...protocol.uris import ROOT_URI
from .. import access
from ..channel import Channel
from ..clock import now_ms
from ..fanout import Fanout
from ..other_nodes.mirrors import Owner
from ..other_nodes.sessions_elsewhere import SessionsElsewhere
from ..ports import Store
from ..principal import Principal
from ..writebehind import WriteBehind
from .catalogue import Catalogue, Key
from .live_session import LiveChat, LiveSession, close_chat, interrupted
from .records import (
    ChatRecord,
    SessionRecord,
    chat_state,
    chat_summary,
    derived_default_chat_uri,
    opaque_chat_uri,
    record_from_json,
    status_bits,
)
from .rows import session_row
from .session_meta import session_meta

EMPTY_CONFIG_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


class Sessions:
    def __init__(
        self, fanout: Fanout, writes: WriteBehind, store: Store, agents: Mapping[str, Agent]
    ) -> None:
        self.fanout = fanout
        self.writes = writes
        self.store = store
        self.agents = dict(agents)
        self.sessions: dict[str, LiveSession] = {}
        self.chats: dict[str, LiveChat] = {}
        #: Chats whose turns the store holds and nobody has read yet, by URI.
        self.dormant: dict[str, ChatRecord] = {}
        self._waking: dict[str, asyncio.Future[list[dict[str, Any]]]] = {}
        self._adopting: dict[str, asyncio.Future[None]] = {}
        #: The chats being handed to a session another node runs (services/chat_moves.py).
        self.moving: set[str] = set()
        self.catalogue = Catalogue()
        #: A session's changeset catalogue (changesets/), and who hears its turns start and end.
        self.catalogue_of: Callable[[SessionRecord], list[dict[str, Any]] | None] = lambda r: None
        self.on_activity: Callable[[], None] = lambda: None
        #: Root config's chatMoves.enabled, read when a chat's movable is said.
        self.moves_enabled: Callable[[], bool] = lambda: False
        #: Told of each session as it opens (made, read back, made for a moved chat) and as it
        #: is disposed: its folders' customizations and its MCP servers follow it.
        self.on_opened: list[Callable[[LiveSession], None]] = []
        self.on_disposed: list[Callable[[LiveSession], None]] = []
        #: The sessions other nodes of the host run, as rows of the catalogue here; and who
        #: tells those nodes what the root's watchers here are told of this node's sessions.
        self.elsewhere = SessionsElsewhere()
        self.on_root_said: Callable[[str, SessionRecord, dict[str, Any]], None] | None = None
        #: The sessions running a turn here, as last counted, and on each other node, as it
        #: said; and who tells the other nodes when this node's count moves.
        self.active_here = 0
        self.active_elsewhere: dict[str, int] = {}
        self.on_active_count: Callable[[int], None] | None = None

    # -- lookups --------------------------------------------------------------------------

    def session(self, uri: str) -> LiveSession | None:
        return self.sessions.get(uri)

    def chat(self, uri: str) -> LiveChat | None:
        return self.chats.get(uri)

    def record_of(self, uri: str) -> SessionRecord | None:
        """The record of the session a session's or a chat's URI is in (whose, and where)."""
        session = self.sessions.get(uri)
        if session is None:
            chat = self.chats.get(uri)
            if chat is not None:
                session = chat.session
            elif (dormant := self.dormant.get(uri)) is not None:
                session = self.sessions.get(dormant.session)
        return session.record if session is not None else None

    def taken(self, uri: str) -> bool:
        """Whether a URI names something here already: an open channel or a dormant chat."""
        return self.fanout.has(uri) or uri in self.dormant

    def holds(self, session: LiveSession) -> bool:
        """Whether the session is still this table's (not disposed meanwhile)."""
        return self.sessions.get(session.record.uri) is session

    # -- start and shapes -----------------------------------------------------------------

    async def restore(self) -> None:
        """Open every session the store keeps (a node's: those it runs), its chats' turns left
        unread until a chat is watched (`wake`); a turn the last process left running is
        ended."""
        for data in await self.store.load_sessions():
            self._open_kept(data)
        for chat, position, turn in await self.store.load_running_turns():
            self.save_turn(chat, position, interrupted(turn))

    async def adopt(self, uri: str) -> None:
        """Open a session this engine runs from now on, though it did not start with it (its
        node gone, or made by another node since): read from the store as `restore` reads
        them, a turn left running ended, and listed to this engine's clients."""
        adopting = self._adopting.get(uri)
        if adopting is None:
            adopting = self._adopting[uri] = asyncio.ensure_future(self._adopt(uri))
            adopting.add_done_callback(lambda _: self._adopting.pop(uri, None))
        await asyncio.shield(adopting)

    async def _adopt(self, uri: str) -> None:
        if uri in self.sessions:
            return
        for data in await self.store.load_sessions(only=uri):
            if uri in self.sessions:
                return  # made here meanwhile
            session = self._open_kept(data)
            for uri_made in (uri, *session.record.chats):
                self.fanout.state_replaced(uri_made)
            if session.record.announced:
                self._notify_root(
                    "root/sessionAdded", session.record, {"summary": session_row(session)}
                )
        for chat, position, turn in await self.store.load_running_turns(uri):
            self.save_turn(chat, position, interrupted(turn))

    def _open_kept(self, data: dict[str, Any]) -> LiveSession:
        record = record_from_json(SessionRecord, data["session"])
        return self._open(record, [record_from_json(ChatRecord, c) for c in data["chats"]])

    async def wake(self, uri: str) -> None:
        """Read a dormant chat's turns and open its channel; nothing for any other URI.

        Every entry point that reads or moves a chat (subscribe, dispatch, a command, a
        service) wakes it first; until then it is a row in its session and nothing else.
        """
        record = self.dormant.get(uri)
        if record is None:
            return
        waking = self._waking.get(uri)
        if waking is None:
            waking = self._waking[uri] = asyncio.ensure_future(self.store.load_turns(uri))
            waking.add_done_callback(lambda _: self._waking.pop(uri, None))
        turns = await asyncio.shield(waking)
        session = self.sessions.get(record.session)
        if self.dormant.get(uri) is not record or session is None:
            return  # woken by another caller, or disposed, meanwhile
        del self.dormant[uri]
        if turns and turns[-1].get("state") == "running":
            # Its end may not be written yet: it is ended here too.
            turns[-1] = interrupted(turns[-1])
        record.turns, record.turn_count = turns, 0
        self._open_chat(record, session)

    async def wake_session(self, uri: str) -> None:
        """Wake every dormant chat of a session."""
        session = self.sessions.get(uri)
        for chat in list(session.record.chats) if session is not None else ():
            await self.wake(chat)

    def _open(
        self,
        record: SessionRecord,
        chats: list[ChatRecord],
        rows: list[dict[str, Any]] | None = None,
    ) -> LiveSession:
        agent = self.agents.get(record.provider)
        state: dict[str, Any] = {
            "provider": record.provider,
            "title": record.title,
            "status": status_bits(1, is_read=record.is_read, is_archived=record.is_archived),
            "lifecycle": "ready" if record.announced else "creating",
            "activeClients": [],
            "chats": rows if rows is not None else [self._seed_row(c, record) for c in chats],
            "defaultChat": record.default_chat,
            "workingDirectories": list(record.working_directories),
            **({"changesets": found} if (found := self.catalogue_of(record)) else {}),
            **({"_meta": meta} if (meta := session_meta(record, None)) else {}),
            **({"origin": record.origin} if record.origin else {}),
            "config": {
                "schema": agent.session_config_schema() if agent else EMPTY_CONFIG_SCHEMA,
                "values": dict(record.config),
            },
        }
        session = LiveSession(
            record, self.fanout.open(Channel(record.uri, "session", state)), self.fanout
        )
        self.sessions[record.uri] = session
        # Run here now (taken over): its row is this node's own, not another's.
        self.elsewhere.rows.pop(record.uri, None)
        for opened in self.on_opened:
            opened(session)
        for chat in chats:
            if chat.turn_count and not chat.turns:
                self.dormant[chat.uri] = chat
            else:
                self._open_chat(chat, session)
        if record.announced:
            self.catalogue.put(record.uri, record.modified_ms)
        return session

    def _open_chat(self, record: ChatRecord, session: LiveSession) -> None:
        modified = _chat_modified(record, session.record)
        state = chat_state(record, modified)
        if self._seed_movable(record, session.record):
            state["movable"] = True
        channel = self.fanout.open(Channel(record.uri, "chat", state))
        self._hold(LiveChat(record, channel, session))

    def _seed_row(self, chat: ChatRecord, session: SessionRecord) -> dict[str, Any]:
        row = chat_summary(chat, _chat_modified(chat, session))
        if self._seed_movable(chat, session):
            row["movable"] = True
        return row

    def _seed_movable(self, chat: ChatRecord, session: SessionRecord) -> bool:
        """A chat read from the store is movable as `movable` says of a chat running nothing
        (a turn left running was ended as it was read)."""
        return (
            self.moves_enabled()
            and chat.uri != session.default_chat
            and bool(chat.turns or chat.turn_count)
            and not session.is_archived
        )

    def _hold(self, chat: LiveChat) -> None:
        # A chat works in its session's folder: it lists the session's changesets (its seed).
        if found := self.catalogue_of(chat.session.record):
            chat.channel.state["changesets"] = found
        chat.session.chats[chat.record.uri] = chat
        self.chats[chat.record.uri] = chat

    def listing(
        self, after: Key | None = None, limit: int | None = None, reader: Principal | None = None
    ) -> tuple[list[SessionSummary], Key | None]:
        """A page of announced sessions' rows, newest first (those `reader` may read, where
        one is named), and the key to go on from."""
        keep = None
        if reader is not None:

            def keep(uri: str) -> bool:
                return access.may_read(reader, self._whose_listed(uri))

        uris, more = self.catalogue.page(after, limit, keep)
        return [self._row(uri) for uri in uris], more

    def _row(self, uri: str) -> SessionSummary:
        session = self.sessions.get(uri)
        if session is not None:
            return session_row(session)
        return cast(SessionSummary, self.elsewhere.rows[uri].summary)

    def _whose_listed(self, uri: str) -> access.Owned:
        session = self.sessions.get(uri)
        return session.record if session is not None else self.elsewhere.rows[uri].owned

    # -- making and ending ----------------------------------------------------------------

    def create(
        self,
        owner: str,
        uri: str,
        provider: str,
        working_directories: list[str],
        config: dict[str, Any],
        active_client: dict[str, Any] | None,
        *,
        scope: str = "",
        derived_chat_uri: bool = False,
        origin: dict[str, Any] | None = None,
        multi_root: bool = False,
    ) -> LiveSession:
        """A fresh session and its default chat (a derived chat URI for an older VS Code)."""
        created = now_ms()
        chat_uri = derived_default_chat_uri(uri) if derived_chat_uri else opaque_chat_uri()
        record = SessionRecord(
            uri=uri,
            provider=provider,
            created_ms=created,
            modified_ms=created,
            default_chat=chat_uri,
            working_directories=working_directories,
            config=config,
            chats=[chat_uri],
            owner=owner,
            scope=scope,
            origin=origin,
            multi_root=multi_root,
        )
        session = self._open(record, [ChatRecord(chat_uri, uri, created)])
        if active_client is not None:
            session.say({"type": "session/activeClientSet", "activeClient": active_client})
        self.save_session(session)
        self.save_chat(session.chats[chat_uri])
        return session

    def add_chat(
        self,
        session: LiveSession,
        uri: str,
        *,
        title: str,
        turns: list[dict[str, Any]],
        origin: dict[str, Any] | None,
    ) -> LiveChat:
        """A chat beside the default one: said with session/chatAdded, kept, opened read."""
        record = ChatRecord(uri, session.record.uri, now_ms(), title=title, is_read=True)
        record.turns = list(turns)
        state = chat_state(record, record.created_ms)
        summary = chat_summary(record, record.created_ms)
        if origin is not None:
            state["origin"] = summary["origin"] = origin
        chat = LiveChat(record, self.fanout.open(Channel(uri, "chat", state)), session)
        self._hold(chat)
        session.say({"type": "session/chatAdded", "summary": summary})
        session.record.chats.append(uri)
        self.save_session(session)
        self.save_chat(chat)
        for position, turn in enumerate(record.turns):
            self.save_turn(uri, position, turn)
        self.say_movable(chat)  # a fork has turns already
        return chat

    async def remove_chat(self, chat: LiveChat) -> None:
        """Close a chat that is not its session's default: said with session/chatRemoved."""
        session = chat.session
        if self.chats.get(chat.record.uri) is not chat:
            return  # removed already
        self.chats.pop(chat.record.uri, None)
        session.chats.pop(chat.record.uri, None)
        await close_chat(chat, cancel=True)
        self.fanout.close(chat.record.uri)
        session.say({"type": "session/chatRemoved", "chat": chat.record.uri})
        session.record.chats.remove(chat.record.uri)
        self.save_session(session)
        uri = chat.record.uri
        self.writes.later(f"chat:{uri}", lambda: self.store.delete_chat(uri))
        self.update_active_count()

    async def announce(self, session: LiveSession, *, failure: str | None = None) -> None:
        """A fresh session's first message, handed to its backend, makes it real: announced,
        listed, ready. One whose backend could not be had is said failed, then announced; a
        message sent again tries again. Its row is committed before it is listed to anyone."""
        fresh = not session.record.announced and self.holds(session)
        if fresh:
            session.record.announced = True
            self.save_session(session)
            await self.writes.flush()
        if failure is not None and session.channel.state["lifecycle"] == "creating":
            session.say(
                {
                    "type": "session/creationFailed",
                    "error": {"errorType": "backendUnavailable", "message": failure},
                }
            )
        elif failure is None and session.channel.state["lifecycle"] != "ready":
            session.say({"type": "session/ready"})
        if not fresh or not self.holds(session):
            return
        self.catalogue.put(session.record.uri, session.record.modified_ms)
        self._notify_root("root/sessionAdded", session.record, {"summary": session_row(session)})

    async def dispose(self, session: LiveSession) -> None:
        if not self.holds(session):
            return  # disposed already (two callers raced)
        await self._close(session)
        uri = session.record.uri
        self.writes.later(f"session:{uri}", lambda: self.store.delete_session(uri))
        # Committed before whoever disposed it is answered: a session a client was told is
        # gone must not come back after a crash (or a stop killed for taking too long).
        await self.writes.flush()

    async def let_go(self, uri: str) -> None:
        """Stop running a session another node runs now (this one was thought gone and it was
        taken over): its agents let go and its channels closed here, its store left as the
        other node keeps it."""
        session = self.sessions.get(uri)
        if session is not None:
            await self._close(session, removed=False)
        if (row := self.elsewhere.rows.get(uri)) is not None:
            self.catalogue.put(uri, row.modified_ms)

    async def _close(self, session: LiveSession, *, removed: bool = True) -> None:
        # Out of the tables before anything awaits, so nothing said meanwhile keeps it.
        del self.sessions[session.record.uri]
        self.catalogue.drop(session.record.uri)
        for uri in session.record.chats:
            self.dormant.pop(uri, None)
        for chat in session.chats.values():
            self.chats.pop(chat.record.uri, None)
        for chat in list(session.chats.values()):
            await close_chat(chat, cancel=True)
            self.fanout.close(chat.record.uri)
        self.fanout.close(session.record.uri)
        for disposed in self.on_disposed:
            disposed(session)
        if session.record.announced and removed:
            self._notify_root(
                "root/sessionRemoved", session.record, {"session": session.record.uri}
            )
        self.update_active_count()

    async def shutdown(self) -> None:
        """Stop the turns still running (each ends, and is written, as a stop) and let every
        backend go."""
        tasks = [chat.task for chat in self.chats.values() if chat.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for chat in list(self.chats.values()):
            await close_chat(chat, cancel=False)

    # -- what moves -----------------------------------------------------------------------

    def touch(self, session: LiveSession, moved: tuple[str, ...] = ()) -> None:
        """The session changed: its modified time, its place in the catalogue, its row (with
        the fields of it named in `moved` said beside those that move with every change)."""
        if not self.holds(session):
            return  # disposed: a late turn end keeps nothing
        session.record.modified_ms = now_ms()
        self.save_session(session)
        if session.record.announced:
            self.catalogue.put(session.record.uri, session.record.modified_ms)
            summary: dict[str, Any] = dict(session_row(session))
            changes = {k: summary[k] for k in ("title", "status", "modifiedAt", "chats", *moved)}
            self._notify_root(
                "root/sessionSummaryChanged",
                session.record,
                {"session": session.record.uri, "changes": changes},
            )

    def say_meta(self, session: LiveSession) -> None:
        """Say the session's `_meta` whole (session/metaChanged replaces it: session_meta.py)
        where it moved, and its row's, to the root's watchers who may read it."""
        if not self.holds(session):
            return
        meta = session_meta(session.record, session.git)
        if session.channel.state.get("_meta", {}) == meta:
            return
        session.say({"type": "session/metaChanged", "_meta": meta})
        if session.record.announced:
            self._notify_root(
                "root/sessionSummaryChanged",
                session.record,
                {"session": session.record.uri, "changes": {"_meta": meta}},
            )

    def chat_row_moved(self, chat: LiveChat) -> None:
        """Mirror a chat's row into its session's catalogue where it moved."""
        state = chat.state()
        row = next(
            (c for c in chat.session.channel.state["chats"] if c["resource"] == chat.record.uri),
            None,
        )
        if row is None:
            return
        changes = {
            key: state[key]
            for key in ("title", "status", "modifiedAt")
            if key in state and row.get(key) != state[key]
        }
        if changes:
            chat.session.say(
                {"type": "session/chatUpdated", "chat": chat.record.uri, "changes": changes}
            )
        self.say_movable(chat)

    # -- moving chats ---------------------------------------------------------------------

    def movable(self, chat: LiveChat) -> bool:
        """Whether the chat may be the source of a move now: moves are on, it is not its
        session's default, it has had a turn and runs none, and its session is not archived."""
        state = chat.state()
        return (
            self.moves_enabled()
            and not chat.is_default
            and bool(state.get("turns"))
            and state.get("activeTurn") is None
            and not chat.session.record.is_archived
        )

    def say_movable(self, chat: LiveChat) -> None:
        """Say chat/movableChanged, and its row's session/chatUpdated, where the answer
        differs from what the chat's state holds (absent reads as false)."""
        if self.chats.get(chat.record.uri) is not chat:
            return
        movable = self.movable(chat)
        if bool(chat.state().get("movable")) == movable:
            return
        chat.say({"type": "chat/movableChanged", "movable": movable})
        chat.session.say(
            {
                "type": "session/chatUpdated",
                "chat": chat.record.uri,
                "changes": {"movable": movable},
            }
        )

    def say_movable_all(self, session: LiveSession | None = None) -> None:
        """Say again the movable of every open chat (of one session, where one is named)."""
        chats = session.chats.values() if session is not None else self.chats.values()
        for chat in list(chats):
            self.say_movable(chat)
        # A dormant chat has no channel yet: its row alone says it, and it is read movable
        # as its row says when it wakes.
        for record in list(self.dormant.values()):
            owner = self.sessions.get(record.session)
            if owner is None or (session is not None and owner is not session):
                continue
            movable = self._seed_movable(record, owner.record)
            row = next(
                (r for r in owner.channel.state["chats"] if r["resource"] == record.uri), None
            )
            if row is not None and bool(row.get("movable")) != movable:
                owner.say(
                    {
                        "type": "session/chatUpdated",
                        "chat": record.uri,
                        "changes": {"movable": movable},
                    }
                )

    async def reorder(self, chat: LiveChat, after: str | None) -> None:
        """Place a chat after `after` (first, for None) in its own session's catalogue: the
        order kept before session/chatsReordered says it."""
        session = chat.session
        session.record.chats = [uri for uri in session.record.chats if uri != chat.record.uri]
        _place(session, chat.record.uri, after)
        self.save_session(session)
        await self.writes.flush()
        session.say({"type": "session/chatsReordered", "chats": list(session.record.chats)})

    async def move(self, chat: LiveChat, destination: LiveSession, after: str | None) -> None:
        """Hand a chat to another session, placed after `after` (first, for None). Ownership
        and both catalogues are kept before anything is said, so no client is told the chat is
        in two places or in none; its backend is let go, and its next turn opens it again
        under the destination."""
        source = chat.session
        uri = chat.record.uri
        source.record.chats.remove(uri)
        _place(destination, uri, after)
        del source.chats[uri]
        destination.chats[uri] = chat
        chat.session = destination
        chat.record.session = destination.record.uri
        self.save_session(source)
        self.save_session(destination)
        self.save_chat(chat)
        await self.writes.flush()
        await _let_backend_go(chat)
        source.say({"type": "session/chatRemoved", "chat": uri})
        self.touch(source)
        self._say_added(chat)

    # A chat moved to a session another node runs (services/chat_moves.py): the node that ran
    # it holds it out of every change while the other takes it (`moving`), and lets it go once
    # that node has it.

    def moving_refusal(self, chat: str) -> str | None:
        """Why a chat may not be acted on now: it is being handed to another node's session."""
        if chat not in self.moving:
            return None
        return f"Chat {chat} is being moved to another session: try again once it moved."

    def take(
        self,
        record: ChatRecord,
        state: dict[str, Any],
        destination: LiveSession,
        after: str | None,
        replacing: Channel | None,
    ) -> LiveChat:
        """Hold a chat another node's session handed to `destination`: its record as that node
        kept it (its turns read from the store), its state as that node held it, which is what
        every watcher of it holds, opened in place of this node's mirror of it where there is
        one. Kept behind; said by `say_taken`."""
        uri = record.uri
        record.session = destination.record.uri
        _place(destination, uri, after)
        channel = Channel(uri, "chat", state)
        if replacing is None:
            self.fanout.open(channel)
        else:
            self.fanout.hand_over(replacing, channel)
        chat = LiveChat(record, channel, destination)
        destination.chats[uri] = chat
        self.chats[uri] = chat
        self.save_session(destination)
        self.save_chat(chat)
        return chat

    async def say_taken(self, chat: LiveChat) -> None:
        """Say a chat taken from another node added to its session, once it is kept."""
        await self.writes.flush()
        self._say_added(chat)

    async def give(self, chat: LiveChat) -> None:
        """Let go a chat another node's session took: out of its session here and kept so,
        its backend let go, said removed. Its channel is no longer this node's (mirrored from
        the node that took it, or closed, by the caller)."""
        source = chat.session
        uri = chat.record.uri
        source.record.chats.remove(uri)
        del source.chats[uri]
        self.chats.pop(uri, None)
        self.save_session(source)
        await self.writes.flush()
        await close_chat(chat, cancel=False)
        source.say({"type": "session/chatRemoved", "chat": uri})
        self.touch(source)

    def _say_added(self, chat: LiveChat) -> None:
        """Say a chat moved into its session: its row added, the session's order."""
        destination = chat.session
        state = chat.state()
        summary = {
            key: state[key]
            for key in ("resource", "title", "status", "modifiedAt", "origin", "movable")
            if key in state
        }
        destination.say({"type": "session/chatAdded", "summary": summary})
        destination.say({"type": "session/chatsReordered", "chats": list(destination.record.chats)})
        self.touch(destination)
        self.say_movable(chat)

    async def move_to_new(self, chat: LiveChat, uri: str) -> LiveSession:
        """Hand a chat to a session made for it, of its source's agent, folders, config, owner
        and scope, whose default chat it is (and so never movable). Kept before it is said, as
        a move between sessions is; announced, since the chat it holds has had its turns."""
        source = chat.session
        now = now_ms()
        record = SessionRecord(
            uri=uri,
            provider=source.record.provider,
            created_ms=now,
            modified_ms=now,
            default_chat=chat.record.uri,
            title=str(chat.state().get("title") or ""),
            working_directories=list(source.record.working_directories),
            config=dict(source.record.config),
            announced=True,
            chats=[chat.record.uri],
            owner=source.record.owner,
            scope=source.record.scope,
        )
        source.record.chats.remove(chat.record.uri)
        row = {
            key: value
            for key, value in chat.state().items()
            if key in ("resource", "title", "status", "modifiedAt", "origin")
        }
        session = self._open(record, [], rows=[row])
        del source.chats[chat.record.uri]
        session.chats[chat.record.uri] = chat
        chat.session = session
        chat.record.session = uri
        self.save_session(source)
        self.save_session(session)
        self.save_chat(chat)
        await self.writes.flush()
        await _let_backend_go(chat)
        source.say({"type": "session/chatRemoved", "chat": chat.record.uri})
        self.touch(source)
        self.catalogue.put(uri, record.modified_ms)
        self._notify_root("root/sessionAdded", record, {"summary": session_row(session)})
        self.say_movable(chat)  # the default chat of its session now: not movable
        return session

    def update_active_count(self) -> None:
        """Say the host's count of sessions running a turn where it moved: this node's, and
        what each other node of the host last said of its own."""
        own = sum(1 for s in self.sessions.values() if s.running)
        if own != self.active_here:
            self.active_here = own
            if self.on_active_count is not None:
                self.on_active_count(own)
        count = own + sum(self.active_elsewhere.values())
        root = self._root()
        if root.state.get("activeSessions") != count:
            self.fanout.emit(root, {"type": "root/activeSessionsChanged", "activeSessions": count})
        self.on_activity()

    def active_said_elsewhere(self, node: str, count: int | None) -> None:
        """Another node's count of its sessions running a turn (None: that node is gone)."""
        if count is None:
            self.active_elsewhere.pop(node, None)
        else:
            self.active_elsewhere[node] = count
        self.update_active_count()

    def _root(self) -> Channel:
        root = self.fanout.channel(ROOT_URI)
        assert root is not None, "the root channel opens before any session"
        return root

    def _notify_root(self, method: str, record: SessionRecord, params: dict[str, Any]) -> None:
        """Tell the root's watchers of a session, those who may read it (access.py); and the
        other nodes of the host, which tell theirs."""
        self._tell_root_watchers(method, record, params)
        if self.on_root_said is not None:
            self.on_root_said(method, record, params)

    def _tell_root_watchers(
        self, method: str, record: access.Owned, params: dict[str, Any]
    ) -> None:
        self.fanout.notify(
            self._root(),
            method,
            {"channel": ROOT_URI, **params},
            to=lambda conn: access.may_read(conn.principal, record),
        )

    # -- the sessions other nodes run -----------------------------------------------------

    def said_elsewhere(self, node: str, method: str, params: dict[str, Any], owned: Owner) -> None:
        """Another node told its root watchers this of a session it runs: held, and told to
        the root's watchers here."""
        row = self.elsewhere.take(node, method, params, owned)
        if owned.uri in self.sessions:
            return  # still run here, until this node finds it was taken (let_go)
        if row is None:
            self.catalogue.drop(owned.uri)
        else:
            self.catalogue.put(owned.uri, row.modified_ms)
        self._tell_root_watchers(method, owned, params)

    def rows_elsewhere(self, node: str, rows: list[dict[str, Any]]) -> None:
        """Every row another node runs, as it answered this one's start."""
        dropped, held = self.elsewhere.replace(node, rows)
        for uri in dropped:
            if uri not in self.sessions:
                self.catalogue.drop(uri)
        for row in held:
            if row.owned.uri in self.sessions:
                self.elsewhere.rows.pop(row.owned.uri, None)
            else:
                self.catalogue.put(row.owned.uri, row.modified_ms)

    def own_rows(self) -> list[dict[str, Any]]:
        """This node's rows, for a node that starts."""
        return [
            {
                "summary": session_row(session),
                "owned": {"uri": uri, "owner": session.record.owner, "scope": session.record.scope},
            }
            for uri, session in self.sessions.items()
            if session.record.announced
        ]

    # -- kept -----------------------------------------------------------------------------

    # A record is read when its write runs (on the loop, its fields copied for the store's
    # thread), not when it is scheduled: the write coalesces every change before it, and a
    # chat's draft typed at every keystroke costs no copy per keystroke.

    def save_session(self, session: LiveSession) -> None:
        """Write the session's record, behind; a session disposed meanwhile keeps nothing (a
        turn's end tree kept after its session was disposed would have written it back)."""
        if not self.holds(session):
            return
        record = session.record
        self.writes.later(
            f"session:{record.uri}", lambda: self.store.save_session(record.to_json())
        )

    def save_chat(self, chat: LiveChat) -> None:
        record = chat.record
        self.writes.later(f"chat:{record.uri}", lambda: self.store.save_chat(record.to_json()))

    def save_turn(self, chat: str, position: int, turn: dict[str, Any]) -> None:
        """Write one turn of a chat, behind; a later write of the same turn replaces it."""

        async def write() -> None:
            await self.store.save_turn(chat, position, turn)

        self.writes.later(f"turn:{chat}:{turn['id']}", write)


def _place(destination: LiveSession, uri: str, after: str | None) -> None:
    """Put a chat in a session's catalogue after `after` (first, for None)."""
    order = list(destination.record.chats)
    order.insert(order.index(after) + 1 if after is not None else 0, uri)
    destination.record.chats = order


async def _let_backend_go(chat: LiveChat) -> None:
    """A moved chat's backend was opened for the session it left: let it go, so the chat's
    next turn opens it again under the one it is in. A turn that started while the move was
    being kept runs on where it was opened."""
    if chat.runner is None and chat.task is None:
        await close_chat(chat, cancel=False)


def _chat_modified(chat: ChatRecord, session: SessionRecord) -> int:
    return session.modified_ms if chat.turns or chat.turn_count else chat.created_ms
