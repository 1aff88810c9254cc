"""reconnect with a cursor per channel (the protocol's `20261002-per-channel-replay-cursors`):
each channel replayed after its own cursor, given its snapshot, or reported missing, in one
answer; and nothing of a channel its principal may no longer read."""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_grants import cli
from tests.e2e.test_reconnect_principal import set_roles
from tests.support.agents import server_with_local_agent
from tests.support.client import Client, RpcError
from tests.support.server import ServerProcess

ROOT = "ahp-root://"


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    with server_with_local_agent() as process:
        yield process


def push(**values: object) -> dict[str, object]:
    return {"type": "root/configChanged", "config": values}


def cursor_of(client: Client, channel: str) -> int:
    """The last serverSeq a client applied on one channel: its newest action there, or the
    snapshot it started from."""
    seqs = [e["serverSeq"] for e in client.actions if e["channel"] == channel]
    return max([client.tracked[channel][1], *seqs])


def saw(client: Client, secret: str) -> bool:
    return any(secret in json.dumps(frame) for frame in client.frames)


async def new_session(client: Client, folder: Path) -> str:
    uri = f"ahp-session:/{uuid.uuid4()}"
    await client.request(
        "createSession",
        {"channel": uri, "provider": "local", "workingDirectories": [folder.as_uri()]},
    )
    await client.request("subscribe", {"channel": uri})
    return uri


async def test_a_client_of_the_protocols_current_sources_is_told_1_1_0(server, connect):
    client = await connect(server.url)
    assert (await client.initialize(["1.1.0", "1.0.0"]))["protocolVersion"] == "1.1.0"


async def test_each_channel_is_recovered_from_its_own_cursor(server, connect, tmp_path: Path):
    a = await connect(server.url, client_id=f"cursors-{uuid.uuid4().hex[:6]}")
    await a.initialize(["1.1.0", "1.0.0"])
    session = await new_session(a, tmp_path)
    b = await connect(server.url)
    await b.initialize()
    await b.request("subscribe", {"channel": session})
    # What a has seen before it drops, on each of its two channels.
    seen_title = await b.dispatch_and_wait(
        session, {"type": "session/titleChanged", "title": "before"}
    )
    await a.wait_action(lambda e: e["serverSeq"] == seen_title["serverSeq"])
    await a.settle()
    cursors = {ROOT: cursor_of(a, ROOT), session: cursor_of(a, session)}
    held = copy.deepcopy(a.tracked)
    await a.close()

    # While it is away: root moves by far more than its state weighs (each push replaces the
    # last), the session by one small rename.
    for _ in range(8):
        await b.dispatch_and_wait(ROOT, push(**{"x-big": uuid.uuid4().hex * 6000}))
    title = f"while-away-{uuid.uuid4().hex[:6]}"
    renamed = await b.dispatch_and_wait(session, {"type": "session/titleChanged", "title": title})
    assert "rejectionReason" not in renamed

    again = await connect(server.url, client_id=a.client_id)
    again.tracked = held
    gone = f"ahp-session:/{uuid.uuid4()}"
    result = await again.request(
        "reconnect",
        {
            "channel": ROOT,
            "clientId": a.client_id,
            "subscriptions": [
                {"channel": ROOT, "lastSeenServerSeq": cursors[ROOT]},
                {"channel": session, "lastSeenServerSeq": cursors[session]},
                {"channel": gone, "lastSeenServerSeq": 0},
            ],
        },
    )
    root, mine, missing = result["channels"]
    assert set(result) == {"channels"}
    assert root["kind"] == "snapshot" and root["channel"] == ROOT
    assert (
        root["snapshot"]["state"]["config"]["values"]["x-big"]
        == b.tracked[ROOT][0]["config"]["values"]["x-big"]
    )
    assert mine["kind"] == "replay" and mine["channel"] == session
    replayed = [e["serverSeq"] for e in mine["actions"]]
    assert renamed["serverSeq"] in replayed
    assert all(e["channel"] == session for e in mine["actions"])
    assert all(seq > cursors[session] for seq in replayed) and replayed == sorted(replayed)
    assert missing == {"kind": "missing", "channel": gone}
    # The state each recovery leaves equals a fresh snapshot of that channel.
    await again.assert_conforms(session)
    await again.assert_conforms(ROOT)
    # And both are followed live again.
    live = await b.dispatch_and_wait(session, {"type": "session/titleChanged", "title": "live"})
    await again.wait_action(lambda e: e["serverSeq"] == live["serverSeq"])
    await b.dispatch_and_wait(ROOT, push(**{"x-big": "small again"}))


async def test_a_replay_never_uses_another_channels_progress(server, connect, tmp_path: Path):
    # The session's cursor is behind the root's: its own actions after it are replayed all the
    # same, which one connection-wide watermark (the root's) would have skipped.
    a = await connect(server.url, client_id=f"behind-{uuid.uuid4().hex[:6]}")
    await a.initialize()
    session = await new_session(a, tmp_path)
    behind = cursor_of(a, session)
    owed = await a.dispatch_and_wait(session, {"type": "session/titleChanged", "title": "owed"})
    ahead = (await a.dispatch_and_wait(ROOT, push(**{"x-ahead": uuid.uuid4().hex})))["serverSeq"]
    assert ahead > owed["serverSeq"] > behind
    result = await a.request(
        "reconnect",
        {
            "channel": ROOT,
            "clientId": a.client_id,
            "subscriptions": [
                {"channel": session, "lastSeenServerSeq": behind},
                {"channel": ROOT, "lastSeenServerSeq": ahead},
            ],
        },
    )
    mine, root = result["channels"]
    assert mine["kind"] == "replay"
    assert owed["serverSeq"] in [e["serverSeq"] for e in mine["actions"]]
    assert root["kind"] == "replay" and root["channel"] == ROOT
    assert all(e["serverSeq"] > ahead for e in root["actions"])


async def test_a_channel_its_principal_may_no_longer_read_is_missing_and_tells_nothing(
    server, connect, tmp_path: Path
):
    person = f"left-{uuid.uuid4().hex[:6]}"
    cli(server, "user", "add", person, "--role", "member")
    token = cli(server, "user", "token", person)["token"]
    client = await connect(server.url, token=token, client_id=f"member-{uuid.uuid4().hex[:6]}")
    await client.initialize()
    session = await new_session(client, tmp_path)
    cursors = {ROOT: cursor_of(client, ROOT), session: cursor_of(client, session)}
    title = f"renamed-{uuid.uuid4().hex}"
    rename = await client.dispatch_and_wait(
        session, {"type": "session/titleChanged", "title": title}
    )
    assert "rejectionReason" not in rename
    await client.close()
    # No role left: the session is not theirs to read any more, their own rename of it included.
    set_roles(server, person)
    again = await connect(server.url, token=token, client_id=client.client_id)
    result = await again.request(
        "reconnect",
        {
            "channel": ROOT,
            "clientId": client.client_id,
            "subscriptions": [
                {"channel": ROOT, "lastSeenServerSeq": cursors[ROOT]},
                {"channel": session, "lastSeenServerSeq": cursors[session]},
            ],
        },
    )
    root, gone = result["channels"]
    assert root["kind"] == "replay"
    assert gone == {"kind": "missing", "channel": session}
    await again.settle()
    assert not saw(again, title)


async def test_another_persons_session_named_in_a_cursor_is_missing(
    server, connect, tmp_path: Path
):
    owner = await connect(server.url)
    await owner.initialize()
    session = await new_session(owner, tmp_path)
    secret = f"secret-{uuid.uuid4().hex}"
    await owner.dispatch_and_wait(session, {"type": "session/titleChanged", "title": secret})
    # Someone with no role here: a host-wide member or guest reads the host's own sessions.
    person = f"other-{uuid.uuid4().hex[:6]}"
    cli(server, "user", "add", person, "--role", "member")
    token = cli(server, "user", "token", person)["token"]
    set_roles(server, person)
    other = await connect(server.url, token=token)
    await other.initialize()
    # A cursor of 0 asks for everything: a snapshot or the whole replay, were it theirs.
    result = await other.request(
        "reconnect",
        {
            "channel": ROOT,
            "clientId": other.client_id,
            "subscriptions": [{"channel": session, "lastSeenServerSeq": 0}],
        },
    )
    assert result == {"channels": [{"kind": "missing", "channel": session}]}
    await owner.dispatch_and_wait(session, {"type": "session/titleChanged", "title": "later"})
    await other.settle()
    assert not saw(other, secret)
    assert not [e for e in other.actions if e["channel"] == session]


@pytest.mark.parametrize(
    ("subscriptions", "extra", "words"),
    [
        (None, {}, "reconnect: subscriptions is required"),
        ([ROOT], {}, "reconnect: lastSeenServerSeq is required beside a list of URI strings"),
        ([ROOT], {"lastSeenServerSeq": "7"}, "reconnect: lastSeenServerSeq must be an integer"),
        ([7], {}, "reconnect: subscriptions must be a list of URI strings beside"),
        ({"channel": ROOT}, {}, "reconnect: subscriptions must be a list of URI strings"),
        (
            [{"channel": ROOT}],
            {},
            "reconnect: subscriptions[0].lastSeenServerSeq must be an integer from 0",
        ),
        (
            [{"channel": ROOT, "lastSeenServerSeq": -1}],
            {},
            "reconnect: subscriptions[0].lastSeenServerSeq must be an integer from 0",
        ),
        (
            [{"channel": ROOT, "lastSeenServerSeq": 1}, {"lastSeenServerSeq": 1}],
            {},
            "reconnect: subscriptions[1].channel must be a channel URI string",
        ),
        (
            [ROOT, {"channel": ROOT, "lastSeenServerSeq": 1}],
            {"lastSeenServerSeq": 1},
            "reconnect: subscriptions mixes URI strings and",
        ),
        (
            [{"channel": ROOT, "lastSeenServerSeq": 1}, {"channel": ROOT, "lastSeenServerSeq": 2}],
            {},
            "reconnect: subscriptions names ahp-root:// twice",
        ),
    ],
)
async def test_a_bad_reconnect_is_refused_naming_what_is_wrong_and_changes_nothing(
    server, connect, subscriptions, extra, words
):
    client = await connect(server.url, client_id=f"bad-{uuid.uuid4().hex[:6]}")
    await client.initialize(subscriptions=[])
    params: dict[str, object] = {"channel": ROOT, "clientId": client.client_id, **extra}
    if subscriptions is not None:
        params["subscriptions"] = subscriptions
    with pytest.raises(RpcError) as refused:
        await client.request("reconnect", params)
    assert refused.value.code == -32602
    assert refused.value.message.startswith(words), refused.value.message
    # Nothing was joined, and the connection still takes a good one.
    other = await connect(server.url)
    await other.initialize()
    pushed = await other.dispatch_and_wait(ROOT, push(**{"x-after": uuid.uuid4().hex}))
    await client.settle()
    assert not [e for e in client.actions if e["serverSeq"] == pushed["serverSeq"]]
    result = await client.request(
        "reconnect",
        {
            "channel": ROOT,
            "clientId": client.client_id,
            "subscriptions": [{"channel": ROOT, "lastSeenServerSeq": pushed["serverSeq"]}],
        },
    )
    [root] = result["channels"]
    assert root["kind"] == "replay" and root["channel"] == ROOT
    assert all(e["serverSeq"] > pushed["serverSeq"] for e in root["actions"])


async def test_a_channel_with_no_baseline_yet_is_sent_its_snapshot(server, connect):
    # 0 is the cursor of a channel the client never had a snapshot of: even with every action
    # since the host started still held, there is no state to replay them onto.
    client = await connect(server.url, client_id=f"zero-{uuid.uuid4().hex[:6]}")
    await client.initialize(subscriptions=[])
    result = await client.request(
        "reconnect",
        {
            "channel": ROOT,
            "clientId": client.client_id,
            "subscriptions": [{"channel": ROOT, "lastSeenServerSeq": 0}],
        },
    )
    [root] = result["channels"]
    assert root["kind"] == "snapshot" and root["snapshot"]["resource"] == ROOT
    await client.assert_conforms(ROOT)


async def test_no_cursors_is_an_empty_answer(server, connect):
    client = await connect(server.url, client_id=f"none-{uuid.uuid4().hex[:6]}")
    await client.initialize(subscriptions=[])
    result = await client.request(
        "reconnect", {"channel": ROOT, "clientId": client.client_id, "subscriptions": []}
    )
    assert result == {"channels": []}
