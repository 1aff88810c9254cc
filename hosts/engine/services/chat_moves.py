"""moveChat: a chat placed after another in its own session, or handed to another session,
which another node of the host may run.

Served as VS Code's host serves it: gated by root config's `chatMoves.enabled`; every refusal
is -32602 with the reason from VS Code's fixed set in the error's data (`{"reason": ...}`),
and changes nothing. The whole move is checked before anything is written.

A move to a session another node runs is asked of the node that runs the chat (the router
carries the request there). That node holds the chat out of every change (`Sessions.moving`),
writes what it has of it, and hands it to the destination's node (`do_take_chat`), which
checks its side, keeps it in the destination and says it added; only then is it let go and
said removed where it was. Whoever watched it on either node watches on, with nothing said:
on the destination's node its mirror's channel becomes the chat's own, on the other the chat's
own becomes a mirror of it.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

import orjson

from ...protocol.errors import ErrorCode, ProtocolError
from ...protocol.validation import move_destination
from ..host import Host
from ..other_nodes.mirrors import owned_json
from ..placement import Elsewhere
from ..sessions import LiveChat, LiveSession
from ..sessions.records import ChatRecord, record_from_json
from .caller import Caller, chat_of

log = logging.getLogger("ahpd.engine")


def refused(reason: str, words: str) -> ProtocolError:
    """A move refused: its words, and its reason in the error's data."""
    return ProtocolError(ErrorCode.INVALID_PARAMS, words, {"reason": reason})


async def do_move_chat(host: Host, caller: Caller, uri: str, destination: Any) -> str:
    """Move the chat `uri` as `destination` says; the session that holds it after."""
    session_uri, after = move_destination(destination)
    chat = chat_of(host, uri)
    source = chat.session
    caller.may_in(source, "chat:create")
    if session_uri is None:
        caller.may("session:create")
        caller.may_in(source, "chat:dispose")
        _check_source(host, chat)
        _check_between(source, source)
        # The new session's id is the chat's backend id, where it has one.
        new_uri = f"ahp-session:/{chat.record.backend_id or uuid.uuid4()}"
        if host.sessions.taken(new_uri):
            new_uri = f"ahp-session:/{uuid.uuid4()}"
        session = await host.sessions.move_to_new(chat, new_uri)
        return session.record.uri
    elsewhere = await host.wake(session_uri)
    chat = chat_of(host, uri)  # as it is after the wait (disposed meanwhile: not found)
    if elsewhere is not None:
        return await _hand_over(host, caller, chat, session_uri, after, elsewhere)
    source = chat.session
    target = host.sessions.session(session_uri)
    if target is not None and target is not source:
        caller.may_in(source, "chat:dispose")
        caller.may_in(target, "chat:create")
    _check_source(host, chat)
    if target is None:
        raise refused("destinationNotFound", f"Destination session not found: {session_uri}")
    if target is not source:
        _check_between(source, target)
    _check_anchor(target, uri, after)
    if target is source:
        await host.sessions.reorder(chat, after)
    else:
        await host.sessions.move(chat, target, after)
    return target.record.uri


async def _hand_over(
    host: Host, caller: Caller, chat: LiveChat, session_uri: str, after: str | None, node: Elsewhere
) -> str:
    """Move a chat of this node's to `session_uri`, which `node` runs."""
    source, uri = chat.session, chat.record.uri
    caller.may_in(source, "chat:dispose")
    _check_source(host, chat)
    _check_source_session(source)
    assert host.relay is not None, "a node hands a chat to another over its relay"
    host.sessions.moving.add(uri)
    try:
        # Its turns as they stand, in the store the other node reads them from; what this
        # node would write of it from now on is dropped there (the destination is not its).
        await host.writes.flush()
        chat.record.session = session_uri
        # Who watches it here (clients, the other nodes' mirrors but the destination's) goes
        # on watching it, mirrored from the node that takes it: its seed comes with the answer.
        watched = [c for c in chat.channel.subscribers if host.feeds.inbox_of(c) != node.channel]
        mirror = host.mirrors.expect(uri, node) if watched else None
        try:
            taken = await host.relay.call(
                node.channel,
                "take_chat",
                caller.principal,
                {
                    "chat": chat.record.to_json(),
                    "state": orjson.loads(orjson.dumps(chat.state())),
                    "session": session_uri,
                    "after": after,
                    "provider": source.record.provider,
                    "feed": None if mirror is None else [host.mirrors.inbox, mirror.token],
                },
            )
        except Exception as exc:
            # A refusal is that node's word; anything else (no answer in time, a failure
            # there or on the way) leaves the store's word on whether it moved.
            refusal = isinstance(exc, ProtocolError) and exc.code != ErrorCode.INTERNAL_ERROR
            if not refusal and await _taken_anyway(host, uri, session_uri):
                # It moved, though this node cannot mirror it: its watchers here are sent to
                # reconnect.
                log.warning("%s moved to %s with no answer from %s", uri, session_uri, node)
                taken = {"session": session_uri, "fed": None}
            else:
                if mirror is not None:
                    host.mirrors.unexpected(uri, mirror)
                chat.record.session = source.record.uri
                host.sessions.save_chat(chat)  # what was dropped meanwhile
                raise
        host.feeds.unfeed(uri, node.channel)
        old = chat.channel
        if mirror is not None and taken["fed"] is not None:
            host.mirrors.seeded(mirror, taken["fed"], old)
            host.nodes.chat_moved(uri, host.mirrors.whose(uri) or source.record)
        else:
            if mirror is not None:
                host.mirrors.unexpected(uri, mirror)
            await host.send_away(set(old.subscribers), f"chat {uri} moved to another node")
            host.fanout.close(uri)
        await host.sessions.give(chat)
        log.info("chat %s moved to %s, which node %s runs", uri, session_uri, node.node_id)
        return str(taken["session"])
    finally:
        host.sessions.moving.discard(uri)


async def _taken_anyway(host: Host, chat: str, session: str) -> bool:
    """Whether the store holds `chat` in `session` (a node asked to take it did not answer)."""
    try:
        kept = await host.store.load_sessions(only=session)
    except Exception:
        log.exception("reading whether %s moved to %s failed", chat, session)
        return False
    return any(chat in row["session"]["chats"] for row in kept)


async def do_take_chat(
    host: Host,
    caller: Caller,
    *,
    chat: dict[str, Any],
    state: dict[str, Any],
    session: str,
    after: str | None,
    provider: str,
    feed: list[str] | None,
) -> dict[str, Any]:
    """Take a chat another node's session hands to `session`, which this node runs, after
    `after`, checked as a move within one node checks the destination; the destination's URI,
    and, where that node's clients watch the chat, the seed of its mirror of it there."""
    elsewhere = await host.wake(session)
    uri = str(chat["uri"])
    record = record_from_json(ChatRecord, chat)
    record.turns = await host.store.load_turns(uri)
    # Checked after the last wait, as the destination is now.
    target = host.sessions.session(session) if elsewhere is None else None
    if target is None:
        raise refused("destinationNotFound", f"Destination session not found: {session}")
    caller.may_in(target, "chat:create")
    if not host.sessions.moves_enabled():
        raise refused("disabled", "Moving chats is not enabled.")
    _check_archived(target)
    _check_provider(target, provider)
    _check_anchor(target, uri, after)
    if uri in host.sessions.chats or uri in host.sessions.dormant:
        raise refused("notMovable", f"{uri} is a chat of this node already")
    taken = host.sessions.take(record, state, target, after, host.mirrors.forget(uri))
    fed = None
    if feed is not None:
        inbox, token = feed
        fed = {**host.feeds.feed(taken.channel, inbox, token), "whose": owned_json(target.record)}
    await host.sessions.say_taken(taken)
    return {"session": target.record.uri, "fed": fed}


def _check_source(host: Host, chat: LiveChat) -> None:
    if not host.sessions.moves_enabled():
        raise refused("disabled", "Moving chats is not enabled.")
    if (busy := host.sessions.moving_refusal(chat.record.uri)) is not None:
        raise refused("notMovable", busy)
    state = chat.state()
    if chat.is_default:
        raise refused("notMovable", "The session's default chat cannot be moved.")
    if state.get("activeTurn") is not None:
        raise refused("notMovable", "A chat running a turn cannot be moved.")
    if not state.get("turns"):
        raise refused("notStarted", "A chat with no turn yet cannot be moved.")


def _check_source_session(source: LiveSession) -> None:
    _check_archived(source)
    if not source.record.working_directories:
        raise refused("workspaceless", "A chat with no folder cannot be moved.")


def _check_archived(session: LiveSession) -> None:
    if session.record.is_archived:
        raise refused("sessionArchived", f"Session is archived: {session.record.uri}")


def _check_between(source: LiveSession, target: LiveSession) -> None:
    _check_source_session(source)
    _check_archived(target)
    _check_provider(target, source.record.provider)


def _check_provider(target: LiveSession, provider: str) -> None:
    if target.record.provider != provider:
        raise refused(
            "differentProvider", f"The destination runs {target.record.provider}, not {provider}."
        )


def _check_anchor(target: LiveSession, chat: str, after: str | None) -> None:
    if after is not None and (after == chat or after not in target.record.chats):
        raise refused("invalidAnchor", f"The anchor is not another chat of the session: {after}")
