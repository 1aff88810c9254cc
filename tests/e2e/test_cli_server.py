"""`manage.py ahpd` in a shell of its own acts on the running server: a server started with a
data directory and port of its own (AHPD_PORT=0: one it picks) keeps its settings in its env
file, and a command run where neither is set, nor its database, reads them from there: it
adds people to the server's database, mints tokens with the URL the server really listens
on, and asks the server itself for its status and the turns it runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.e2e.test_sessions import ended
from tests.support.agents import server_with_local_agent
from tests.support.server import REPO, TOKEN, ServerProcess, _drop_database, _fresh_database

#: What the shell running the commands leaves out: it sets none of the server's settings.
UNSET = ("AHPD_", "DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE", "PYTEST")
#: What a shell with no env file of a server's is given of its settings: where its data is.
KEPT = ("AHPD_DATA_DIR", "DATABASE_URL")


def shell(env_file: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(UNSET)}
    env.update({"AHPD_ENV_FILE": str(env_file), **extra})
    return env


def ahpd(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "ahpd", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def answer(env: dict[str, str], *args: str) -> object:
    done = ahpd(env, *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def one_line_refusal(done: subprocess.CompletedProcess[str]) -> str:
    """The refusal a command printed: one line, `ahpd: ...`, no traceback, exit 1."""
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ahpd: "), done.stderr
    return lines[0]


@pytest.fixture(scope="module")
def server():
    with server_with_local_agent() as process:
        yield process


@pytest.fixture(scope="module")
def cli(server):
    return shell(server.env_file)


def rest(server, method: str, path: str, token: str, body: dict | None = None):
    request = urllib.request.Request(
        server.base.replace("ws://", "http://") + "api/" + path,
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def test_the_server_keeps_the_settings_it_was_given_in_its_env_file_0600(server):
    kept = server.env_file.read_text()
    assert server.env_file.stat().st_mode & 0o777 == 0o600
    assert f"AHPD_DATA_DIR='{server.data_dir.resolve()}'" in kept
    assert "AHPD_PORT='0'" in kept
    assert "ahpd: settings kept in" in server.log_text()


async def test_a_person_and_token_made_in_another_shell_connect_to_the_running_server(
    server, cli, connect
):
    assert answer(cli, "user", "add", "ana", "--role", "admin")["roles"] == ["admin"]
    minted = answer(cli, "user", "token", "ana")
    # The port the server picked at start, not AHPD_PORT's 0 or the default 9187.
    assert minted["url"] == f"{server.base}?tkn={minted['token']}"
    client = await connect(server.base, token=minted["token"])
    result = await client.initialize()
    assert result["_meta"]["ahpd.principal"] == "user:ana"

    done = ahpd(cli, "user", "token", "ana")
    assert done.returncode == 0
    assert (
        done.stderr.splitlines()[-1]
        == f"ahpd: connect with {server.base}?tkn={done.stdout.strip()}"
    )
    assert [t["name"] for t in answer(cli, "token", "list", "ana")] == ["default", "default-2"]


async def test_the_server_says_its_token_is_roots_and_how_vs_code_and_a_person_connect(
    server, connect
):
    def said(start: str) -> str:
        assert server.wait_output(lambda line: line.startswith(start)), server.log_text()
        return next(line for line in server.output if line.startswith(start))

    assert "token is root's" in said("ahpd: that token") and "full power" in said("ahpd: that")
    vscode = said("ahpd: VS Code, signed in as root: ").split(": ", 2)[2]
    # Pasted into VS Code's settings as it is: Stable needs remote agent hosts turned on.
    assert json.loads("{" + vscode + "}") == {
        "chat.remoteAgentHostsEnabled": True,
        "chat.remoteAgentHosts": [
            {"address": f"127.0.0.1:{server.port}", "name": "ahpd", "connectionToken": TOKEN}
        ],
    }
    client = await connect(server.base, token=TOKEN)
    assert (await client.initialize())["_meta"]["ahpd.principal"] == server.root_ref
    # The command shown for a person's own token is one that runs, as shown, from the checkout.
    mint = said("ahpd: a person's own token instead, with their grants alone: ")
    command = mint.split(": ", 1)[1].split(": ", 1)[1].split()
    assert command[1:] == ["manage.py", "ahpd", "user", "token", "<id>"]
    env = shell(server.env_file)
    answer(env, "user", "add", "pasted")
    done = subprocess.run(
        [*command[:-1], "pasted", "--json"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["id"] == "pasted"


def test_make_run_says_how_to_add_the_first_admin_only_while_there_is_none():
    process = ServerProcess()  # its data and database alone; no server is started
    try:
        env = shell(process.env_file, **{k: v for k, v in process.env().items() if k in KEPT})
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "-v0"], cwd=REPO, env=env, check=True
        )

        def first_admin() -> list[str]:
            done = subprocess.run(
                [sys.executable, "manage.py", "first_admin"],
                cwd=REPO,
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert done.returncode == 0 and done.stderr == "", done.stderr
            return done.stdout.splitlines()

        steps = first_admin()
        assert steps[0].startswith("ahpd: add the first admin person: ")
        assert steps[0].endswith(" manage.py ahpd user add <id> --role admin")
        assert [line.split(":")[1] for line in steps[1:]] == [
            " give them a password for the admin site (/admin/)",
            " and a token of their own to connect with",
        ]
        # A member, or an admin within one team only, is no admin of the host.
        answer(env, "user", "add", "max", "--role", "member")
        answer(env, "team", "add", "core")
        answer(env, "user", "add", "tia", "--role", "admin", "--team", "core")
        assert first_admin() == steps
        answer(env, "user", "add", "ana", "--role", "admin")
        assert first_admin() == []
    finally:
        process.close()
    makefile = (REPO / "Makefile").read_text()
    recipe = makefile.split("\nrun: migrate\n", 1)[1].split("\n\n", 1)[0]
    assert recipe.splitlines() == [
        "\t@$(PY) manage.py first_admin",
        "\t$(PY) manage.py serve",
    ]


def test_status_is_the_running_servers_own(server, cli):
    status = answer(cli, "status")
    assert status["url"] == server.base
    assert status["api"] == server.base.replace("ws://", "http://") + "api/"
    assert status["principal"].startswith("root:")
    assert {"version", "sessions", "people"} <= set(status)
    lines = ahpd(cli, "status").stdout.splitlines()
    assert f"url: {server.base}" in lines and not any(line.startswith("grants") for line in lines)


async def test_sessions_say_whose_each_is_and_what_runs_and_cancel_stops_it(
    server, cli, connect, tmp_path
):
    answer(cli, "user", "add", "max", "--role", "member")
    token = answer(cli, "user", "token", "max")["token"]
    made = rest(
        server,
        "POST",
        "sessions/",
        token,
        {"provider": "local", "workingDirectories": [tmp_path.as_uri()], "message": "hold"},
    )
    watcher = await connect(server.url)
    await watcher.initialize(subscriptions=[made["chat"]])
    await watcher.wait_action(
        lambda e: e["channel"] == made["chat"] and e["action"]["type"] == "chat/delta",
        timeout=30,
    )

    running = answer(cli, "sessions", "--running")
    assert [(row["uri"], row["owner"], row["running"]) for row in running] == [
        (made["uri"], "user:max", True)
    ]
    assert running[0]["turns"][0]["turnId"] == made["turnId"]
    assert running[0]["turns"][0]["sender"] == "user:max"
    listed = ahpd(cli, "sessions").stdout
    assert f"{made['uri']}  owner=user:max" in listed and f"{made['turnId']} by user:max" in listed

    cancelled = answer(cli, "sessions", "--cancel", made["uri"])
    assert cancelled == {"session": made["uri"], "cancelled": [made["turnId"]]}
    stop = await watcher.wait_action(ended(made["chat"], made["turnId"]))
    assert stop["action"]["type"] == "chat/turnCancelled"
    assert ahpd(cli, "sessions", "--running").stdout.strip() == "no sessions running"
    assert [row["running"] for row in answer(cli, "sessions") if row["uri"] == made["uri"]] == [
        False
    ]

    refused = one_line_refusal(ahpd(cli, "sessions", "--cancel", made["uri"]))
    assert refused.endswith(f"No turn is running in {made['uri']}")
    quoted = quote("ahp-session:/nope", safe="")
    refused = one_line_refusal(ahpd(cli, "sessions", "--cancel", "ahp-session:/nope"))
    assert quoted in refused and refused.endswith("Session not found: ahp-session:/nope")


def test_bad_input_is_one_line_naming_what_was_wrong(cli):
    assert "person id 'bad id!'" in one_line_refusal(ahpd(cli, "user", "add", "bad id!"))
    assert one_line_refusal(ahpd(cli, "user", "token", "ghost")) == "ahpd: no person 'ghost'"
    assert answer(cli, "team", "add", "core") == {"slug": "core", "name": ""}
    answer(cli, "project", "add", "web", "--team", "core")
    refused = one_line_refusal(ahpd(cli, "team", "rm", "core"))
    assert "has projects (web)" in refused and "--cascade" in refused
    usage = ahpd(cli, "user", "frobnicate")
    assert usage.returncode == 2 and "invalid choice: 'frobnicate'" in usage.stderr


def test_usage_of_no_one_is_said_to_be_no_ones(cli):
    # A mistyped name is no row of zeros.
    assert one_line_refusal(ahpd(cli, "usage", "user:nobody")) == (
        "ahpd: no person 'nobody', and nothing charged to user:nobody"
    )
    assert one_line_refusal(ahpd(cli, "usage", "team:nope")).startswith("ahpd: no team 'nope'")
    answer(cli, "team", "add", "ops")
    answer(cli, "project", "add", "site", "--team", "ops")
    refused = one_line_refusal(ahpd(cli, "usage", "project:core:site"))
    assert refused.startswith("ahpd: no project 'site' in team 'core'")
    # Someone who is there and has used nothing yet: their row, of zeros.
    answer(cli, "user", "add", "quiet")
    for pool in ("user:quiet", "team:ops", "project:ops:site"):
        shown = answer(cli, "usage", pool)
        assert shown["pool"] == pool and shown["month"]["records"] == 0


def test_a_command_finds_no_database_where_no_server_ran_and_leaves_none():
    with tempfile.TemporaryDirectory(prefix="ahpd-cli-") as folder:
        data = Path(folder) / "data"
        env = shell(Path(folder) / "none.env", AHPD_DATA_DIR=str(data))
        refused = one_line_refusal(ahpd(env, "user", "add", "ana", "--role", "admin"))
        assert refused.startswith(f"ahpd: no database at {data.resolve()}/ahpd.sqlite3")
        # Nothing made for it is left: no database, no secret key, no data directory.
        assert not data.exists()
        assert one_line_refusal(ahpd(env, "status")).startswith("ahpd: the server is not running")
        assert not data.exists()
        # A data directory that was there stays, as it was.
        data.mkdir()
        (data / "notes").write_text("mine")
        one_line_refusal(ahpd(env, "usage"))
        assert [p.name for p in data.iterdir()] == ["notes"]


@pytest.mark.skipif(not os.environ.get("DATABASE_URL"), reason="PostgreSQL configuration")
def test_a_command_against_an_unmigrated_database_says_so():
    url, name = _fresh_database(os.environ["DATABASE_URL"])
    try:
        with tempfile.TemporaryDirectory(prefix="ahpd-cli-") as folder:
            env = shell(Path(folder) / "none.env", AHPD_DATA_DIR=folder, DATABASE_URL=url)
            refused = one_line_refusal(ahpd(env, "user", "list"))
            assert refused.endswith("(DATABASE_URL) is not migrated: run manage.py migrate")
    finally:
        _drop_database(os.environ["DATABASE_URL"], name)


def test_a_stopped_or_killed_server_is_said_not_running():
    process = ServerProcess().start()
    try:
        env = shell(process.env_file)
        assert answer(env, "status")["url"] == process.base
        record = process.data_dir / "server.json"
        assert record.stat().st_mode & 0o777 == 0o600
        process.kill()  # no shutdown: its record stays behind, naming a process that is gone
        assert record.exists()
        assert one_line_refusal(ahpd(env, "status")).startswith("ahpd: the server is not running")
        process.start()
        process.stop()
        assert not record.exists(), process.log_text()
        assert one_line_refusal(ahpd(env, "sessions")).startswith("ahpd: the server is not running")
        # With no server, a token's URL is not made up: AHPD_PORT=0 picks the port at start.
        answer(env, "user", "add", "cy")
        minted = answer(env, "user", "token", "cy")
        assert minted["url"] is None
    finally:
        process.close()


async def test_the_running_turns_and_the_control_token_are_for_who_may_have_them(
    server, cli, connect
):
    url = server.base.replace("ws://", "http://") + "api/turns/"
    with pytest.raises(urllib.error.HTTPError) as anonymous:
        urllib.request.urlopen(url, timeout=30)
    assert anonymous.value.code == 401
    answer(cli, "user", "add", "nobody")
    token = answer(cli, "user", "token", "nobody")["token"]
    with pytest.raises(urllib.error.HTTPError) as refused:
        rest(server, "GET", "turns/", token)
    assert refused.value.code == 403
    assert json.loads(refused.value.read())["detail"].endswith("may not session:list here")
    # The control token is the REST API's, for the commands: it does not open the socket.
    control = json.loads((server.data_dir / "server.json").read_text())["control"]
    assert rest(server, "GET", "turns/", control)["results"] == []
    with pytest.raises(Exception) as door:
        await connect(server.base, token=control)
    assert "401" in str(door.value)
