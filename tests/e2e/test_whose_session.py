"""Whose session: roles x scopes x owner and not, on the socket and over REST.

Team alpha has project web; team beta has none. olga (a member through alpha) owns a session
in alpha and one in web; max (a member host-wide) owns one in the host's own scope. Each
person below is asked to read, work in and dispose each of the three, and is let do exactly
what access.py says: their own sessions; reading those of the scopes they are members of;
working in and disposing others' only through `others:*` (lead, admin) held where it is.
"""

from __future__ import annotations

import json
import tempfile
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.e2e.test_sessions import run_turn
from tests.support.agents import server_with_local_agent
from tests.support.client import Client, RpcError
from tests.support.rest import call
from tests.support.server import ServerProcess

ROOT = "ahp-root://"

#: person -> (role, where it is held: "" host-wide, team:<slug> or project:<slug>)
PEOPLE = {
    "ana": ("admin", ""),
    "olga": ("member", "team:alpha"),
    "max": ("member", ""),
    "mia": ("member", "team:alpha"),
    "lea": ("lead", "team:alpha"),
    "leo": ("lead", "team:beta"),
    "gus": ("guest", "team:alpha"),
    "gil": ("guest", ""),
    "pia": ("member", "project:web"),
    "tom": ("member", ""),
}

#: person -> what they may do in (alpha's, web's, the host's) session: r read, w work, d dispose
MATRIX = {
    "ana": ("rwd", "rwd", "rwd"),
    "olga": ("rwd", "rwd", ""),
    "max": ("", "", "rwd"),
    "mia": ("r", "r", ""),
    "lea": ("rwd", "rwd", ""),
    "leo": ("", "", ""),
    "gus": ("r", "r", ""),
    "gil": ("", "", "r"),
    "pia": ("", "r", ""),
    "tom": ("", "", "r"),
}

SETUP = """
import json
from django.contrib.auth import get_user_model
from hosts.models import Membership, Project, Role, Team
from hosts.store import mint_token
alpha = Team.objects.create(slug="alpha")
Team.objects.create(slug="beta")
Project.objects.create(slug="web", team=alpha)
tokens = {}
for person, (role, where) in json.loads(PEOPLE).items():
    user = get_user_model().objects.create_user(username=person)
    kind, _, slug = where.partition(":")
    Membership.objects.create(
        user=user,
        role=Role.objects.get(name=role),
        team=Team.objects.get(slug=slug) if kind == "team" else None,
        project=Project.objects.get(slug=slug) if kind == "project" else None,
        primary=True,
    )
    tokens[person] = mint_token(person, "tests").secret
print(json.dumps(tokens))
"""


@pytest.fixture(scope="module")
def server():
    with server_with_local_agent(AHPD_HOST_NAME="testhost") as process:
        yield process


@pytest.fixture(scope="module")
def tokens(server: ServerProcess) -> dict[str, str]:
    # One process makes everyone (a CLI call each would start Django eighteen times).
    script = f"PEOPLE = {json.dumps(json.dumps(PEOPLE))}\n{SETUP}"
    return dict(server.shell_json(script))


@pytest.fixture(scope="module")
def workdir():
    with tempfile.TemporaryDirectory(prefix="ahpd-whose-") as path:
        yield Path(path)


async def signed_in(server: ServerProcess, connect, token: str) -> Client:
    client = await connect(server.url, token=token)
    await client.initialize()
    return client


async def made(client: Client, workdir: Path, scope: str | None = None) -> tuple[str, str]:
    """A session of the client's, announced (it has had a turn): its URI and its chat's."""
    uri = f"ahp-session:/{uuid.uuid4()}"
    params = {"channel": uri, "provider": "local", "workingDirectories": [workdir.as_uri()]}
    if scope is not None:
        params["_meta"] = {"ahpd.scope": scope}
    await client.request("createSession", params)
    state = (await client.request("subscribe", {"channel": uri}))["snapshot"]["state"]
    chat = state["defaultChat"]
    await client.request("subscribe", {"channel": chat})
    await run_turn(client, chat, "hello")
    return uri, chat


@pytest.fixture(scope="module")
async def sessions(server, tokens, workdir):
    olga = await Client.open(server.url, token=tokens["olga"])
    max_ = await Client.open(server.url, token=tokens["max"])
    for owner in (olga, max_):
        await owner.initialize()
    alpha = await made(olga, workdir)
    web = await made(olga, workdir, scope="project:web")
    host = await made(max_, workdir)
    yield {"owners": (olga, olga, max_), "sessions": (alpha, web, host)}
    for owner in (olga, max_):
        await owner.close()


def holds_write(person: str, index: int) -> bool:
    """Whether `person` holds session:rename where session `index` is (not whether it is
    theirs): a member's, lead's or admin's role held host-wide or over that scope."""
    role, where = PEOPLE[person]
    reach = {0: ("", "team:alpha"), 1: ("", "team:alpha", "project:web"), 2: ("",)}[index]
    return role != "guest" and where in reach


@pytest.mark.parametrize("person", sorted(MATRIX))
async def test_the_matrix_on_the_socket(server, connect, tokens, sessions, person):
    client = await signed_in(server, connect, tokens[person])
    who = f"user:{person}"
    listed = {s["resource"] for s in (await client.request("listSessions", {}))["items"]}
    for index, ((uri, chat), owner, may) in enumerate(
        zip(sessions["sessions"], sessions["owners"], MATRIX[person], strict=True)
    ):
        where = f"{person} in {uri}"
        assert (uri in listed) is ("r" in may), where
        if "r" in may:
            snapshot = (await client.request("subscribe", {"channel": chat}))["snapshot"]
            assert snapshot["state"]["turns"], where
        else:
            with pytest.raises(RpcError) as refused:
                await client.request("subscribe", {"channel": uri})
            assert refused.value.code == -32009, where
            assert refused.value.message.startswith(f"{who} may not "), where

        echo = await client.dispatch_and_wait(
            uri, {"type": "session/titleChanged", "title": f"by {person}"}
        )
        if "w" in may:
            assert "rejectionReason" not in echo, where
        else:
            reason = echo["rejectionReason"]
            grant = "others:work" if holds_write(person, index) else "session:rename"
            assert reason.startswith(f"{who} may not {grant} here"), (where, reason)

        side = f"ahp-chat:/{uuid.uuid4()}"
        await owner.request("createChat", {"channel": uri, "chat": side})
        if "d" in may:
            assert await client.request("disposeChat", {"channel": side}) is None
            state = (await owner.request("subscribe", {"channel": uri}))["snapshot"]["state"]
            assert side not in [c["resource"] for c in state["chats"]], where
        else:
            with pytest.raises(RpcError) as refused:
                await client.request("disposeChat", {"channel": side})
            assert refused.value.code == -32009, where


async def test_a_member_may_not_send_a_turn_in_a_colleagues_session(
    server, connect, tokens, sessions
):
    (_, chat), _, _ = sessions["sessions"]
    mia = await signed_in(server, connect, tokens["mia"])
    await mia.request("subscribe", {"channel": chat})
    echo = await mia.dispatch_and_wait(
        chat,
        {
            "type": "chat/turnStarted",
            "turnId": str(uuid.uuid4()),
            "startedAt": "2026-12-03T10:00:00.000Z",
            "message": {"text": "run olga's agent", "origin": {"kind": "user"}},
        },
    )
    assert echo["rejectionReason"].startswith("user:mia may not others:work here: ")
    assert echo["rejectionReason"].endswith("is user:olga's")
    for action in (
        {"type": "chat/truncated"},
        {"type": "chat/draftChanged", "draft": {"text": "x"}},
    ):
        echo = await mia.dispatch_and_wait(chat, action)
        assert "others:work" in echo["rejectionReason"], action
    # What the composer offers (the agent's commands, the session's files) is for who may send.
    with pytest.raises(RpcError) as refused:
        await mia.request(
            "completions", {"channel": chat, "kind": "text", "text": "@", "offset": 1}
        )
    assert refused.value.message.startswith("user:mia may not others:work here")
    max_ = await signed_in(server, connect, tokens["max"])
    with pytest.raises(RpcError) as refused:
        await max_.request("fetchTurns", {"channel": chat})
    assert refused.value.message.startswith("user:max may not others:read here")


async def test_a_session_is_made_where_its_owner_belongs(server, connect, tokens, workdir):
    pia = await signed_in(server, connect, tokens["pia"])
    for scope, words in (
        ("team:beta", "user:pia is not a member of 'team:beta'"),
        ("galaxy:far", 'a scope is "team:<slug>", "project:<slug>" or "" (the host)'),
        ("", "user:pia is not a member of ''"),
    ):
        with pytest.raises(RpcError) as refused:
            await pia.request(
                "createSession",
                {"channel": f"ahp-session:/{uuid.uuid4()}", "_meta": {"ahpd.scope": scope}},
            )
        assert refused.value.code == -32602 and words in refused.value.message, scope
    uri, _ = await made(pia, workdir)
    status, body = call(server, "GET", f"sessions/{quote(uri, safe='')}/", tokens["pia"])
    assert status == 200 and body["scope"] == "project:web" and body["owner"] == "user:pia"


async def test_who_may_not_read_a_session_is_not_told_of_it(
    server, connect, tokens, workdir, sessions
):
    max_ = await signed_in(server, connect, tokens["max"])
    mia = await signed_in(server, connect, tokens["mia"])
    olga = sessions["owners"][0]
    uri, _ = await made(olga, workdir)

    def added(client: Client):
        return [
            p
            for method, p in client.notifications
            if method == "root/sessionAdded" and p["summary"]["resource"] == uri
        ]

    await mia.wait_for(lambda: added(mia))
    # Whatever max was sent at that moment is in front of this answer.
    await max_.request("ping", {})
    assert not added(max_)


async def test_a_reconnect_resumes_only_what_the_person_may_read(server, connect, tokens, sessions):
    (alpha, _), _, (host, _) = sessions["sessions"]
    mia = await connect(server.url, token=tokens["mia"])
    seq = (await mia.initialize())["serverSeq"]
    await mia.close()
    again = await connect(server.url, token=tokens["mia"])
    result = await again.request(
        "reconnect",
        {
            "clientId": mia.client_id,
            "lastSeenServerSeq": seq,
            "subscriptions": [alpha, host],
        },
    )
    assert result["type"] in ("replay", "snapshot")
    if result["type"] == "replay":
        assert result["missing"] == [host]
        assert all(a["channel"] != host for a in result["actions"])
    else:
        assert [s["resource"] for s in result["snapshots"]] == [alpha]


def test_rest_lists_and_reads_only_what_a_person_may_read(server, tokens, sessions):
    uris = [uri for uri, _ in sessions["sessions"]]
    for person, may in MATRIX.items():
        status, body = call(server, "GET", "sessions/", tokens[person])
        assert status == 200, person
        listed = {row["uri"] for row in body["results"]}
        for uri, can in zip(uris, may, strict=True):
            assert (uri in listed) is ("r" in can), (person, uri)
            status, _ = call(server, "GET", f"sessions/{quote(uri, safe='')}/", tokens[person])
            assert status == (200 if "r" in can else 404), (person, uri)


def test_rest_refuses_work_in_another_persons_session(server, tokens, sessions):
    (alpha, _), _, (host, _) = sessions["sessions"]
    path = f"sessions/{quote(alpha, safe='')}/messages/"
    status, body = call(server, "POST", path, tokens["mia"], {"message": "hi"})
    assert status == 403
    assert body["detail"].startswith("user:mia may not others:work here")
    status, body = call(server, "DELETE", f"sessions/{quote(host, safe='')}/", tokens["gil"])
    assert status == 403 and "session:dispose" in body["detail"]
    status, body = call(server, "POST", path, tokens["lea"], {"message": "from the lead"})
    assert status == 202 and body["chat"]


async def test_a_terminal_a_session_claims_is_that_sessions(server, connect, tokens, workdir):
    # Made by ana (an admin may name any scope) in team alpha, which tom is no member of.
    ana = await signed_in(server, connect, tokens["ana"])
    uri = f"ahp-session:/{uuid.uuid4()}"
    await ana.request(
        "createSession",
        {
            "channel": uri,
            "provider": "local",
            "workingDirectories": [workdir.as_uri()],
            "_meta": {"ahpd.scope": "team:alpha"},
        },
    )
    state = (await ana.request("subscribe", {"channel": uri}))["snapshot"]["state"]
    terminal = f"ahp-terminal:/{uuid.uuid4()}"
    claim = {"kind": "session", "session": uri, "chat": state["defaultChat"]}
    await ana.request("createTerminal", {"channel": terminal, "claim": claim})
    tom = await signed_in(server, connect, tokens["tom"])
    with pytest.raises(RpcError) as refused:
        await tom.request("subscribe", {"channel": terminal})
    assert refused.value.message.startswith("user:tom may not others:read here")
    echo = await tom.dispatch_and_wait(terminal, {"type": "terminal/input", "data": "id\n"})
    assert echo["rejectionReason"].startswith("user:tom may not others:work here")
    await ana.request("disposeTerminal", {"channel": terminal})


async def test_a_member_may_not_move_a_colleagues_chat_nor_move_one_into_their_session(
    server, connect, tokens, sessions, workdir
):
    olga = sessions["owners"][0]
    (alpha, _), _, _ = sessions["sessions"]
    side = f"ahp-chat:/{uuid.uuid4()}"
    await olga.request("createChat", {"channel": alpha, "chat": side})
    await olga.request("subscribe", {"channel": side})
    await run_turn(olga, side, "a chat of olga's")
    ana = await signed_in(server, connect, tokens["ana"])
    mia = await signed_in(server, connect, tokens["mia"])
    mine, _ = await made(mia, workdir)
    my_side = f"ahp-chat:/{uuid.uuid4()}"
    await mia.request("createChat", {"channel": mine, "chat": my_side})
    await mia.request("subscribe", {"channel": my_side})
    await run_turn(mia, my_side, "a chat of mia's")
    moves = {"type": "root/configChanged", "config": {"chatMoves.enabled": True}}
    assert "rejectionReason" not in await ana.dispatch_and_wait(ROOT, moves)
    try:
        for chat, destination in (
            (side, alpha),  # reorder olga's session
            (side, mine),  # take olga's chat away into mia's session
            (my_side, alpha),  # put mia's chat into olga's session
        ):
            with pytest.raises(RpcError) as refused:
                await mia.request(
                    "moveChat",
                    {"channel": chat, "destination": {"kind": "session", "session": destination}},
                )
            assert refused.value.code == -32009, (chat, destination)
            assert refused.value.message.startswith("user:mia may not others:work here")
        chats = (await olga.request("subscribe", {"channel": alpha}))["snapshot"]["state"]["chats"]
        assert side in [row["resource"] for row in chats]
        assert my_side not in [row["resource"] for row in chats]
    finally:
        moves["config"] = {"chatMoves.enabled": False}
        assert "rejectionReason" not in await ana.dispatch_and_wait(ROOT, moves)
