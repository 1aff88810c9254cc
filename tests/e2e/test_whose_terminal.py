"""Whose terminal: a terminal is its opener's, or the session's that claims it, and another
person reads, types into, sizes, clears, renames, claims and disposes it only with the
`others:*` grants a session asks for, refused in the same words; root state's `terminals`
lists a person only the terminals they may read; and one person may have only so many open
(AHPD_TERMINALS_PER_PERSON).

ann and bob are members host-wide (each holds every terminal grant, and both are members of
the host's own scope); lea is a lead host-wide; leo is a member host-wide and a lead of team
beta only; cid is a member whose terminals count up to the cap.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from hosts.protocol.actions import ACTIONS
from tests.e2e.test_sessions import new_session
from tests.e2e.test_terminals import PROMPT, on, open_terminal, run, screen, text_of, wait_after
from tests.support.agents import server_with_local_agent
from tests.support.client import Client, RpcError
from tests.support.server import ServerProcess

ROOT = "ahp-root://"
CAP = 10

#: person -> [(role, where: "" host-wide or team:<slug>)], the first their primary membership
PEOPLE = {
    "ann": [("member", "")],
    "bob": [("member", "")],
    "lea": [("lead", "")],
    "leo": [("member", ""), ("lead", "team:beta")],
    "cid": [("member", "")],
}

SETUP = """
import json
from django.contrib.auth import get_user_model
from hosts.models import Membership, Role, Team
from hosts.store import mint_token
Team.objects.create(slug="beta")
tokens = {}
for person, memberships in json.loads(PEOPLE).items():
    user = get_user_model().objects.create_user(username=person)
    for index, (role, where) in enumerate(memberships):
        Membership.objects.create(
            user=user,
            role=Role.objects.get(name=role),
            team=Team.objects.get(slug=where.partition(":")[2]) if where else None,
            primary=index == 0,
        )
    tokens[person] = mint_token(person, "tests").secret
print(json.dumps(tokens))
"""


@pytest.fixture(scope="module")
def home() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="ahpd-whose-term-"))
    (path / ".bashrc").write_text(f"PS1='{PROMPT}'\nunset HISTFILE\n")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def server(home: Path) -> Iterator[ServerProcess]:
    bash = shutil.which("bash") or "/bin/bash"
    with server_with_local_agent(SHELL=bash, HOME=str(home)) as process:
        # In the sandbox a shell's home is its person's own, kept by the host.
        for person in [process.root_ref, *(f"user:{name}" for name in PEOPLE)]:
            shutil.copy(home / ".bashrc", process.home_of(person) / ".bashrc")
        yield process


@pytest.fixture(scope="module")
def tokens(server: ServerProcess) -> dict[str, str]:
    script = f"PEOPLE = {json.dumps(json.dumps(PEOPLE))}\n{SETUP}"
    return dict(server.shell_json(script))


async def signed_in(server: ServerProcess, connect, token: str) -> Client:
    client = await connect(server.url, token=token)
    await client.initialize()
    return client


def whose(person: str, grant: str, uri: str, owner: str = "ann") -> str:
    return f"user:{person} may not {grant} here: {uri} is user:{owner}'s"


def listed(client: Client) -> list[str]:
    """The terminals root state lists to the client, as it tracks it."""
    return [info["resource"] for info in client.tracked[ROOT][0].get("terminals", [])]


#: A client's action on a terminal of each kind it may send, but a claim.
WORK = [
    {"type": "terminal/input", "data": "echo pwned-by-$USER-bob\r"},
    {"type": "terminal/resized", "cols": 33, "rows": 11},
    {"type": "terminal/cleared"},
    {"type": "terminal/titleChanged", "title": "bob's now"},
]


async def test_another_member_may_not_watch_a_members_terminal(server, connect, tokens):
    ann = await signed_in(server, connect, tokens["ann"])
    uri = await open_terminal(ann)
    await run(ann, uri, "echo the-secret-ann-typed")
    bob = await signed_in(server, connect, tokens["bob"])
    with pytest.raises(RpcError) as refused:
        await bob.request("subscribe", {"channel": uri})
    assert refused.value.code == -32009
    assert refused.value.message == whose("bob", "others:read", uri)
    # Nor at initialize, nor by coming back asking for it.
    late = await connect(server.url, token=tokens["bob"])
    result = await late.initialize(subscriptions=[ROOT, uri])
    assert [s["resource"] for s in result["snapshots"]] == [ROOT]
    again = await late.request(
        "reconnect", {"clientId": late.client_id, "lastSeenServerSeq": 0, "subscriptions": [uri]}
    )
    if again["type"] == "replay":
        assert again["missing"] == [uri]
    else:
        assert again["snapshots"] == []
    assert "the-secret-ann-typed" not in json.dumps(again)
    await ann.request("disposeTerminal", {"channel": uri})


async def test_another_member_may_not_type_size_clear_rename_or_claim_a_members_terminal(
    server, connect, tokens
):
    ann = await signed_in(server, connect, tokens["ann"])
    uri = await open_terminal(ann, name="ann's")
    await run(ann, uri, "echo kept-in-the-scrollback")
    before = dict(ann.tracked[uri][0])
    bob = await signed_in(server, connect, tokens["bob"])
    for action in WORK:
        refused = await bob.dispatch_and_wait(uri, action)
        assert refused["rejectionReason"] == whose("bob", "others:work", uri), action["type"]
    claim = {"kind": "client", "clientId": bob.client_id}
    refused = await bob.dispatch_and_wait(uri, {"type": "terminal/claimed", "claim": claim})
    assert refused["rejectionReason"] == whose("bob", "others:work", uri)
    # Nothing moved: what bob typed reached no shell, and the terminal is as ann left it.
    await run(ann, uri, "echo ann-still-here")
    state = (await ann.request("subscribe", {"channel": uri}))["snapshot"]["state"]
    assert "pwned-by" not in screen(ann, uri)
    assert "kept-in-the-scrollback" in screen(ann, uri)
    for key in ("title", "cols", "rows", "claim"):
        assert state[key] == before[key], key
    # The owner may do every one of them.
    for action in WORK[1:]:
        assert "rejectionReason" not in await ann.dispatch_and_wait(uri, action)
    mine = {"kind": "client", "clientId": f"{ann.client_id}-other-window"}
    echo = await ann.dispatch_and_wait(uri, {"type": "terminal/claimed", "claim": mine})
    assert "rejectionReason" not in echo
    await ann.assert_conforms(uri)
    await ann.request("disposeTerminal", {"channel": uri})


async def test_another_member_may_not_dispose_a_members_terminal(server, connect, tokens):
    ann = await signed_in(server, connect, tokens["ann"])
    uri = await open_terminal(ann)
    bob = await signed_in(server, connect, tokens["bob"])
    with pytest.raises(RpcError) as refused:
        await bob.request("disposeTerminal", {"channel": uri})
    assert refused.value.code == -32009
    assert refused.value.message == whose("bob", "others:dispose", uri)
    await run(ann, uri, "echo alive")
    assert await ann.request("disposeTerminal", {"channel": uri}) is None


async def test_root_state_lists_a_person_only_the_terminals_they_may_read(server, connect, tokens):
    ann = await signed_in(server, connect, tokens["ann"])
    bob = await signed_in(server, connect, tokens["bob"])
    lea = await signed_in(server, connect, tokens["lea"])
    anns = await open_terminal(ann)
    start = len(bob.actions)
    bobs = await open_terminal(bob)
    said = await wait_after(
        bob, start, lambda e: on(ROOT, "root/terminalsChanged")(e) and e["action"]["terminals"]
    )
    assert [t["resource"] for t in said["action"]["terminals"]] == [bobs]
    assert listed(bob) == [bobs]
    await lea.wait_for(lambda: {anns, bobs} <= set(listed(lea)))
    assert anns in listed(ann) and bobs not in listed(ann)
    # A fresh look agrees with what each was told, person by person.
    for client in (ann, bob, lea):
        await client.assert_conforms(ROOT)
    fresh = await signed_in(server, connect, tokens["bob"])
    assert listed(fresh) == [bobs]
    # Coming back, bob is replayed the lists as he was told them.
    back = await connect(server.url, client_id=bob.client_id, token=tokens["bob"])
    await bob.close()
    replay = await back.request(
        "reconnect", {"clientId": bob.client_id, "lastSeenServerSeq": 0, "subscriptions": [ROOT]}
    )
    assert replay["type"] == "replay"
    lists = [
        [t["resource"] for t in envelope["action"]["terminals"]]
        for envelope in replay["actions"]
        if envelope["action"]["type"] == "root/terminalsChanged"
    ]
    assert lists and lists[-1] == [bobs]
    assert all(anns not in terminals for terminals in lists)
    await ann.request("disposeTerminal", {"channel": anns})
    await back.request("disposeTerminal", {"channel": bobs})


async def test_a_lead_may_watch_type_into_and_dispose_a_members_terminal(server, connect, tokens):
    ann = await signed_in(server, connect, tokens["ann"])
    uri = await open_terminal(ann)
    await run(ann, uri, "echo for-the-lead-to-read")
    lea = await signed_in(server, connect, tokens["lea"])
    state = (await lea.request("subscribe", {"channel": uri}))["snapshot"]["state"]
    assert "for-the-lead-to-read" in text_of(state)
    _, finished = await run(lea, uri, "echo typed-by-the-lead")
    assert finished["exitCode"] == 0
    for action in WORK[1:]:
        assert "rejectionReason" not in await lea.dispatch_and_wait(uri, action)
    # A claim is the holder's to hand on, whoever else may work in the terminal.
    taken = {"kind": "client", "clientId": lea.client_id}
    refused = await lea.dispatch_and_wait(uri, {"type": "terminal/claimed", "claim": taken})
    assert refused["rejectionReason"].endswith("only its holder hands it on")
    assert await lea.request("disposeTerminal", {"channel": uri}) is None


async def test_a_lead_of_another_scope_is_refused_as_a_member_is(server, connect, tokens):
    ann = await signed_in(server, connect, tokens["ann"])
    uri = await open_terminal(ann)
    leo = await signed_in(server, connect, tokens["leo"])
    with pytest.raises(RpcError) as refused:
        await leo.request("subscribe", {"channel": uri})
    assert refused.value.message == whose("leo", "others:read", uri)
    answer = await leo.dispatch_and_wait(uri, WORK[0])
    assert answer["rejectionReason"] == whose("leo", "others:work", uri)
    assert uri not in listed(leo)
    await ann.request("disposeTerminal", {"channel": uri})


async def test_a_terminal_a_session_claims_is_judged_as_that_session(server, connect, tokens, home):
    ann = await signed_in(server, connect, tokens["ann"])
    session, chat = await new_session(ann, home)
    uri = f"ahp-terminal:/{uuid.uuid4()}"
    claim = {"kind": "session", "session": session, "chat": chat}
    await ann.request("createTerminal", {"channel": uri, "claim": claim})
    await ann.request("subscribe", {"channel": uri})
    await ann.wait_for(lambda: screen(ann, uri).endswith(PROMPT))
    # bob, a member where the session is, reads it as he reads the session; working in it
    # and disposing it are ann's, as the session's are.
    bob = await signed_in(server, connect, tokens["bob"])
    await bob.request("subscribe", {"channel": uri})
    assert uri in listed(bob)
    answer = await bob.dispatch_and_wait(uri, WORK[0])
    assert answer["rejectionReason"] == whose("bob", "others:work", session)
    with pytest.raises(RpcError) as refused:
        await bob.request("disposeTerminal", {"channel": uri})
    assert refused.value.message == whose("bob", "others:dispose", session)
    # Nobody claims a terminal for a session they may not work in.
    bobs = await open_terminal(bob)
    handed = {"type": "terminal/claimed", "claim": claim}
    answer = await bob.dispatch_and_wait(bobs, handed)
    assert answer["rejectionReason"] == whose("bob", "others:work", session)
    await bob.request("disposeTerminal", {"channel": bobs})
    await ann.request("disposeSession", {"channel": session})


async def test_the_cap_refuses_one_terminal_too_many_and_a_disposed_one_frees_a_place(
    server, connect, tokens
):
    cid = await signed_in(server, connect, tokens["cid"])
    claim = {"kind": "client", "clientId": cid.client_id}
    opened = [f"ahp-terminal:/{uuid.uuid4()}" for _ in range(CAP)]
    for uri in opened:
        await cid.request("createTerminal", {"channel": uri, "claim": claim})
    one_more = f"ahp-terminal:/{uuid.uuid4()}"
    with pytest.raises(RpcError) as refused:
        await cid.request("createTerminal", {"channel": one_more, "claim": claim})
    assert refused.value.code == -32602
    assert refused.value.message == (
        f"createTerminal: user:cid already has {CAP} terminals open, the most one person may "
        f"have (AHPD_TERMINALS_PER_PERSON={CAP}): dispose of one first"
    )
    with pytest.raises(RpcError) as gone:
        await cid.request("subscribe", {"channel": one_more})
    assert gone.value.code == -32001
    # Another person is not held to cid's count.
    bob = await signed_in(server, connect, tokens["bob"])
    bobs = await open_terminal(bob)
    await cid.request("disposeTerminal", {"channel": opened.pop()})
    await cid.request("createTerminal", {"channel": one_more, "claim": claim})
    for uri in [*opened, one_more]:
        await cid.request("disposeTerminal", {"channel": uri})
    await bob.request("disposeTerminal", {"channel": bobs})


def test_the_refusals_here_try_every_action_a_client_sends_a_terminal():
    sent = {action["type"] for action in WORK} | {"terminal/claimed"}
    assert sent == {
        spec.type
        for spec in ACTIONS.values()
        if spec.channel_kind == "terminal" and spec.client_dispatchable
    }
