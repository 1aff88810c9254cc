"""A session's folders changed by a client: session/workingDirectorySet, Removed, Replaced.

Two ACP providers of the fake agent: `wide` says it takes additional directories, `narrow`
does not. max (a member) owns the sessions and works from a VS Code editor window; tom (a
member too) may read max's sessions but not work in them. Each refusal is VS Code's host's,
in its order and words (seed 000), and leaves the set as it was; a change taken is said to
every client of the session, reaches the agent at its next turn, and survives a restart.
"""

from __future__ import annotations

import json
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_sessions import run_turn
from tests.support.agents import ACP_AGENT
from tests.support.client import Client
from tests.support.server import ServerProcess

ROOT = "ahp-root://"
EDITOR = {"name": "vscode-editor-window", "version": "1.107.0"}
AGENTS_WINDOW = {"name": "vscode-agents-window", "version": "1.107.0"}
PINNED = {"multipleWorkingDirectories": {"immutablePrimary": True, "primaryReplacement": True}}

SETUP = """
import json
from django.contrib.auth import get_user_model
from hosts.models import Membership, Role
from hosts.store import mint_token
tokens = {}
for person in ("max", "tom"):
    user = get_user_model().objects.create_user(username=person)
    Membership.objects.create(user=user, role=Role.objects.get(name="member"), primary=True)
    tokens[person] = mint_token(person, "tests").secret
print(json.dumps(tokens))
"""


@pytest.fixture(scope="module")
def workdir():
    with tempfile.TemporaryDirectory(prefix="ahpd-folders-") as path:
        root = Path(path)
        for name in ("f0", "f1", "f2", "f3"):
            (root / name).mkdir()
        yield root


@pytest.fixture(scope="module")
def server(workdir: Path):
    def fake(provider: str, **env: str) -> dict[str, Any]:
        return {
            "provider": provider,
            "kind": "acp",
            "displayName": f"Fake ACP agent ({provider})",
            "command": sys.executable,
            "args": [str(ACP_AGENT)],
            "env": env,
            "promptTimeoutSeconds": 60,
        }

    config = workdir / "agents.json"
    config.write_text(
        json.dumps({"agents": [fake("wide", FAKE_ACP_MORE_DIRS="1"), fake("narrow")]})
    )
    process = ServerProcess(env_extra={"AHPD_CONFIG": str(config)}).start()
    yield process
    process.close()


@pytest.fixture(scope="module")
def tokens(server: ServerProcess) -> dict[str, str]:
    return dict(server.shell_json(SETUP))


def folder(workdir: Path, name: str) -> str:
    return (workdir / name).as_uri()


async def editor(server: ServerProcess, connect, token: str, **info: Any) -> Client:
    client = await connect(server.url, token=token)
    await client.initialize(clientInfo=info or EDITOR)
    return client


async def made(
    client: Client,
    workdir: Path,
    *,
    provider: str = "wide",
    multi_root: bool = True,
    first_turn: bool = True,
) -> tuple[str, str]:
    """A session of the client's in f0 (made from a multi-root workspace unless told), ready
    once its first turn ran: its URI and its default chat's."""
    uri = f"ahp-session:/{uuid.uuid4()}"
    params: dict[str, Any] = {
        "channel": uri,
        "provider": provider,
        "workingDirectories": [folder(workdir, "f0")],
    }
    if multi_root:
        params["_meta"] = {"multiRoot": True}
    await client.request("createSession", params)
    state = (await client.request("subscribe", {"channel": uri}))["snapshot"]["state"]
    chat = state["defaultChat"]
    await client.request("subscribe", {"channel": chat})
    if first_turn:
        end = await run_turn(client, chat, "hello")
        assert end["action"]["type"] == "chat/turnComplete"
    return uri, chat


async def folders_of(client: Client, session: str) -> list[str]:
    state = (await client.request("subscribe", {"channel": session}))["snapshot"]["state"]
    return list(state["workingDirectories"])


async def dirs_said(client: Client, chat: str) -> list[str]:
    """The folders the chat's agent was opened in, as it says them (the fake's `dirs?`)."""
    end = await run_turn(client, chat, "dirs?")
    assert end["action"]["type"] == "chat/turnComplete"
    parts = client.tracked[chat][0]["turns"][-1]["responseParts"]
    text = "".join(p["content"] for p in parts if p["kind"] == "markdown")
    return text.removeprefix("dirs: ").split(" | ")


def set_(directory: str) -> dict[str, Any]:
    return {"type": "session/workingDirectorySet", "directory": directory}


def removed(directory: str) -> dict[str, Any]:
    return {"type": "session/workingDirectoryRemoved", "directory": directory}


def replaced(directory: str, replacement: str) -> dict[str, Any]:
    return {
        "type": "session/workingDirectoryReplaced",
        "directory": directory,
        "replacement": replacement,
    }


async def refused(client: Client, channel: str, action: dict[str, Any]) -> str:
    echo = await client.dispatch_and_wait(channel, action)
    assert "rejectionReason" in echo, echo
    return str(echo["rejectionReason"])


async def test_an_agent_that_takes_more_folders_is_advertised_with_its_primary_pinned(
    server, connect, tokens, workdir
):
    max_ = await editor(server, connect, tokens["max"])
    await made(max_, workdir)  # the agent says what it takes at its first start
    # Said to every client as it is learned; a client that comes now is shown it.
    again = await editor(server, connect, tokens["max"])
    root = (await again.request("subscribe", {"channel": ROOT}))["snapshot"]["state"]
    by_provider = {a["provider"]: a for a in root["agents"]}
    assert by_provider["wide"]["capabilities"] == PINNED
    assert "capabilities" not in by_provider["narrow"]


async def test_a_set_a_replacement_and_a_removal_reach_a_second_client_and_the_agent(
    server, connect, tokens, workdir
):
    max_ = await editor(server, connect, tokens["max"])
    watcher = await editor(server, connect, tokens["max"])
    uri, chat = await made(max_, workdir)
    await watcher.request("subscribe", {"channel": uri})
    f0, f1, f2 = (folder(workdir, n) for n in ("f0", "f1", "f2"))
    assert await dirs_said(max_, chat) == [str(workdir / "f0")]

    for action, expected in (
        (set_(f1), [f0, f1]),
        (replaced(f1, f2), [f0, f2]),
        (set_(f1), [f0, f2, f1]),
        (removed(f2), [f0, f1]),
    ):
        echo = await max_.dispatch_and_wait(uri, action)
        assert "rejectionReason" not in echo, echo
        seen = await watcher.wait_action(
            lambda e, seq=echo["serverSeq"]: e["serverSeq"] == seq and e["channel"] == uri
        )
        assert seen["action"] == action
        assert await folders_of(watcher, uri) == expected
    # Its row in the listing says them too.
    await watcher.wait_for(
        lambda: any(
            method == "root/sessionSummaryChanged"
            and params["session"] == uri
            and params["changes"].get("workingDirectories") == [f0, f1]
            for method, params in watcher.notifications
        )
    )
    listed = (await watcher.request("listSessions", {}))["items"]
    assert next(r for r in listed if r["resource"] == uri)["workingDirectories"] == [f0, f1]
    # The agent, opened in f0 alone, is opened again in the set at its next turn.
    assert await dirs_said(max_, chat) == [str(workdir / "f0"), str(workdir / "f1")]

    # What the set holds already, or does not hold, changes nothing and is said all the same.
    for action in (set_(f1), removed(f2), replaced(f2, f0)):
        echo = await max_.dispatch_and_wait(uri, action)
        assert "rejectionReason" not in echo, echo
        await watcher.wait_action(lambda e, seq=echo["serverSeq"]: e["serverSeq"] == seq)
        assert await folders_of(max_, uri) == [f0, f1]
    # The primary moves only by a replacement; the changesets, its, start again.
    changes = f"{uri}/changeset/session"
    await max_.request("subscribe", {"channel": changes})
    f3 = folder(workdir, "f3")
    assert "rejectionReason" not in await max_.dispatch_and_wait(uri, replaced(f0, f3))
    assert await folders_of(watcher, uri) == [f3, f1]
    await max_.wait_action(
        lambda e: e["channel"] == changes and e["action"]["type"] == "changeset/cleared"
    )
    assert await dirs_said(max_, chat) == [str(workdir / "f3"), str(workdir / "f1")]
    await watcher.assert_conforms(uri)
    await max_.assert_conforms(uri)


async def test_each_refusal_is_vscodes_in_its_order_and_leaves_the_set_alone(
    server, connect, tokens, workdir
):
    max_ = await editor(server, connect, tokens["max"])
    uri, chat = await made(max_, workdir)
    f0, f1 = folder(workdir, "f0"), folder(workdir, "f1")

    window = await editor(server, connect, tokens["max"], **AGENTS_WINDOW)
    await window.request("subscribe", {"channel": uri})
    # Who sent it is asked first, whatever it names.
    assert await refused(window, chat, set_(f1)) == (
        "Session working-directory actions require an Editor Window client."
    )
    assert await refused(max_, chat, set_(f1)) == (
        "Session working-directory actions require a session channel."
    )
    # A reconnect names no clientInfo: the window is what it said it was at initialize.
    await window.close()
    back = await connect(server.url, token=tokens["max"], client_id=window.client_id)
    await back.request(
        "reconnect",
        {
            "channel": ROOT,
            "clientId": window.client_id,
            "lastSeenServerSeq": 0,
            "subscriptions": [uri],
        },
    )
    assert await refused(back, uri, set_(f1)) == (
        "Session working-directory actions require an Editor Window client."
    )

    fresh, _ = await made(max_, workdir, first_turn=False)
    assert await refused(max_, fresh, set_(f1)) == (
        f"Session is not ready for working-directory changes: {fresh}"
    )
    single, _ = await made(max_, workdir, multi_root=False)
    assert await refused(max_, single, set_(f1)) == (
        f"Session does not support dynamic working-directory changes: {single}"
    )
    chatty, _ = await made(max_, workdir)
    await max_.request("createChat", {"channel": chatty, "chat": f"ahp-chat:/{uuid.uuid4()}"})
    assert await refused(max_, chatty, set_(f1)) == (
        f"Session does not support dynamic working-directory changes: {chatty}"
    )
    narrow, _ = await made(max_, workdir, provider="narrow")
    assert await refused(max_, narrow, set_(f1)) == (
        "Provider does not support dynamic working-directory changes: narrow"
    )

    assert await refused(max_, uri, set_("https://example.com/repo")) == (
        "Working directory must be a file URI: https://example.com/repo"
    )
    assert await refused(max_, uri, replaced(f0, "vscode-vfs://github/x")) == (
        "Working directory must be a file URI: vscode-vfs://github/x"
    )
    assert await refused(max_, uri, removed(f0)) == (
        "The primary working directory cannot be removed."
    )
    # A folder nobody could have made a session in is not added either.
    outside = Path("/usr").as_uri()
    assert await refused(max_, uri, set_(outside)) == (
        f"session/workingDirectorySet: {outside} is not inside a folder this host serves "
        "(AHPD_PATHS)"
    )
    assert await refused(max_, uri, replaced(f0, outside)) == (
        f"session/workingDirectoryReplaced: {outside} is not inside a folder this host serves "
        "(AHPD_PATHS)"
    )
    gone = folder(workdir, "nowhere")
    assert await refused(max_, uri, set_(gone)) == (
        f"session/workingDirectorySet: {gone} is not a folder"
    )
    assert await refused(max_, uri, {"type": "session/workingDirectorySet"}) == (
        "session/workingDirectorySet: directory must be a non-empty URI string"
    )
    for session in (uri, fresh, single, chatty, narrow):
        assert await folders_of(max_, session) == [f0]
    await max_.assert_conforms(uri)


async def test_a_member_who_may_only_read_the_session_may_not_change_its_folders(
    server, connect, tokens, workdir
):
    max_ = await editor(server, connect, tokens["max"])
    uri, _ = await made(max_, workdir)
    tom = await editor(server, connect, tokens["tom"])
    await tom.request("subscribe", {"channel": uri})
    f0, f1 = folder(workdir, "f0"), folder(workdir, "f1")
    for action in (set_(f1), replaced(f0, f1), removed(f0)):
        reason = await refused(tom, uri, action)
        assert reason.startswith("user:tom may not others:work here"), reason
    assert await folders_of(max_, uri) == [f0]


# -- after a restart (last: it restarts the module's server) -------------------------------------


async def test_the_set_is_kept_with_the_session_across_a_restart(server, connect, tokens, workdir):
    max_ = await editor(server, connect, tokens["max"])
    uri, chat = await made(max_, workdir)
    f0, f1, f2 = (folder(workdir, n) for n in ("f0", "f1", "f2"))
    assert "rejectionReason" not in await max_.dispatch_and_wait(uri, set_(f1))
    await max_.close()
    server.restart()
    again = await Client.open(server.url, token=tokens["max"])
    try:
        await again.initialize(clientInfo=EDITOR)
        assert await folders_of(again, uri) == [f0, f1]
        await again.request("subscribe", {"channel": chat})
        assert await dirs_said(again, chat) == [str(workdir / "f0"), str(workdir / "f1")]
        # Still a session of a multi-root workspace: its folders change as before.
        assert "rejectionReason" not in await again.dispatch_and_wait(uri, set_(f2))
        assert await folders_of(again, uri) == [f0, f1, f2]
        await again.assert_conforms(uri)
    finally:
        await again.close()
        again.assert_schema_clean()
