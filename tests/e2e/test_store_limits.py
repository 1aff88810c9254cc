"""Nothing is taken that the store would drop: PostgreSQL keeps no NUL in text or jsonb and
keys sessions and chats by 512 characters, so such a value is refused at the door, -32602
naming where, on either database; what was taken before and after it survives a restart."""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path

import pytest

from tests.support.agents import server_with_local_agent
from tests.support.client import Client, RpcError

ROOT = "ahp-root://"
NUL = "\x00"


@pytest.fixture(scope="module")
def workdir():
    with tempfile.TemporaryDirectory(prefix="ahpd-store-") as path:
        yield Path(path)


@pytest.fixture(scope="module")
def server():
    with server_with_local_agent() as process:
        yield process


@pytest.fixture(autouse=True)
def no_traceback_or_lost_write(server):
    yield
    log = server.log_text()
    assert "Traceback" not in log
    assert "DataError" not in log


def turn(text: str, turn_id: str | None = None) -> dict:
    return {
        "type": "chat/turnStarted",
        "turnId": turn_id or str(uuid.uuid4()),
        "startedAt": "2026-12-02T08:00:00.000Z",
        "message": {"text": text, "origin": {"kind": "user"}},
    }


async def announced_session(client: Client, workdir: Path) -> tuple[str, str]:
    """A session with one finished turn (so it is announced and kept); its URI and chat's."""
    uri = f"ahp-session:/{uuid.uuid4()}"
    await client.request(
        "createSession",
        {"channel": uri, "provider": "local", "workingDirectories": [workdir.as_uri()]},
    )
    chat = (await client.request("subscribe", {"channel": uri}))["snapshot"]["state"]["defaultChat"]
    await client.request("subscribe", {"channel": chat})
    action = turn("first words")
    await client.dispatch(chat, action)
    await client.wait_action(
        lambda e: e["channel"] == chat and e["action"]["type"] == "chat/turnComplete", timeout=30
    )
    return uri, chat


async def refused_dispatch(client: Client, channel: str, action: dict) -> dict:
    before = len(client._errors_without_id)
    await client.dispatch(channel, action)
    error = await client.wait_for(
        lambda: client._errors_without_id[before:] and client._errors_without_id[before]
    )
    assert error["code"] == -32602
    return error


async def after_restart(server) -> Client:
    server.restart()
    again = await Client.open(server.url)
    await again.initialize()
    return again


async def test_a_nul_in_a_session_title_is_refused_and_the_session_keeps_its_saves(
    server, connect, workdir
):
    client = await connect(server.url)
    await client.initialize()
    uri, chat = await announced_session(client, workdir)
    error = await refused_dispatch(
        client, uri, {"type": "session/titleChanged", "title": f"bad{NUL}title"}
    )
    assert "params.action.title holds a NUL character" in error["message"]
    await client.dispatch_and_wait(uri, {"type": "session/titleChanged", "title": "kept title"})
    await client.close()
    again = await after_restart(server)
    try:
        items = (await again.request("listSessions", {"channel": ROOT}))["items"]
        [row] = [s for s in items if s["resource"] == uri]
        assert row["title"] == "kept title"
        state = (await again.request("subscribe", {"channel": chat}))["snapshot"]["state"]
        assert [t["message"]["text"] for t in state["turns"]] == ["first words"]
    finally:
        await again.close()
        again.assert_schema_clean()


async def test_a_nul_in_a_message_is_refused_and_the_chat_keeps_its_turns(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    uri, chat = await announced_session(client, workdir)
    error = await refused_dispatch(client, chat, turn(f"a{NUL}b"))
    assert "params.action.message.text holds a NUL character" in error["message"]
    with pytest.raises(RpcError) as refused:
        await client.request(
            "createChat",
            {
                "channel": uri,
                "chat": f"ahp-chat:/{uuid.uuid4()}",
                "initialMessage": {"text": f"x{NUL}", "origin": {"kind": "user"}},
            },
        )
    assert refused.value.code == -32602
    assert "params.initialMessage.text" in refused.value.message
    await client.close()
    again = await after_restart(server)
    try:
        state = (await again.request("subscribe", {"channel": chat}))["snapshot"]["state"]
        assert [t["message"]["text"] for t in state["turns"]] == ["first words"]
        session = (await again.request("subscribe", {"channel": uri}))["snapshot"]["state"]
        assert [c["resource"] for c in session["chats"]] == [chat]
    finally:
        await again.close()
        again.assert_schema_clean()


async def test_a_nul_in_a_root_config_value_is_refused_and_root_config_keeps_saving(
    server, connect
):
    client = await connect(server.url)
    await client.initialize()
    error = await refused_dispatch(
        client, ROOT, {"type": "root/configChanged", "config": {"x-nul": f"v{NUL}"}}
    )
    assert "params.action.config.x-nul holds a NUL character" in error["message"]
    error = await refused_dispatch(
        client, ROOT, {"type": "root/configChanged", "config": {f"x{NUL}key": 1}}
    )
    assert "params.action.config has a key with a NUL character" in error["message"]
    value = uuid.uuid4().hex
    await client.dispatch_and_wait(ROOT, {"type": "root/configChanged", "config": {"x-ok": value}})
    await client.close()
    again = await after_restart(server)
    try:
        state = (await again.request("subscribe", {"channel": ROOT}))["snapshot"]["state"]
        assert state["config"]["values"]["x-ok"] == value
        assert "x-nul" not in state["config"]["values"]
    finally:
        await again.close()
        again.assert_schema_clean()


async def test_a_session_or_chat_uri_longer_than_the_store_keys_is_refused(
    server, connect, workdir
):
    client = await connect(server.url)
    await client.initialize()
    uri, chat = await announced_session(client, workdir)
    long_session = "ahp-session:/" + "s" * 500
    with pytest.raises(RpcError) as refused:
        await client.request("createSession", {"channel": long_session, "provider": "local"})
    assert refused.value.code == -32602
    assert "createSession: channel is longer than 512 characters" in refused.value.message
    long_chat = "ahp-chat:/" + "c" * 503
    with pytest.raises(RpcError) as refused:
        await client.request("createChat", {"channel": uri, "chat": long_chat})
    assert refused.value.code == -32602
    assert "createChat: chat is longer than 512 characters" in refused.value.message
    # A URI that fits is taken, and so is the longest.
    longest = "ahp-chat:/" + "c" * 502
    await client.request("createChat", {"channel": uri, "chat": longest})
    refusal = await client.dispatch_and_wait(chat, turn("t", "t" * 257))
    assert refusal["rejectionReason"] == "chat/turnStarted: turnId is longer than 256 characters"
    await client.close()
    again = await after_restart(server)
    try:
        resources = [
            s["resource"] for s in (await again.request("listSessions", {"channel": ROOT}))["items"]
        ]
        assert uri in resources and long_session not in resources
        session = (await again.request("subscribe", {"channel": uri}))["snapshot"]["state"]
        assert [c["resource"] for c in session["chats"]] == [chat, longest]
    finally:
        await again.close()
        again.assert_schema_clean()


async def test_a_session_whose_derived_chat_uri_would_be_too_long_is_refused(server, connect):
    # An older VS Code window names the default chat after the session, a third longer.
    client = await connect(server.url)
    await client.initialize(clientInfo={"name": "vscode-editor-window", "version": "1.140"})
    with pytest.raises(RpcError) as refused:
        await client.request(
            "createSession", {"channel": "ahp-session:/" + "s" * 400, "provider": "local"}
        )
    assert refused.value.code == -32602
    assert "the default chat URI of" in refused.value.message
