"""`manage.py ahpd automation` in a shell of its own, against a running server: list and show
read what the server keeps; run, enable and disable are done by the server's engine (its
automations' services, through the engine client), so a client watching `ahp-automations://`
is told each, and with no server running nothing is changed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.automations.test_socket import CATALOGUE, run_ended
from tests.e2e.test_cli_server import ahpd, answer, one_line_refusal, rest, shell
from tests.support.agents import server_with_local_agent
from tests.support.client import Client
from tests.support.server import TOKEN, ServerProcess


@pytest.fixture(scope="module")
def server():
    with server_with_local_agent() as process:
        yield process


@pytest.fixture(scope="module")
def cli(server):
    return shell(server.env_file)


def definition(folder: Path, **extra: Any) -> dict[str, Any]:
    return {
        "title": "Nightly",
        "message": {"text": "hello from the command line", "origin": {"kind": "automation"}},
        "session": {"provider": "local", "workingDirectories": [folder.as_uri()]},
        "enabled": True,
        "triggers": [],
        **extra,
    }


def made(server: ServerProcess, automation_id: str, folder: Path) -> dict[str, Any]:
    body = {"id": automation_id, "definition": definition(folder)}
    return rest(server, "POST", "automations/", TOKEN, body)


async def said_set(client: Client, start: int, automation_id: str) -> dict[str, Any]:
    """The first automation/set of this automation the client was sent after `start`."""
    uri = "ahp-automation:/" + automation_id

    def found() -> dict[str, Any] | None:
        for envelope in client.actions[start:]:
            action = envelope["action"]
            if action["type"] == "automation/set" and action["automation"]["resource"] == uri:
                return action["automation"]
        return None

    return await client.wait_for(found, timeout=30)


async def test_an_automation_is_listed_switched_and_run_and_each_change_is_said(
    server, cli, connect, tmp_path
):
    assert ahpd(cli, "automation", "list").stdout.strip() == "no automations"
    made(server, "nightly", tmp_path)
    watcher = await connect(server.url)
    await watcher.initialize(subscriptions=[CATALOGUE])

    [listed] = answer(cli, "automation", "list")
    assert (listed["id"], listed["title"], listed["enabled"]) == ("nightly", "Nightly", True)
    assert listed["owner"] == server.root_ref and listed["runCount"] == 0
    line = ahpd(cli, "automation", "list").stdout.strip()
    assert line == f"nightly  title=Nightly  owner={server.root_ref}  enabled  next=-  runs=0"

    start = len(watcher.actions)
    disabled = answer(cli, "automation", "disable", "nightly")
    assert disabled["enabled"] is False and disabled["definition"]["enabled"] is False
    # The engine made the change: every watcher of the catalogue is told it.
    assert (await said_set(watcher, start, "nightly"))["definition"]["enabled"] is False
    first = ahpd(cli, "automation", "show", "nightly").stdout.splitlines()[0]
    assert first.endswith("disabled  next=-  runs=0")
    start = len(watcher.actions)
    assert answer(cli, "automation", "enable", "nightly")["enabled"] is True
    assert (await said_set(watcher, start, "nightly"))["definition"]["enabled"] is True

    ran = answer(cli, "automation", "run", "nightly")
    assert ran["automation"] == "ahp-automation:/nightly"
    assert ran["run"].startswith("ahp-automation-run:/")
    ended = await run_ended(watcher, ran["run"])
    assert ended["lifecycle"]["status"] == "completed"
    shown = answer(cli, "automation", "show", "nightly")
    assert shown["definition"]["message"]["text"] == "hello from the command line"
    [run] = shown["runs"]
    assert (run["resource"], run["status"], run["origin"]) == (
        ran["run"],
        "completed",
        {"kind": "manual"},
    )
    assert run["primarySession"].startswith("ahp-session:/")
    lines = ahpd(cli, "automation", "show", "nightly").stdout.splitlines()
    assert lines[1].startswith('definition: {"title": "Nightly"')
    assert lines[2].startswith(f"  {ran['run']}  completed  manual  at=")
    # Asked again with the same request id: the same run, not a second one.
    again = answer(cli, "automation", "run", "nightly", "--request-id", "r1")
    assert answer(cli, "automation", "run", "nightly", "--request-id", "r1") == again
    await run_ended(watcher, again["run"])
    assert len(answer(cli, "automation", "show", "nightly")["runs"]) == 2
    await watcher.assert_conforms(CATALOGUE)


def test_an_automation_not_kept_is_one_line_naming_it(cli):
    for verb in ("show", "run", "enable", "disable"):
        refused = one_line_refusal(ahpd(cli, "automation", verb, "nope"))
        assert refused == "ahpd: no automation 'nope'"
    usage = ahpd(cli, "automation", "pause", "x")
    assert usage.returncode == 2 and "invalid choice: 'pause'" in usage.stderr


def test_with_no_server_running_a_switch_changes_nothing(tmp_path):
    process = ServerProcess().start()
    try:
        env = shell(process.env_file)
        made(process, "kept", tmp_path)
        process.stop()
        for verb in ("disable", "run"):
            refused = one_line_refusal(ahpd(env, "automation", verb, "kept"))
            assert refused.startswith("ahpd: the server is not running")
        # Read from the database: still enabled, never run.
        [kept] = answer(env, "automation", "list")
        assert (kept["id"], kept["enabled"]) == ("kept", True)
        assert answer(env, "automation", "show", "kept")["runs"] == []
    finally:
        process.close()
