"""A few thousand frames from the protocol's schemas, from a fixed seed, over every method and
action, mostly right and now and then wrong: no traceback in the server's log, every request
answered, the connection up, and afterwards a fresh client opens every channel there is."""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from pathlib import Path

import pytest

from tests.support.agents import server_with_local_agent
from tests.support.client import Client
from tests.support.fuzz import FrameMaker

ROOT = "ahp-root://"
SEED = 8
FRAMES = 3000
#: Frames sent before every request among them must be answered.
BATCH = 100


@pytest.fixture(scope="module")
def workdir():
    with tempfile.TemporaryDirectory(prefix="ahpd-fuzz-") as path:
        yield Path(path)


@pytest.fixture(scope="module")
def server():
    with server_with_local_agent() as process:
        yield process


async def open_every_channel(server) -> int:
    """A fresh client subscribes to the root, every session listed and each of its chats."""
    fresh = await Client.open(server.url)
    try:
        await fresh.initialize()
        opened = 1
        sessions = (await fresh.request("listSessions", {"channel": ROOT}))["items"]
        for row in sessions:
            state = (await fresh.request("subscribe", {"channel": row["resource"]}))["snapshot"]
            opened += 1
            for chat in state["state"]["chats"]:
                await fresh.request("subscribe", {"channel": chat["resource"]})
                opened += 1
        return opened
    finally:
        await fresh.close()
        fresh.assert_schema_clean()


async def test_generated_frames_take_nothing_down(server, workdir):
    # Not the schema-checked fixture: what this client sends is off the schema on purpose, and
    # an action on a chat nothing here knows is said back as sent.
    client = await Client.open(server.url)
    try:
        await fuzz(server, client, workdir)
    finally:
        await client.close()
    assert await open_every_channel(server) >= 1
    assert "Traceback" not in server.log_text()


async def fuzz(server, client: Client, workdir: Path) -> None:
    await client.initialize()
    session = f"ahp-session:/{uuid.uuid4()}"
    await client.request(
        "createSession",
        {"channel": session, "provider": "local", "workingDirectories": [workdir.as_uri()]},
    )
    chat = (await client.request("subscribe", {"channel": session}))["snapshot"]["state"][
        "defaultChat"
    ]
    await client.request("subscribe", {"channel": chat})
    uris = [ROOT, ROOT, session, session, chat, chat, "ahp-session:/ghost", "ahp-chat:/ghost"]
    uris += ["ahp-automations://", "ahp-terminal:/t", "file:///tmp"]
    maker = FrameMaker(SEED, client.client_id, uris)
    loop = asyncio.get_running_loop()
    for start in range(0, FRAMES, BATCH):
        answers = []
        for _ in range(BATCH):
            text, request_id, method = maker.frame()
            if request_id is not None:
                # Registered as the client's own request, so its answer is matched to it.
                future = loop.create_future()
                client._pending[request_id] = (method, future)
                answers.append(future)
            await client.send_raw(text)
        done = await asyncio.wait_for(asyncio.gather(*answers, return_exceptions=True), 30)
        lost = [a for a in done if isinstance(a, ConnectionError)]
        assert not lost, f"the connection closed in frames {start}-{start + BATCH}"
        assert "Traceback" not in server.log_text(), f"a traceback in frames {start}+"
    assert await client.request("ping", {"channel": ROOT}) is None
