"""The gate keeps each token's principal: read once, read again only once told it changed."""

from __future__ import annotations

import asyncio

import pytest

from hosts.engine.channel import Channel
from hosts.engine.permissions import Permissions
from hosts.engine.principal import Principal
from hosts.protocol.errors import ErrorCode, ProtocolError
from hosts.protocol.uris import ROOT_URI
from tests.engine.test_fanout import ROOT_STATE, fanout, watcher


class CountingDirectory:
    """A directory whose answers the test sets, counting each read; `hold` keeps a read
    waiting until released."""

    def __init__(self) -> None:
        self.answers: dict[int, Principal | None] = {}
        self.reads = 0
        self.hold: asyncio.Event | None = None

    async def principal_for_token(self, secret: str) -> Principal | None:
        return None

    async def refresh(self, principal: Principal) -> Principal | None:
        self.reads += 1
        answer = self.answers.get(principal.token_id or 0)
        if self.hold is not None:
            await self.hold.wait()
        return answer


def member(token: int, *grants: str) -> Principal:
    return Principal("user:max", grants or ("config:settings",), token)


def setup() -> tuple[Permissions, CountingDirectory, Channel]:
    core = fanout()
    root = core.open(Channel(ROOT_URI, "root", dict(ROOT_STATE)))
    directory = CountingDirectory()
    return Permissions(directory, core), directory, root


async def test_a_tokens_principal_is_read_once_for_every_command_of_every_connection():
    gate, directory, root = setup()
    directory.answers[7] = member(7)
    first, _ = watcher(gate._fanout, root, "a")
    second, _ = watcher(gate._fanout, root, "b")
    first.principal = second.principal = member(7)
    for _ in range(5):
        assert (await gate.principal_now(first)) is directory.answers[7]
        assert (await gate.principal_now(second)) is directory.answers[7]
    assert directory.reads == 1


async def test_a_forgotten_token_is_read_again_on_its_next_command():
    gate, directory, root = setup()
    directory.answers[7] = member(7)
    conn, _ = watcher(gate._fanout, root, "a")
    conn.principal = member(7)
    await gate.principal_now(conn)
    directory.answers[7] = member(7, "config:settings", "session:create")
    gate.forget([8])  # another token's change reads nothing of this one
    assert not (await gate.principal_now(conn)).may("session:create")
    gate.forget([7])
    assert (await gate.principal_now(conn)).may("session:create")
    gate.forget(None)
    await gate.principal_now(conn)
    assert directory.reads >= 3


async def test_a_read_that_a_change_overtook_answers_its_command_but_is_not_kept():
    gate, directory, root = setup()
    directory.answers[7] = member(7)
    conn, _ = watcher(gate._fanout, root, "a")
    conn.principal = member(7)
    directory.hold = asyncio.Event()
    reading = asyncio.ensure_future(gate.principal_now(conn))
    await asyncio.sleep(0)
    # Committed while the read was under way, which saw the rows as they were before.
    directory.answers[7] = member(7, "config:settings", "session:create")
    gate.forget([7])
    directory.hold.set()
    assert not (await reading).may("session:create")
    await asyncio.gather(*gate._rereads)
    assert (await gate.principal_now(conn)).may("session:create")


async def test_a_revoked_token_stops_its_connection_watching_at_once_and_signs_it_out():
    gate, directory, _ = setup()
    session = gate._fanout.open(Channel("ahp-session:/s", "session", {}))
    directory.answers[7] = member(7, "session:state")
    conn, _ = watcher(gate._fanout, session, "a")
    conn.principal = member(7, "session:state")
    await gate.principal_now(conn)
    directory.answers[7] = None
    gate.forget([7])
    await asyncio.gather(*gate._rereads)
    assert session.uri not in conn.subscriptions
    assert not conn.principal.may("session:state")
    with pytest.raises(ProtocolError) as refused:
        await gate.principal_now(conn)
    assert refused.value.code == ErrorCode.AUTH_REQUIRED
