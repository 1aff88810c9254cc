"""What the wire cannot carry is refused whole, before any state moves: a value nested past what
a frame can say again, a clientSeq no client can hold, a `_meta` that is no object. Nothing of
it is kept, said or left to poison the channel for the next client."""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path

import orjson
import pytest

from tests.support.agents import server_with_local_agent
from tests.support.client import Client

ROOT = "ahp-root://"
#: Past what orjson serializes (254), inside what it parses (1,024).
DEEP_TEXT = "[" * 300 + "]" * 300
DEEP = "@@deep@@"


@pytest.fixture(scope="module")
def workdir():
    with tempfile.TemporaryDirectory(prefix="ahpd-wire-") as path:
        yield Path(path)


@pytest.fixture(scope="module")
def server():
    with server_with_local_agent() as process:
        yield process


@pytest.fixture(autouse=True)
def no_traceback(server):
    yield
    assert "Traceback" not in server.log_text()


def frame_text(method: str, params: dict, request_id: int | None) -> str:
    """A frame with DEEP standing for a value nested 300 deep (orjson would not write it)."""
    frame: dict = {"jsonrpc": "2.0", "method": method, "params": params}
    if request_id is not None:
        frame["id"] = request_id
    return orjson.dumps(frame).decode().replace(f'"{DEEP}"', DEEP_TEXT)


def message(text: str, **extra) -> dict:
    return {"text": text, "origin": {"kind": "user"}, **extra}


async def new_session(client: Client, workdir: Path) -> tuple[str, str]:
    uri = f"ahp-session:/{uuid.uuid4()}"
    await client.request(
        "createSession",
        {"channel": uri, "provider": "local", "workingDirectories": [workdir.as_uri()]},
    )
    snapshot = (await client.request("subscribe", {"channel": uri}))["snapshot"]
    chat = snapshot["state"]["defaultChat"]
    await client.request("subscribe", {"channel": chat})
    return uri, chat


def _entries(session: str, chat: str, client_id: str) -> dict[str, tuple[str, dict]]:
    """Every way in the issue names, as (method, params) with DEEP somewhere in them."""

    def dispatch(channel: str, action: dict) -> tuple[str, dict]:
        return "dispatchAction", {"channel": channel, "clientSeq": 1, "action": action}

    return {
        "root config": dispatch(ROOT, {"type": "root/configChanged", "config": {"x": DEEP}}),
        "trust only": dispatch(
            ROOT, {"type": "root/configChanged", "config": {"workspaceTrust": DEEP}}
        ),
        "createSession config": (
            "createSession",
            {"channel": f"ahp-session:/{uuid.uuid4()}", "provider": "local", "config": {"k": DEEP}},
        ),
        "session config": dispatch(
            session, {"type": "session/configChanged", "config": {"k": DEEP}}
        ),
        "activeClient tools": dispatch(
            session,
            {
                "type": "session/activeClientSet",
                "activeClient": {
                    "clientId": client_id,
                    "tools": [{"name": "t", "inputSchema": {"deep": DEEP}}],
                },
            },
        ),
        "draft": dispatch(chat, {"type": "chat/draftChanged", "draft": message("d", x=DEEP)}),
        "attachment": dispatch(
            chat,
            {
                "type": "chat/turnStarted",
                "turnId": str(uuid.uuid4()),
                "startedAt": "2026-12-02T08:00:00.000Z",
                "message": message(
                    "hi", attachments=[{"type": "simple", "label": "a", "_meta": {"d": DEEP}}]
                ),
            },
        ),
        "queued message": dispatch(
            chat,
            {
                "type": "chat/pendingMessageSet",
                "kind": "queued",
                "id": "q1",
                "message": message("later", x=DEEP),
            },
        ),
        "new chat's first message": (
            "createChat",
            {
                "channel": session,
                "chat": f"ahp-chat:/{uuid.uuid4()}",
                "initialMessage": message("first", x=DEEP),
            },
        ),
    }


ENTRY_NAMES = list(_entries("s", "c", "x"))


async def assert_every_channel_opens(server, channels: list[str]) -> None:
    """A fresh client initializes with every channel, each a snapshot the wire carried."""
    fresh = await Client.open(server.url)
    try:
        result = await fresh.initialize(subscriptions=channels)
        assert sorted(s["resource"] for s in result["snapshots"]) == sorted(channels)
        for channel in channels[1:]:
            await fresh.request("subscribe", {"channel": channel})
    finally:
        await fresh.close()
        fresh.assert_schema_clean()


@pytest.mark.parametrize("entry", ENTRY_NAMES)
async def test_a_value_nested_past_what_the_wire_says_is_refused_and_poisons_nothing(
    server, connect, workdir, entry
):
    client = await connect(server.url)
    await client.initialize()
    session, chat = await new_session(client, workdir)
    method, params = _entries(session, chat, client.client_id)[entry]
    is_request = method != "dispatchAction"
    await client.send_raw(frame_text(method, params, 901 if is_request else None))
    error = await client.wait_for(
        lambda: next(
            (f["error"] for f in client.frames if "error" in f and f.get("id") in (901, None)),
            None,
        )
    )
    assert error["code"] == -32602
    assert "deeper than 64 levels" in error["message"]
    assert "params." in error["message"]
    # Nothing was said for it, and every channel it named still opens for anyone.
    assert not [a for a in client.actions if a.get("origin", {}).get("clientSeq") == 1]
    await assert_every_channel_opens(server, [ROOT, session, chat])
    await client.assert_conforms(ROOT)
    await client.assert_conforms(session)
    await client.assert_conforms(chat)


async def test_a_client_seq_no_client_can_hold_is_refused_and_changes_nothing(server, connect):
    client = await connect(server.url)
    await client.initialize()
    mark = uuid.uuid4().hex
    await client.send_raw(
        '{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"ahp-root://",'
        f'"clientSeq":1e20,"action":{{"type":"root/configChanged","config":{{"x-seq":"{mark}"}}}}}}}}'
    )
    error = await client.wait_error_without_id()
    assert error["code"] == -32602
    assert "clientSeq" in error["message"]
    await client.settle()
    assert not client.actions
    state = (await client.request("subscribe", {"channel": ROOT}))["snapshot"]["state"]
    assert state["config"]["values"].get("x-seq") != mark
    await assert_every_channel_opens(server, [ROOT])


@pytest.mark.parametrize(
    "action",
    [
        {"type": "root/configChanged", "config": {"x-meta": 1}, "_meta": [1]},
        {"type": "root/configChanged", "config": {"x-meta": 2}, "_meta": "text"},
        {"type": "root/configChanged", "config": {"x-meta": {"_meta": 5}}},
    ],
)
async def test_a_meta_that_is_not_an_object_is_refused_naming_it(server, connect, action):
    client = await connect(server.url)
    await client.initialize()
    await client.dispatch(ROOT, action)
    error = await client.wait_error_without_id()
    assert error["code"] == -32602
    assert "_meta must be an object" in error["message"]
    await client.settle()
    assert not client.actions
    state = (await client.request("subscribe", {"channel": ROOT}))["snapshot"]["state"]
    assert "x-meta" not in state["config"]["values"]


async def test_a_signed_action_whose_message_meta_is_not_an_object_is_refused(
    server, connect, workdir
):
    client = await connect(server.url)
    await client.initialize()
    session, chat = await new_session(client, workdir)
    await client.dispatch(
        chat,
        {
            "type": "chat/turnStarted",
            "turnId": str(uuid.uuid4()),
            "startedAt": "2026-12-02T08:00:00.000Z",
            "message": message("hello", _meta="not an object"),
        },
    )
    error = await client.wait_error_without_id()
    assert "params.action.message._meta must be an object" in error["message"]
    await client.settle()
    assert not [a for a in client.actions if a["channel"] == chat]
    await client.assert_conforms(chat)
    await assert_every_channel_opens(server, [ROOT, session, chat])
