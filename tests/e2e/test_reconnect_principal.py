"""A client id is its maker's: nobody else resumes it, and a replay holds only what the
reconnecting principal may read now."""

from __future__ import annotations

import json
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_grants import cli
from tests.support.agents import server_with_local_agent
from tests.support.client import Client, RpcError
from tests.support.server import TOKEN, ServerProcess

ROOT = "ahp-root://"


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    with server_with_local_agent() as process:
        yield process


@pytest.fixture(scope="module")
def tokens(server: ServerProcess) -> dict[str, str]:
    made = {}
    for person, role in (("ana", "admin"), ("gus", "guest")):
        cli(server, "user", "add", person, "--role", role)
        made[person] = cli(server, "user", "token", person)["token"]
    return made


def set_roles(server: ServerProcess, person: str, *roles: str) -> None:
    """A person's host-wide roles replaced through the REST API, as an operator does."""
    request = urllib.request.Request(
        server.base.replace("ws://", "http://") + f"api/people/{person}/",
        method="PATCH",
        data=json.dumps({"roles": list(roles)}).encode(),
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        assert response.status == 200


def reconnect_params(client_id: str, last_seen: int) -> dict[str, object]:
    return {
        "channel": ROOT,
        "clientId": client_id,
        "lastSeenServerSeq": last_seen,
        "subscriptions": [ROOT],
    }


def saw(client: Client, secret: str) -> bool:
    return any(secret in json.dumps(frame) for frame in client.frames)


async def admin_pushes_a_secret(server, connect, token: str) -> tuple[str, int, str]:
    """An admin's client that pushed a root config secret and dropped: its id, the serverSeq
    it had seen before the push, and the secret."""
    admin = await connect(server.url, token=token, client_id=f"admin-{uuid.uuid4().hex[:6]}")
    await admin.initialize()
    before = admin.last_seq
    secret = f"secret-{uuid.uuid4().hex}"
    await admin.dispatch_and_wait(
        ROOT, {"type": "root/configChanged", "config": {"x-api-key": secret}}
    )
    await admin.close()
    return admin.client_id, before, secret


async def test_a_reconnect_with_another_principals_client_id_is_answered_as_unknown(
    server, connect, tokens
):
    client_id, before, secret = await admin_pushes_a_secret(server, connect, tokens["ana"])
    guest = await connect(server.url, token=tokens["gus"])
    with pytest.raises(RpcError) as taken:
        await guest.request("reconnect", reconnect_params(client_id, before))
    never_met = f"never-{uuid.uuid4().hex[:6]}"
    with pytest.raises(RpcError) as unknown:
        await guest.request("reconnect", reconnect_params(never_met, before))
    assert taken.value.code == unknown.value.code == -32008
    assert taken.value.message == f"Reconnect client not found: {client_id}"
    assert unknown.value.message == f"Reconnect client not found: {never_met}"
    await guest.settle()
    assert not saw(guest, secret)
    # The one who made it still resumes it, and is replayed its own push.
    again = await connect(server.url, token=tokens["ana"], client_id=client_id)
    result = await again.request("reconnect", reconnect_params(client_id, before))
    assert result["type"] == "replay"
    assert saw(again, secret)


async def test_an_initialize_with_another_principals_client_id_does_not_take_it_over(
    server, connect, tokens
):
    client_id, before, secret = await admin_pushes_a_secret(server, connect, tokens["ana"])
    guest = await connect(server.url, token=tokens["gus"], client_id=client_id)
    with pytest.raises(RpcError) as refused:
        await guest.initialize()
    assert refused.value.code == -32010
    assert client_id in refused.value.message
    # The connection stays up, and is not the client: it may introduce itself as another.
    with pytest.raises(RpcError):
        await guest.request("reconnect", reconnect_params(client_id, before))
    guest.client_id = f"guest-{uuid.uuid4().hex[:6]}"
    await guest.initialize()
    assert not saw(guest, secret)
    # The maker's record is untouched: it resumes with the version it agreed.
    again = await connect(server.url, token=tokens["ana"], client_id=client_id)
    result = await again.request("reconnect", reconnect_params(client_id, before))
    assert result["type"] == "replay"
    assert saw(again, secret)


async def test_the_same_principal_may_introduce_its_client_again(server, connect, tokens):
    client_id = f"window-{uuid.uuid4().hex[:6]}"
    first = await connect(server.url, token=tokens["gus"], client_id=client_id)
    await first.initialize()
    await first.close()
    reloaded = await connect(server.url, token=tokens["gus"], client_id=client_id)
    assert (await reloaded.initialize())["_meta"]["ahpd.principal"] == "user:gus"


async def test_a_replay_holds_only_what_the_principal_may_read_now(server, connect, tokens):
    person = f"demoted-{uuid.uuid4().hex[:6]}"
    cli(server, "user", "add", person, "--role", "admin")
    token = cli(server, "user", "token", person)["token"]
    client_id, before, secret = await admin_pushes_a_secret(server, connect, token)
    # Its own push, said to it live, is a setting it may no longer read.
    set_roles(server, person, "guest")
    again = await connect(server.url, token=token, client_id=client_id)
    result = await again.request("reconnect", reconnect_params(client_id, before))
    assert result["type"] == "replay"
    assert not [e for e in result["actions"] if e["action"]["type"] == "root/configChanged"]
    await again.settle()
    assert not saw(again, secret)


async def test_a_replay_holds_nothing_of_a_channel_the_principal_may_no_longer_read(
    server, connect, tmp_path: Path
):
    person = f"left-{uuid.uuid4().hex[:6]}"
    cli(server, "user", "add", person, "--role", "member")
    token = cli(server, "user", "token", person)["token"]
    client = await connect(server.url, token=token, client_id=f"member-{uuid.uuid4().hex[:6]}")
    await client.initialize()
    uri = f"ahp-session:/{uuid.uuid4()}"
    await client.request(
        "createSession",
        {"channel": uri, "provider": "local", "workingDirectories": [tmp_path.as_uri()]},
    )
    await client.request("subscribe", {"channel": uri})
    before = client.last_seq
    title = f"renamed-{uuid.uuid4().hex}"
    rename = await client.dispatch_and_wait(uri, {"type": "session/titleChanged", "title": title})
    assert "rejectionReason" not in rename
    await client.close()
    # No role left: the session is not theirs to read any more, their own rename of it included.
    set_roles(server, person)
    again = await connect(server.url, token=token, client_id=client.client_id)
    params = {**reconnect_params(client.client_id, before), "subscriptions": [ROOT, uri]}
    result = await again.request("reconnect", params)
    assert result["type"] == "replay"
    assert result["missing"] == [uri]
    assert not [e for e in result["actions"] if e["channel"] == uri]
    await again.settle()
    assert not saw(again, title)
