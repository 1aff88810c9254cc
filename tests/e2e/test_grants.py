"""People, tokens and grants on the socket: who a connection is, and what each may do."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from tests.e2e.test_sessions import message, run_turn, turn
from tests.support.agents import server_with_local_agent
from tests.support.client import Client, RpcError
from tests.support.server import REPO, TOKEN, ServerProcess

ROOT = "ahp-root://"


@pytest.fixture(scope="module")
def workdir():
    with tempfile.TemporaryDirectory(prefix="ahpd-grants-") as path:
        yield Path(path)


@pytest.fixture(scope="module")
def server():
    with server_with_local_agent(AHPD_HOST_NAME="testhost") as process:
        yield process


def cli(server: ServerProcess, *args: str) -> dict:
    result = subprocess.run(
        [sys.executable, "manage.py", "ahpd", *args, "--json"],
        cwd=REPO,
        env=server.env(),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def tokens(server):
    made = {}
    for person, roles in (("ana", ["admin"]), ("max", ["member"]), ("gus", ["guest"]), ("nil", [])):
        cli(server, "user", "add", person, *[a for r in roles for a in ("--role", r)])
        made[person] = cli(server, "user", "token", person)["token"]
    made["root"] = TOKEN
    return made


async def as_(server, connect, token: str) -> Client:
    client = await connect(server.url, token=token)
    await client.initialize()
    return client


async def make_session(client: Client, workdir: Path) -> tuple[str, str]:
    uri = f"ahp-session:/{uuid.uuid4()}"
    await client.request(
        "createSession",
        {"channel": uri, "provider": "local", "workingDirectories": [workdir.as_uri()]},
    )
    state = (await client.request("subscribe", {"channel": uri}))["snapshot"]["state"]
    await client.request("subscribe", {"channel": state["defaultChat"]})
    return uri, state["defaultChat"]


async def test_a_persons_token_opens_the_door_and_signs_the_connection_in(server, connect, tokens):
    client = await connect(server.url, token=tokens["max"])
    result = await client.initialize()
    assert result["_meta"]["ahpd.principal"] == "user:max"
    root = result["snapshots"][0]["state"]
    assert root["_meta"]["ahpd.principal"] == "user:max"
    assert "session" in root["_meta"]["ahpd.grants"]
    assert "create" in root["_meta"]["ahpd.grants"]["session"]["groups"]["write"]
    deployment = await as_(server, connect, tokens["root"])
    state = (await deployment.request("subscribe", {"channel": ROOT}))["snapshot"]["state"]
    assert state["_meta"]["ahpd.principal"] == "root:testhost"


@pytest.mark.parametrize(
    ("person", "allowed"),
    [("ana", True), ("max", True), ("gus", False), ("nil", False), ("root", True)],
)
async def test_creating_a_session_needs_session_create(
    server, connect, tokens, workdir, person, allowed
):
    client = await as_(server, connect, tokens[person])
    uri = f"ahp-session:/{uuid.uuid4()}"
    params = {"channel": uri, "provider": "local", "workingDirectories": [workdir.as_uri()]}
    if allowed:
        assert await client.request("createSession", params) is None
    else:
        with pytest.raises(RpcError) as refused:
            await client.request("createSession", params)
        assert refused.value.code == -32009
        assert refused.value.message == f"user:{person} may not session:create here"


# The session is ana's (an admin's), in the host's own scope: a member reads it but may not
# work in it (tests/e2e/test_whose_session.py goes through scopes and owners).
@pytest.mark.parametrize(
    ("person", "may_list", "may_read", "send_refused_for", "may_rename", "may_configure_root"),
    [
        ("ana", True, True, None, True, True),
        ("max", True, True, "others:work", False, False),
        ("gus", True, True, "chat:send", False, False),
        ("nil", False, False, "chat:send", False, False),
    ],
)
async def test_the_grant_matrix(
    server,
    connect,
    tokens,
    workdir,
    person,
    may_list,
    may_read,
    send_refused_for,
    may_rename,
    may_configure_root,
):
    owner = await as_(server, connect, tokens["ana"])
    uri, chat = await make_session(owner, workdir)
    await run_turn(owner, chat, "something to read")
    client = await as_(server, connect, tokens[person])
    who = f"user:{person}"

    if may_list:
        listed = (await client.request("listSessions", {"channel": ROOT}))["items"]
        assert uri in [s["resource"] for s in listed]
    else:
        with pytest.raises(RpcError) as refused:
            await client.request("listSessions", {"channel": ROOT})
        assert refused.value.message == f"{who} may not session:list here"

    if may_read:
        await client.request("subscribe", {"channel": uri})
        await client.request("subscribe", {"channel": chat})
    else:
        with pytest.raises(RpcError) as refused:
            await client.request("subscribe", {"channel": uri})
        assert (refused.value.code, refused.value.message) == (
            -32009,
            f"{who} may not session:state here",
        )

    echo = await client.dispatch_and_wait(chat, turn("a turn"))
    if send_refused_for is None:
        assert "rejectionReason" not in echo
        assert echo["action"]["_meta"]["ahpd.sender"] == who
        assert echo["action"]["message"]["_meta"]["ahpd.sender"] == who
    else:
        assert echo["rejectionReason"].startswith(f"{who} may not {send_refused_for} here")

    echo = await client.dispatch_and_wait(uri, {"type": "session/titleChanged", "title": "t"})
    assert ("rejectionReason" not in echo) is may_rename

    echo = await client.dispatch_and_wait(
        ROOT, {"type": "root/configChanged", "config": {"x-grants": uuid.uuid4().hex}}
    )
    if may_configure_root:
        assert "rejectionReason" not in echo
    else:
        assert echo["rejectionReason"] == f"{who} may not config:change here"


async def test_a_member_may_push_workspace_trust_alone(server, connect, tokens):
    client = await as_(server, connect, tokens["max"])
    echo = await client.dispatch_and_wait(
        ROOT,
        {
            "type": "root/configChanged",
            "config": {"workspaceTrust": {"enabled": True, "trustedUris": [uuid.uuid4().hex]}},
        },
    )
    assert "rejectionReason" not in echo


async def test_only_the_owner_or_an_admin_disposes_a_session(server, connect, tokens, workdir):
    max_ = await as_(server, connect, tokens["max"])
    uri, chat = await make_session(max_, workdir)
    await run_turn(max_, chat, "mine")
    state = (await max_.request("subscribe", {"channel": uri}))["snapshot"]["state"]
    assert state["_meta"]["ahpd.owner"] == "user:max"
    listed = (await max_.request("listSessions", {"channel": ROOT}))["items"]
    assert next(s for s in listed if s["resource"] == uri)["_meta"]["ahpd.owner"] == "user:max"

    cli(server, "user", "add", f"other-{uuid.uuid4().hex[:6]}", "--role", "member")
    other_member = cli(server, "user", "list")[-1]["id"]
    other = await as_(server, connect, cli(server, "user", "token", other_member)["token"])
    with pytest.raises(RpcError) as refused:
        await other.request("disposeSession", {"channel": uri})
    assert refused.value.code == -32009

    admin = await as_(server, connect, tokens["ana"])
    assert await admin.request("disposeSession", {"channel": uri}) is None


async def test_a_token_revoked_while_its_connection_is_open_is_refused_on_the_next_command(
    server, connect, tokens
):
    person = f"rev-{uuid.uuid4().hex[:6]}"
    cli(server, "user", "add", person, "--role", "member")
    minted = cli(server, "user", "token", person, "--name", "laptop")
    client = await as_(server, connect, minted["token"])
    await client.request("listSessions", {"channel": ROOT})
    cli(server, "user", "rm", person)
    with pytest.raises(RpcError) as refused:
        await client.request("listSessions", {"channel": ROOT})
    assert refused.value.code == -32007
    assert refused.value.data["resources"][0]["resource"] == "ahpd://users"


async def test_authenticate_signs_a_connection_in_and_out(server, connect, tokens):
    client = await as_(server, connect, tokens["root"])
    assert (
        await client.request(
            "authenticate", {"channel": ROOT, "resource": "ahpd://users", "token": tokens["gus"]}
        )
        == {}
    )
    state = (await client.request("subscribe", {"channel": ROOT}))["snapshot"]["state"]
    assert state["_meta"]["ahpd.principal"] == "user:gus"
    with pytest.raises(RpcError) as refused:
        await client.request("createSession", {"channel": f"ahp-session:/{uuid.uuid4()}"})
    assert refused.value.code == -32009

    with pytest.raises(RpcError) as refused:
        await client.request(
            "authenticate", {"channel": ROOT, "resource": "ahpd://users", "token": "nope"}
        )
    assert refused.value.code == -32007
    assert refused.value.data["resources"][0]["resource"] == "ahpd://users"

    assert (
        await client.request(
            "authenticate", {"channel": ROOT, "resource": "ahpd://users", "token": ""}
        )
        == {}
    )
    state = (await client.request("subscribe", {"channel": ROOT}))["snapshot"]["state"]
    assert state["_meta"]["ahpd.principal"] == "root:testhost"


async def test_every_agent_advertises_the_users_resource(server, connect, tokens):
    client = await as_(server, connect, tokens["gus"])
    state = (await client.request("subscribe", {"channel": ROOT}))["snapshot"]["state"]
    assert state["agents"][0]["protectedResources"][0]["resource"] == "ahpd://users"


async def test_a_queued_message_keeps_who_sent_it(server, connect, tokens, workdir):
    client = await as_(server, connect, tokens["max"])
    _, chat = await make_session(client, workdir)
    await client.dispatch_and_wait(
        chat,
        {
            "type": "chat/pendingMessageSet",
            "kind": "queued",
            "id": "q",
            "message": message("queued by max"),
        },
    )
    started = await client.wait_action(
        lambda e: (
            e["action"]["type"] == "chat/turnStarted" and e["action"].get("queuedMessageId") == "q"
        )
    )
    assert started["action"]["_meta"]["ahpd.sender"] == "user:max"


async def test_trust_push_may_not_replace_the_whole_root_config(server, connect, tokens):
    client = await as_(server, connect, tokens["max"])
    refusal = await client.dispatch_and_wait(
        ROOT,
        {
            "type": "root/configChanged",
            "replace": True,
            "config": {"workspaceTrust": {"enabled": False, "trustedUris": []}},
        },
    )
    assert refusal["rejectionReason"] == "user:max may not config:change here"


async def test_root_config_is_shown_only_to_who_may_read_the_settings(server, connect, tokens):
    admin = await as_(server, connect, tokens["ana"])
    guest = await as_(server, connect, tokens["gus"])
    assert admin.tracked[ROOT][0]["config"]["values"]
    assert guest.tracked[ROOT][0]["config"]["values"] == {}
    assert guest.tracked[ROOT][0]["config"]["schema"]["properties"]
    mark = {"x-secret": uuid.uuid4().hex}
    echo = await admin.dispatch_and_wait(ROOT, {"type": "root/configChanged", "config": mark})
    await guest.settle()
    assert not [e for e in guest.actions if e["serverSeq"] == echo["serverSeq"]]
    await guest.assert_conforms(ROOT)
    await admin.assert_conforms(ROOT)


async def test_a_connection_whose_grants_shrink_stops_watching_what_it_may_not_read(
    server, connect, tokens, workdir
):
    owner = await as_(server, connect, tokens["ana"])
    uri, chat = await make_session(owner, workdir)
    person_id = f"shrink-{uuid.uuid4().hex[:6]}"
    cli(server, "user", "add", person_id, "--role", "member")
    client = await as_(server, connect, cli(server, "user", "token", person_id)["token"])
    await client.request("subscribe", {"channel": uri})
    cli(server, "user", "rm", person_id)
    with pytest.raises(RpcError):
        await client.request("listSessions", {"channel": ROOT})
    echo = await owner.dispatch_and_wait(uri, {"type": "session/titleChanged", "title": "new"})
    await client.settle()
    assert not [e for e in client.actions if e["serverSeq"] == echo["serverSeq"]]
