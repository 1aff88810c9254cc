"""Fixtures for the backend tests: chats on the fake ACP agent, each its own process."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from hosts.backends.acp import AcpAgent, AcpChat
from hosts.backends.base import AgentConfig, ChatContext
from tests.support.fake_acp import CONFIG, OpenChat


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
async def open_acp_chat(tmp_path: Path, workdir: Path) -> AsyncIterator[OpenChat]:
    """Open chats on the fake agent (one process each) and close them after the test."""
    chats: list[AcpChat] = []

    async def open_(
        config: AgentConfig = CONFIG, backend_id: str | None = None, **context: Any
    ) -> AcpChat:
        agent = AcpAgent(config, tmp_path / "data")
        chat = await agent.open_chat(
            ChatContext(
                chat="ahp-chat://test",
                working_directories=[workdir],
                backend_id=backend_id,
                state_dir=tmp_path / "state",
                **context,
            )
        )
        chats.append(chat)
        return chat

    yield open_
    for chat in chats:
        await chat.close()
