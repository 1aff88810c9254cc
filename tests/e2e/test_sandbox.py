"""A member is not root: what the host starts for a person runs in a sandbox of that person's
(bubblewrap), tried as the member would try it, over the real socket against a started server.

A member's terminal, `!` command and ACP agent cannot read the server's data directory, cannot
see or signal the server, and still work in their own folder; nothing they started outlives a
`kill -9` of the server; the host's git runs no fsmonitor and no hook a repository was given.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hosts.backends.sandbox import probe
from tests.e2e.test_changesets import changeset_of, invoke, watched
from tests.e2e.test_grants import cli
from tests.e2e.test_sessions import ended, new_session, turn
from tests.e2e.test_terminals import PROMPT, open_terminal, run, screen
from tests.support.agents import ACP_AGENT, acp_agents_file, server_with_local_agent
from tests.support.client import Client, RpcError
from tests.support.server import ServerProcess

pytestmark = pytest.mark.skipif(not probe()[0], reason="bubblewrap cannot start here")

#: What Django signs admin cookies with: the first thing a member must not read.
SECRET = "secret-key"


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="ahpd-sandbox-work-"))
    (path / "notes.txt").write_text("the member's own notes\n")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def server(workdir: Path) -> Iterator[ServerProcess]:
    process = ServerProcess(
        env_extra={"AHPD_CONFIG": str(acp_agents_file(workdir.parent)), "SHELL": "/bin/bash"}
    ).start()
    assert (process.data_dir / SECRET).is_file()
    yield process
    process.close()


@pytest.fixture(scope="module")
def member(server: ServerProcess) -> str:
    cli(server, "user", "add", "mia", "--role", "member")
    (server.home_of("user:mia") / ".bashrc").write_text(f"PS1='{PROMPT}'\nunset HISTFILE\n")
    return str(cli(server, "user", "token", "mia")["token"])


async def as_member(connect: Any, server: ServerProcess, member: str) -> Client:
    client = await connect(server.url, token=member)
    await client.initialize()
    return client


async def ask(client: Client, chat: str, text: str) -> dict[str, Any]:
    """Run a turn to its end; the chat's state after it."""
    action = turn(text)
    await client.dispatch_and_wait(chat, action)
    end = await client.wait_action(ended(chat, action["turnId"]), timeout=30)
    assert end["action"]["type"] == "chat/turnComplete", end
    state: dict[str, Any] = client.tracked[chat][0]
    return state


def reply_of(state: dict[str, Any]) -> str:
    parts = state["turns"][-1]["responseParts"]
    return "".join(p["content"] for p in parts if p["kind"] == "markdown")


def output_of(state: dict[str, Any]) -> str:
    """What a `!` command printed, as its tool call's result says."""
    for part in state["turns"][-1]["responseParts"]:
        call = part.get("toolCall") or {}
        for content in call.get("content") or []:
            if content.get("type") == "terminal":
                return str(content["result"]["preview"])
    raise AssertionError(f"no command output in {state['turns'][-1]}")


async def test_a_members_terminal_works_in_its_folder_and_cannot_reach_the_server(
    server, connect, member, workdir
):
    client = await as_member(connect, server, member)
    uri = await open_terminal(client, cwd=workdir.as_uri())
    secret = server.data_dir / SECRET
    await run(client, uri, f"cat {secret} || echo NO-SECRET")
    await run(client, uri, f"ls {server.data_dir} || echo NO-DATA")
    await run(client, uri, f"kill -0 {server.pid} 2>/dev/null && echo SIGNALLED || echo NO-SIGNAL")
    await run(client, uri, "echo home=$HOME uid=$(id -u) && cat notes.txt && echo made > mine.txt")
    shown = screen(client, uri)
    assert "NO-SECRET" in shown and "NO-DATA" in shown and "NO-SIGNAL" in shown
    assert secret.read_text().strip() not in shown
    assert "home=/home/mia" in shown and "the member's own notes" in shown
    # What it wrote is in the folder, on the host.
    assert (workdir / "mine.txt").read_text() == "made\n"
    # Its /proc is its own: the server's process is not there to find.
    await run(client, uri, "ls /proc | grep -c '^[0-9]' ; cat /proc/1/cmdline | tr '\\0' ' '")
    assert "manage.py" not in screen(client, uri)
    await client.request("disposeTerminal", {"channel": uri})


async def test_a_members_bang_command_runs_in_the_sandbox_of_their_session(
    server, connect, member, workdir
):
    client = await as_member(connect, server, member)
    _, chat = await new_session(client, workdir, provider="fake")
    state = await ask(
        client,
        chat,
        f"!cat {server.data_dir / SECRET} || echo NO-SECRET; "
        "echo home=$HOME; env | grep -c DATABASE_URL; echo bang > bang.txt",
    )
    printed = output_of(state)
    assert "NO-SECRET" in printed and "home=/home/mia" in printed
    assert (workdir / "bang.txt").read_text() == "bang\n"


async def test_a_members_agent_reads_its_folder_but_not_the_server(
    server, connect, member, workdir
):
    client = await as_member(connect, server, member)
    _, chat = await new_session(client, workdir, provider="fake")
    mine = reply_of(await ask(client, chat, f"open {workdir / 'notes.txt'}"))
    assert mine.startswith("opened") and "member's own notes" in mine
    for secret in (
        server.data_dir / SECRET,
        server.data_dir / "ahpd.sqlite3",
        server.env_file,
        Path(__file__),  # the server's checkout
    ):
        said = reply_of(await ask(client, chat, f"open {secret}"))
        assert said.startswith("cannot-open"), said
    said = reply_of(await ask(client, chat, f"signal {server.pid}"))
    assert said.startswith("cannot-signal"), said
    put = reply_of(await ask(client, chat, f"put {workdir / 'by-agent.txt'} from the agent"))
    assert put.startswith("put")
    assert (workdir / "by-agent.txt").read_text() == "from the agent"
    who = reply_of(await ask(client, chat, "whoami"))
    assert "home=/home/mia" in who
    # Its home is the member's own, kept by the host: its history lives there.
    assert any(server.home_of("user:mia").rglob("*.json"))


async def test_another_members_agent_has_another_home(server, connect, member, workdir):
    cli(server, "user", "add", "nils", "--role", "member")
    other = str(cli(server, "user", "token", "nils")["token"])
    client = await as_member(connect, server, other)
    _, chat = await new_session(client, workdir, provider="fake")
    who = reply_of(await ask(client, chat, "whoami"))
    assert "home=/home/nils" in who
    mias = server.home_of("user:mia")
    said = reply_of(await ask(client, chat, f"open {mias / '.bashrc'}"))
    assert said.startswith("cannot-open")
    said = reply_of(await ask(client, chat, "open /home/mia/.bashrc"))
    assert said.startswith("cannot-open")


def git(path: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(path), *args], capture_output=True, text=True, check=True
    ).stdout


async def test_the_hosts_git_runs_no_fsmonitor_and_no_hook_a_repository_was_given(server, connect):
    repo = Path(tempfile.mkdtemp(prefix="ahpd-sandbox-repo-"))
    try:
        git(repo, "init", "-q", "-b", "main")
        (repo / "a.txt").write_text("alpha\n")
        git(repo, "add", ".")
        git(repo, "-c", "user.name=S", "-c", "user.email=s@example.com", "commit", "-qm", "s")
        # Planted as a member would: a monitor and hooks that leave a mark where they run.
        planted = repo / "planted.sh"
        planted.write_text(f"#!/bin/sh\ntouch {repo}/ran-$(basename $0)\n")
        planted.chmod(0o755)
        git(repo, "config", "core.fsmonitor", str(planted))
        for hook in ("pre-commit", "commit-msg", "post-commit", "post-index-change"):
            shutil.copy(planted, repo / ".git" / "hooks" / hook)
        (repo / "a.txt").write_text("ALPHA\n")
        client = await connect(server.url)
        await client.initialize()
        session, _ = await new_session(client, repo, provider="fake")
        uri = changeset_of(session)
        await watched(client, uri)
        await client.wait_for(lambda: client.tracked[uri][0]["files"], timeout=20)
        await invoke(client, uri, "commit", _meta={"ahpd.commit": {"message": "through ahpd"}})
        assert git(repo, "log", "-1", "--format=%s").strip() == "through ahpd"
        assert sorted(p.name for p in repo.glob("ran-*")) == []
    finally:
        shutil.rmtree(repo, ignore_errors=True)


def descendants(pid: int) -> set[int]:
    """Every live process under `pid`, by the parents /proc says."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if fields[0] != "Z":
            parents[int(entry.name)] = int(fields[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pids: set[int]) -> set[int]:
    living = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if state[state.rfind(")") + 2 :].split()[0] != "Z":
            living.add(pid)
    return living


async def test_nothing_a_person_started_outlives_a_kill_of_the_server(connect, workdir):
    process = ServerProcess(
        env_extra={"AHPD_CONFIG": str(acp_agents_file(workdir.parent)), "SHELL": "/bin/bash"}
    ).start()
    try:
        (process.home_of(process.root_ref) / ".bashrc").write_text(f"PS1='{PROMPT}'\n")
        client = await connect(process.url)
        await client.initialize()
        _, chat = await new_session(client, workdir, provider="fake")
        await ask(client, chat, "whoami")  # the agent runs, and stays for the next turn
        uri = await open_terminal(client, cwd=workdir.as_uri())
        await client.dispatch(
            uri, {"type": "terminal/input", "data": "(trap '' HUP; exec sleep 1213) &\r"}
        )
        started = descendants(process.pid)
        deadline = time.monotonic() + 15
        while not any(_runs(pid, b"1213") for pid in started):
            assert time.monotonic() < deadline, "the terminal's job never started"
            await asyncio.sleep(0.05)
            started = descendants(process.pid)
        assert any(_runs(pid, str(ACP_AGENT).encode()) for pid in started)
        process.kill()
        deadline = time.monotonic() + 15
        while alive(started):
            assert time.monotonic() < deadline, f"still alive after kill -9: {alive(started)}"
            await asyncio.sleep(0.05)
    finally:
        process.close()


def _runs(pid: int, word: bytes) -> bool:
    try:
        return word in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


async def test_status_and_metrics_say_where_peoples_processes_run(server):
    import urllib.request

    base = server.url.split("?", 1)[0].replace("ws://", "http://").rstrip("/")
    asked = urllib.request.Request(
        f"{base}/api/status/", headers={"Authorization": f"Bearer {server.token}"}
    )
    with urllib.request.urlopen(asked, timeout=10) as answer:
        assert json.load(answer)["sandbox"] == "bwrap"
    asked = urllib.request.Request(
        f"{base}/metrics", headers={"Authorization": f"Bearer {server.token}"}
    )
    with urllib.request.urlopen(asked, timeout=10) as answer:
        assert 'ahpd_sandbox_info{mode="bwrap"} 1.0' in answer.read().decode()
    assert any("sandbox bwrap" in line for line in server.output)


@pytest.fixture(scope="module")
def unsandboxed(workdir: Path) -> Iterator[ServerProcess]:
    process = ServerProcess(
        env_extra={
            "AHPD_CONFIG": str(acp_agents_file(workdir.parent)),
            "AHPD_SANDBOX": "off",
            "SHELL": "/bin/bash",
        }
    ).start()
    yield process
    process.close()


async def test_with_the_sandbox_off_only_a_host_wide_admin_opens_a_shell(
    unsandboxed, connect, workdir
):
    cli(unsandboxed, "user", "add", "otto", "--role", "member")
    token = str(cli(unsandboxed, "user", "token", "otto")["token"])
    client = await connect(unsandboxed.url, token=token)
    await client.initialize()
    with pytest.raises(RpcError) as refused:
        await client.request(
            "createTerminal",
            {
                "channel": f"ahp-terminal:/{uuid.uuid4()}",
                "claim": {"kind": "client", "clientId": client.client_id},
            },
        )
    assert refused.value.code == -32009 and "sandbox is off" in refused.value.message
    _, chat = await new_session(client, workdir, provider="fake")
    action = turn("!id")
    refusal = await client.dispatch_and_wait(chat, action)
    assert refusal.get("rejectionReason") and "sandbox is off" in refusal["rejectionReason"]
    assert any("sandbox off (AHPD_SANDBOX=off)" in line for line in unsandboxed.output)
    assert any("WARNING" in line and "sandbox is off" in line for line in unsandboxed.output)
    # The deployment's own token is a host-wide admin's: it still may.
    admin = await connect(unsandboxed.url)
    await admin.initialize()
    uri = f"ahp-terminal:/{uuid.uuid4()}"
    await admin.request(
        "createTerminal", {"channel": uri, "claim": {"kind": "client", "clientId": "x"}}
    )
    await admin.request("disposeTerminal", {"channel": uri})


async def test_a_command_the_model_writes_runs_in_the_members_sandbox(connect, workdir):
    with server_with_local_agent() as local:
        cli(local, "user", "add", "mo", "--role", "member")
        token = str(cli(local, "user", "token", "mo")["token"])
        client = await connect(local.url, token=token)
        await client.initialize()
        _, chat = await new_session(client, workdir)
        secret = local.data_dir / SECRET
        action = turn(f"run cat {secret} || echo NO-SECRET; echo home=$HOME > model.txt")
        await client.dispatch(chat, action)
        ready = await client.wait_action(
            lambda e: e["channel"] == chat and e["action"]["type"] == "chat/toolCallReady",
            timeout=30,
        )
        await client.dispatch_and_wait(
            chat,
            {
                "type": "chat/toolCallConfirmed",
                "turnId": action["turnId"],
                "toolCallId": ready["action"]["toolCallId"],
                "approved": True,
                "confirmed": "user-action",
            },
        )
        end = await client.wait_action(ended(chat, action["turnId"]), timeout=30)
        assert end["action"]["type"] == "chat/turnComplete"
        done = next(
            e["action"]
            for e in client.actions
            if e["channel"] == chat and e["action"]["type"] == "chat/toolCallComplete"
        )
        said = json.dumps(done)
        assert "NO-SECRET" in said and secret.read_text().strip() not in said
        assert (workdir / "model.txt").read_text() == "home=/home/mo\n"


async def test_a_filter_a_repository_names_runs_sandboxed_without_the_servers_environment(
    connect, workdir
):
    # git still runs a repository's clean filter (no option turns every filter off): it runs
    # in the sandbox, given neither the server's files nor its environment.
    repo = Path(tempfile.mkdtemp(prefix="ahpd-sandbox-filter-"))
    process = ServerProcess(
        env_extra={
            "AHPD_CONFIG": str(acp_agents_file(workdir.parent)),
            "TEST_SECRET_ENV": "server-only-value",
        }
    ).start()
    try:
        git(repo, "init", "-q", "-b", "main")
        (repo / "a.txt").write_text("alpha\n")
        git(repo, "add", ".")
        git(repo, "-c", "user.name=S", "-c", "user.email=s@example.com", "commit", "-qm", "s")
        spy = repo / ".git" / "spy.sh"
        spy.write_text(
            "#!/bin/sh\n"
            f"env > {repo}/filter-env.txt\n"
            f"cat {process.data_dir / SECRET} > {repo}/filter-secret.txt 2>&1\n"
            "exec cat\n"
        )
        spy.chmod(0o755)
        git(repo, "config", "filter.spy.clean", str(spy))
        (repo / ".git" / "info").mkdir(exist_ok=True)
        (repo / ".git" / "info" / "attributes").write_text("a.txt filter=spy\n")
        (repo / "a.txt").write_text("ALPHA\n")
        client = await connect(process.url)
        await client.initialize()
        session, _ = await new_session(client, repo, provider="fake")
        uri = changeset_of(session)
        await watched(client, uri)
        await invoke(client, uri, "stage")
        assert (repo / "filter-env.txt").exists(), "the filter never ran"
        assert "server-only-value" not in (repo / "filter-env.txt").read_text()
        assert "No such file" in (repo / "filter-secret.txt").read_text()
    finally:
        process.close()
        shutil.rmtree(repo, ignore_errors=True)
