"""Signing in to an MCP server, over the real socket against a started server.

The operator's file offers one server, `guarded`: the SDK-made test server over streamable
HTTP, answering 401 with its protected-resource metadata (RFC 9728) to every request that does
not carry `Bearer <TOKEN>`. The agent is the openai loop on the scripted chat-completions
server, so the host is the server's MCP client and the sign-in is the host's to carry.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.backends.test_mcp_servers import http_server
from tests.e2e.test_mcp_servers import ask, member_tokens, new_session, servers_of, signed_in
from tests.e2e.test_sessions import ended, turn
from tests.support.agents import local_agent, server_with_config
from tests.support.client import Client, RpcError
from tests.support.fake_openai import FakeOpenAi
from tests.support.server import ServerProcess

ROOT = "ahp-root://"
TOKEN = "mcp-bearer-5c1e9b"
SERVER_ID = "mcp:guarded"


@pytest.fixture(scope="module")
def guarded_url() -> Iterator[str]:
    yield from http_server("--token", TOKEN)


@pytest.fixture(scope="module")
def server(guarded_url: str) -> Iterator[ServerProcess]:
    model = FakeOpenAi()
    config = {
        "agents": [local_agent(model.url)],
        "mcpServers": {"guarded": {"type": "http", "url": guarded_url}},
    }
    try:
        with server_with_config(config) as process:
            yield process
    finally:
        model.close()


@pytest.fixture(scope="module")
def tokens(server: ServerProcess) -> dict[str, str]:
    return member_tokens(server, "olga", "max")


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ahpd-mcp-sign-in-work-") as path:
        yield Path(path)


def guarded(client: Client, session: str) -> dict[str, Any]:
    return dict(servers_of(client, session).get(SERVER_ID, {}).get("state", {}))


async def waiting_for_sign_in(client: Client, session: str) -> dict[str, Any]:
    """The server's state once it waits for a sign-in (its agent opened by a first turn)."""
    await client.wait_for(lambda: SERVER_ID in servers_of(client, session))
    end, _, _ = await ask(client, session_chat(client, session), "hello")
    assert end["type"] == "chat/turnComplete"
    return dict(
        await client.wait_for(
            lambda: (
                guarded(client, session).get("kind") == "authRequired" and guarded(client, session)
            ),
            timeout=60,
        )
    )


def session_chat(client: Client, session: str) -> str:
    return str(client.tracked[session][0]["defaultChat"])


async def authenticate(client: Client, resource: str, token: str, **extra: Any) -> Any:
    return await client.request(
        "authenticate", {"channel": ROOT, "resource": resource, "token": token, **extra}
    )


async def test_a_server_answering_401_waits_for_a_sign_in_that_brings_it_back(
    server, connect, tokens, workdir, guarded_url
):
    olga = await signed_in(server, connect, tokens["olga"])
    session, chat = await new_session(olga, workdir)
    state = await waiting_for_sign_in(olga, session)
    # The resource's own record, found from the challenge, is what a person signs in from.
    assert state["reason"] == "required"
    assert state["resource"]["resource"] == guarded_url
    assert state["resource"]["authorization_servers"]
    await olga.assert_conforms(session)

    assert await authenticate(olga, guarded_url, TOKEN) == {}
    await olga.wait_for(lambda: guarded(olga, session).get("kind") == "ready", timeout=60)
    end, said, reply = await ask(olga, chat, 'call guarded__add {"a": 1, "b": 2}')
    assert end["type"] == "chat/turnComplete"
    [start] = [a for a in said if a["type"] == "chat/toolCallStart"]
    assert start["contributor"] == {"kind": "mcp", "customizationId": SERVER_ID}
    assert reply == "The tool said: 3"
    # The token is the person's: nothing a client reads carries it.
    assert TOKEN not in json.dumps(olga.actions) + json.dumps(olga.tracked)


async def test_a_call_the_server_refuses_mid_run_waits_for_the_sign_in_and_runs_on(
    server, connect, tokens, workdir, guarded_url
):
    olga = await signed_in(server, connect, tokens["olga"])
    session, chat = await new_session(olga, workdir)
    await waiting_for_sign_in(olga, session)
    await authenticate(olga, guarded_url, TOKEN)
    await olga.wait_for(lambda: guarded(olga, session).get("kind") == "ready", timeout=60)
    # Signed out again (the protocol's word for it is an empty token): the next call is refused.
    assert await authenticate(olga, guarded_url, "") == {}

    action = turn('call guarded__add {"a": 20, "b": 22}')
    await olga.dispatch_and_wait(chat, action)
    required = await olga.wait_action(
        lambda e: e["channel"] == chat and e["action"]["type"] == "chat/toolCallAuthRequired",
        timeout=60,
    )
    auth = required["action"]["auth"]
    assert auth["resource"]["resource"] == guarded_url
    # Signed out, the request went with no token: a sign-in is required (not one expired).
    assert auth["reason"] == "required"
    entry_id = f"toolAuthentication:{chat}:{action['turnId']}:{required['action']['toolCallId']}"
    entries = await olga.wait_for(
        lambda: [
            r for r in olga.tracked[session][0].get("inputNeeded") or [] if r["id"] == entry_id
        ]
    )
    assert entries[0]["kind"] == "toolAuthentication"
    assert entries[0]["toolCall"]["status"] == "auth-required"

    # The sign-in answers it: the call runs on, and the entry is taken down.
    await authenticate(olga, guarded_url, TOKEN)
    await olga.wait_action(
        lambda e: e["channel"] == chat and e["action"]["type"] == "chat/toolCallAuthResolved",
        timeout=60,
    )
    end = await olga.wait_action(ended(chat, action["turnId"]), timeout=60)
    assert end["action"]["type"] == "chat/turnComplete"
    parts = olga.tracked[chat][0]["turns"][-1]["responseParts"]
    [call] = [p["toolCall"] for p in parts if p["kind"] == "toolCall"]
    assert call["status"] == "completed" and call["success"] is True
    await olga.wait_for(
        lambda: (
            not [
                r for r in olga.tracked[session][0].get("inputNeeded") or [] if r["id"] == entry_id
            ]
        )
    )
    await olga.assert_conforms(session)
    await olga.assert_conforms(chat)


async def test_a_token_that_runs_out_is_said_to_its_connection_alone(
    server, connect, tokens, workdir, guarded_url
):
    olga = await signed_in(server, connect, tokens["olga"])
    other_window = await signed_in(server, connect, tokens["olga"])
    session, _ = await new_session(olga, workdir)
    await other_window.request("subscribe", {"channel": session})
    metadata = (await waiting_for_sign_in(olga, session))["resource"]
    await authenticate(olga, guarded_url, TOKEN, expiresIn=1)
    await olga.wait_for(lambda: guarded(olga, session).get("kind") == "ready", timeout=60)
    said = await olga.wait_for(
        lambda: [p for m, p in olga.notifications if m == "auth/required"], timeout=30
    )
    assert said == [{"channel": session, "resource": metadata, "reason": "expired"}]
    # The token was that connection's: another window of the same person is not told.
    assert not [p for m, p in other_window.notifications if m == "auth/required"]


async def test_a_token_is_taken_only_for_a_resource_ones_own_session_waits_for(
    server, connect, tokens, workdir, guarded_url
):
    olga = await signed_in(server, connect, tokens["olga"])
    session, _ = await new_session(olga, workdir)
    await waiting_for_sign_in(olga, session)
    # Another member who watches olga's session still cannot push a token into it: a token is
    # spent only on its pusher's own sessions, so the resource is advertised to nobody else.
    max_ = await signed_in(server, connect, tokens["max"])
    await max_.request("subscribe", {"channel": session})
    assert guarded(max_, session)["kind"] == "authRequired"
    with pytest.raises(RpcError) as refused:
        await authenticate(max_, guarded_url, "max-token")
    assert refused.value.code == -32007
    # A resource nobody advertised, and a bad expiresIn, are refused too; the connection stays.
    with pytest.raises(RpcError) as refused:
        await authenticate(olga, "https://elsewhere.example/mcp", TOKEN)
    assert refused.value.code == -32007
    with pytest.raises(RpcError) as refused:
        await authenticate(olga, guarded_url, TOKEN, expiresIn=0)
    assert refused.value.code == -32602
    assert "expiresIn" in refused.value.message
    assert guarded(olga, session)["kind"] == "authRequired"
    assert await olga.request("ping", {}) is None
