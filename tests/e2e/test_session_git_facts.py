"""A session's `_meta.git` over the socket: where its real git working tree stands (branch,
upstream, ahead and behind, uncommitted paths, a worktree's base), said with
session/metaChanged when a session opens and again when a turn moved it, once, with the rest
of `_meta` kept; and nothing read of a repository a planted `.git` file names, nor run of what
a repository's configuration asks.

Turns are `!` commands (a real shell in the session's folder), as an agent's shell would run
git. Reads of one session run in order, so "nothing said" is shown by what a later turn's read
says first.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_changesets import bang, git, opened
from tests.support.agents import server_with_acp_agent
from tests.support.client import Client
from tests.support.server import ServerProcess

#: Who commits in a test's repositories and turns (the server's git has no configuration).
WHO = ("-c", "user.name=Seed", "-c", "user.email=seed@example.com")
WHO_SHELL = " ".join(WHO)


@pytest.fixture(scope="module")
def home() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="ahpd-gf-home-"))
    (path / ".bashrc").write_text("PS1='$ '\n")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def server(home: Path) -> Iterator[ServerProcess]:
    with server_with_acp_agent(
        HOME=str(home), GIT_CONFIG_GLOBAL=str(home / "none"), GIT_CONFIG_NOSYSTEM="1"
    ) as process:
        yield process


@pytest.fixture
def place() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="ahpd-gf-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def commit(folder: Path, name: str, text: str) -> None:
    (folder / name).write_text(text)
    git(folder, "add", name)
    git(folder, *WHO, "commit", "-q", "-m", name)


#: What a clone_with_drift says under _meta.git.
DRIFTED = {
    "branchName": "feature",
    "upstreamBranchName": "origin/feature",
    "outgoingChanges": 1,
    "incomingChanges": 1,
    "uncommittedChanges": 2,
}


def clone_with_drift(place: Path) -> Path:
    """A clone on `feature`, tracking origin/feature: one commit ahead, one behind, one file
    changed and one untracked."""
    origin = place / "origin.git"
    git(place, "init", "-q", "--bare", "-b", "main", str(origin))
    seed = place / "seed"
    git(place, "clone", "-q", str(origin), str(seed))
    commit(seed, "a.txt", "alpha\n")
    git(seed, "push", "-q", "origin", "HEAD:main", "HEAD:feature")
    work = place / "work"
    git(place, "clone", "-q", "-b", "feature", str(origin), str(work))
    commit(seed, "b.txt", "beta\n")
    git(seed, "push", "-q", "origin", "HEAD:feature")
    git(work, "fetch", "-q")
    commit(work, "c.txt", "gamma\n")
    (work / "a.txt").write_text("alpha, changed\n")
    (work / "new.txt").write_text("untracked\n")
    return work


def metas(client: Client, session: str) -> list[dict[str, Any]]:
    """Every `_meta` said to the session so far, in order."""
    return [
        e["action"]["_meta"]
        for e in client.actions
        if e["channel"] == session and e["action"]["type"] == "session/metaChanged"
    ]


async def git_said(client: Client, session: str, facts: dict[str, Any]) -> dict[str, Any]:
    """Wait until the session's state holds these git facts; its whole `_meta` then."""
    await client.wait_for(
        lambda: client.tracked[session][0].get("_meta", {}).get("git") == facts, timeout=20
    )
    meta: dict[str, Any] = client.tracked[session][0]["_meta"]
    return meta


async def test_a_session_says_its_branch_upstream_drift_and_dirt(
    server: ServerProcess, connect: Any, place: Path
) -> None:
    work = clone_with_drift(place)
    client, session, _ = await opened(server, connect, work)
    meta = await git_said(client, session, DRIFTED)
    # The rest of `_meta` is kept beside it: its owner.
    assert set(meta) - {"git"} == {"ahpd.owner"}
    await client.assert_conforms(session)


async def test_a_turn_that_commits_moves_the_counts_and_is_said_once(
    server: ServerProcess, connect: Any, place: Path
) -> None:
    work = clone_with_drift(place)
    client, session, chat = await opened(server, connect, work)
    await git_said(client, session, DRIFTED)
    before = len(metas(client, session))
    await bang(client, chat, f"git {WHO_SHELL} commit -q -am more")
    committed = {
        "branchName": "feature",
        "upstreamBranchName": "origin/feature",
        "outgoingChanges": 2,
        "incomingChanges": 1,
        "uncommittedChanges": 1,
    }
    await git_said(client, session, committed)
    # A turn that moves nothing says nothing: the next moving turn's read is what comes next.
    await bang(client, chat, "true")
    await bang(client, chat, "touch another.txt")
    await git_said(client, session, {**committed, "uncommittedChanges": 2})
    said = [m["git"] for m in metas(client, session)[before:]]
    assert said == [committed, {**committed, "uncommittedChanges": 2}]
    await client.assert_conforms(session)
    # The row says the session's whole `_meta`, and the root was told when it moved.
    rows = (await client.request("listSessions", {"channel": "ahp-root://"}))["items"]
    row = next(r for r in rows if r["resource"] == session)
    assert row["_meta"] == client.tracked[session][0]["_meta"]
    told = [
        p["changes"]["_meta"]
        for m, p in client.notifications
        if m == "root/sessionSummaryChanged" and p["session"] == session and "_meta" in p["changes"]
    ]
    assert told[-1] == row["_meta"]


async def test_a_worktree_names_the_branch_it_was_made_beside(
    server: ServerProcess, connect: Any, place: Path
) -> None:
    main = place / "main"
    git(place, "init", "-q", "-b", "main", str(main))
    commit(main, "a.txt", "alpha\n")
    tree = place / "tree"
    git(main, "worktree", "add", "-q", "-b", "topic", str(tree))
    client, session, _ = await opened(server, connect, tree)
    await git_said(
        client,
        session,
        {"branchName": "topic", "uncommittedChanges": 0, "baseBranchName": "main"},
    )


async def test_a_folder_outside_git_has_no_git_key_until_it_is_one(
    server: ServerProcess, connect: Any, place: Path
) -> None:
    client, session, chat = await opened(server, connect, place)
    assert "git" not in client.tracked[session][0].get("_meta", {})
    await bang(client, chat, "git init -q -b trunk")
    await git_said(client, session, {"branchName": "trunk", "uncommittedChanges": 0})
    # The open's read (earlier, in order) said nothing: the first said is the new repository.
    assert [m.get("git") for m in metas(client, session)] == [
        {"branchName": "trunk", "uncommittedChanges": 0}
    ]


@pytest.mark.parametrize("planted", ["file", "link"])
async def test_a_planted_git_naming_another_repository_is_not_read(
    server: ServerProcess, connect: Any, place: Path, planted: str
) -> None:
    # Another person's repository, on a branch whose name is theirs to know.
    theirs = place / "theirs"
    git(place, "init", "-q", "-b", "their-secret-branch", str(theirs))
    commit(theirs, "secret.txt", "theirs\n")
    mine = place / "mine"
    mine.mkdir()
    if planted == "file":
        (mine / ".git").write_text(f"gitdir: {theirs / '.git'}\n")
    else:
        (mine / ".git").symlink_to(theirs / ".git")
    client, session, chat = await opened(server, connect, mine)
    await bang(
        client,
        chat,
        f"rm .git && git init -q -b mine && git {WHO_SHELL} commit -q --allow-empty -m x",
    )
    await git_said(client, session, {"branchName": "mine", "uncommittedChanges": 0})
    said = [m.get("git") for m in metas(client, session)]
    assert said == [{"branchName": "mine", "uncommittedChanges": 0}]
    assert "their-secret-branch" not in str(client.frames)


async def test_a_repositorys_configuration_runs_nothing_when_it_is_read(
    server: ServerProcess, connect: Any, place: Path
) -> None:
    repo = place / "repo"
    git(place, "init", "-q", "-b", "main", str(repo))
    commit(repo, "a.txt", "alpha\n")
    # Where what ran would leave its mark: inside the repository, which git's sandbox may
    # write, so only the host's own hardening keeps it unwritten.
    ran = repo / ".git" / "ran"
    git(repo, "config", "core.fsmonitor", f"touch {ran}-fsmonitor; false")
    hooks = repo / ".git" / "planted-hooks"
    hooks.mkdir()
    for hook in ("post-index-change", "reference-transaction"):
        (hooks / hook).write_text(f"#!/bin/sh\ntouch {ran}-{hook}\n")
        (hooks / hook).chmod(0o755)
    git(repo, "config", "core.hooksPath", str(hooks))
    client, session, _ = await opened(server, connect, repo)
    await git_said(client, session, {"branchName": "main", "uncommittedChanges": 0})
    assert sorted(p.name for p in ran.parent.iterdir() if p.name.startswith("ran")) == []


async def test_a_session_read_back_after_a_restart_says_where_git_stands_now(
    server: ServerProcess, connect: Any, place: Path
) -> None:
    work = clone_with_drift(place)
    client, session, chat = await opened(server, connect, work)
    facts = DRIFTED
    await git_said(client, session, facts)
    # A turn (the session is announced and kept), and its read said: this server reads no more.
    await bang(client, chat, "touch more.txt")
    await git_said(client, session, {**facts, "uncommittedChanges": 3})
    await client.close()
    # Moved behind the server's back: a restart reads it again rather than saying what it held.
    git(work, "add", "-A")
    git(work, *WHO, "commit", "-q", "-m", "behind its back")
    server.restart()
    again = await connect(server.url)
    await again.initialize()
    await again.request("subscribe", {"channel": session})
    await git_said(again, session, {**facts, "outgoingChanges": 2, "uncommittedChanges": 0})
