"""Reading what working folders hold for the agent, on real folders: what cannot be read is
left out and named in its container's load state, nothing outside the fence is read, and
nothing waits or reads a huge file whole."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import pytest

from hosts.engine.channel import Channel
from hosts.engine.folder_watchers import FolderWatchers
from hosts.engine.resources.served import Served
from hosts.engine.resources.watches import BATCH_MS
from hosts.engine.sessions.folder_customization_watches import FolderCustomizations, _Kept
from hosts.engine.sessions.folder_customizations import HEAD_BYTES, MOST_ENTRIES, scan
from hosts.engine.sessions.live_session import LiveSession
from hosts.engine.sessions.records import SessionRecord
from tests.engine.test_fanout import fanout, watcher
from tests.engine.test_watches import GRACE_S, Clock, Refusing

SKILL = "---\nname: {name}\ndescription: A skill\n---\nBody.\n"


def fenced(*roots: Path, private: tuple[Path, ...] = ()):
    def holds(real: Path) -> bool:
        if any(real == p or real.is_relative_to(p) for p in private):
            return False
        return any(real == root or real.is_relative_to(root) for root in roots)

    return holds


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def skills_of(folder: Path, *, holds=None) -> dict[str, Any] | None:
    found = scan([folder], holds or fenced(folder)).containers
    return next((c for c in found if c["uri"] == (folder / ".claude/skills").as_uri()), None)


def test_a_huge_skill_is_read_by_its_head(tmp_path):
    skill = write(tmp_path / ".claude/skills/big/SKILL.md", SKILL.format(name="big"))
    with skill.open("ab") as file:
        file.truncate(4 * 1024**3)  # four gigabytes, sparse: read whole it would not fit
    skills = skills_of(tmp_path)
    assert [c["name"] for c in skills["children"]] == ["big"]


def test_front_matter_unclosed_within_the_head_is_named(tmp_path):
    write(tmp_path / ".claude/skills/long/SKILL.md", "---\nname: long\n" + "x: y\n" * HEAD_BYTES)
    skills = skills_of(tmp_path)
    assert skills["load"]["kind"] == "error"
    assert f"not closed within the first {HEAD_BYTES} bytes" in skills["load"]["message"]


def test_text_that_is_not_utf8_and_a_folder_named_like_a_file_are_named(tmp_path):
    write(tmp_path / ".claude/skills/ok/SKILL.md", SKILL.format(name="ok"))
    write(tmp_path / ".claude/skills/latin/SKILL.md", b"---\nname: caf\xe9\n---\n")
    (tmp_path / ".claude/skills/odd/SKILL.md").mkdir(parents=True)
    skills = skills_of(tmp_path)
    message = skills["load"]["message"]
    assert skills["load"]["kind"] == "degraded"
    assert ".claude/skills/latin/SKILL.md is not UTF-8 text" in message
    assert ".claude/skills/odd/SKILL.md is a directory" in message


def test_a_field_of_the_wrong_kind_is_named(tmp_path):
    write(tmp_path / ".claude/agents/a.md", "---\ndescription: [one, two]\n---\n")
    found = scan([tmp_path], fenced(tmp_path)).containers
    assert found[0]["load"]["kind"] == "error"
    assert ".claude/agents/a.md" in found[0]["load"]["message"]
    assert "description must be text" in found[0]["load"]["message"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_a_file_nobody_may_read_is_named(tmp_path):
    secret = write(tmp_path / "CLAUDE.md", "rules\n")
    secret.chmod(0)
    try:
        found = scan([tmp_path], fenced(tmp_path)).containers
    finally:
        secret.chmod(0o600)
    assert found[0]["load"] == {
        "kind": "error",
        "message": "Nothing could be read: CLAUDE.md could not be read (permission denied)",
    }


def test_a_link_inside_the_folder_is_followed_and_its_folder_watched(tmp_path):
    write(tmp_path / "shared/skills/s/SKILL.md", SKILL.format(name="shared"))
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude/skills").symlink_to(tmp_path / "shared/skills")
    found = scan([tmp_path], fenced(tmp_path))
    skills = found.containers[0]
    assert skills["children"][0]["uri"] == (tmp_path / ".claude/skills/s/SKILL.md").as_uri()
    assert tmp_path / "shared/skills" in found.places


def test_nothing_outside_the_fence_is_read(tmp_path):
    session = tmp_path / "session"
    other = tmp_path / "another-session"
    write(other / "secret/SKILL.md", SKILL.format(name="theirs"))
    write(session / ".claude/skills/ok/SKILL.md", SKILL.format(name="ok"))
    (session / ".claude/skills/theirs").symlink_to(other / "secret")
    (session / "AGENTS.md").symlink_to(session / "AGENTS.md")  # a loop
    kept = session / "kept"
    write(kept / "SKILL.md", SKILL.format(name="kept"))
    (session / ".claude/skills/data").symlink_to(kept)  # the host's own, though inside
    found = scan([session], fenced(session, private=(kept,))).containers
    skills = found[0]
    assert [c["name"] for c in skills["children"]] == ["ok"]
    assert ".claude/skills/theirs leads outside the session's folders" in skills["load"]["message"]
    assert ".claude/skills/data leads outside the session's folders" in skills["load"]["message"]
    rules = found[1]
    assert rules["load"]["kind"] == "error" and "AGENTS.md" in rules["load"]["message"]


def test_a_crowded_folder_is_read_in_part_and_says_so(tmp_path):
    for n in range(MOST_ENTRIES + 5):
        write(tmp_path / f".github/prompts/p{n:04}.prompt.md", "---\ndescription: p\n---\n")
    prompts = scan([tmp_path], fenced(tmp_path)).containers[0]
    assert len(prompts["children"]) == MOST_ENTRIES
    assert prompts["load"]["kind"] == "degraded"
    assert f"the first {MOST_ENTRIES} were read" in prompts["load"]["message"]


def test_two_folders_list_their_own_and_one_listed_twice_is_listed_once(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    write(first / "AGENTS.md", "a\n")
    write(second / "CLAUDE.md", "b\n")
    found = scan([first, second, first], fenced(first, second)).containers
    assert [c["uri"] for c in found] == [first.as_uri(), second.as_uri()]
    assert [c["name"] for c in found] == ["a", "b"]


def test_only_changes_to_what_is_read_read_again(tmp_path):
    kept = _Kept("ahp-session:/x", roots=[tmp_path], places={tmp_path / "shared/skills"})
    touches = FolderCustomizations._touches
    assert touches(kept, tmp_path / "AGENTS.md")
    assert touches(kept, tmp_path / ".claude")
    assert touches(kept, tmp_path / ".claude/skills/new/SKILL.md")
    assert touches(kept, tmp_path / ".github/prompts/p.prompt.md")
    assert touches(kept, tmp_path / "shared/skills/new/SKILL.md")
    assert not touches(kept, tmp_path / "README.md")
    assert not touches(kept, tmp_path / "src/AGENTS.md")
    assert not touches(kept, tmp_path / "node_modules/x/index.js")


# -- the watch over a session's folders, with time moved on by hand ----------------------------


async def a_kept_session(folder: Path, clock: Clock):
    core = fanout()
    core.start()
    record = SessionRecord(
        uri=f"ahp-session:/{folder.name}",
        provider="p",
        created_ms=0,
        modified_ms=0,
        default_chat="ahp-chat:/c",
        working_directories=[folder.as_uri()],
    )
    session = LiveSession(record, core.open(Channel(record.uri, "session", {})), core)
    table = {record.uri: session}
    folders = FolderWatchers(BATCH_MS)
    keeper = FolderCustomizations(
        core, table.get, Served([folder]), folders, GRACE_S, later=clock.later
    )
    keeper.opened(session)
    await keeper.wake(record.uri)
    return core, table, session, folders, keeper


async def test_a_session_is_watched_while_watched_and_let_go_after_the_grace(tmp_path):
    write(tmp_path / "AGENTS.md", "Be brief.\n")
    clock = Clock()
    core, _, session, folders, keeper = await a_kept_session(tmp_path, clock)
    assert [c["uri"] for c in session.channel.state["customizations"]] == [tmp_path.as_uri()]
    assert folders.count == 0  # nobody watches yet: no OS watch held

    conn, _ = watcher(core, session.channel, "a")
    await keeper.attached(session.uri)
    assert folders.count == 1
    core.unsubscribe(conn, session.channel)
    [grace] = clock.pending
    assert grace.delay == GRACE_S
    back, _ = watcher(core, session.channel, "a")  # back within the grace: kept
    assert grace.cancelled and clock.pending == []
    core.disconnect(back)
    await clock.pass_grace()
    assert folders.count == 0
    await keeper.stop()


async def test_a_disposed_session_lets_its_watch_go_at_once(tmp_path):
    write(tmp_path / "CLAUDE.md", "Be brief.\n")
    clock = Clock()
    core, table, session, folders, keeper = await a_kept_session(tmp_path, clock)
    watcher(core, session.channel, "a")
    await keeper.attached(session.uri)
    assert folders.count == 1
    del table[session.uri]  # as Sessions.dispose takes it out before closing its channel
    core.close(session.uri)
    assert folders.count == 0 and clock.pending == []
    await keeper.stop()


def test_a_file_where_a_folder_would_be_holds_nothing(tmp_path):
    write(tmp_path / ".claude", "not a folder\n")
    write(tmp_path / ".github", "not a folder either\n")
    assert scan([tmp_path], fenced(tmp_path)).containers == []


async def test_a_folder_the_system_will_not_watch_is_listed_still_and_asked_again(tmp_path, caplog):
    write(tmp_path / "AGENTS.md", "Be brief.\n")
    refusing = Refusing()
    core = fanout()
    core.start()
    record = SessionRecord(
        uri="ahp-session:/refused",
        provider="p",
        created_ms=0,
        modified_ms=0,
        default_chat="ahp-chat:/c",
        working_directories=[tmp_path.as_uri()],
    )
    session = LiveSession(record, core.open(Channel(record.uri, "session", {})), core)
    folders = FolderWatchers(BATCH_MS, make=refusing)
    keeper = FolderCustomizations(
        core, {record.uri: session}.get, Served([tmp_path]), folders, GRACE_S, later=Clock().later
    )
    keeper.opened(session)
    await keeper.wake(record.uri)
    first, _ = watcher(core, session.channel, "a")
    with caplog.at_level(logging.WARNING, "ahpd.engine"):
        await keeper.attached(record.uri)
    [line] = [r for r in caplog.records if str(tmp_path) in r.getMessage()]
    assert "Too many open files" in line.getMessage() and line.exc_info is None
    # Listed all the same, from the read at its opening.
    assert [c["uri"] for c in session.channel.state["customizations"]] == [tmp_path.as_uri()]
    core.disconnect(first)
    watcher(core, session.channel, "b")
    await keeper.attached(record.uri)
    assert refusing.asked == 2 and folders.count == 0
    await keeper.stop()
