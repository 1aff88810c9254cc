"""An ACP agent is handed the session's MCP servers in session/new and session/load, in ACP's
shapes, and the host says what it can know of their state: starting until the agent took the
session, ready after, an error in the agent's words when it refused."""

from __future__ import annotations

import dataclasses
import shutil
from typing import Any

import pytest

from hosts.backends.base import BackendError, McpServerSpec
from tests.support.fake_acp import CONFIG, OpenChat, turn
from tests.support.recording_events import RecordingEvents

SECRET = "very-secret-value"

STDIO = McpServerSpec(
    id="mcp:files",
    name="files",
    transport="stdio",
    command="sh",
    args=("-c", "exec files-server"),
    env={"TOKEN": SECRET},
)
HTTP = McpServerSpec(
    id="mcp:issues",
    name="issues",
    transport="http",
    url="http://127.0.0.1:9/mcp",
    headers={"Authorization": f"Bearer {SECRET}"},
)


class States:
    def __init__(self) -> None:
        self.said: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, server_id: str, state: Any) -> None:
        self.said.append((server_id, dict(state)))

    def kinds(self, server_id: str) -> list[str]:
        return [s["kind"] for sid, s in self.said if sid == server_id]


async def test_the_agent_is_handed_each_server_and_they_are_said_ready(
    open_acp_chat: OpenChat,
) -> None:
    states = States()
    chat = await open_acp_chat(mcp_servers=[STDIO, HTTP], mcp_state=states)
    events = RecordingEvents()
    await turn(chat, "mcp?", events)
    said = events.texts()
    # The command by its absolute path, as ACP wants it; the env and headers by name.
    assert f"files={shutil.which('sh')} -c exec files-server env:TOKEN" in said
    assert "issues=http http://127.0.0.1:9/mcp headers:Authorization" in said
    assert states.kinds("mcp:files") == ["starting", "ready"]
    assert states.kinds("mcp:issues") == ["starting", "ready"]
    await chat.close()
    assert states.kinds("mcp:files") == ["starting", "ready", "stopped"]


async def test_a_loaded_session_is_handed_them_again(open_acp_chat: OpenChat) -> None:
    first = await open_acp_chat(mcp_servers=[STDIO])
    await turn(first, "hello")
    backend_id = first.backend_id
    await first.close()
    states = States()
    again = await open_acp_chat(backend_id=backend_id, mcp_servers=[STDIO], mcp_state=states)
    assert again.backend_id == backend_id
    events = RecordingEvents()
    await turn(again, "mcp?", events)
    assert "files=" in events.texts()
    assert states.kinds("mcp:files") == ["starting", "ready"]


async def test_an_agent_without_http_gets_the_stdio_servers_and_the_http_one_is_an_error(
    open_acp_chat: OpenChat, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_ACP_NO_MCP_HTTP", "1")
    config = dataclasses.replace(CONFIG, env={"FAKE_ACP_NO_MCP_HTTP": "1"})
    states = States()
    chat = await open_acp_chat(config, mcp_servers=[STDIO, HTTP], mcp_state=states)
    events = RecordingEvents()
    await turn(chat, "mcp?", events)
    assert "files=" in events.texts() and "issues" not in events.texts()
    assert states.kinds("mcp:files") == ["starting", "ready"]
    [(_, error)] = [(sid, s) for sid, s in states.said if sid == "mcp:issues"]
    assert error["kind"] == "error"
    assert error["error"]["message"] == "The agent does not take MCP servers over HTTP."


async def test_a_session_the_agent_refuses_says_its_servers_failed_in_its_words(
    open_acp_chat: OpenChat,
) -> None:
    broken = dataclasses.replace(STDIO, id="mcp:broken", name="broken")
    states = States()
    with pytest.raises(BackendError):
        await open_acp_chat(mcp_servers=[broken], mcp_state=states)
    said = [s for sid, s in states.said if sid == "mcp:broken"]
    assert [s["kind"] for s in said] == ["starting", "error"]
    assert "cannot start MCP server broken" in said[-1]["error"]["message"]
    assert SECRET not in str(states.said)


async def test_no_servers_no_mcp(open_acp_chat: OpenChat) -> None:
    chat = await open_acp_chat()
    events = RecordingEvents()
    await turn(chat, "mcp?", events)
    assert events.texts() == "mcp: none"
