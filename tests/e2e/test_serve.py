"""`manage.py serve` opens its port only once the engine has read the store."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest

from tests.support.server import REPO, ServerProcess

#: Enough stored sessions that reading them takes the engine seconds, not milliseconds.
STORED_SESSIONS = 5000
#: A first connection waits on nothing but its handshake and initialize, far less than that.
PROMPTLY_S = 2.0

# Run by `manage.py shell` against the server's own database, whichever the configuration.
SEED = """
from hosts.models import StoredChat, StoredSession, StoredTurn

def seed(count):
    sessions, chats, turns = [], [], []
    for n in range(count):
        uri, chat = f"ahp-session:/stored-{n}", f"ahp-chat:/stored-{n}"
        sessions.append(StoredSession(
            uri=uri, provider="none", title=f"stored {n}", created_ms=1, modified_ms=n,
            default_chat=chat, chats=[chat], announced=True,
        ))
        chats.append(StoredChat(uri=chat, session_id=uri, title="main", created_ms=1))
        turns.append(StoredTurn(
            chat_id=chat, position=0, turn_id="t0",
            data={"id": "t0", "state": "complete", "message": {"text": "hi"}},
        ))
    StoredSession.objects.bulk_create(sessions, batch_size=500)
    StoredChat.objects.bulk_create(chats, batch_size=500)
    StoredTurn.objects.bulk_create(turns, batch_size=500)
"""


def manage(env: dict[str, str], *args: str) -> None:
    subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=env, check=True)


@pytest.fixture(scope="module")
def server():
    """A server that starts over a store already holding many sessions."""
    process = ServerProcess()
    env = process.env()
    manage(env, "migrate", "-v0")
    manage(env, "shell", "-v0", "-c", f"{SEED}\nseed({STORED_SESSIONS})")
    yield process.start(timeout=120)
    process.close()


async def test_the_first_connection_after_serving_is_printed_gets_in_promptly(server, connect):
    # start() returned as the "serving" line was read: from here the engine must be up.
    started = time.monotonic()
    client = await asyncio.wait_for(connect(server.url), PROMPTLY_S)
    await asyncio.wait_for(client.initialize(), PROMPTLY_S - (time.monotonic() - started))
    listed = await client.request("listSessions", {"channel": "ahp-root://"})
    assert len(listed["items"]) == STORED_SESSIONS
