"""Terminals a client opens: a real shell under a pty on the server, over the socket.

One server for the module, its shell bash with a home whose .bashrc sets a plain prompt, and
a scrollback cap small enough to reach.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_grants import cli
from tests.support.client import Client, RpcError
from tests.support.server import ServerProcess

ROOT = "ahp-root://"
PROMPT = "ahpd$ "
SCROLLBACK = 64 * 1024


@pytest.fixture(scope="module")
def home() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="ahpd-term-home-"))
    (path / ".bashrc").write_text(f"PS1='{PROMPT}'\nunset HISTFILE\n")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def server(home: Path) -> Iterator[ServerProcess]:
    process = ServerProcess(
        env_extra={
            "SHELL": shutil.which("bash") or "/bin/bash",
            "HOME": str(home),
            "AHPD_TERMINAL_SCROLLBACK_BYTES": str(SCROLLBACK),
            "AHPD_SHELL_ENV": '{"AHPD_TEST_MARK": "from-shell-env", "LANG": "C.UTF-8"}',
        }
    ).start()
    # In the sandbox a shell's home is the person's own, kept by the host.
    shutil.copy(home / ".bashrc", process.home_of(process.root_ref) / ".bashrc")
    yield process
    process.close()


@pytest.fixture(scope="module")
def guest(server: ServerProcess) -> str:
    cli(server, "user", "add", "gus", "--role", "guest")
    return str(cli(server, "user", "token", "gus")["token"])


def text_of(state: dict[str, Any]) -> str:
    """The raw stream a terminal's content holds, as the protocol says to rebuild it."""
    return "".join(
        part["output"] if part["type"] == "command" else part["value"] for part in state["content"]
    )


def screen(client: Client, uri: str) -> str:
    return text_of(client.tracked[uri][0])


async def open_terminal(client: Client, **params: Any) -> str:
    """A fresh terminal the client opened and watches, its first prompt drawn."""
    uri = f"ahp-terminal:/{uuid.uuid4()}"
    await client.request(
        "createTerminal",
        {"channel": uri, "claim": {"kind": "client", "clientId": client.client_id}, **params},
    )
    await client.request("subscribe", {"channel": uri})
    await client.wait_for(lambda: screen(client, uri).endswith(PROMPT))
    return uri


def on(uri: str, kind: str, **fields: Any) -> Callable[[dict[str, Any]], bool]:
    def match(envelope: dict[str, Any]) -> bool:
        action = envelope["action"]
        return (
            envelope["channel"] == uri
            and action["type"] == kind
            and all(action.get(k) == v for k, v in fields.items())
        )

    return match


async def wait_after(
    client: Client, start: int, found: Callable[[dict[str, Any]], bool], timeout: float = 15
) -> dict[str, Any]:
    """The first action after the `start`th the client was sent that `found` accepts."""
    return await client.wait_for(
        lambda: next((e for e in client.actions[start:] if found(e)), None), timeout
    )


async def run(
    client: Client, uri: str, line: str, timeout: float = 15
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Type a command line and wait for the shell to run it: its commandExecuted and
    commandFinished."""
    start = len(client.actions)
    await client.dispatch(uri, {"type": "terminal/input", "data": line + "\r"})
    executed = await wait_after(client, start, on(uri, "terminal/commandExecuted"), timeout)
    command_id = executed["action"]["commandId"]
    finished = await wait_after(
        client, start, on(uri, "terminal/commandFinished", commandId=command_id), timeout
    )
    await client.wait_for(lambda: screen(client, uri).endswith(PROMPT))
    return executed["action"], finished["action"]


def command_output(client: Client, uri: str, command_id: str) -> str:
    parts = client.tracked[uri][0]["content"]
    return next(p["output"] for p in parts if p.get("commandId") == command_id)


async def test_a_terminal_runs_commands_and_says_how_each_ended(server, connect):
    client = await connect(server.url)
    await client.initialize()
    uri = await open_terminal(client)
    listed = await client.wait_action(
        lambda e: (
            e["action"]["type"] == "root/terminalsChanged"
            and any(t["resource"] == uri for t in e["action"]["terminals"])
        )
    )
    info = next(t for t in listed["action"]["terminals"] if t["resource"] == uri)
    assert info["claim"] == {"kind": "client", "clientId": client.client_id}
    assert info["lifecycle"] == {"status": "running"} and info["title"] == "bash"
    assert client.tracked[uri][0]["supportsCommandDetection"] is True

    executed, finished = await run(client, uri, "echo hello-$AHPD_TEST_MARK")
    assert executed["commandLine"] == "echo hello-$AHPD_TEST_MARK"
    assert finished["exitCode"] == 0 and finished["durationMs"] >= 0
    assert "hello-from-shell-env" in command_output(client, uri, executed["commandId"])

    executed, finished = await run(client, uri, "ls /no/such/folder/here")
    assert executed["commandLine"] == "ls /no/such/folder/here"
    assert finished["exitCode"] == 2
    executed, finished = await run(client, uri, "sh -c 'exit 7'")
    assert finished["exitCode"] == 7

    # The marks are the host's to read, never the client's to be sent.
    sent = "".join(e["action"]["data"] for e in client.actions if on(uri, "terminal/data")(e))
    assert "\x1b]133;" not in sent and "\x1b]7;" not in sent
    await client.assert_conforms(uri)


async def test_a_terminal_opens_in_the_folder_named_and_says_where_it_moves(server, connect):
    client = await connect(server.url)
    await client.initialize()
    folder = Path(tempfile.mkdtemp(prefix="ahpd-term-cwd-"))
    try:
        uri = await open_terminal(client, cwd=folder.as_uri())
        assert client.tracked[uri][0]["cwd"] == folder.as_uri()
        executed, _ = await run(client, uri, "pwd")
        assert str(folder) in command_output(client, uri, executed["commandId"])
        start = len(client.actions)
        await client.dispatch(uri, {"type": "terminal/input", "data": "cd /\r"})
        moved = await wait_after(client, start, on(uri, "terminal/cwdChanged"))
        assert moved["action"]["cwd"] == "file:///"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


async def test_a_resize_sets_the_ptys_size(server, connect):
    client = await connect(server.url)
    await client.initialize()
    uri = await open_terminal(client, cols=90, rows=30)
    executed, _ = await run(client, uri, "stty size")
    assert "30 90" in command_output(client, uri, executed["commandId"])
    resize = {"type": "terminal/resized", "cols": 132, "rows": 41}
    echo = await client.dispatch_and_wait(uri, resize)
    assert "rejectionReason" not in echo
    executed, _ = await run(client, uri, "stty size")
    assert "41 132" in command_output(client, uri, executed["commandId"])
    assert client.tracked[uri][0]["cols"] == 132 and client.tracked[uri][0]["rows"] == 41


async def test_a_control_c_stops_the_command_running(server, connect):
    client = await connect(server.url)
    await client.initialize()
    uri = await open_terminal(client)
    start = len(client.actions)
    # The job says when it runs: a ^C before it holds the terminal would reach the shell.
    sleeper = "sh -c 'echo sleeping-now; exec sleep 30'"
    await client.dispatch(uri, {"type": "terminal/input", "data": sleeper + "\r"})
    executed = await wait_after(client, start, on(uri, "terminal/commandExecuted"))
    command_id = executed["action"]["commandId"]
    await client.wait_for(lambda: "sleeping-now" in command_output(client, uri, command_id))
    await client.dispatch(uri, {"type": "terminal/input", "data": "\x03"})
    finished = await wait_after(
        client,
        start,
        on(uri, "terminal/commandFinished", commandId=executed["action"]["commandId"]),
        timeout=10,
    )
    assert finished["action"]["exitCode"] == 130
    assert finished["action"]["durationMs"] < 30_000


async def test_two_clients_see_the_same_output(server, connect):
    a = await connect(server.url)
    await a.initialize()
    b = await connect(server.url)
    await b.initialize()
    uri = await open_terminal(a)
    await b.request("subscribe", {"channel": uri})
    executed, _ = await run(a, uri, "echo shared-by-both")
    await b.wait_action(on(uri, "terminal/commandFinished", commandId=executed["commandId"]))
    await b.wait_for(lambda: screen(b, uri).endswith(PROMPT))
    assert screen(a, uri) == screen(b, uri)
    assert "shared-by-both" in command_output(b, uri, executed["commandId"])
    # What a types every watcher is sent, as the terminal's own action.
    typed = await b.wait_action(on(uri, "terminal/input"))
    assert typed["origin"]["clientId"] == a.client_id
    await b.assert_conforms(uri)


async def test_a_late_subscriber_is_sent_the_scrollback(server, connect):
    a = await connect(server.url)
    await a.initialize()
    uri = await open_terminal(a)
    await run(a, uri, "echo written-before-you-came")
    late = await connect(server.url)
    await late.initialize()
    snapshot = (await late.request("subscribe", {"channel": uri}))["snapshot"]
    assert "written-before-you-came" in text_of(snapshot["state"])
    assert snapshot["state"]["lifecycle"] == {"status": "running"}


async def test_the_scrollback_is_capped_to_the_recent_output(server, connect):
    a = await connect(server.url)
    await a.initialize()
    uri = await open_terminal(a)
    executed, finished = await run(a, uri, "seq 1 40000", timeout=60)
    assert finished["exitCode"] == 0
    late = await connect(server.url)
    await late.initialize()
    state = (await late.request("subscribe", {"channel": uri}))["snapshot"]["state"]
    held = text_of(state)
    assert len(held.encode()) <= SCROLLBACK
    assert "\r\n40000\r\n" in held and "\r\n100\r\n" not in held
    # The command the output was cut from keeps its place and its end.
    part = next(p for p in state["content"] if p.get("commandId") == executed["commandId"])
    assert part["isComplete"] and part["exitCode"] == 0
    # All of it reached the client that watched it.
    assert "\r\n100\r\n" in command_output(a, uri, executed["commandId"])


def running(*argv: str) -> list[int]:
    """The host's PIDs of the processes running exactly `argv`."""
    wanted = "\0".join(argv).encode() + b"\0"
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes() == wanted:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


async def appears(*argv: str, timeout: float = 15) -> list[int]:
    """The host's PIDs running `argv`, once there is one (looked for in /proc, which tells
    nobody when a process execs)."""
    deadline = time.monotonic() + timeout
    while not (found := running(*argv)):
        assert time.monotonic() < deadline, f"nothing ran {argv} within {timeout} s"
        await asyncio.sleep(0.02)
    return found


async def wait_gone(pid: int, timeout: float = 15) -> None:
    """Wait, on the process's own pidfd, for it to end."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    loop = asyncio.get_running_loop()
    ended = asyncio.Event()
    loop.add_reader(fd, ended.set)
    try:
        await asyncio.wait_for(ended.wait(), timeout)
    finally:
        loop.remove_reader(fd)
        os.close(fd)


async def test_dispose_kills_a_child_that_ignores_sighup(server, connect):
    client = await connect(server.url)
    await client.initialize()
    uri = await open_terminal(client)
    start = len(client.actions)
    stubborn = "sh -c 'trap \"\" HUP; echo child=$$; exec sleep 1011'"
    await client.dispatch(uri, {"type": "terminal/input", "data": stubborn + "\r"})
    await wait_after(client, start, on(uri, "terminal/commandExecuted"))
    await client.wait_for(lambda: re.search(r"child=(\d+)", screen(client, uri)))
    # The number it said is its own PID namespace's: the host's is found by what it runs.
    child = (await appears("sleep", "1011"))[0]
    start = len(client.actions)
    assert await client.request("disposeTerminal", {"channel": uri}) is None
    listed = await wait_after(client, start, on(ROOT, "root/terminalsChanged"))
    assert all(t["resource"] != uri for t in listed["action"]["terminals"])
    await wait_gone(child)
    with pytest.raises(RpcError) as gone:
        await client.request("subscribe", {"channel": uri})
    assert gone.value.code == -32001


async def test_a_shell_that_exits_is_said_to_have_exited_with_its_code(server, connect):
    client = await connect(server.url)
    await client.initialize()
    uri = await open_terminal(client)
    start = len(client.actions)
    await client.dispatch(uri, {"type": "terminal/input", "data": "echo last words; exit 4\r"})
    exited = await wait_after(client, start, on(uri, "terminal/exited"))
    assert exited["action"]["exitCode"] == 4
    # Said once the output drained: what the shell wrote last came before it.
    assert "last words" in screen(client, uri)
    listed = await wait_after(client, start, on(ROOT, "root/terminalsChanged"))
    info = next(t for t in listed["action"]["terminals"] if t["resource"] == uri)
    assert info["lifecycle"] == {"status": "exited", "exitCode": 4}
    await client.request("disposeTerminal", {"channel": uri})


async def test_a_title_a_claim_and_a_clear_are_said_as_the_client_sent_them(server, connect):
    a = await connect(server.url)
    await a.initialize()
    b = await connect(server.url)
    await b.initialize()
    uri = await open_terminal(a, name="build")
    assert a.tracked[uri][0]["title"] == "build"
    start = len(a.actions)
    await a.dispatch_and_wait(uri, {"type": "terminal/titleChanged", "title": "tests"})
    listed = await wait_after(a, start, on(ROOT, "root/terminalsChanged"))
    assert next(t for t in listed["action"]["terminals"] if t["resource"] == uri)["title"] == (
        "tests"
    )
    # Only the holder hands a terminal on.
    taken = {"kind": "client", "clientId": b.client_id}
    refused = await b.dispatch_and_wait(uri, {"type": "terminal/claimed", "claim": taken})
    assert refused["rejectionReason"] == (
        f"Terminal {uri} is held by client {a.client_id}: only its holder hands it on"
    )
    echo = await a.dispatch_and_wait(uri, {"type": "terminal/claimed", "claim": taken})
    assert "rejectionReason" not in echo
    refused = await a.dispatch_and_wait(uri, {"type": "terminal/claimed", "claim": {"kind": "x"}})
    assert refused["rejectionReason"].startswith("terminal/claimed: claim must be")
    await a.dispatch_and_wait(uri, {"type": "terminal/cleared"})
    state = (await a.request("subscribe", {"channel": uri}))["snapshot"]["state"]
    assert state["content"] == [] and state["title"] == "tests" and state["claim"] == taken
    await a.assert_conforms(uri)
    await a.request("disposeTerminal", {"channel": uri})


async def test_a_guest_may_not_open_a_terminal(server, connect, guest):
    client = await connect(server.url, token=guest)
    await client.initialize()
    with pytest.raises(RpcError) as refused:
        await client.request(
            "createTerminal",
            {
                "channel": f"ahp-terminal:/{uuid.uuid4()}",
                "claim": {"kind": "client", "clientId": client.client_id},
            },
        )
    assert refused.value.code == -32009
    assert refused.value.message == "user:gus may not terminal:create here"


async def test_one_without_the_grant_may_neither_watch_nor_type_into_a_terminal(
    server, connect, guest
):
    owner = await connect(server.url)
    await owner.initialize()
    uri = await open_terminal(owner)
    client = await connect(server.url, token=guest)
    result = await client.initialize()
    assert "terminals" not in result["snapshots"][0]["state"]
    with pytest.raises(RpcError) as refused:
        await client.request("subscribe", {"channel": uri})
    assert refused.value.code == -32009
    assert refused.value.message == "user:gus may not terminal:output here"
    answer = await client.dispatch_and_wait(uri, {"type": "terminal/input", "data": "id\r"})
    assert answer["rejectionReason"] == "user:gus may not terminal:input here"
    await owner.request("disposeTerminal", {"channel": uri})


async def test_create_terminal_refuses_a_uri_that_is_no_terminal_and_one_taken(server, connect):
    client = await connect(server.url)
    await client.initialize()
    claim = {"kind": "client", "clientId": client.client_id}
    with pytest.raises(RpcError) as refused:
        await client.request("createTerminal", {"channel": "ahp-session:/x", "claim": claim})
    assert refused.value.code == -32602
    uri = await open_terminal(client)
    with pytest.raises(RpcError) as refused:
        await client.request("createTerminal", {"channel": uri, "claim": claim})
    assert refused.value.code == -32010
    with pytest.raises(RpcError) as refused:
        await client.request("createTerminal", {"channel": f"{uri}-2", "claim": {"kind": "?"}})
    assert refused.value.code == -32602
    await client.request("disposeTerminal", {"channel": uri})
