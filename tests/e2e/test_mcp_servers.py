"""Every backend reaches the team's MCP servers, over the real socket against a started server.

The operator's file (AHPD_CONFIG `mcpServers`) offers three servers to every session:
`calc` (the SDK-made test server over stdio, with a secret in its env), `web` (the same server
over streamable HTTP, a secret in its headers) and `dud` (a stdio command that fails at once).
Two agents: `local`, the openai loop on the scripted chat-completions server, for which the host
connects to the servers itself; and `fake`, the ACP test agent, which is handed them.
"""

from __future__ import annotations

import json
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hosts.backends.sandbox import probe
from tests.backends.test_mcp_servers import http_server
from tests.e2e.test_grants import cli
from tests.e2e.test_sessions import ended, turn
from tests.support.agents import acp_agent, local_agent
from tests.support.client import Client
from tests.support.fake_openai import FakeOpenAi
from tests.support.rest import call
from tests.support.server import REPO, TOKEN, ServerProcess

SERVER = REPO / "tests" / "agents" / "mcp_test_server.py"
ENV_SECRET = "env-secret-4a8f0c"
HEADER_SECRET = "header-secret-77d2e1"
NOT_STARTABLE = "The session provider does not support starting MCP servers."


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ahpd-mcp-work-") as path:
        yield Path(path)


@pytest.fixture(scope="module")
def web_url() -> Iterator[str]:
    yield from http_server()


@pytest.fixture(scope="module")
def server(workdir: Path, web_url: str) -> Iterator[ServerProcess]:
    model = FakeOpenAi()
    with tempfile.TemporaryDirectory(prefix="ahpd-mcp-config-") as folder:
        process = ServerProcess()
        agents = Path(folder) / "agents.json"
        agents.write_text(
            json.dumps(
                {
                    "agents": [local_agent(model.url), acp_agent()],
                    "mcpServers": {
                        "calc": {
                            "type": "stdio",
                            "command": sys.executable,
                            "args": [str(SERVER)],
                            "env": {
                                "MCP_TEST_SECRET": ENV_SECRET,
                                "MCP_TEST_PROBE": str(process.data_dir),
                            },
                        },
                        "web": {
                            "type": "http",
                            "url": web_url,
                            "headers": {"Authorization": f"Bearer {HEADER_SECRET}"},
                        },
                        "dud": {
                            "type": "stdio",
                            "command": "/bin/sh",
                            "args": ["-c", "echo the dud server gave up >&2; exit 3"],
                        },
                    },
                }
            )
        )
        process.env_extra = {"AHPD_CONFIG": str(agents)}
        process.start()
        try:
            yield process
        finally:
            process.close()
            model.close()


def member_tokens(server: ServerProcess, *people: str) -> dict[str, str]:
    """Each person added as a member, by name, with a token of theirs."""
    made = {}
    for person in people:
        cli(server, "user", "add", person, "--role", "member")
        made[person] = str(cli(server, "user", "token", person)["token"])
    return made


@pytest.fixture(scope="module")
def tokens(server: ServerProcess) -> dict[str, str]:
    return member_tokens(server, "olga", "max")


async def signed_in(server: ServerProcess, connect: Any, token: str | None = None) -> Client:
    client: Client = await (
        connect(server.url, token=token) if token is not None else connect(server.url)
    )
    await client.initialize()
    return client


async def new_session(client: Client, workdir: Path, provider: str = "local") -> tuple[str, str]:
    uri = f"ahp-session:/{uuid.uuid4()}"
    await client.request(
        "createSession",
        {"channel": uri, "provider": provider, "workingDirectories": [workdir.as_uri()]},
    )
    state = (await client.request("subscribe", {"channel": uri}))["snapshot"]["state"]
    await client.request("subscribe", {"channel": state["defaultChat"]})
    return uri, state["defaultChat"]


def servers_of(client: Client, session: str) -> dict[str, dict[str, Any]]:
    state = client.tracked[session][0]
    return {c["id"]: c for c in state.get("customizations", []) if c.get("type") == "mcpServer"}


async def listed(client: Client, session: str) -> dict[str, dict[str, Any]]:
    """The session's MCP servers, once the directory's answer is listed."""
    await client.wait_for(lambda: len(servers_of(client, session)) == 3)
    return servers_of(client, session)


async def state_becomes(client: Client, session: str, server_id: str, kind: str) -> dict:
    return dict(
        await client.wait_for(
            lambda: (
                (s := servers_of(client, session).get(server_id, {}).get("state", {})).get("kind")
                == kind
                and s
            ),
            timeout=60,
        )
    )


async def ask(client: Client, chat: str, text: str) -> tuple[dict, list[dict], str]:
    """Run a turn to its end: how it ended, every action said on the chat during it, and the
    text it answered."""
    action = turn(text)
    before = len(client.actions)
    await client.dispatch_and_wait(chat, action)
    end = await client.wait_action(ended(chat, action["turnId"]), timeout=60)
    said = [e["action"] for e in client.actions[before:] if e["channel"] == chat]
    parts = client.tracked[chat][0]["turns"][-1]["responseParts"]
    reply = "".join(p["content"] for p in parts if p["kind"] == "markdown")
    return end["action"], said, reply


def no_secret_in(client: Client) -> None:
    seen = json.dumps(client.actions) + json.dumps(client.tracked)
    assert ENV_SECRET not in seen and HEADER_SECRET not in seen


async def toggle(client: Client, session: str, server_id: str, enabled: bool) -> dict:
    return await client.dispatch_and_wait(
        session,
        {
            "type": "session/customizationToggled",
            "id": server_id,
            "enablement": [{"kind": "session", "enabled": enabled}],
        },
    )


async def request(client: Client, session: str, kind: str, server_id: str) -> dict:
    return await client.dispatch_and_wait(
        session, {"type": f"session/mcpServer{kind}Requested", "id": server_id}
    )


# -- what is offered -----------------------------------------------------------------------------


async def test_each_agent_says_the_servers_a_new_session_starts_with(server, connect):
    client = await signed_in(server, connect)
    agents = client.tracked["ahp-root://"][0]["agents"]
    for agent in agents:
        offered = {c["id"]: c for c in agent["customizations"]}
        assert set(offered) == {"mcp:calc", "mcp:web", "mcp:dud"}
        assert offered["mcp:calc"]["type"] == "mcpServer"
    no_secret_in(client)


async def test_a_session_lists_its_servers_stopped_until_its_agent_runs(server, connect, workdir):
    client = await signed_in(server, connect)
    session, _ = await new_session(client, workdir)
    servers = await listed(client, session)
    assert {s["state"]["kind"] for s in servers.values()} == {"stopped"}
    assert servers["mcp:calc"]["uri"] == "ahpd-mcp:calc" and servers["mcp:calc"]["name"] == "calc"
    assert servers["mcp:web"]["uri"].startswith("http://127.0.0.1:")
    no_secret_in(client)
    await client.assert_conforms(session)


# -- the openai loop ----------------------------------------------------------------------------


@pytest.mark.parametrize(("function", "answer"), [("calc__add", "5"), ("web__add", "42")])
async def test_the_openai_loop_calls_a_servers_tool_naming_it_as_the_contributor(
    server, connect, workdir, function, answer
):
    client = await signed_in(server, connect)
    session, chat = await new_session(client, workdir)
    await listed(client, session)
    arguments = {"a": 2, "b": 3} if answer == "5" else {"a": 20, "b": 22}
    end, said, reply = await ask(client, chat, f"call {function} {json.dumps(arguments)}")
    assert end["type"] == "chat/turnComplete"
    [start] = [a for a in said if a["type"] == "chat/toolCallStart"]
    server_id = f"mcp:{function.split('__')[0]}"
    assert start["contributor"] == {"kind": "mcp", "customizationId": server_id}
    [complete] = [a for a in said if a["type"] == "chat/toolCallComplete"]
    assert complete["result"]["success"] is True
    assert complete["result"]["content"] == [{"type": "text", "text": answer}]
    assert reply == f"The tool said: {answer}"
    # Real states, said as they moved; the dud's in its own words.
    moves = [
        a["state"]["kind"]
        for e in client.actions
        if e["channel"] == session
        for a in [e["action"]]
        if a["type"] == "session/mcpServerStateChanged" and a["id"] == server_id
    ]
    assert moves == ["starting", "ready"]
    dud = await state_becomes(client, session, "mcp:dud", "error")
    assert dud["error"]["errorType"] == "mcp-server-start-failed"
    assert "the dud server gave up" in dud["error"]["message"]
    no_secret_in(client)
    await client.assert_conforms(session)


async def test_a_servers_question_is_answered_by_another_client_and_reaches_the_server(
    server, connect, workdir, tokens
):
    olga = await signed_in(server, connect, tokens["olga"])
    window = await signed_in(server, connect, tokens["olga"])
    session, chat = await new_session(olga, workdir)
    await listed(olga, session)
    await window.request("subscribe", {"channel": session})  # answers from the session alone
    action = turn("call calc__pick_color {}")
    await olga.dispatch_and_wait(chat, action)
    # A tool that may change things is the person's to allow first, from the session too.
    confirm = await window.wait_action(
        lambda e: (
            e["channel"] == session
            and e["action"]["type"] == "session/inputNeededSet"
            and e["action"]["request"]["kind"] == "toolConfirmation"
        ),
        timeout=60,
    )
    pending = confirm["action"]["request"]
    await window.dispatch_and_wait(
        chat,
        {
            "type": "chat/toolCallConfirmed",
            "turnId": pending["turnId"],
            "toolCallId": pending["toolCall"]["toolCallId"],
            "approved": True,
            "confirmed": "user-action",
            "selectedOptionId": "allow",
        },
    )
    asked = await window.wait_action(
        lambda e: (
            e["channel"] == session
            and e["action"]["type"] == "session/inputNeededSet"
            and e["action"]["request"]["kind"] == "chatInput"
        ),
        timeout=60,
    )
    request = asked["action"]["request"]["request"]
    assert request["message"] == "Pick a color for the test"
    questions = {q["id"]: q for q in request["questions"]}
    assert questions["color"]["kind"] == "single-select" and questions["color"]["required"]
    assert [o["id"] for o in questions["color"]["options"]] == ["red", "green", "blue"]
    answers = {
        "color": {"state": "submitted", "value": {"kind": "selected", "value": "green"}},
        "count": {"state": "submitted", "value": {"kind": "number", "value": 3}},
    }
    echo = await window.dispatch_and_wait(
        chat,
        {
            "type": "chat/inputCompleted",
            "requestId": request["id"],
            "response": "accept",
            "answers": answers,
        },
    )
    assert "rejectionReason" not in echo
    end = await olga.wait_action(ended(chat, action["turnId"]), timeout=60)
    assert end["action"]["type"] == "chat/turnComplete"
    parts = olga.tracked[chat][0]["turns"][-1]["responseParts"]
    [call] = [p["toolCall"] for p in parts if p["kind"] == "toolCall"]
    assert call["success"] is True
    assert call["content"] == [{"type": "text", "text": "3 x green"}]
    await olga.wait_for(lambda: not olga.tracked[session][0].get("inputNeeded"))
    await olga.assert_conforms(chat)


@pytest.mark.skipif(not probe()[0], reason="bubblewrap cannot start here")
async def test_a_stdio_server_runs_in_its_owners_sandbox(server, connect, workdir, tokens):
    olga = await signed_in(server, connect, tokens["olga"])
    session, chat = await new_session(olga, workdir)
    await listed(olga, session)
    _, said, _ = await ask(olga, chat, "call calc__where {}")
    [complete] = [a for a in said if a["type"] == "chat/toolCallComplete"]
    text = complete["result"]["content"][0]["text"]
    facts = dict(pair.split("=", 1) for pair in text.split())
    assert facts["home"] == "/home/olga"
    assert facts["cwd"] == str(workdir)
    assert facts["secret_length"] == str(len(ENV_SECRET))
    assert facts["probe_exists"] == "False"  # the server's data directory is not there
    assert int(facts["pid"]) < 10  # a PID namespace of its own


async def test_stop_and_start_move_the_state_and_a_toggle_off_takes_the_tools_away(
    server, connect, workdir
):
    client = await signed_in(server, connect)
    session, chat = await new_session(client, workdir)
    await listed(client, session)
    _, _, reply = await ask(client, chat, "tools?")
    assert "calc__add" in reply and "web__add" in reply

    assert "rejectionReason" not in await request(client, session, "Stop", "mcp:calc")
    await state_becomes(client, session, "mcp:calc", "stopped")
    _, _, reply = await ask(client, chat, "tools?")
    assert "calc__add" not in reply and "web__add" in reply

    assert "rejectionReason" not in await request(client, session, "Start", "mcp:calc")
    await state_becomes(client, session, "mcp:calc", "ready")
    _, _, reply = await ask(client, chat, "tools?")
    assert "calc__add" in reply

    assert "rejectionReason" not in await toggle(client, session, "mcp:calc", False)
    await state_becomes(client, session, "mcp:calc", "stopped")
    _, _, reply = await ask(client, chat, "tools?")
    assert "calc__add" not in reply
    assert servers_of(client, session)["mcp:calc"]["enablement"] == [
        {"kind": "session", "enabled": False}
    ]

    await toggle(client, session, "mcp:calc", True)
    await state_becomes(client, session, "mcp:calc", "ready")
    _, _, reply = await ask(client, chat, "tools?")
    assert "calc__add" in reply

    # A start of a server that runs already says where it is.
    await request(client, session, "Start", "mcp:web")
    await state_becomes(client, session, "mcp:web", "ready")
    assert "rejectionReason" not in await request(client, session, "Background", "mcp:web")
    await client.assert_conforms(session)


# -- refusals -----------------------------------------------------------------------------------


async def test_a_start_for_a_server_the_session_does_not_list_is_refused_naming_it(
    server, connect, workdir
):
    client = await signed_in(server, connect)
    session, _ = await new_session(client, workdir)
    await listed(client, session)
    for kind in ("Start", "Stop", "Background"):
        refused = await request(client, session, kind, "mcp:nope")
        assert "mcp:nope" in refused["rejectionReason"]
    shapeless = await client.dispatch_and_wait(
        session, {"type": "session/mcpServerStartRequested", "id": 7}
    )
    assert "id must be a string" in shapeless["rejectionReason"]
    assert {s["state"]["kind"] for s in servers_of(client, session).values()} == {"stopped"}
    await client.assert_conforms(session)


async def test_a_member_may_not_start_or_stop_anothers_sessions_servers(
    server, connect, workdir, tokens
):
    olga = await signed_in(server, connect, tokens["olga"])
    session, chat = await new_session(olga, workdir)
    await listed(olga, session)
    await ask(olga, chat, 'call calc__add {"a": 1, "b": 1}')
    await state_becomes(olga, session, "mcp:calc", "ready")
    max_ = await signed_in(server, connect, tokens["max"])
    for kind in ("Stop", "Start"):
        answer = await request(max_, session, kind, "mcp:calc")
        assert "may not" in answer["rejectionReason"], answer
    refused = await toggle(max_, session, "mcp:calc", False)
    assert "may not" in refused["rejectionReason"], refused
    await olga.settle()
    assert servers_of(olga, session)["mcp:calc"]["state"] == {"kind": "ready"}


# -- an ACP agent ---------------------------------------------------------------------------------


async def test_an_acp_agent_is_handed_the_servers_and_cannot_be_asked_to_start_one(
    server, connect, workdir
):
    client = await signed_in(server, connect)
    session, chat = await new_session(client, workdir, provider="fake")
    await listed(client, session)
    # Before its agent runs, nothing runs its servers, and the host cannot start them.
    assert "rejectionReason" not in await request(client, session, "Start", "mcp:calc")
    error = await state_becomes(client, session, "mcp:calc", "error")
    assert error["error"]["message"] == NOT_STARTABLE
    end, _, reply = await ask(client, chat, "mcp?")
    assert end["type"] == "chat/turnComplete"
    assert f"calc={sys.executable} {SERVER} env:MCP_TEST_SECRET,MCP_TEST_PROBE" in reply
    assert "web=http http://127.0.0.1:" in reply and "headers:Authorization" in reply
    for server_id in ("mcp:calc", "mcp:web", "mcp:dud"):
        await state_becomes(client, session, server_id, "ready")
    # The agent's servers are its own: a stop is not made, the state it is in said again.
    await request(client, session, "Stop", "mcp:calc")
    await client.settle()
    assert servers_of(client, session)["mcp:calc"]["state"] == {"kind": "ready"}
    no_secret_in(client)
    await client.assert_conforms(session)


async def test_a_server_switched_off_is_not_handed_to_an_acp_agent(server, connect, workdir):
    client = await signed_in(server, connect)
    session, chat = await new_session(client, workdir, provider="fake")
    await listed(client, session)
    assert "rejectionReason" not in await toggle(client, session, "mcp:web", False)
    _, _, reply = await ask(client, chat, "mcp?")
    assert "calc=" in reply and "web=" not in reply
    await state_becomes(client, session, "mcp:calc", "ready")
    assert servers_of(client, session)["mcp:web"]["state"] == {"kind": "stopped"}
    # Switched on again: the agent is opened again with it at the chat's next turn.
    assert "rejectionReason" not in await toggle(client, session, "mcp:web", True)
    _, _, reply = await ask(client, chat, "mcp?")
    assert "calc=" in reply and "web=" in reply
    await client.assert_conforms(session)


# -- the registry changed while sessions run ---------------------------------------------------


def registry(server: ServerProcess, method: str, path: str, body: Any = None) -> Any:
    status, answer = call(server, method, "mcp-servers/" + path, TOKEN, body)
    assert status in (200, 201, 204), answer
    return answer


async def test_a_registry_change_reaches_the_running_sessions_of_whom_it_is_offered(
    server, connect, workdir, tokens, web_url
):
    olga = await signed_in(server, connect, tokens["olga"])
    session, _ = await new_session(olga, workdir)
    await listed(olga, session)
    acp_session, acp_chat = await new_session(olga, workdir, provider="fake")
    await listed(olga, acp_session)
    other = await signed_in(server, connect, tokens["max"])
    elsewhere, _ = await new_session(other, workdir)
    await listed(other, elsewhere)
    stdio = {"name": "extra", "command": sys.executable, "args": [str(SERVER)]}
    registry(server, "POST", "", {**stdio, "offeredTo": ["user:olga"]})
    try:
        # Listed at once in her running session, stopped; not in another member's.
        added = await olga.wait_for(lambda: servers_of(olga, session).get("mcp:extra"))
        assert added["state"] == {"kind": "stopped"} and added["uri"] == "ahpd-mcp:extra"
        assert "rejectionReason" not in await request(olga, session, "Start", "mcp:extra")
        await state_becomes(olga, session, "mcp:extra", "ready")
        # An agent that starts its servers itself is handed it.
        await olga.wait_for(lambda: "mcp:extra" in servers_of(olga, acp_session))
        _, _, reply = await ask(olga, acp_chat, "mcp?")
        assert "extra=" in reply

        # Redefined: its row said updated alone, and the running server started again on
        # what it is now.
        registry(server, "PATCH", "extra/", {"transport": "http", "url": web_url})
        updated = await olga.wait_action(
            lambda e: (
                e["channel"] == session and e["action"]["type"] == "session/customizationUpdated"
            ),
            timeout=30,
        )
        assert updated["action"]["customization"]["uri"] == web_url.split("?")[0]
        await olga.wait_for(
            lambda: (
                servers_of(olga, session)["mcp:extra"]["state"]["kind"] == "ready"
                and servers_of(olga, session)["mcp:extra"]["uri"] != "ahpd-mcp:extra"
            ),
            timeout=60,
        )
    finally:
        registry(server, "DELETE", "extra/")
    # Taken out: said removed, one at a time, and gone from her session.
    removed = await olga.wait_action(
        lambda e: (
            e["channel"] == session
            and e["action"] == {"type": "session/customizationRemoved", "id": "mcp:extra"}
        ),
        timeout=30,
    )
    assert removed["action"]["id"] == "mcp:extra"
    assert "mcp:extra" not in servers_of(olga, session)
    # And an agent running it is opened again without it at its next turn.
    await olga.wait_for(lambda: "mcp:extra" not in servers_of(olga, acp_session))
    _, _, reply = await ask(olga, acp_chat, "mcp?")
    assert "extra=" not in reply and "calc=" in reply
    assert not any(
        e["channel"] == elsewhere and "ustomization" in e["action"]["type"] for e in other.actions
    )
    await olga.assert_conforms(session)
    await other.assert_conforms(elsewhere)


async def test_a_server_offered_host_wide_is_said_to_every_agent_and_taken_back(
    server, connect, workdir
):
    client = await signed_in(server, connect)
    body = {"name": "everyone", "command": sys.executable, "args": [str(SERVER)]}
    registry(server, "POST", "", {**body, "hostWide": True})
    try:

        def offered() -> set[str]:
            agents = client.tracked["ahp-root://"][0]["agents"]
            return {c["id"] for c in agents[0].get("customizations", [])}

        await client.wait_for(lambda: "mcp:everyone" in offered(), timeout=30)
    finally:
        registry(server, "DELETE", "everyone/")
    await client.wait_for(lambda: "mcp:everyone" not in offered(), timeout=30)
    await client.assert_conforms("ahp-root://")


async def test_the_servers_the_host_runs_move_with_the_sessions_folders(server, connect, workdir):
    client = await signed_in(server, connect)
    uri = f"ahp-session:/{uuid.uuid4()}"
    first = workdir / "first"
    second = workdir / "second"
    first.mkdir()
    second.mkdir()
    await client.request(
        "createSession",
        {
            "channel": uri,
            "provider": "local",
            "workingDirectories": [first.as_uri()],
            "_meta": {"multiRoot": True},
        },
    )
    state = (await client.request("subscribe", {"channel": uri}))["snapshot"]["state"]
    await client.request("subscribe", {"channel": state["defaultChat"]})
    await listed(client, uri)
    await ask(client, state["defaultChat"], "hello")
    assert "rejectionReason" not in await request(client, uri, "Start", "mcp:calc")
    await state_becomes(client, uri, "mcp:calc", "ready")
    # The folders move: the server ran in the old ones' sandbox, so it is stopped, and the
    # next turn starts it again in the new.
    moved = {"type": "session/workingDirectorySet", "directory": second.as_uri()}
    assert "rejectionReason" not in await client.dispatch_and_wait(uri, moved)
    await state_becomes(client, uri, "mcp:calc", "stopped")
    _, _, reply = await ask(client, state["defaultChat"], "tools?")
    assert "calc__add" in reply
    await state_becomes(client, uri, "mcp:calc", "ready")
    await client.assert_conforms(uri)


# -- after a restart (last: it restarts the module's server) -------------------------------------


async def test_a_session_read_back_after_a_restart_is_offered_its_servers_again(
    server, connect, workdir
):
    client = await signed_in(server, connect)
    session, chat = await new_session(client, workdir)
    await ask(client, chat, 'call calc__add {"a": 1, "b": 2}')
    await client.close()
    server.stop()
    server.start()
    again = await signed_in(server, connect)
    await again.request("subscribe", {"channel": session})
    servers = await listed(again, session)
    assert {s["state"]["kind"] for s in servers.values()} == {"stopped"}
    await again.request("subscribe", {"channel": chat})
    end, _, reply = await ask(again, chat, 'call calc__add {"a": 2, "b": 2}')
    assert end["type"] == "chat/turnComplete" and reply == "The tool said: 4"
