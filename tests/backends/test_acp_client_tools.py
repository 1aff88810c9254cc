"""An ACP agent reaches the tools the session's clients provide through the MCP server named
`client` the host serves for its session on loopback: the fake agent, a real subprocess and a
real MCP client, calls a tool through the URL it was handed, and the call is the client's to
run. Whoever else reaches the endpoint (no secret, another session's, a tool nobody announced,
a call between turns, a chat that closed) runs nothing."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client

from hosts.backends.acp import AcpChat
from hosts.backends.acp.client_tools import ClientToolsServed
from hosts.backends.acp.updates import TurnUpdates
from hosts.backends.base import ClientTool
from hosts.backends.sandbox import Jail, Sandbox, SandboxSettings, probe
from tests.support.fake_acp import CONFIG, OpenChat, reports, turn
from tests.support.recording_events import RecordingEvents

OPEN_FILE = ClientTool(
    client_id="window-1",
    name="openFile",
    title="Open file",
    description="Opens a file in the editor",
    input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
)
OTHER_OPEN_FILE = ClientTool(client_id="window-2", name="openFile")


def ran(tool: ClientTool, tool_input: str) -> Mapping[str, Any]:
    return {
        "success": True,
        "pastTenseMessage": f"Ran {tool.name}",
        "content": [{"type": "text", "text": f"{tool.client_id} opened {tool_input}"}],
    }


class Tools:
    """What the session's clients announce now (ChatContext.client_tools)."""

    def __init__(self, *tools: ClientTool) -> None:
        self.now = list(tools)

    def __call__(self) -> list[ClientTool]:
        return list(self.now)


async def client_url(chat: AcpChat) -> str:
    """The URL the agent was handed for `client` (as `mcp?` says it)."""
    events = RecordingEvents()
    await turn(chat, "mcp?", events)
    said = events.texts()
    found = [part for part in said.split(" | ") if "client=http " in part]
    assert found, said
    return found[0].split("client=http ")[1].split(" ")[0]


async def call(url: str, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    """Call a tool through `url` as any local process could: (is_error, text)."""
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool(name, arguments)
    return result.is_error, " ".join(getattr(b, "text", "") for b in result.content)


async def test_the_agent_calls_a_clients_tool_and_the_client_runs_it(
    open_acp_chat: OpenChat,
) -> None:
    chat = await open_acp_chat(client_tools=Tools(OPEN_FILE, OTHER_OPEN_FILE))
    events = RecordingEvents(run_tool=ran)
    end = await turn(chat, 'clienttool window-1__openFile {"path": "a.py"}', events)
    assert end.state == "complete", end.message
    run = reports(events, "run_client_tool")
    assert len(run) == 1
    # The tool as its client announced it, under the agent's own call id.
    assert run[0]["tool"] == OPEN_FILE
    assert run[0]["call_id"] == "client-1"
    assert json.loads(run[0]["tool_input"]) == {"path": "a.py"}
    # One row, the client's: started with its contributor and the tool's own name, and never
    # completed by what the agent said of it afterwards (the client's completion is the one).
    starts = [r for r in reports(events, "tool_call") if r["call_id"] == "client-1"]
    assert starts[0]["contributor"] == {"kind": "client", "clientId": "window-1"}
    assert starts[0]["name"] == "openFile"
    assert [r for r in reports(events, "tool_result") if r["call_id"] == "client-1"] == []
    assert 'clienttool: window-1 opened {"path": "a.py"}' in events.texts()


async def test_a_call_that_names_no_call_is_matched_to_the_agents_own_row(
    open_acp_chat: OpenChat,
) -> None:
    chat = await open_acp_chat(client_tools=Tools(OPEN_FILE))
    events = RecordingEvents(run_tool=ran)
    await turn(chat, 'clienttool-anon window-1__openFile {"path": "b.py"}', events)
    run = reports(events, "run_client_tool")
    assert [r["call_id"] for r in run] == ["client-1"]
    assert "clienttool: window-1 opened" in events.texts()


async def test_a_failed_client_result_reaches_the_agent_as_an_error(
    open_acp_chat: OpenChat,
) -> None:
    chat = await open_acp_chat(client_tools=Tools(OPEN_FILE))
    events = RecordingEvents()  # its client fails every call
    await turn(chat, "clienttool window-1__openFile {}", events)
    assert "clienttool error: no client runs tools here" in events.texts()


async def test_a_session_whose_clients_provide_no_tool_is_handed_no_client_server(
    open_acp_chat: OpenChat,
) -> None:
    chat = await open_acp_chat(client_tools=Tools())
    events = RecordingEvents()
    await turn(chat, "mcp?", events)
    assert "mcp: none" in events.texts()


async def test_an_agent_without_http_reaches_them_through_the_stdio_relay(
    open_acp_chat: OpenChat,
) -> None:
    config = dataclasses.replace(CONFIG, env={"FAKE_ACP_NO_MCP_HTTP": "1"})
    chat = await open_acp_chat(config, client_tools=Tools(OPEN_FILE))
    events = RecordingEvents(run_tool=ran)
    await turn(chat, "mcp?", events)
    # The host's Python runs the relay; the secret is handed in its env alone, by name here.
    assert f"client={sys.executable} -c " in events.texts()
    assert "env:AHPD_CLIENT_TOOLS_SECRET" in events.texts()
    await turn(chat, 'clienttool window-1__openFile {"path": "c.py"}', events)
    assert [r["call_id"] for r in reports(events, "run_client_tool")] == ["client-1"]
    assert 'clienttool: window-1 opened {"path": "c.py"}' in events.texts()


async def test_a_changed_set_reaches_the_agent_at_the_next_send_by_loading_its_session(
    open_acp_chat: OpenChat,
) -> None:
    tools = Tools(OPEN_FILE)
    chat = await open_acp_chat(client_tools=tools)
    backend_id = chat.backend_id
    first = await client_url(chat)
    tools.now = [OPEN_FILE, OTHER_OPEN_FILE]
    events = RecordingEvents(run_tool=ran)
    await turn(chat, "clienttool window-2__openFile {}", events)
    # The agent was started again and its session loaded (the same one), handed the new set.
    assert chat.backend_id == backend_id
    assert "clienttool: window-2 opened {}" in events.texts()
    assert await client_url(chat) == first  # the chat's route is kept while the chat lives


# -- as an attacker -----------------------------------------------------------------------------


async def test_a_tool_nobody_announced_is_refused_and_runs_nothing(
    open_acp_chat: OpenChat,
) -> None:
    chat = await open_acp_chat(client_tools=Tools(OPEN_FILE))
    events = RecordingEvents(run_tool=ran)
    await turn(chat, "clienttool window-1__runShell {}", events)
    assert reports(events, "run_client_tool") == []
    assert "No client of this session provides a tool named window-1__runShell" in events.texts()
    # Nor by the client's own name for it, nor another session's client's.
    await turn(chat, "clienttool openFile {}", events)
    await turn(chat, "clienttool window-9__openFile {}", events)
    assert reports(events, "run_client_tool") == []


async def test_a_call_between_turns_is_refused_in_words(open_acp_chat: OpenChat) -> None:
    chat = await open_acp_chat(client_tools=Tools(OPEN_FILE))
    url = await client_url(chat)
    error, text = await call(url, "window-1__openFile", {})
    assert error
    assert text == "Tool openFile could not be run: no turn is running."


async def test_the_endpoint_answers_404_without_the_sessions_secret(
    open_acp_chat: OpenChat,
) -> None:
    mine = await open_acp_chat(client_tools=Tools(OPEN_FILE))
    theirs = await open_acp_chat(client_tools=Tools(OTHER_OPEN_FILE))
    url, their_url = await client_url(mine), await client_url(theirs)
    assert url != their_url
    base, secret = url.rsplit("/", 2)[0], url.rsplit("/", 2)[1]
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient() as http:
        for path in (
            "/",
            "/mcp",
            f"/{secret}",
            f"/{secret[:-1]}/mcp",
            f"/{secret}x/mcp",
            f"/mcp/{secret}",
        ):
            answer = await http.post(base + path, json=body, headers=headers)
            assert answer.status_code == 404, path
            assert answer.text == "No such MCP endpoint."
        # Nothing lists what is served.
        assert (await http.get(base + "/")).status_code == 404
    # Another session's secret reaches that session's tools only: never mine.
    error, text = await call(their_url, "window-1__openFile", {})
    assert error and "No client of this session provides" in text


async def test_the_route_is_gone_when_the_chat_closes(open_acp_chat: OpenChat) -> None:
    chat = await open_acp_chat(client_tools=Tools(OPEN_FILE))
    url = await client_url(chat)
    await chat.close()
    async with httpx2.AsyncClient() as http:
        answer = await http.post(
            url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"accept": "application/json, text/event-stream"},
        )
    assert answer.status_code == 404


# -- from inside the person's sandbox -------------------------------------------------------------


def jail(tmp_path: Path, workdir: Path, *, network: bool) -> Jail:
    if not probe()[0]:
        pytest.skip("bubblewrap cannot make a sandbox here")
    settings = SandboxSettings(mode="bwrap", homes=tmp_path / "homes", network=network)
    return Sandbox(settings).jail("user:alice", [workdir])


async def test_a_sandboxed_agent_reaches_the_host_loopback_and_calls_the_tool(
    open_acp_chat: OpenChat, tmp_path: Path, workdir: Path
) -> None:
    chat = await open_acp_chat(
        client_tools=Tools(OPEN_FILE), jail=jail(tmp_path, workdir, network=True)
    )
    events = RecordingEvents(run_tool=ran)
    end = await turn(chat, "clienttool window-1__openFile {}", events)
    assert end.state == "complete", end.message
    assert "clienttool: window-1 opened {}" in events.texts()


async def test_a_sandbox_without_network_reaches_them_through_the_relay_socket(
    open_acp_chat: OpenChat, tmp_path: Path, workdir: Path
) -> None:
    chat = await open_acp_chat(
        client_tools=Tools(OPEN_FILE), jail=jail(tmp_path, workdir, network=False)
    )
    events = RecordingEvents(run_tool=ran)
    await turn(chat, "mcp?", events)
    assert "client=http" not in events.texts()
    end = await turn(chat, "clienttool window-1__openFile {}", events)
    assert end.state == "complete", end.message
    assert "clienttool: window-1 opened {}" in events.texts()


async def relay_socket(chat: AcpChat) -> str:
    """The socket the stdio relay was handed (its last argument, as `mcp?` says it)."""
    events = RecordingEvents()
    await turn(chat, "mcp?", events)
    [server] = [p for p in events.texts().split(" | ") if "client=" in p]
    return server.split(" env:")[0].split(" ")[-1]


async def test_the_relay_socket_serves_nothing_without_the_chats_secret(
    open_acp_chat: OpenChat,
) -> None:
    config = dataclasses.replace(CONFIG, env={"FAKE_ACP_NO_MCP_HTTP": "1"})
    mine = await open_acp_chat(config, client_tools=Tools(OPEN_FILE))
    theirs = await open_acp_chat(config, client_tools=Tools(OTHER_OPEN_FILE))
    path, their_path = await relay_socket(mine), await relay_socket(theirs)
    assert path != their_path
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "attacker", "version": "1"},
        },
    }
    for hello in (b"", b"wrong-secret\n", json.dumps(initialize).encode() + b"\n"):
        reader, writer = await asyncio.open_unix_connection(path)
        writer.write(hello + json.dumps(initialize).encode() + b"\n")
        await writer.drain()
        if not hello:
            writer.write_eof()
        # Closed unanswered: not a byte of MCP comes back.
        assert await reader.read() == b""
        writer.close()
    await mine.close()
    assert not os.path.exists(path)


# -- which row is the call ------------------------------------------------------------------------


async def test_the_agents_row_said_after_a_call_that_named_no_id_is_not_drawn_twice() -> None:
    served = ClientToolsServed(Tools(OPEN_FILE))
    await served.handed(over_http=True)
    events = RecordingEvents(run_tool=ran)
    served.begin(events)
    updates = TurnUpdates(events, client_calls=served)
    try:
        params = types.CallToolRequestParams(name="window-1__openFile", arguments={"path": "d"})
        result = await served._call(None, params)
        assert not result.is_error
        [run] = reports(events, "run_client_tool")
        assert run["call_id"].startswith("client-")
        # The agent's own row for that call, said after it ran, starts and completes nothing.
        for status in ("pending", "completed"):
            updates.apply(
                {
                    "sessionUpdate": "tool_call" if status == "pending" else "tool_call_update",
                    "toolCallId": "agent-7",
                    "title": "mcp__client__window-1__openFile",
                    "status": status,
                }
            )
        assert reports(events, "tool_call") == []
        assert reports(events, "tool_result") == []
        # A row of another tool of the agent's own is its own as ever.
        updates.apply({"sessionUpdate": "tool_call", "toolCallId": "bash-1", "title": "Bash"})
        assert [r["call_id"] for r in reports(events, "tool_call")] == ["bash-1"]
    finally:
        served.end()
        await served.close()
