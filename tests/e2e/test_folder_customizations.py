"""What a session's working folders hold for its agent, listed as its customizations over a
real socket, on real folders: at creation, kept current by the folder watch while a client
watches, toggled per session and kept across a restart; a planted link, a named pipe and
another member's toggle refused."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_grants import cli
from tests.support.agents import server_with_local_agent
from tests.support.client import Client
from tests.support.server import ServerProcess

ROOT = "ahp-root://"
SKILL = "---\nname: {name}\ndescription: {description}\n---\nDo the thing.\n"


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    with server_with_local_agent() as process:
        yield process


@pytest.fixture
def folder() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="ahpd-customizations-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def tokens(server: ServerProcess) -> dict[str, str]:
    made = {}
    for person, role in (("max", "member"), ("tom", "member"), ("gus", "guest")):
        cli(server, "user", "add", person, "--role", role)
        made[person] = cli(server, "user", "token", person)["token"]
    return made


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


async def opened(client: Client, folder: Path) -> tuple[str, dict[str, Any]]:
    """A session of the client's in `folder`, subscribed: its URI and its state."""
    uri = f"ahp-session:/{uuid.uuid4()}"
    await client.request(
        "createSession",
        {"channel": uri, "provider": "local", "workingDirectories": [folder.as_uri()]},
    )
    state = (await client.request("subscribe", {"channel": uri}))["snapshot"]["state"]
    return uri, state


def container(customizations: list[dict[str, Any]], place: Path) -> dict[str, Any] | None:
    return next((c for c in customizations if c["uri"] == place.as_uri()), None)


def child_ids(customizations: list[dict[str, Any]]) -> set[str]:
    return {child["id"] for c in customizations for child in c.get("children") or ()}


def listed(client: Client, uri: str) -> list[dict[str, Any]]:
    """The session's customizations as the client's tracked state holds them."""
    return list(client.tracked[uri][0].get("customizations") or [])


async def test_a_session_lists_what_its_folder_holds(server, connect, folder):
    write(
        folder / ".claude/skills/review/SKILL.md",
        SKILL.format(name="review", description="Reviews a change"),
    )
    write(
        folder / ".claude/agents/tester.md",
        "---\nname: tester\ndescription: Writes tests\nmodel: sonnet\ntools: Read, Bash\n---\n",
    )
    write(folder / "AGENTS.md", "Be brief.\n")
    write(
        folder / ".github/instructions/py.instructions.md", '---\napplyTo: "**/*.py"\n---\nPEP 8.\n'
    )
    write(folder / ".github/prompts/plan.prompt.md", "---\ndescription: Plans the work\n---\n")
    write(folder / "src/main.py", "print()\n")  # nothing for the agent
    client = await connect(server.url)
    await client.initialize()
    _, state = await opened(client, folder)
    found = state["customizations"]
    assert [c["uri"] for c in found] == [
        (folder / ".claude/skills").as_uri(),
        (folder / ".claude/agents").as_uri(),
        folder.as_uri(),
        (folder / ".github/instructions").as_uri(),
        (folder / ".github/prompts").as_uri(),
    ]
    assert all(c["type"] == "directory" and c["load"] == {"kind": "loaded"} for c in found)
    assert all(c["writable"] is False and c["enabled"] is True for c in found)
    assert [c["contents"] for c in found] == ["skill", "agent", "rule", "rule", "prompt"]
    skill_uri = (folder / ".claude/skills/review/SKILL.md").as_uri()
    assert container(found, folder / ".claude/skills")["children"] == [
        {
            "id": skill_uri,
            "uri": skill_uri,
            "type": "skill",
            "name": "review",
            "description": "Reviews a change",
        }
    ]
    agent = container(found, folder / ".claude/agents")["children"][0]
    assert (agent["name"], agent["model"], agent["tools"]) == ("tester", "sonnet", ["Read", "Bash"])
    rule = container(found, folder)["children"][0]
    assert (rule["type"], rule["name"], rule["alwaysApply"]) == ("rule", "AGENTS.md", True)
    instructions = container(found, folder / ".github/instructions")["children"][0]
    assert (instructions["name"], instructions["globs"]) == ("py", ["**/*.py"])
    prompt = container(found, folder / ".github/prompts")["children"][0]
    assert (prompt["type"], prompt["description"]) == ("prompt", "Plans the work")


async def test_a_folder_with_nothing_for_the_agent_adds_no_container(server, connect, folder):
    write(folder / "README.md", "# nothing here\n")
    (folder / ".claude").mkdir()
    client = await connect(server.url)
    await client.initialize()
    _, state = await opened(client, folder)
    assert not state.get("customizations")


async def test_a_skill_written_while_watched_is_listed_and_one_deleted_goes(
    server, connect, folder
):
    write(folder / "AGENTS.md", "Be brief.\n")
    client = await connect(server.url)
    await client.initialize()
    uri, state = await opened(client, folder)
    assert container(state["customizations"], folder / ".claude/skills") is None

    skill = write(
        folder / ".claude/skills/deploy/SKILL.md",
        SKILL.format(name="deploy", description="Ships it"),
    )
    said = await client.wait_action(
        lambda e: (
            e["channel"] == uri
            and e["action"]["type"] == "session/customizationsChanged"
            and skill.as_uri() in child_ids(e["action"]["customizations"])
        )
    )
    skills = container(said["action"]["customizations"], folder / ".claude/skills")
    assert skills["children"][0]["description"] == "Ships it"

    skill.unlink()
    await client.wait_for(lambda: container(listed(client, uri), folder / ".claude/skills") is None)
    # The rule at the root is still there: only what moved went.
    assert (folder / "AGENTS.md").as_uri() in child_ids(listed(client, uri))
    await client.assert_conforms(uri)


async def test_a_planted_link_and_a_named_pipe_are_left_out_and_named(server, connect, folder):
    write(folder / ".claude/skills/good/SKILL.md", SKILL.format(name="good", description="Fine"))
    planted = folder / ".claude/skills/evil/SKILL.md"
    planted.parent.mkdir(parents=True)
    planted.symlink_to("/etc/passwd")
    pipe = folder / ".claude/skills/pipe/SKILL.md"
    pipe.parent.mkdir(parents=True)
    os.mkfifo(pipe)
    (folder / ".claude/agents").symlink_to("/etc")  # a whole folder leading out
    # Another folder this host serves, not this session's: another person's skills.
    theirs = Path(tempfile.mkdtemp(prefix="ahpd-theirs-"))
    write(theirs / "secret/SKILL.md", SKILL.format(name="theirs", description="Not yours"))
    (folder / ".claude/skills/theirs").symlink_to(theirs / "secret")
    client = await connect(server.url)
    await client.initialize()
    _, state = await opened(client, folder)  # answered: nothing waited on the pipe
    found = state["customizations"]
    skills = container(found, folder / ".claude/skills")
    assert [child["name"] for child in skills["children"]] == ["good"]
    assert skills["load"]["kind"] == "degraded"
    assert (
        ".claude/skills/evil/SKILL.md leads outside the session's folders"
        in (skills["load"]["message"])
    )
    assert ".claude/skills/pipe/SKILL.md is a named pipe (FIFO)" in skills["load"]["message"]
    assert (
        ".claude/skills/theirs leads outside the session's folders" in (skills["load"]["message"])
    )
    shutil.rmtree(theirs)
    agents = container(found, folder / ".claude/agents")
    assert agents["children"] == []
    assert agents["load"]["kind"] == "error"
    assert ".claude/agents leads outside the session's folders" in agents["load"]["message"]
    # Nothing of what the links lead to was read.
    assert not any("root:x:0:0" in str(frame) for frame in client.frames)


async def test_only_who_may_configure_the_session_toggles_a_skill(server, connect, folder, tokens):
    skill = write(
        folder / ".claude/skills/lint/SKILL.md", SKILL.format(name="lint", description="Lints")
    )
    toggle = {
        "type": "session/customizationToggled",
        "id": skill.as_uri(),
        "enablement": [{"kind": "session", "enabled": False}],
    }
    owner = await connect(server.url, token=tokens["max"])
    await owner.initialize()
    uri, _ = await opened(owner, folder)
    # Another member reads the session (the host's scope) and may not change it; a guest
    # holds no session:configure anywhere.
    for person, why in (("tom", "is user:max's"), ("gus", "session:configure")):
        other = await connect(server.url, token=tokens[person])
        await other.initialize()
        await other.request("subscribe", {"channel": uri})
        refused = await other.dispatch_and_wait(uri, toggle)
        assert why in refused["rejectionReason"], refused["rejectionReason"]
    await owner.settle()
    skills = container(listed(owner, uri), folder / ".claude/skills")
    assert skills["children"][0].get("enabled", True) is True
    # The owner may.
    assert "rejectionReason" not in await owner.dispatch_and_wait(uri, toggle)
    assert (
        container(listed(owner, uri), folder / ".claude/skills")["children"][0]["enabled"] is False
    )


async def test_a_skill_toggled_off_stays_off_across_a_restart(server, connect, folder):
    skill = write(
        folder / ".claude/skills/tidy/SKILL.md", SKILL.format(name="tidy", description="Tidies")
    )
    client = await connect(server.url)
    await client.initialize()
    uri, _ = await opened(client, folder)
    echo = await client.dispatch_and_wait(
        uri,
        {
            "type": "session/customizationToggled",
            "id": skill.as_uri(),
            "enablement": [{"kind": "session", "enabled": False}],
        },
    )
    assert "rejectionReason" not in echo
    skills = container(listed(client, uri), folder / ".claude/skills")
    assert skills["children"][0]["enabled"] is False
    await client.assert_conforms(uri)
    await client.close()

    server.restart()
    again = await connect(server.url)
    await again.initialize()
    state = (await again.request("subscribe", {"channel": uri}))["snapshot"]["state"]
    skills = container(state["customizations"], folder / ".claude/skills")
    assert skills["children"][0]["id"] == skill.as_uri()
    assert skills["children"][0]["enabled"] is False
