"""At start the engine reads what a listing needs: a chat's turns are read when it is named."""

from __future__ import annotations

from typing import Any

import orjson

from hosts.engine.host import Host, HostSettings
from hosts.engine.ports import MemoryStore
from hosts.engine.router import Router
from hosts.protocol import jsonrpc
from tests.support.transport import FakeTransport

SESSION = "ahp-session:/kept"
CHAT = "ahp-chat:/kept"
TURN = {"id": "t1", "message": {"text": "hi"}, "responseParts": [], "state": "complete"}


def kept_store() -> MemoryStore:
    store = MemoryStore()
    store.sessions[SESSION] = {
        "uri": SESSION,
        "provider": "none",
        "created_ms": 1,
        "modified_ms": 2,
        "default_chat": CHAT,
        "announced": True,
        "chats": [CHAT],
        "owner": "root:ahpd",
    }
    store.chats[CHAT] = {"uri": CHAT, "session": SESSION, "created_ms": 1}
    running = {**TURN, "id": "t2", "state": "running"}
    store.turns[CHAT] = {0: dict(TURN), 1: running}
    return store


class FailingOnce(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.fail = True

    async def load_turns(self, chat: str) -> list[dict[str, Any]]:
        if self.fail:
            self.fail = False
            raise OSError("the database went away")
        return await super().load_turns(chat)


async def request(router: Router, conn: Any, method: str, params: dict[str, Any]) -> Any:
    frame = {"jsonrpc": "2.0", "id": 9, "method": method, "params": params}
    answer = await router.handle(conn, jsonrpc.parse(jsonrpc.dumps(frame)))  # type: ignore[arg-type]
    return orjson.loads(answer) if answer is not None else None


async def started(store: MemoryStore) -> tuple[Host, Router, Any]:
    host = Host(store, HostSettings())
    await host.start()
    router = Router(host)
    conn = host.connect(FakeTransport(), "test")
    await request(router, conn, "initialize", {"protocolVersions": ["1.0.0"], "clientId": "c"})
    return host, router, conn


async def test_a_kept_chat_is_listed_but_its_turns_are_not_read_until_it_is_named():
    host, router, conn = await started(kept_store())
    assert host.fanout.channel(CHAT) is None and CHAT in host.sessions.dormant
    [row] = (await request(router, conn, "listSessions", {}))["result"]["items"]
    assert [c["resource"] for c in row["chats"]] == [CHAT]
    snapshot = (await request(router, conn, "subscribe", {"channel": CHAT}))["result"]["snapshot"]
    assert [t["id"] for t in snapshot["state"]["turns"]] == ["t1", "t2"]
    assert snapshot["state"]["turns"][-1]["state"] == "error"
    assert CHAT not in host.sessions.dormant
    await host.stop()


async def test_a_turn_left_running_is_ended_in_the_store_at_start_whether_read_or_not():
    store = kept_store()
    host, _, _ = await started(store)
    await host.writes.drain()
    assert store.turns[CHAT][1]["state"] == "error"
    assert store.turns[CHAT][1]["responseParts"][-1]["error"]["errorType"] == (
        "executionInterrupted"
    )
    await host.stop()


async def test_a_session_disposed_while_its_chat_sleeps_takes_the_chat_with_it():
    host, router, conn = await started(kept_store())
    assert (await request(router, conn, "disposeSession", {"channel": SESSION}))["result"] is None
    assert CHAT not in host.sessions.dormant
    missing = await request(router, conn, "subscribe", {"channel": CHAT})
    assert missing["error"]["code"] == -32001
    await host.stop()


async def test_turns_that_cannot_be_read_are_refused_openly_and_read_on_the_next_try():
    store = FailingOnce()
    kept = kept_store()
    store.sessions, store.chats, store.turns = kept.sessions, kept.chats, kept.turns
    host, router, conn = await started(store)
    failed = await request(router, conn, "subscribe", {"channel": CHAT})
    assert failed["error"]["code"] == -32603
    assert CHAT in host.sessions.dormant
    again = await request(router, conn, "subscribe", {"channel": CHAT})
    assert len(again["result"]["snapshot"]["state"]["turns"]) == 2
    await host.stop()


async def test_a_dormant_chats_uri_is_taken_for_a_new_chat_or_session():
    host, router, conn = await started(kept_store())
    other = "ahp-session:/other"
    host.sessions.create("root:ahpd", other, "none", ["file:///tmp"], {}, None)
    taken = await request(router, conn, "createChat", {"channel": other, "chat": CHAT})
    assert taken["error"]["code"] == -32010 and CHAT in host.sessions.dormant
    assert host.sessions.taken(CHAT) and not host.sessions.taken("ahp-chat:/free")
    await host.stop()
