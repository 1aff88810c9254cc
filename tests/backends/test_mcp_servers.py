"""The host's own MCP client (hosts/backends/mcp) against a real MCP server made with the mcp SDK
(tests/agents/mcp_test_server.py), over stdio (in the sandbox too) and over streamable HTTP;
and the openai loop offering and calling its tools through the local chat-completions server."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from hosts.backends.base import (
    AgentConfig,
    ChatContext,
    InputAnswer,
    McpServerSpec,
    PermissionAnswer,
    TurnRequest,
)
from hosts.backends.mcp import McpServerConnection, SessionMcpServers
from hosts.backends.openai import OpenAiAgent
from hosts.backends.sandbox import Sandbox, SandboxSettings, probe
from tests.support.fake_openai import MODEL, FakeOpenAi
from tests.support.recording_events import RecordingEvents
from tests.support.server import REPO

SERVER = REPO / "tests" / "agents" / "mcp_test_server.py"
TOKEN = "t0ken-for-the-test"
needs_bwrap = pytest.mark.skipif(not probe()[0], reason="bubblewrap cannot start here")


def stdio_spec(name: str = "calc", **fields: Any) -> McpServerSpec:
    return McpServerSpec(
        id=f"mcp:{name}",
        name=name,
        transport="stdio",
        command=sys.executable,
        args=(str(SERVER),),
        **fields,
    )


def free_port() -> int:
    with socket.socket() as probe_socket:
        probe_socket.bind(("127.0.0.1", 0))
        port: int = probe_socket.getsockname()[1]
        return port


def http_server(*args: str) -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "--http", str(port), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise RuntimeError("the MCP test server did not start") from None
            time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    yield from http_server()


@pytest.fixture(scope="module")
def guarded_url() -> Iterator[str]:
    yield from http_server("--token", TOKEN)


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAi]:
    server = FakeOpenAi()
    yield server
    server.close()


class States:
    """What the servers said of their states, in order, by server id."""

    def __init__(self) -> None:
        self.said: list[tuple[str, dict[str, Any]]] = []
        self.moved = asyncio.Event()

    def __call__(self, server_id: str, state: dict[str, Any]) -> None:
        self.said.append((server_id, state))
        self.moved.set()

    async def reach(self, server_id: str, kind: str) -> None:
        """Wait until the server's last said state is of `kind`."""
        while (self.kinds(server_id) or [None])[-1] != kind:
            self.moved.clear()
            await self.moved.wait()

    def kinds(self, server_id: str) -> list[str]:
        return [state["kind"] for sid, state in self.said if sid == server_id]


@pytest.fixture
async def servers(tmp_path: Path) -> AsyncIterator[tuple[SessionMcpServers, States]]:
    states = States()
    made = SessionMcpServers(folder=tmp_path, on_state=states)
    yield made, states
    await made.close()


async def ready(servers: SessionMcpServers, spec: McpServerSpec) -> None:
    servers.start(spec)
    await asyncio.wait_for(servers.settled(), 60)


async def test_a_stdio_server_starts_lists_its_tools_and_adds(servers):
    made, states = servers
    await ready(made, stdio_spec())
    assert states.kinds("mcp:calc") == ["starting", "ready"]
    tools = {tool.name: tool for tool in made.tools()}
    assert {"add", "pick_color", "where", "fail"} <= set(tools)
    assert tools["add"].read_only and not tools["pick_color"].read_only
    outcome = await made.call(tools["add"], {"a": 2, "b": 3}, RecordingEvents())
    assert outcome.success and outcome.text == "5"


async def test_a_tool_error_is_a_failed_outcome(servers):
    made, _ = servers
    await ready(made, stdio_spec())
    fail = next(tool for tool in made.tools() if tool.name == "fail")
    outcome = await made.call(fail, {}, RecordingEvents())
    assert not outcome.success and "failed on purpose" in outcome.text


async def test_a_question_the_server_asks_goes_to_the_call_in_flight_and_its_answer_back(servers):
    made, _ = servers
    await ready(made, stdio_spec())
    events = RecordingEvents(
        answer=lambda request: InputAnswer(
            "accept",
            {
                "color": {"state": "submitted", "value": {"kind": "selected", "value": "green"}},
                "count": {"state": "submitted", "value": {"kind": "number", "value": 4}},
                "shout": {"state": "submitted", "value": {"kind": "boolean", "value": True}},
                "note": {"state": "skipped"},
            },
        )
    )
    pick = next(tool for tool in made.tools() if tool.name == "pick_color")
    outcome = await made.call(pick, {}, events)
    assert outcome.success and outcome.text == "4 X GREEN"
    [(_, asked)] = [entry for entry in events.log if entry[0] == "ask"]
    request = asked["request"]
    assert request["message"] == "Pick a color for the test"
    questions = {q["id"]: q for q in request["questions"]}
    assert questions["color"]["kind"] == "single-select"
    assert [o["id"] for o in questions["color"]["options"]] == ["red", "green", "blue"]
    assert questions["color"]["required"] and questions["count"]["kind"] == "integer"
    assert questions["shout"]["kind"] == "boolean" and questions["shout"]["defaultValue"] is False
    assert questions["note"]["kind"] == "text" and not questions["note"]["required"]


async def test_a_declined_question_is_declined_to_the_server(servers):
    made, _ = servers
    await ready(made, stdio_spec())
    pick = next(tool for tool in made.tools() if tool.name == "pick_color")
    events = RecordingEvents(answer=lambda request: InputAnswer("decline"))
    outcome = await made.call(pick, {}, events)
    assert outcome.text == "the person chose to decline"


async def test_a_stopped_server_is_said_stopped_and_its_tools_go(servers):
    made, states = servers
    spec = stdio_spec()
    await ready(made, spec)
    add = next(tool for tool in made.tools() if tool.name == "add")
    await made.stop(spec.id)
    assert states.kinds(spec.id)[-1] == "stopped"
    assert made.tools() == []
    outcome = await made.call(add, {"a": 1, "b": 1}, RecordingEvents())
    assert not outcome.success and "not running" in outcome.text
    await made.restart(spec)
    await made.settled()
    assert states.kinds(spec.id)[-2:] == ["starting", "ready"]


async def test_a_server_that_cannot_start_is_an_error_that_hides_its_secrets(servers):
    made, states = servers
    secret = "hunter2-very-secret"
    spec = McpServerSpec(
        id="mcp:broken",
        name="broken",
        transport="stdio",
        command="/bin/sh",
        args=("-c", 'echo "cannot log in with $TOKEN" >&2; exit 3'),
        env={"TOKEN": secret},
    )
    await ready(made, spec)
    said = [state for sid, state in states.said if sid == spec.id]
    assert [s["kind"] for s in said] == ["starting", "error"]
    error = said[-1]["error"]
    assert error["errorType"] == "mcp-server-start-failed"
    assert "cannot log in with <set>" in error["message"]
    assert secret not in json.dumps(states.said)


async def test_a_missing_command_is_said_in_a_persons_words(servers):
    made, states = servers
    spec = McpServerSpec(id="mcp:gone", name="gone", transport="stdio", command="no-such-mcp-x")
    await ready(made, spec)
    [_, error] = [state for sid, state in states.said if sid == spec.id]
    assert "no-such-mcp-x" in error["error"]["message"]


async def test_an_http_server_is_reached_with_its_headers(servers, http_url):
    made, states = servers
    spec = McpServerSpec(
        id="mcp:web", name="web", transport="http", url=http_url, headers={"X-Team": "blue"}
    )
    await ready(made, spec)
    assert states.kinds(spec.id) == ["starting", "ready"]
    add = next(tool for tool in made.tools() if tool.name == "add")
    outcome = await made.call(add, {"a": 20, "b": 22}, RecordingEvents())
    assert outcome.text == "42"


async def test_an_http_server_that_wants_a_sign_in_waits_for_one_until_a_token_is_given(
    servers, guarded_url
):
    made, states = servers
    bare = McpServerSpec(id="mcp:guarded", name="guarded", transport="http", url=guarded_url)
    await ready(made, bare)
    waiting = [state for sid, state in states.said if sid == bare.id][-1]
    # Its protected-resource metadata, found from the 401's challenge, is what a person signs
    # in from (sign_in.py).
    assert waiting["kind"] == "authRequired" and waiting["reason"] == "required"
    assert waiting["resource"]["resource"] == guarded_url
    signed = McpServerSpec(
        id="mcp:signed",
        name="signed",
        transport="http",
        url=guarded_url,
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    await ready(made, signed)
    assert states.kinds(signed.id) == ["starting", "ready"]
    assert TOKEN not in json.dumps(states.said)


@needs_bwrap
async def test_a_stdio_server_runs_in_its_owners_sandbox(tmp_path):
    homes = tmp_path / "homes"
    hidden = tmp_path / "data"
    hidden.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    sandbox = Sandbox(SandboxSettings(mode="bwrap", homes=homes, hidden=(hidden,)))
    states = States()
    made = SessionMcpServers(folder=work, on_state=states, jail=sandbox.jail("user:ann", [work]))
    try:
        spec = stdio_spec(env={"MCP_TEST_SECRET": "abcdef", "MCP_TEST_PROBE": str(hidden)})
        await ready(made, spec)
        assert states.kinds(spec.id) == ["starting", "ready"], states.said
        where = next(tool for tool in made.tools() if tool.name == "where")
        outcome = await made.call(where, {}, RecordingEvents())
        facts = dict(pair.split("=", 1) for pair in outcome.text.split())
        assert facts["home"] == "/home/ann"
        assert facts["cwd"] == str(work)
        assert facts["secret_length"] == "6"
        # A PID namespace of its own, and the data directory not there to see.
        assert int(facts["pid"]) < 10
        assert facts["probe_exists"] == "False"
        assert (homes / "ann").is_dir()
    finally:
        await made.close()


# -- the openai loop ---------------------------------------------------------------------------


def openai_agent(url: str) -> OpenAiAgent:
    return OpenAiAgent(
        AgentConfig(provider="fake", kind="openai", display_name="Fake", base_url=url, model=MODEL)
    )


async def run_turn(
    fake: FakeOpenAi,
    folder: Path,
    made: SessionMcpServers,
    text: str,
    events: RecordingEvents,
    mode: str = "default",
) -> Any:
    chat = await openai_agent(fake.url).open_chat(
        ChatContext(
            chat="ahp-chat:/mcp",
            working_directories=[folder],
            config={"permissionMode": mode},
            mcp=made,
        )
    )
    try:
        return await chat.run_turn(TurnRequest("turn-1", text), events)
    finally:
        await chat.close()


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_the_openai_loop_calls_an_mcp_tool_its_call_naming_the_server(
    servers, fake, tmp_path, http_url, transport
):
    made, _ = servers
    spec = (
        stdio_spec()
        if transport == "stdio"
        else McpServerSpec(id="mcp:calc", name="calc", transport="http", url=http_url)
    )
    made.start(spec)  # still starting when the turn begins: the turn waits for it
    events = RecordingEvents()
    end = await run_turn(fake, tmp_path, made, 'call calc__add {"a": 2, "b": 3}', events)
    assert end.state == "complete"
    started = next(p for m, p in events.log if m == "tool_call" and p["title"])
    assert started["name"] == "calc__add" and started["title"] == "calc: add"
    assert started.get("contributor") == {"kind": "mcp", "customizationId": "mcp:calc"}
    # Read-only: nobody asked, even in the default mode.
    assert "permission" not in events.kinds()
    [result] = [p for m, p in events.log if m == "tool_result"]
    assert result["success"] and result["output"] == "5"
    assert events.texts() == "The tool said: 5"
    offered = {t["function"]["name"] for t in fake.requests[-1]["tools"]}
    assert {"calc__add", "calc__pick_color", "read_file"} <= offered


async def test_an_mcp_tool_that_may_change_things_is_asked_about_and_its_question_asked(
    servers, fake, tmp_path
):
    made, _ = servers
    await ready(made, stdio_spec())
    events = RecordingEvents(
        answer=lambda request: InputAnswer(
            "accept",
            {
                "color": {"state": "submitted", "value": {"kind": "selected", "value": "red"}},
                "count": {"state": "submitted", "value": {"kind": "number", "value": 2}},
            },
        )
    )
    end = await run_turn(fake, tmp_path, made, "call calc__pick_color {}", events)
    assert end.state == "complete"
    kinds = events.kinds()
    assert kinds.index("permission") < kinds.index("ask") < kinds.index("tool_result")
    [result] = [p for m, p in events.log if m == "tool_result"]
    assert result["output"] == "2 x red"


async def test_a_denied_mcp_call_does_not_reach_the_server(servers, fake, tmp_path):
    made, _ = servers
    await ready(made, stdio_spec())
    events = RecordingEvents(decide=lambda call_id, title, options: PermissionAnswer(False))
    await run_turn(fake, tmp_path, made, "call calc__pick_color {}", events)
    assert "ask" not in events.kinds()
    [result] = [p for m, p in events.log if m == "tool_result"]
    assert not result["success"] and result["error"] == "denied by the user"


async def test_a_failed_mcp_tool_is_a_failed_result(servers, fake, tmp_path):
    made, _ = servers
    await ready(made, stdio_spec())
    events = RecordingEvents()
    await run_turn(fake, tmp_path, made, "call calc__fail {}", events, mode="bypassPermissions")
    [result] = [p for m, p in events.log if m == "tool_result"]
    assert not result["success"] and "failed on purpose" in result["error"]


async def test_a_stopped_servers_tools_are_not_offered(servers, fake, tmp_path):
    made, _ = servers
    spec = stdio_spec()
    await ready(made, spec)
    await made.stop(spec.id)
    events = RecordingEvents()
    await run_turn(fake, tmp_path, made, "tools?", events)
    assert "calc__add" not in events.texts() and "read_file" in events.texts()


async def test_closing_the_sessions_servers_ends_a_stdio_servers_process(tmp_path):
    made = SessionMcpServers(folder=tmp_path, on_state=States())
    await ready(made, stdio_spec())
    where = next(tool for tool in made.tools() if tool.name == "where")
    outcome = await made.call(where, {}, RecordingEvents())
    pid = int(dict(pair.split("=", 1) for pair in outcome.text.split())["pid"])
    await made.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_a_server_of_before_2026_asks_its_question_with_elicitation_create(tmp_path):
    """The initialize handshake of 2025: the server's question is a request of its own
    (`elicitation/create`) while the call is in flight, and goes to that call's person."""
    states = States()
    connection = McpServerConnection(stdio_spec(), folder=tmp_path, on_state=states, mode="legacy")
    connection.start()
    await asyncio.wait_for(connection.settled(), 60)
    assert connection.state == {"kind": "ready"}
    events = RecordingEvents(
        answer=lambda request: InputAnswer(
            "accept",
            {
                "color": {"state": "submitted", "value": {"kind": "selected", "value": "blue"}},
                "count": {"state": "submitted", "value": {"kind": "number", "value": 1}},
                "note": {"state": "submitted", "value": {"kind": "text", "value": "old"}},
            },
        )
    )
    try:
        outcome = await connection.call("pick_color", {}, events)
    finally:
        await connection.stop()
    assert outcome.text == "1 x blue (old)"
    assert [m for m, _ in events.log] == ["ask"]


async def test_a_stdio_server_that_dies_is_said_failed_without_waiting_for_a_call(servers):
    made, states = servers
    await ready(made, stdio_spec())
    where = next(tool for tool in made.tools() if tool.name == "where")
    outcome = await made.call(where, {}, RecordingEvents())
    pid = int(dict(pair.split("=", 1) for pair in outcome.text.split())["pid"])
    os.kill(pid, signal.SIGKILL)
    await asyncio.wait_for(states.reach("mcp:calc", "error"), 30)
    [*_, failed] = [state for sid, state in states.said if sid == "mcp:calc"]
    assert failed["error"] == {
        "errorType": "mcp-server-failed",
        "message": "The MCP server calc exited.",
    }
    assert made.tools() == []
