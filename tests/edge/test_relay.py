"""A service call reaches the engine that holds its session over the channel layer (the
in-memory layer on the embedded default, Redis with REDIS_URL): the placement seam, end to end.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from channels.layers import get_channel_layer

from hosts.edge import runtime
from hosts.edge.relay import LayerRelay
from hosts.engine.host import Host, HostSettings
from hosts.engine.placement import Elsewhere, Found
from hosts.engine.ports import MemoryStore
from hosts.engine.principal import Principal
from hosts.engine.services.calls import perform
from hosts.protocol.errors import ErrorCode, ProtocolError

ADMIN = Principal("user:ana", ("*:*",))
GUEST = Principal("user:gus", ("session:read",))


class ElsewhereFor:
    """Every session (and every new one) is run by the node whose engine reads `engine`."""

    node_id = "asker"

    def __init__(self, engine: str) -> None:
        self.engine = engine

    async def find(self, uri: str) -> Found:
        return Found(uri, Elsewhere("holder", self.engine, ""))

    async def place_new(self, folder: Path | None, provider: object) -> Elsewhere | None:
        return Elsewhere("holder", self.engine, "")

    async def held(self) -> set[str]:
        return set()

    async def others(self) -> list[str]:
        return ["holder"]


@pytest.fixture
async def engines():
    layer = get_channel_layer()
    name = f"ahpd.engine.test-{uuid.uuid4().hex[:8]}"
    holder = Host(MemoryStore(), HostSettings())
    await holder.start()
    inbox = asyncio.get_running_loop().create_task(runtime._read_inbox(holder, name))
    asker = Host(
        MemoryStore(), HostSettings(), placement=ElsewhereFor(name), relay=LayerRelay(layer)
    )
    await asker.start()
    yield asker, holder
    inbox.cancel()
    await holder.stop()
    await asker.stop()


async def test_a_call_for_a_session_held_elsewhere_is_run_there(engines):
    asker, holder = engines
    uri = f"ahp-session:/{uuid.uuid4()}"
    holder.sessions.create("user:ana", uri, "none", ["file:///tmp"], {}, None)
    assert await perform(asker, "dispose_session", ADMIN, uri=uri) is None
    assert holder.sessions.session(uri) is None


async def test_a_refusal_comes_back_in_the_holders_words(engines):
    asker, holder = engines
    uri = f"ahp-session:/{uuid.uuid4()}"
    holder.sessions.create("user:ana", uri, "none", ["file:///tmp"], {}, None)
    with pytest.raises(ProtocolError) as refused:
        await perform(asker, "dispose_session", GUEST, uri=uri)
    assert refused.value.code == ErrorCode.PERMISSION_DENIED
    assert refused.value.message == "user:gus may not session:dispose here"
    assert holder.sessions.session(uri) is not None
    with pytest.raises(ProtocolError) as missing:
        await perform(asker, "cancel_session", ADMIN, uri="ahp-session:/nobody")
    assert missing.value.code == ErrorCode.SESSION_NOT_FOUND


async def test_a_call_with_no_relay_to_the_holder_is_an_error_not_a_silent_success():
    asker = Host(MemoryStore(), HostSettings(), placement=ElsewhereFor("ahpd.engine.gone"))
    await asker.start()
    with pytest.raises(RuntimeError, match="ahp-session:/x is run by holder"):
        await perform(asker, "dispose_session", ADMIN, uri="ahp-session:/x")
    await asker.stop()
