"""A chat being handed to a session another node runs (services/chat_moves.py) is held out of
every change on the node that runs it until the other has it: an action on it is refused in
words, and it is neither disposed, nor disposed with its session, nor moved again; once the
move is over it is everyone's to act on again."""

from __future__ import annotations

import asyncio

from hosts.engine.host import Host
from hosts.engine.ports import MemoryStore
from hosts.engine.router import Router
from tests.engine.test_dormant_chats import request, started
from tests.support.transport import FakeTransport

SESSION = "ahp-session:/source"
SIDE = "ahp-chat:/side"
TURN = {"id": "t1", "message": {"text": "hi"}, "responseParts": [], "state": "complete"}
HELD = f"Chat {SIDE} is being moved to another session: try again once it moved."


async def held_side_chat() -> tuple[Host, Router, object]:
    store = MemoryStore()
    store.sessions[SESSION] = {
        "uri": SESSION,
        "provider": "none",
        "created_ms": 1,
        "modified_ms": 2,
        "default_chat": "ahp-chat:/default",
        "working_directories": ["file:///tmp"],
        "announced": True,
        "chats": ["ahp-chat:/default", SIDE],
        "owner": "root:ahpd",
    }
    for chat in ("ahp-chat:/default", SIDE):
        store.chats[chat] = {"uri": chat, "session": SESSION, "created_ms": 1}
    store.turns[SIDE] = {0: dict(TURN)}
    host, router, conn = await started(store)
    host.sessions.moves_enabled = lambda: True
    assert "result" in await request(router, conn, "subscribe", {"channel": SIDE})
    host.sessions.moving.add(SIDE)
    return host, router, conn


async def test_a_chat_being_handed_to_another_node_takes_no_action_and_is_not_disposed():
    host, router, conn = await held_side_chat()
    transport = conn.transport  # type: ignore[attr-defined]
    assert isinstance(transport, FakeTransport)
    try:
        draft = {"type": "chat/draftChanged", "draft": {"text": "typed meanwhile"}}
        frame = {"channel": SIDE, "clientSeq": 1, "action": draft}
        assert (await request(router, conn, "dispatchAction", frame))["result"] is None
        for _ in range(5):
            await asyncio.sleep(0)  # the fan-out's pass
        [refused] = transport.actions()
        assert refused["rejectionReason"] == HELD
        assert not host.sessions.chats[SIDE].state().get("draft")

        for method, channel in (("disposeChat", SIDE), ("disposeSession", SESSION)):
            answer = await request(router, conn, method, {"channel": channel})
            assert answer["error"] == {"code": -32011, "message": HELD}, method
        moved = await request(
            router,
            conn,
            "moveChat",
            {"channel": SIDE, "destination": {"kind": "session", "session": SESSION}},
        )
        assert moved["error"]["code"] == -32602
        assert moved["error"]["data"] == {"reason": "notMovable"}
        assert moved["error"]["message"] == HELD
        assert SIDE in host.sessions.chats and SESSION in host.sessions.sessions

        # The move over (refused there, say): acted on again.
        host.sessions.moving.discard(SIDE)
        assert (await request(router, conn, "disposeChat", {"channel": SIDE}))["result"] is None
        assert SIDE not in host.sessions.chats
    finally:
        host.disconnect(conn)  # type: ignore[arg-type]
        await host.stop()
