"""A node whose lease lapsed while it stalled, finding on renewal that another node took some
of its sessions meanwhile: each is let go here, and whoever watched it here is sent to
reconnect (1012), to be served by the node that runs it now; a watcher of nothing of it stays."""

from __future__ import annotations

import uuid
from pathlib import Path

from hosts.engine.host import Host, HostSettings
from hosts.engine.placement import Elsewhere, Found
from hosts.engine.ports import MemoryStore
from hosts.protocol.uris import ROOT_URI
from tests.support.transport import FakeTransport


class AllTaken:
    """A node whose sessions the database says another node runs now."""

    node_id = "stalled"

    async def find(self, uri: str) -> Found:
        return Found(None)

    async def place_new(self, folder: Path | None, provider: object) -> Elsewhere | None:
        return None

    async def held(self) -> set[str]:
        return set()

    async def others(self) -> list[str]:
        return ["taker"]


class Closed(FakeTransport):
    def __init__(self) -> None:
        super().__init__()
        self.code: int | None = None

    async def close(self, code: int, reason: str) -> None:
        self.code = code
        await super().close(code, reason)


async def test_a_session_taken_elsewhere_is_let_go_and_its_watchers_sent_to_reconnect():
    host = Host(MemoryStore(), HostSettings(), placement=AllTaken())
    await host.start()
    try:
        uri = f"ahp-session:/{uuid.uuid4()}"
        host.sessions.create("user:ana", uri, "none", ["file:///tmp"], {}, None)
        session = host.sessions.session(uri)
        assert session is not None
        chat = host.fanout.channel(session.record.default_chat)
        root = host.fanout.channel(ROOT_URI)
        assert chat is not None and root is not None
        watching, elsewhere = Closed(), Closed()
        watcher = host.connect(watching, "watcher")
        host.fanout.subscribe(watcher, chat)
        host.fanout.subscribe(watcher, root)
        bystander = host.connect(elsewhere, "bystander")
        host.fanout.subscribe(bystander, root)

        await host.let_go_taken()

        assert host.sessions.session(uri) is None
        assert host.fanout.channel(session.record.default_chat) is None
        assert watching.code == 1012
        assert elsewhere.code is None and not bystander.closed
        host.disconnect(watcher)  # as its socket closes
        host.disconnect(bystander)
    finally:
        await host.stop()
