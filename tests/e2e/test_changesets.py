"""Changesets of real git repositories over the socket: the catalogue, a turn's edits read
back with both sides, and commit, discard, stage and unstage, with their refusals.

The fake ACP agent's `edit` turn writes files through the host's `fs/write_text_file`, as an
agent's edit tool does; other turns are `!` commands (a real shell in the session's folder),
as an agent's shell edit would be. The server's git has no global configuration, so a commit
is by the person who asked for it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_grants import cli
from tests.e2e.test_sessions import ended, new_session, turn
from tests.support.agents import server_with_acp_agent
from tests.support.client import Client, RpcError
from tests.support.server import ServerProcess

#: The server's read limit here: a before side larger than this is refused by its size.
READ_LIMIT = 64 * 1024


def git(folder: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(folder), *args], check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture(scope="module")
def home() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="ahpd-cs-home-"))
    (path / ".bashrc").write_text("PS1='$ '\n")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def server(home: Path) -> Iterator[ServerProcess]:
    with server_with_acp_agent(
        HOME=str(home),
        GIT_CONFIG_GLOBAL=str(home / "none"),
        GIT_CONFIG_NOSYSTEM="1",
        AHPD_RESOURCE_READ_LIMIT_BYTES=str(READ_LIMIT),
    ) as process:
        yield process


@pytest.fixture
def repo() -> Iterator[Path]:
    """A repository with two committed files, made for each test."""
    path = Path(tempfile.mkdtemp(prefix="ahpd-cs-repo-"))
    git(path, "init", "-q", "-b", "main")
    (path / "a.txt").write_text("alpha\n")
    (path / "b.txt").write_text("beta\n")
    git(path, "add", ".")
    git(
        path,
        "-c",
        "user.name=Seed",
        "-c",
        "user.email=seed@example.com",
        "commit",
        "-q",
        "-m",
        "seed",
    )
    yield path
    shutil.rmtree(path, ignore_errors=True)


def changeset_of(session: str) -> str:
    return f"{session}/changeset/uncommitted"


async def opened(server: ServerProcess, connect: Any, repo: Path) -> tuple[Client, str, str]:
    """A client, initialized, with a session of the fake agent in `repo`: it, the session and
    its chat."""
    client = await connect(server.url)
    await client.initialize()
    session, chat = await new_session(client, repo, provider="fake")
    return client, session, chat


async def bang(client: Client, chat: str, command: str) -> None:
    await ask(client, chat, f"!{command}")


async def ask(client: Client, chat: str, text: str) -> dict[str, Any]:
    """A turn, run to its end; the turn as it was started."""
    action = turn(text)
    await client.dispatch_and_wait(chat, action)
    end = await client.wait_action(ended(chat, action["turnId"]), timeout=30)
    assert end["action"]["type"] == "chat/turnComplete"
    return action


async def watched(client: Client, uri: str) -> dict[str, Any]:
    """Subscribe to a changeset and wait until its first read is said."""
    await client.request("subscribe", {"channel": uri})
    await client.wait_for(lambda: client.tracked[uri][0]["status"] == "ready", timeout=20)
    return client.tracked[uri][0]


async def files_named(client: Client, uri: str, *names: str) -> dict[str, dict[str, Any]]:
    """Wait until the changeset holds exactly these files; them, by name."""

    def held() -> dict[str, dict[str, Any]] | None:
        rows = {f["id"].rsplit("/", 1)[-1]: f for f in client.tracked[uri][0]["files"]}
        return rows if sorted(rows) == sorted(names) else None

    found: dict[str, dict[str, Any]] = await client.wait_for(held, timeout=20)
    return found


async def invoke(client: Client, uri: str, operation: str, **params: Any) -> dict[str, Any]:
    result: dict[str, Any] = await client.request(
        "invokeChangesetOperation", {"channel": uri, "operationId": operation, **params}
    )
    return result


def statuses(client: Client, uri: str, operation: str) -> list[str]:
    return [
        e["action"]["status"]
        for e in client.actions
        if e["channel"] == uri
        and e["action"]["type"] == "changeset/operationStatusChanged"
        and e["action"]["operationId"] == operation
    ]


async def test_a_session_in_git_lists_its_uncommitted_changes_and_one_elsewhere_its_own(
    server, connect, repo
):
    client, session, _ = await opened(server, connect, repo)
    listed = {e["changeKind"]: e["uriTemplate"] for e in client.tracked[session][0]["changesets"]}
    assert listed == {
        "uncommitted": changeset_of(session),
        "session": f"{session}/changeset/session",
        "turn": f"{session}/changeset/turn/{{turnId}}",
        "compare-turns": f"{session}/changeset/compare/{{originalTurnId}}/{{modifiedTurnId}}",
    }
    plain = Path(tempfile.mkdtemp(prefix="ahpd-cs-plain-"))
    try:
        # Outside git: the session's and its turns' changes, kept by this host; no HEAD.
        other, _ = await new_session(client, plain, provider="fake")
        kinds = {e["changeKind"] for e in client.tracked[other][0]["changesets"]}
        assert kinds == {"session", "turn", "compare-turns"}
        with pytest.raises(RpcError) as refused:
            await client.request("subscribe", {"channel": changeset_of(other)})
        assert refused.value.code == -32001
    finally:
        shutil.rmtree(plain, ignore_errors=True)


async def test_a_turn_that_edits_two_files_is_read_back_then_one_discarded_one_committed(
    server, connect, repo
):
    client, session, chat = await opened(server, connect, repo)
    uri = changeset_of(session)
    state = await watched(client, uri)
    assert state["files"] == []
    assert {op["id"] for op in state["operations"]} == {
        "commit",
        "discard-changes",
        "stage",
        "unstage",
    }
    # The agent's turn edits both files through the host's file system.
    await ask(client, chat, "edit a.txt=alpha\\nmore\\n b.txt=BETA\\n")
    assert (repo / "a.txt").read_text() == "alpha\nmore\n"
    rows = await files_named(client, uri, "a.txt", "b.txt")
    a, b = rows["a.txt"], rows["b.txt"]
    assert a["edit"]["diff"] == {"added": 1, "removed": 0}
    assert b["edit"]["diff"] == {"added": 1, "removed": 1}
    assert a["_meta"] == {"ahpd.staged": False, "ahpd.unstaged": True}
    assert a["edit"]["after"]["uri"] == (repo / "a.txt").resolve().as_uri()
    # The before side is what HEAD holds, read through the host.
    before = await client.request(
        "resourceRead", {"uri": b["edit"]["before"]["content"]["uri"], "encoding": "utf-8"}
    )
    assert before["data"] == "beta\n"
    after = await client.request("resourceRead", {"uri": b["edit"]["after"]["content"]["uri"]})
    assert after["data"] == "BETA\n"

    said = await invoke(
        client, uri, "discard-changes", target={"kind": "resource", "resource": a["id"]}
    )
    assert "a.txt" in said["message"]
    assert (repo / "a.txt").read_text() == "alpha\n"
    assert statuses(client, uri, "discard-changes") == ["running", "idle"]
    await files_named(client, uri, "b.txt")

    await invoke(
        client,
        uri,
        "commit",
        target={"kind": "resource", "resource": b["id"]},
        _meta={"ahpd.commit": {"message": "Shout beta"}},
    )
    assert git(repo, "log", "-1", "--format=%s|%an").strip().startswith("Shout beta|")
    assert git(repo, "show", "HEAD:b.txt") == "BETA\n"
    await client.wait_for(lambda: client.tracked[uri][0]["files"] == [], timeout=20)
    await client.assert_conforms(uri)


async def test_stage_and_unstage_move_a_file_in_and_out_of_the_index(server, connect, repo):
    client, session, chat = await opened(server, connect, repo)
    uri = changeset_of(session)
    await watched(client, uri)
    await bang(client, chat, "printf 'new\\n' > c.txt")
    c = (await files_named(client, uri, "c.txt"))["c.txt"]
    assert "before" not in c["edit"] and c["edit"]["diff"] == {"added": 1, "removed": 0}
    await invoke(client, uri, "stage", target={"kind": "resource", "resource": c["id"]})
    assert git(repo, "diff", "--cached", "--name-only").split() == ["c.txt"]
    staged = client.tracked[uri][0]["files"][0]
    assert staged["_meta"] == {"ahpd.staged": True, "ahpd.unstaged": False}
    commit = next(op for op in client.tracked[uri][0]["operations"] if op["id"] == "commit")
    assert "1 staged file" in commit["confirmation"]
    await invoke(client, uri, "unstage")
    assert git(repo, "diff", "--cached", "--name-only").split() == []
    # The whole changeset, discarded: the untracked file goes too.
    await invoke(client, uri, "discard-changes")
    assert not (repo / "c.txt").exists()
    await client.wait_for(lambda: client.tracked[uri][0]["files"] == [], timeout=20)
    await client.assert_conforms(uri)


async def test_an_edit_outside_any_turn_is_seen_by_the_watcher(server, connect, repo):
    client, session, _ = await opened(server, connect, repo)
    uri = changeset_of(session)
    await watched(client, uri)
    (repo / "b.txt").unlink()
    b = (await files_named(client, uri, "b.txt"))["b.txt"]
    assert "after" not in b["edit"] and b["edit"]["diff"] == {"added": 0, "removed": 1}
    git(repo, "rm", "-q", "b.txt")  # the index moves: the row says it is staged now
    await client.wait_for(
        lambda: client.tracked[uri][0]["files"][0]["_meta"]["ahpd.staged"], timeout=20
    )


async def test_refusals_name_what_was_wrong(server, connect, repo):
    client, session, chat = await opened(server, connect, repo)
    uri = changeset_of(session)
    await watched(client, uri)

    async def refused(params: dict[str, Any]) -> RpcError:
        with pytest.raises(RpcError) as caught:
            await client.request("invokeChangesetOperation", params)
        return caught.value

    unknown = await refused({"channel": f"{session}/changeset/nowhere", "operationId": "commit"})
    assert (unknown.code, unknown.message) == (
        -32001,
        f"Changeset not found: {session}/changeset/nowhere",
    )
    missing = await refused({"channel": uri, "operationId": "push"})
    assert (missing.code, missing.message) == (
        -32602,
        f"Unknown operation 'push' on changeset {uri}",
    )
    outside = await refused(
        {
            "channel": uri,
            "operationId": "stage",
            "target": {"kind": "resource", "resource": Path("/etc/passwd").as_uri()},
        }
    )
    assert outside.code == -32602 and "not under the session's folder" in outside.message
    ranged = await refused(
        {
            "channel": uri,
            "operationId": "stage",
            "target": {"kind": "range", "resource": (repo / "a.txt").as_uri(), "range": {}},
        }
    )
    assert (ranged.code, ranged.message) == (
        -32602,
        "Operation 'stage' does not support scope 'range' (allowed: changeset, resource)",
    )
    bad_meta = await refused(
        {"channel": uri, "operationId": "commit", "_meta": {"ahpd.commit": {"message": ""}}}
    )
    assert bad_meta.code == -32602 and "ahpd.commit" in bad_meta.message

    # While a turn runs, every operation is disabled and an invocation refused.
    action = turn("!sleep 3")
    await client.dispatch_and_wait(chat, action)
    await client.wait_for(
        lambda: all(op["status"] == "disabled" for op in client.tracked[uri][0]["operations"]),
        timeout=20,
    )
    busy = await refused({"channel": uri, "operationId": "stage"})
    assert (busy.code, busy.message) == (
        -32602,
        f"Operation 'stage' is disabled on changeset {uri}",
    )
    await client.wait_action(ended(chat, action["turnId"]), timeout=30)
    await client.wait_for(
        lambda: all(op["status"] == "idle" for op in client.tracked[uri][0]["operations"]),
        timeout=20,
    )

    # A before side outside the fence, or with no commit, is no read.
    with pytest.raises(RpcError) as fenced:
        await client.request("resourceRead", {"uri": "ahpd-git:///etc/passwd?ref=0123456789abc"})
    assert fenced.value.code == -32009
    with pytest.raises(RpcError) as malformed:
        await client.request("resourceRead", {"uri": f"ahpd-git://{repo}/a.txt?ref=HEAD;rm"})
    assert malformed.value.code == -32602
    await client.assert_conforms(uri)


async def test_who_may_watch_and_work_a_changeset(server, connect, repo):
    name = f"g{uuid.uuid4().hex[:8]}"
    cli(server, "user", "add", name, "--role", "guest")
    guest_token = cli(server, "user", "token", name)["token"]
    member = f"m{uuid.uuid4().hex[:8]}"
    cli(server, "user", "add", member, "--role", "member")
    member_token = cli(server, "user", "token", member)["token"]

    owner = await connect(server.url)
    await owner.initialize()
    session, _ = await new_session(owner, repo, provider="fake")
    uri = changeset_of(session)
    (repo / "a.txt").write_text("changed\n")

    guest = await connect(server.url, token=guest_token)
    await guest.initialize()
    await watched(guest, uri)  # a guest reads
    with pytest.raises(RpcError) as refused:
        await guest.request("invokeChangesetOperation", {"channel": uri, "operationId": "stage"})
    assert refused.value.code == -32009

    other = await connect(server.url, token=member_token)
    await other.initialize()
    with pytest.raises(RpcError) as not_theirs:
        await other.request("invokeChangesetOperation", {"channel": uri, "operationId": "stage"})
    assert not_theirs.value.code == -32009 and "others:work" in not_theirs.value.message
    assert git(repo, "diff", "--cached", "--name-only") == ""


async def test_disposing_the_session_clears_its_changeset(server, connect, repo):
    client, session, _ = await opened(server, connect, repo)
    uri = changeset_of(session)
    (repo / "a.txt").write_text("changed\n")
    await watched(client, uri)
    await files_named(client, uri, "a.txt")
    await client.request("disposeSession", {"channel": session})
    await client.wait_action(
        lambda e: e["channel"] == uri and e["action"]["type"] == "changeset/cleared"
    )
    with pytest.raises(RpcError) as gone:
        await client.request("subscribe", {"channel": uri})
    assert gone.value.code == -32001


async def test_a_review_tick_on_the_working_trees_changes_is_refused(server, connect, repo):
    client, session, _ = await opened(server, connect, repo)
    uri = changeset_of(session)
    (repo / "a.txt").write_text("changed\n")
    await watched(client, uri)
    [a] = (await files_named(client, uri, "a.txt")).values()
    seq = await client.dispatch(
        uri, {"type": "changeset/filesReviewChanged", "files": [a["id"]], "reviewed": True}
    )
    refusal = await client.wait_action(
        lambda e: e.get("origin", {}).get("clientSeq") == seq and "rejectionReason" in e
    )
    assert "keeps no review" in refusal["rejectionReason"]
    for bad, named in (
        ({"files": "x", "reviewed": True}, "files must be a list of strings"),
        ({"files": [a["id"]], "reviewed": "yes"}, "reviewed must be a boolean"),
    ):
        seq = await client.dispatch(uri, {"type": "changeset/filesReviewChanged", **bad})
        refusal = await client.wait_action(
            lambda e, seq=seq: (
                e.get("origin", {}).get("clientSeq") == seq and "rejectionReason" in e
            )
        )
        assert named in refusal["rejectionReason"]
    await client.assert_conforms(uri)


async def test_review_ticks_hold_on_the_sessions_and_a_turns_changes_until_the_file_changes(
    server, connect, repo
):
    client, session, chat = await opened(server, connect, repo)
    whole = f"{session}/changeset/session"
    await watched(client, whole)
    first = turn("!printf 'one\\n' > b.txt && printf 'new\\n' > c.txt")
    await client.dispatch_and_wait(chat, first)
    await client.wait_action(ended(chat, first["turnId"]), timeout=30)
    rows = await files_named(client, whole, "b.txt", "c.txt")
    # The catalogue says which changesets keep a review: not the working tree's.
    catalogue = client.tracked[session][0]["changesets"]
    reviewable = {c["changeKind"]: "review" in c.get("capabilities", {}) for c in catalogue}
    assert reviewable == {
        "uncommitted": False,
        "session": True,
        "turn": True,
        "compare-turns": True,
    }
    assert all(len(row["_meta"]["ahpd.blob"]) == 40 for row in rows.values())

    ids = [rows["b.txt"]["id"], rows["c.txt"]["id"]]
    tick = {"type": "changeset/filesReviewChanged", "files": ids, "reviewed": True}
    await client.dispatch_and_wait(whole, tick)
    assert all(f.get("reviewed") for f in client.tracked[whole][0]["files"])
    turn_one = f"{session}/changeset/turn/{first['turnId']}"
    await watched(client, turn_one)
    b_of_turn = (await files_named(client, turn_one, "b.txt", "c.txt"))["b.txt"]
    await client.dispatch_and_wait(turn_one, {**tick, "files": [b_of_turn["id"]]})

    # A turn that changes b.txt again takes its tick off the session's row; c.txt keeps it,
    # and so does the first turn's own row (what that turn did has not changed).
    second = turn("!printf 'two\\n' > b.txt")
    await client.dispatch_and_wait(chat, second)
    await client.wait_action(ended(chat, second["turnId"]), timeout=30)

    def ticks(uri: str) -> dict[str, bool] | None:
        files = {
            f["id"].rsplit("/", 1)[-1]: bool(f.get("reviewed"))
            for f in client.tracked[uri][0]["files"]
        }
        return files if files.get("b.txt") is False else None

    assert await client.wait_for(lambda: ticks(whole), timeout=20) == {
        "b.txt": False,
        "c.txt": True,
    }
    assert {f["id"]: bool(f.get("reviewed")) for f in client.tracked[turn_one][0]["files"]} == {
        b_of_turn["id"]: True,
        rows["c.txt"]["id"]: False,
    }
    # Another client subscribing now is shown the ticks that hold.
    other = await connect(server.url)
    await other.initialize()
    late = (await other.request("subscribe", {"channel": whole}))["snapshot"]["state"]
    await other.wait_for(lambda: other.tracked[whole][0]["status"] == "ready", timeout=20)
    shown = {f["id"]: bool(f.get("reviewed")) for f in other.tracked[whole][0]["files"]}
    assert shown == {rows["b.txt"]["id"]: False, rows["c.txt"]["id"]: True}, late
    for uri in (whole, turn_one):
        await client.assert_conforms(uri)

    # The ticks are kept with the session: the next start shows the ones that hold.
    server.restart()
    client = await connect(server.url)
    await client.initialize()
    await watched(client, whole)
    await files_named(client, whole, "b.txt", "c.txt")
    shown = {f["id"]: bool(f.get("reviewed")) for f in client.tracked[whole][0]["files"]}
    assert shown == {rows["b.txt"]["id"]: False, rows["c.txt"]["id"]: True}
    # A tick taken off is kept off.
    await client.dispatch_and_wait(
        whole, {**tick, "files": [rows["c.txt"]["id"]], "reviewed": False}
    )
    assert not any(f.get("reviewed") for f in client.tracked[whole][0]["files"])
    await client.assert_conforms(whole)


async def test_a_resource_watch_sees_the_file_an_agent_wrote(server, connect, repo):
    client, _, chat = await opened(server, connect, repo)
    watch = await client.request("createResourceWatch", {"uri": repo.as_uri(), "recursive": True})
    await client.request("subscribe", {"channel": watch["channel"]})
    action = turn("write written.txt by the agent")
    await client.dispatch_and_wait(chat, action)
    ready = await client.wait_action(
        lambda e: (
            e["channel"] == chat
            and e["action"]["type"] == "chat/toolCallReady"
            and "confirmed" not in e["action"]
        ),
        timeout=30,
    )
    allow = next(o for o in ready["action"]["options"] if o["kind"] == "approve")
    await client.dispatch(
        chat,
        {
            "type": "chat/toolCallConfirmed",
            "turnId": action["turnId"],
            "toolCallId": ready["action"]["toolCallId"],
            "approved": True,
            "selectedOptionId": allow["id"],
            "confirmed": "user-action",
        },
    )
    await client.wait_action(ended(chat, action["turnId"]), timeout=30)
    written = (repo / "written.txt").resolve().as_uri()
    changed = await client.wait_action(
        lambda e: (
            e["channel"] == watch["channel"]
            and any(c["uri"] == written for c in e["action"]["changes"]["items"])
        ),
        timeout=20,
    )
    assert changed["action"]["type"] == "resourceWatch/changed"


async def test_the_sessions_and_each_turns_changes_and_a_revert_to_what_the_session_found(
    server, connect, repo
):
    (repo / "a.txt").write_text("dirty before the session\n")  # not the session's doing
    client, session, chat = await opened(server, connect, repo)
    whole = f"{session}/changeset/session"
    assert (await watched(client, whole))["files"] == []
    first = turn("!printf 'one\\n' > b.txt")
    await client.dispatch_and_wait(chat, first)
    await client.wait_action(ended(chat, first["turnId"]), timeout=30)
    second = turn("!printf 'fresh\\n' > c.txt && git add c.txt && git commit -qm c")
    await client.dispatch_and_wait(chat, second)
    await client.wait_action(ended(chat, second["turnId"]), timeout=30)

    # The session's: both turns' files, a commit between them or not; a.txt was dirty before.
    rows = await files_named(client, whole, "b.txt", "c.txt")
    before = await client.request(
        "resourceRead", {"uri": rows["b.txt"]["edit"]["before"]["content"]["uri"]}
    )
    assert before["data"] == "beta\n"
    assert "before" not in rows["c.txt"]["edit"]

    # Each turn's own, its after side the tree it left.
    turn_one = f"{session}/changeset/turn/{first['turnId']}"
    await watched(client, turn_one)
    b = (await files_named(client, turn_one, "b.txt"))["b.txt"]
    (repo / "b.txt").write_text("changed since\n")
    left = await client.request("resourceRead", {"uri": b["edit"]["after"]["content"]["uri"]})
    assert left["data"] == "one\n"
    turn_two = f"{session}/changeset/turn/{second['turnId']}"
    await watched(client, turn_two)
    await files_named(client, turn_two, "c.txt")
    with pytest.raises(RpcError) as unknown:
        await client.request("subscribe", {"channel": f"{session}/changeset/turn/never"})
    assert unknown.value.code == -32001

    # Revert: b.txt as the session found it, c.txt (new in the session) gone.
    await invoke(
        client, whole, "revert", target={"kind": "resource", "resource": rows["b.txt"]["id"]}
    )
    await invoke(
        client, whole, "revert", target={"kind": "resource", "resource": rows["c.txt"]["id"]}
    )
    assert (repo / "b.txt").read_text() == "beta\n"
    assert not (repo / "c.txt").exists()
    assert (repo / "a.txt").read_text() == "dirty before the session\n"
    await client.wait_for(lambda: client.tracked[whole][0]["files"] == [], timeout=20)
    for uri in (whole, turn_one, turn_two):
        await client.assert_conforms(uri)


async def test_two_turns_compared_from_the_tree_one_left_to_the_tree_the_other_left(
    server, connect, repo
):
    client, session, chat = await opened(server, connect, repo)
    first = await ask(client, chat, "!printf 'one\\n' > b.txt")
    second = await ask(client, chat, "!printf 'two\\n' > b.txt && printf 'new\\n' > c.txt")
    third = await ask(client, chat, "!rm c.txt && printf 'd\\n' > d.txt")

    def compare(a: dict[str, Any], b: dict[str, Any]) -> str:
        return f"{session}/changeset/compare/{a['turnId']}/{b['turnId']}"

    one_two = compare(first, second)
    assert (await watched(client, one_two))["operations"] == []
    rows = await files_named(client, one_two, "b.txt", "c.txt")
    b = rows["b.txt"]["edit"]
    before = await client.request("resourceRead", {"uri": b["before"]["content"]["uri"]})
    after = await client.request("resourceRead", {"uri": b["after"]["content"]["uri"]})
    assert (before["data"], after["data"]) == ("one\n", "two\n")
    assert "before" not in rows["c.txt"]["edit"]
    # What the tree holds now is not what the turn left: the after side stays the turn's.
    (repo / "b.txt").write_text("changed since\n")
    again = await client.request("resourceRead", {"uri": b["after"]["content"]["uri"]})
    assert again["data"] == "two\n"

    # From the first turn's end to the third's: c.txt came and went, so it is not there.
    one_three = compare(first, third)
    await watched(client, one_three)
    await files_named(client, one_three, "b.txt", "d.txt")
    same = compare(second, second)
    assert (await watched(client, same))["files"] == []
    for uri in (one_two, one_three, same):
        await client.assert_conforms(uri)

    # A turn the session never ran, or a scope that names no two turns, is nothing here.
    for missing in (
        f"{session}/changeset/compare/{first['turnId']}/never",
        f"{session}/changeset/compare/never/{second['turnId']}",
        f"{session}/changeset/compare/{first['turnId']}",
        f"{session}/changeset/compare/{first['turnId']}/{second['turnId']}/x",
    ):
        with pytest.raises(RpcError) as unknown:
            await client.request("subscribe", {"channel": missing})
        assert unknown.value.code == -32001, missing

    # Someone the session is hidden from reads none of it.
    team = f"cmp-{uuid.uuid4().hex[:6]}"
    cli(server, "team", "add", f"t-{team}")
    cli(server, "user", "add", team, "--role", "member", "--team", f"t-{team}")
    outsider = await connect(server.url, token=cli(server, "user", "token", team)["token"])
    await outsider.initialize()
    with pytest.raises(RpcError) as hidden:
        await outsider.request("subscribe", {"channel": one_two})
    assert hidden.value.code == -32009
    assert hidden.value.message.startswith(f"user:{team} may not ")


def commit_all(folder: Path, message: str) -> None:
    git(folder, "add", "-A")
    git(
        folder,
        "-c",
        "user.name=Seed",
        "-c",
        "user.email=seed@example.com",
        "commit",
        "-qm",
        message,
    )


def operation(client: Client, uri: str, operation_id: str) -> dict[str, Any]:
    held: dict[str, Any] = next(
        op for op in client.tracked[uri][0]["operations"] if op["id"] == operation_id
    )
    return held


async def refusal(client: Client, uri: str, operation_id: str, **params: Any) -> tuple[int, str]:
    with pytest.raises(RpcError) as refused:
        await invoke(client, uri, operation_id, **params)
    return refused.value.code, refused.value.message


async def test_discarding_everything_in_a_repository_with_no_commit_is_refused(server, connect):
    fresh = Path(tempfile.mkdtemp(prefix="ahpd-cs-fresh-"))
    try:
        git(fresh, "init", "-q", "-b", "main")
        (fresh / "new.txt").write_text("new\n")
        client, session, _ = await opened(server, connect, fresh)
        uri = changeset_of(session)
        await watched(client, uri)
        new = (await files_named(client, uri, "new.txt"))["new.txt"]
        assert operation(client, uri, "discard-changes")["scopes"] == ["resource"]
        # Every file there is new: the whole changeset would delete them all.
        assert await refusal(client, uri, "discard-changes") == (
            -32602,
            "Operation 'discard-changes' does not support scope 'changeset' (allowed: resource)",
        )
        assert (fresh / "new.txt").exists()
        await invoke(
            client, uri, "discard-changes", target={"kind": "resource", "resource": new["id"]}
        )
        assert not (fresh / "new.txt").exists()
        await client.wait_for(lambda: client.tracked[uri][0]["files"] == [], timeout=20)
        await client.assert_conforms(uri)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)


async def test_a_commit_with_no_words_goes_in_under_the_session_title_its_confirmation_names(
    server, connect, repo
):
    client, session, _ = await opened(server, connect, repo)
    uri = changeset_of(session)
    (repo / "a.txt").write_text("changed\n")
    await watched(client, uri)
    await files_named(client, uri, "a.txt")
    takes = "The whole changeset takes 1 file, 0 untracked."
    untitled = f"Commit as 'Changes made in an ahpd session'? {takes}"
    assert operation(client, uri, "commit")["confirmation"] == untitled
    # Renamed: the operation is declared again, so its sentence stays true.
    rename = {"type": "session/titleChanged", "title": "Tidy the alphabet"}
    await client.dispatch_and_wait(session, rename)
    await client.wait_for(
        lambda: (
            operation(client, uri, "commit")["confirmation"]
            == f"Commit as 'Tidy the alphabet'? {takes}"
        ),
        timeout=20,
    )
    said = await invoke(client, uri, "commit")
    assert "'Tidy the alphabet'" in said["message"]
    assert git(repo, "log", "-1", "--format=%s").strip() == "Tidy the alphabet"
    await client.wait_for(lambda: client.tracked[uri][0]["files"] == [], timeout=20)
    await client.assert_conforms(uri)
    await client.assert_conforms(session)


async def test_a_before_side_over_the_read_limit_is_refused_by_its_size(server, connect, repo):
    (repo / "big.txt").write_text("x" * (READ_LIMIT + 1))
    commit_all(repo, "big")
    (repo / "big.txt").write_text("small now\n")
    client, session, _ = await opened(server, connect, repo)
    uri = changeset_of(session)
    await watched(client, uri)
    big = (await files_named(client, uri, "big.txt"))["big.txt"]
    before = big["edit"]["before"]["content"]["uri"]
    with pytest.raises(RpcError) as refused:
        await client.request("resourceRead", {"uri": before})
    assert refused.value.code == -32602
    assert refused.value.message == (
        f"resourceRead: {before} is {READ_LIMIT + 1} bytes, over this host's read limit of "
        f"{READ_LIMIT} (AHPD_RESOURCE_READ_LIMIT_BYTES)"
    )


async def test_a_folder_that_becomes_a_repository_is_told_its_changesets_and_loses_them(
    server, connect
):
    plain = Path(tempfile.mkdtemp(prefix="ahpd-cs-plain-"))
    try:
        client = await connect(server.url)
        await client.initialize()
        session, chat = await new_session(client, plain, provider="fake")
        outside = client.tracked[session][0]["changesets"]
        assert {e["changeKind"] for e in outside} == {"session", "turn", "compare-turns"}
        assert client.tracked[chat][0]["changesets"] == outside
        await bang(client, chat, "git init -q -b main")

        def catalogue_said(channel: str, kind: str, size: int) -> Any:
            return lambda e: (
                e["channel"] == channel
                and e["action"]["type"] == kind
                and len(e["action"].get("changesets", [])) == size
            )

        said = await client.wait_action(
            catalogue_said(session, "session/changesetsChanged", 4), timeout=20
        )
        catalogue = said["action"]["changesets"]
        assert {e["changeKind"]: e["uriTemplate"] for e in catalogue} == {
            "uncommitted": changeset_of(session),
            "session": f"{session}/changeset/session",
            "turn": f"{session}/changeset/turn/{{turnId}}",
            "compare-turns": f"{session}/changeset/compare/{{originalTurnId}}/{{modifiedTurnId}}",
        }
        # The chat works in the session's folder: it lists the same.
        on_chat = await client.wait_action(
            catalogue_said(chat, "chat/changesetsChanged", 4), timeout=20
        )
        assert on_chat["action"]["changesets"] == catalogue
        uri = changeset_of(session)
        (plain / "x.txt").write_text("x\n")
        await watched(client, uri)
        await files_named(client, uri, "x.txt")

        # Out of git again: no uncommitted changes, and the one a client held is cleared.
        await bang(client, chat, "rm -rf .git")
        await client.wait_action(
            catalogue_said(session, "session/changesetsChanged", 3), timeout=20
        )
        await client.wait_action(
            lambda e: e["channel"] == uri and e["action"]["type"] == "changeset/cleared",
            timeout=20,
        )
        for channel in (session, chat):
            await client.assert_conforms(channel)
        assert client.tracked[session][0]["changesets"] == outside
    finally:
        shutil.rmtree(plain, ignore_errors=True)


async def test_outside_git_the_before_side_is_what_the_first_turn_found(server, connect):
    plain = Path(tempfile.mkdtemp(prefix="ahpd-cs-plain-"))
    try:
        (plain / "a.txt").write_text("alpha\n")
        (plain / "same.txt").write_text("same\n")
        client, session, chat = await opened(server, connect, plain)
        whole = f"{session}/changeset/session"
        assert (await watched(client, whole))["files"] == []
        first = await ask(client, chat, "edit a.txt=ALPHA\\n b.txt=new\\n")
        rows = await files_named(client, whole, "a.txt", "b.txt")
        a, b = rows["a.txt"], rows["b.txt"]
        assert a["edit"]["diff"] == {"added": 1, "removed": 1}
        assert "before" not in b["edit"] and b["edit"]["diff"] == {"added": 1, "removed": 0}
        before = await client.request(
            "resourceRead", {"uri": a["edit"]["before"]["content"]["uri"]}
        )
        assert before["data"] == "alpha\n"
        assert a["edit"]["after"]["content"]["uri"] == (plain / "a.txt").resolve().as_uri()
        # A second turn's own changes start where the first left the folder.
        second = await ask(client, chat, "edit a.txt=ALPHA!\\n")
        own = f"{session}/changeset/turn/{second['turnId']}"
        await watched(client, own)
        row = (await files_named(client, own, "a.txt"))["a.txt"]
        was = await client.request("resourceRead", {"uri": row["edit"]["before"]["content"]["uri"]})
        assert was["data"] == "ALPHA\n"
        earlier = f"{session}/changeset/turn/{first['turnId']}"
        await watched(client, earlier)
        await files_named(client, earlier, "a.txt", "b.txt")
        # The two compared, from the trees this host kept for each.
        compared = f"{session}/changeset/compare/{first['turnId']}/{second['turnId']}"
        await watched(client, compared)
        row = (await files_named(client, compared, "a.txt"))["a.txt"]
        was = await client.request("resourceRead", {"uri": row["edit"]["before"]["content"]["uri"]})
        assert was["data"] == "ALPHA\n"

        # Revert: each file as the session found it, one it did not find gone.
        for name in ("a.txt", "b.txt"):
            target = {"kind": "resource", "resource": rows[name]["id"]}
            await invoke(client, whole, "revert", target=target)
        assert (plain / "a.txt").read_text() == "alpha\n"
        assert not (plain / "b.txt").exists()
        await client.wait_for(lambda: client.tracked[whole][0]["files"] == [], timeout=20)
        await client.assert_conforms(whole)
        # Kept in this host's own data directory: nothing was added to the folder.
        assert sorted(p.name for p in plain.iterdir()) == ["a.txt", "same.txt"]
    finally:
        shutil.rmtree(plain, ignore_errors=True)


def _release(gate: Path) -> None:
    with open(gate, "w") as writer:  # waits for the hook to open its end
        writer.write("go\n")


async def test_an_identical_invocation_shares_the_run_and_a_turn_refuses_the_next(
    server, connect, repo
):
    # The host's git runs no hook; a clean filter it does run (in the sandbox), and this one
    # waits on a pipe when the commit adds a.txt: the commit stays in flight until let go.
    # (status and a turn's snapshot, which read a.txt too, pass straight through.)
    gate = repo / ".git" / "gate"
    os.mkfifo(gate)
    hold = repo / ".git" / "hold.sh"
    hold.write_text(
        "#!/bin/sh\n"
        "if [ -z \"$GIT_INDEX_FILE\" ] && tr '\\0' ' ' < /proc/$PPID/cmdline | grep -q ' add '"
        f"; then read line < '{gate}'; fi\n"
        "exec cat\n"
    )
    hold.chmod(0o755)
    git(repo, "config", "filter.hold.clean", str(hold))
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "attributes").write_text("a.txt filter=hold\n")
    (repo / "a.txt").write_text("changed\n")
    first, session, chat = await opened(server, connect, repo)
    uri = changeset_of(session)
    await watched(first, uri)
    await files_named(first, uri, "a.txt")
    second = await connect(server.url)
    await second.initialize()
    third = await connect(server.url)
    await third.initialize()
    await third.request("subscribe", {"channel": chat})
    params = {
        "channel": uri,
        "operationId": "commit",
        "_meta": {"ahpd.commit": {"message": "Once"}},
    }
    try:
        one = asyncio.create_task(first.request("invokeChangesetOperation", params))
        await first.wait_for(lambda: statuses(first, uri, "commit") == ["running"], timeout=20)
        two = asyncio.create_task(second.request("invokeChangesetOperation", params))
        joined = await asyncio.to_thread(
            server.wait_output, lambda line: "joins the run in flight" in line and uri in line, 20
        )
        assert joined
        # A turn begins while the commit is held: the list goes disabled.
        slow = turn("slow")
        await third.dispatch_and_wait(chat, slow)
        await first.wait_for(
            lambda: all(op["status"] == "disabled" for op in first.tracked[uri][0]["operations"]),
            timeout=20,
        )
        await asyncio.wait_for(asyncio.to_thread(_release, gate), 30)
        said_one, said_two = await one, await two
    finally:
        os.close(os.open(gate, os.O_RDONLY | os.O_NONBLOCK))  # a writer left waiting goes
    assert said_one == said_two and said_one["message"].startswith("Committed")
    assert git(repo, "log", "--format=%s").split("\n")[:2] == ["Once", "seed"]
    assert statuses(first, uri, "commit") == ["running", "idle"]

    # Mid-turn, an operation the list holds disabled is refused as such, in VS Code's words.
    assert await refusal(first, uri, "stage") == (
        -32602,
        f"Operation 'stage' is disabled on changeset {uri}",
    )
    stop = {"type": "chat/turnCancelled", "turnId": slow["turnId"], "duration": 1}
    assert "rejectionReason" not in await third.dispatch_and_wait(chat, stop)
    await first.wait_for(
        lambda: all(op["status"] == "idle" for op in first.tracked[uri][0]["operations"]),
        timeout=20,
    )
    await first.assert_conforms(uri)
