"""The small ACP agent under tests/agents, as the ACP backend's tests configure and drive it."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from hosts.backends.acp import AcpChat
from hosts.backends.base import AgentConfig, TurnEnd, TurnRequest
from tests.support.recording_events import RecordingEvents

FAKE_AGENT = Path(__file__).resolve().parents[1] / "agents" / "fake_acp_agent.py"

CONFIG = AgentConfig(
    provider="fake",
    kind="acp",
    display_name="Fake agent",
    command=sys.executable,
    args=(str(FAKE_AGENT),),
    prompt_timeout_s=10.0,
)

OpenChat = Callable[..., Awaitable[AcpChat]]


async def turn(chat: AcpChat, text: str, events: RecordingEvents | None = None) -> TurnEnd:
    """Run one turn of `text`, recorded by `events` (or by nobody)."""
    return await chat.run_turn(TurnRequest("t", text), events or RecordingEvents())


def reports(events: RecordingEvents, kind: str) -> list[dict[str, Any]]:
    """The payloads of every report of one kind, in order."""
    return [payload for method, payload in events.log if method == kind]
