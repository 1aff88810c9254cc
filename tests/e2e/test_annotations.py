"""A session's annotations channel (`<session>/annotations`) over the socket: the five mark
actions reduced and kept with the session (a restart opens on them), an unknown mark or entry
refused rather than echoed, a mark's last entry going only with it, who may watch and mark, and
the channel going with its session."""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_grants import cli
from tests.e2e.test_sessions import new_session
from tests.support.agents import server_with_acp_agent
from tests.support.client import Client, RpcError
from tests.support.server import ServerProcess


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    with server_with_acp_agent() as process:
        yield process


@pytest.fixture(scope="module")
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ahpd-annotations-") as path:
        yield Path(path)


def mark(session: str, folder: Path, mark_id: str, *entries: str) -> dict[str, Any]:
    return {
        "id": mark_id,
        "origin": {"session": session},
        "resource": (folder / "a.txt").as_uri(),
        "range": {"start": {"line": 1, "character": 0}, "end": {"line": 2, "character": 0}},
        "resolved": False,
        "entries": [{"id": e, "text": f"about {e}"} for e in entries],
    }


async def refused(client: Client, uri: str, action: dict[str, Any]) -> str:
    seq = await client.dispatch(uri, action)
    refusal = await client.wait_action(
        lambda e: e.get("origin", {}).get("clientSeq") == seq and "rejectionReason" in e
    )
    return str(refusal["rejectionReason"])


async def test_marks_are_reduced_kept_and_refused_for_what_is_not_there(server, connect, folder):
    client = await connect(server.url)
    await client.initialize()
    session, _ = await new_session(client, folder, provider="fake")
    uri = f"{session}/annotations"
    snapshot = (await client.request("subscribe", {"channel": uri}))["snapshot"]
    assert snapshot["state"] == {"annotations": []}

    await client.dispatch_and_wait(
        uri, {"type": "annotations/set", "annotation": mark(session, folder, "m1", "e1")}
    )
    await client.dispatch_and_wait(
        uri,
        {"type": "annotations/entrySet", "annotationId": "m1", "entry": {"id": "e2", "text": "x"}},
    )
    await client.dispatch_and_wait(
        uri, {"type": "annotations/updated", "annotationId": "m1", "resolved": True}
    )
    await client.dispatch_and_wait(
        uri, {"type": "annotations/entryRemoved", "annotationId": "m1", "entryId": "e1"}
    )
    [held] = client.tracked[uri][0]["annotations"]
    assert held["resolved"] is True and [e["id"] for e in held["entries"]] == ["e2"]

    # What nothing here holds is refused, not echoed; a mark's last entry goes only with it.
    unknown = {"type": "annotations/updated", "annotationId": "nope", "resolved": True}
    assert "No annotation nope" in await refused(client, uri, unknown)
    gone = {"type": "annotations/removed", "annotationId": "nope"}
    assert "No annotation nope" in await refused(client, uri, gone)
    no_entry = {"type": "annotations/entryRemoved", "annotationId": "m1", "entryId": "e9"}
    assert "No entry e9" in await refused(client, uri, no_entry)
    last = {"type": "annotations/entryRemoved", "annotationId": "m1", "entryId": "e2"}
    assert "send annotations/removed" in await refused(client, uri, last)
    empty = {"type": "annotations/set", "annotation": mark(session, folder, "m2")}
    assert "at least one entry" in await refused(client, uri, empty)
    assert client.tracked[uri][0]["annotations"] == [held]
    await client.assert_conforms(uri)

    # Kept with the session: the next start opens the channel on it.
    server.restart()
    again = await connect(server.url)
    await again.initialize()
    after = (await again.request("subscribe", {"channel": uri}))["snapshot"]["state"]
    assert after == {"annotations": [held]}
    await again.dispatch_and_wait(uri, {"type": "annotations/removed", "annotationId": "m1"})
    assert again.tracked[uri][0]["annotations"] == []

    # It goes with its session.
    await again.request("disposeSession", {"channel": session})
    with pytest.raises(RpcError) as missing:
        await again.request("subscribe", {"channel": uri})
    assert missing.value.code == -32001


async def test_a_colleague_who_may_read_a_session_may_not_mark_it(server, connect, folder):
    owner_id, other_id = f"ann-{uuid.uuid4().hex[:6]}", f"ann-{uuid.uuid4().hex[:6]}"
    for person in (owner_id, other_id):
        cli(server, "user", "add", person, "--role", "member")
    owner = await connect(server.url, token=cli(server, "user", "token", owner_id)["token"])
    await owner.initialize()
    session, _ = await new_session(owner, folder, provider="fake")
    uri = f"{session}/annotations"
    await owner.request("subscribe", {"channel": uri})
    await owner.dispatch_and_wait(
        uri, {"type": "annotations/set", "annotation": mark(session, folder, "o1", "e1")}
    )

    # Two host-wide members read each other's sessions (the grants matrix), marks included;
    # marking one is working in it, which takes others:work.
    other = await connect(server.url, token=cli(server, "user", "token", other_id)["token"])
    await other.initialize()
    seen = (await other.request("subscribe", {"channel": uri}))["snapshot"]["state"]
    assert [a["id"] for a in seen["annotations"]] == ["o1"]
    planted = {"type": "annotations/set", "annotation": mark(session, folder, "p1", "e1")}
    assert (await refused(other, uri, planted)).startswith(f"user:{other_id} may not others:work")
    removal = {"type": "annotations/removed", "annotationId": "o1"}
    assert (await refused(other, uri, removal)).startswith(f"user:{other_id} may not")
    assert [a["id"] for a in owner.tracked[uri][0]["annotations"]] == ["o1"]

    # Someone the session is hidden from is told nothing of its marks.
    team_id = f"ann-{uuid.uuid4().hex[:6]}"
    cli(server, "team", "add", f"t-{team_id}")
    cli(server, "user", "add", team_id, "--role", "member", "--team", f"t-{team_id}")
    outsider = await connect(server.url, token=cli(server, "user", "token", team_id)["token"])
    await outsider.initialize()
    with pytest.raises(RpcError) as hidden:
        await outsider.request("subscribe", {"channel": uri})
    assert hidden.value.code == -32009


@pytest.mark.parametrize(
    ("action", "named"),
    [
        ({"type": "annotations/set", "annotation": "x"}, "annotation must be an object"),
        ({"type": "annotations/set", "annotation": {"id": "a"}}, "resource must be a URI"),
        ({"type": "annotations/updated", "annotationId": 7}, "annotationId must be a string"),
        ({"type": "annotations/updated", "annotationId": "a", "resolved": "yes"}, "resolved"),
        ({"type": "annotations/entrySet", "annotationId": "a", "entry": []}, "entry must be"),
        ({"type": "annotations/entryRemoved", "annotationId": "a"}, "entryId must be"),
        ({"type": "annotations/removed"}, "annotationId must be a string"),
    ],
)
async def test_a_malformed_mark_is_refused_naming_what_was_wrong(
    server, connect, folder, action, named
):
    client = await connect(server.url)
    await client.initialize()
    session, _ = await new_session(client, folder, provider="fake")
    uri = f"{session}/annotations"
    await client.request("subscribe", {"channel": uri})
    assert named in await refused(client, uri, action)
    assert client.tracked[uri][0]["annotations"] == []
    # The connection is still served.
    await client.request("ping", {"channel": "ahp-root://"})
