"""chat/activityChanged over the socket: what a chat's turn waits on before it can run (its
agent starting) is said after the turn starts and cleared before it runs, or before it ends in
the failure to start; a turn whose agent is open already waits on nothing and says nothing."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_sessions import ended, new_session, turn
from tests.support.agents import ACP_AGENT
from tests.support.client import Client
from tests.support.server import ServerProcess


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    """Two ACP agents: `fake`, which starts, and `broken`, whose process exits at once."""
    folder = Path(tempfile.mkdtemp(prefix="ahpd-activity-"))
    agents = [
        {
            "provider": "fake",
            "kind": "acp",
            "displayName": "Fake ACP agent",
            "command": sys.executable,
            "args": [str(ACP_AGENT)],
            "promptTimeoutSeconds": 60,
        },
        {
            "provider": "broken",
            "kind": "acp",
            "displayName": "Broken agent",
            "command": sys.executable,
            "args": ["-c", "raise SystemExit(3)"],
            "promptTimeoutSeconds": 60,
        },
    ]
    config = folder / "agents.json"
    config.write_text(json.dumps({"agents": agents}))
    process = ServerProcess(env_extra={"AHPD_CONFIG": str(config)}).start()
    yield process
    process.close()
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def workdir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="ahpd-activity-work-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def said_on(client: Client, chat: str) -> list[dict[str, Any]]:
    return [e["action"] for e in client.actions if e["channel"] == chat]


async def run_turn(client: Client, chat: str, text: str) -> tuple[dict[str, Any], list[Any]]:
    """A turn run to its end: how it ended, and what the chat said from its start to its end."""
    action = turn(text)
    start = len(said_on(client, chat))
    await client.dispatch(chat, action)
    end = await client.wait_action(ended(chat, action["turnId"]), timeout=30)
    return end["action"], said_on(client, chat)[start:]


def activities(actions: list[dict[str, Any]]) -> list[str | None]:
    return [a.get("activity") for a in actions if a["type"] == "chat/activityChanged"]


async def test_a_first_turn_says_its_agent_starting_and_clears_it_before_it_runs(
    server: ServerProcess, connect: Any, workdir: Path
) -> None:
    client = await connect(server.url)
    await client.initialize()
    _, chat = await new_session(client, workdir, provider="fake")
    end, said = await run_turn(client, chat, "hello")
    assert end["type"] == "chat/turnComplete"
    assert activities(said) == ["Starting Fake ACP agent", None]
    types = [a["type"] for a in said]
    cleared = max(i for i, t in enumerate(types) if t == "chat/activityChanged")
    # Said once the turn was started, cleared before anything of the agent's turn.
    assert types.index("chat/turnStarted") < types.index("chat/activityChanged")
    assert all(
        t in ("chat/turnStarted", "chat/activityChanged", "chat/usage") for t in types[:cleared]
    )
    assert "activity" not in client.tracked[chat][0]
    # The agent is open now: the next turn waits on nothing.
    end, said = await run_turn(client, chat, "again")
    assert end["type"] == "chat/turnComplete"
    assert activities(said) == []
    await client.assert_conforms(chat)


async def test_an_agent_that_fails_to_start_clears_the_wait_before_the_turn_ends(
    server: ServerProcess, connect: Any, workdir: Path
) -> None:
    client = await connect(server.url)
    await client.initialize()
    _, chat = await new_session(client, workdir, provider="broken")
    end, said = await run_turn(client, chat, "hello")
    assert end["type"] == "chat/error"
    assert activities(said) == ["Starting Broken agent", None]
    types = [a["type"] for a in said]
    cleared = max(i for i, t in enumerate(types) if t == "chat/activityChanged")
    assert cleared < types.index("chat/error")
    assert "activity" not in client.tracked[chat][0]
    await client.assert_conforms(chat)
