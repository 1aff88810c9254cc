"""Terminals without a socket: the marks read out of the output, the scrollback's cap, the
shell's environment, and a host that stops killing every terminal it runs."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
from pathlib import Path

import pytest

from hosts.backends.base import TerminalExit
from hosts.engine.host import Host, HostSettings
from hosts.engine.ports import MemoryStore
from hosts.engine.services import Caller
from hosts.engine.services.terminals import do_create_terminal
from hosts.engine.sessions.agent_terminals import AgentTerminal, AgentTerminals
from hosts.engine.sessions.records import SessionRecord
from hosts.engine.terminals import LiveTerminal, TerminalCap, TerminalSettings
from hosts.engine.terminals.marks import Mark, MarkParser, command_line, cwd_uri
from hosts.engine.terminals.pty import session_groups
from hosts.engine.terminals.scrollback import content_bytes, trimmed
from hosts.engine.terminals.shells import chosen_shell, folder_of, shell_environment

#: The session an agent's commands run for, in the tests that run some.
SESSION = SessionRecord("ahp-session:/s", "fake", 0, 0, "ahp-chat:/c", owner="user:ann")


def test_the_marks_are_taken_out_of_the_output_and_the_rest_passes_as_it_came():
    pieces = MarkParser().feed(b"a\x1b]133;A\x07$ \x1b]0;title\x07b\x1b]7;file://h/tmp\x1b\\c")
    title = b"$ \x1b]0;title\x07b"
    assert pieces == [b"a", Mark("133", "A"), title, Mark("7", "file://h/tmp"), b"c"]


def test_a_mark_split_across_reads_is_held_until_its_end_arrives():
    parser = MarkParser()
    assert parser.feed(b"out\x1b") == [b"out"]
    assert parser.feed(b"]133;D") == []
    assert parser.feed(b";1\x07next") == [Mark("133", "D;1"), b"next"]


def test_an_unended_escape_past_the_bound_is_output():
    parser = MarkParser()
    assert parser.feed(b"\x1b]133;" + b"x" * 5000) == [b"\x1b]133;" + b"x" * 5000]


def test_the_command_line_is_read_back_off_what_the_line_editor_drew():
    assert command_line("echo hi\r\n\x1b[?2004l\r") == "echo hi"
    assert command_line("ech\b \bho x\r\n") == "echo x"
    assert command_line("\x1b[32mls\x1b[0m -l\x1b[2D\x1b[K-a\r\n") == "ls -a"
    # What zsh's line editor draws around a line: keypad modes, bracketed paste, a charset.
    assert command_line("\x1b[?2004l\x1b=(exit 3)\x1b>\x1b(B\r\n") == "(exit 3)"
    assert command_line("\x1b[>4;1m\x1b[ qls\r\n") == "ls"


def test_osc_7_names_a_folder_without_its_host():
    assert cwd_uri("file://box/home/me/a%20b") == "file:///home/me/a%20b"
    assert cwd_uri("http://box/x") is None


def test_the_scrollback_keeps_the_recent_output_and_a_running_commands_part():
    content = [
        {"type": "unclassified", "value": "old\n" * 100},
        {"type": "command", "commandId": "1", "commandLine": "x", "output": "y" * 50,
         "timestamp": 0, "isComplete": False},
    ]  # fmt: skip
    kept = trimmed(content, 60)
    assert content_bytes(kept) <= 60
    assert kept[-1]["commandId"] == "1" and kept[-1]["output"] == "y" * 50
    assert kept[0]["value"].startswith("old\n")
    everything_gone = trimmed(content, 10)
    assert everything_gone == [{**content[1], "output": "y" * 10}]


def test_a_shell_gets_the_servers_environment_without_its_settings_and_with_shell_env(
    monkeypatch,
):
    monkeypatch.setenv("AHPD_CONNECTION_TOKEN", "secret")
    monkeypatch.setenv("KEEP_ME", "1")
    monkeypatch.setenv("DROP_ME", "1")
    env = shell_environment({"ADDED": "yes", "DROP_ME": None})
    assert "AHPD_CONNECTION_TOKEN" not in env and "DROP_ME" not in env
    assert env["KEEP_ME"] == "1" and env["ADDED"] == "yes" and env["TERM"]


def test_a_default_shell_that_is_not_here_falls_back_to_the_login_shell(monkeypatch):
    monkeypatch.setenv("SHELL", "/bin/sh")
    assert chosen_shell("/no/such/shell") == "/bin/sh"
    assert chosen_shell("") == "/bin/sh"
    bash = shutil.which("bash")
    assert bash is not None and chosen_shell(bash) == bash


def test_a_cwd_is_a_folder_here_or_nothing(tmp_path: Path):
    assert folder_of(tmp_path.as_uri()) == tmp_path
    assert folder_of((tmp_path / "missing").as_uri()) is None
    assert folder_of("ahp-session:/x") is None


@pytest.fixture
def fast_kill() -> TerminalSettings:
    return TerminalSettings(kill_grace_s=0.5)


async def test_a_host_that_stops_kills_every_terminal(fast_kill, monkeypatch):
    monkeypatch.setenv("SHELL", "/bin/sh")
    started = asyncio.Event()
    read = LiveTerminal.output

    def output(self: LiveTerminal, raw: bytes) -> None:
        read(self, raw)
        if b"started" in raw:
            started.set()

    monkeypatch.setattr(LiveTerminal, "output", output)
    host = Host(MemoryStore(), HostSettings(terminals=fast_kill, close_wait_s=0.1))
    await host.start()
    caller = Caller(host.root_principal)
    terminal = do_create_terminal(
        host, caller, "ahp-terminal:/stop", claim={"kind": "client", "clientId": "c"}
    )
    assert terminal.pty is not None
    pid = terminal.pty.pid
    # A job that ignores SIGHUP, in the shell's session.
    terminal.write("trap '' HUP; sleep 1000 & echo started\n")
    await asyncio.wait_for(started.wait(), 10)
    assert len(session_groups(pid)) >= 1
    await host.stop()
    assert session_groups(pid) == set()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


async def test_an_agents_command_runs_in_a_terminal_its_session_claims(fast_kill, tmp_path):
    host = Host(MemoryStore(), HostSettings(terminals=fast_kill, close_wait_s=0.1))
    await host.start()
    try:
        agent = AgentTerminals(
            host.terminals, SESSION, "ahp-chat:/c", host.sandbox.jail("user:t", [])
        )
        env = {"PATH": os.environ["PATH"]}
        ran = agent.open(
            ["sh", "-c", "printf 'one\\ntwo\\n'; exit 3"],
            title="two lines",
            cwd=tmp_path,
            env=env,
            turn_id="t1",
        )
        claim = {"kind": "session", "session": "ahp-session:/s", "chat": "ahp-chat:/c"}
        held = host.terminals.get(ran.uri)
        assert held is not None and held.state["claim"] == {**claim, "turnId": "t1"}
        assert await asyncio.wait_for(ran.wait(), 10) == TerminalExit(3)
        # What it printed, in lines as the command wrote them (not the pty's CRLF).
        assert ran.output() == ("one\ntwo\n", False)
        ran.claim_for("call-1")
        assert held.state["claim"] == {**claim, "turnId": "t1", "toolCallId": "call-1"}
        assert held.state["lifecycle"] == {"status": "exited", "exitCode": 3}
        paged = agent.open(
            ["sh", "-c", "echo $PAGER $GIT_PAGER"], title="p", cwd=tmp_path, env=env, turn_id=None
        )
        await asyncio.wait_for(paged.wait(), 10)
        assert paged.output()[0] == "cat cat\n"  # a pty's `git log` would wait for keys
        sleeping = agent.open(["sleep", "30"], title="sleep", cwd=tmp_path, env=env, turn_id=None)
        assert sleeping.exit_status() is None
        await sleeping.kill()
        assert await asyncio.wait_for(sleeping.wait(), 10) == TerminalExit(None, "SIGHUP")
    finally:
        await host.stop()


async def test_a_server_that_ignores_hangups_still_hangs_up_its_terminals(fast_kill, tmp_path):
    """Under nohup (or a supervisor ignoring SIGHUP) the ignored signal would pass to every
    shell through exec; a terminal's process starts with the signals at their defaults."""
    host = Host(MemoryStore(), HostSettings(terminals=fast_kill, close_wait_s=0.1))
    await host.start()
    was = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        agent = AgentTerminals(
            host.terminals, SESSION, "ahp-chat:/c", host.sandbox.jail("user:t", [])
        )
        env = {"PATH": os.environ["PATH"]}
        sleeping = agent.open(["sleep", "30"], title="sleep", cwd=tmp_path, env=env, turn_id=None)
        await sleeping.kill()
        assert await asyncio.wait_for(sleeping.wait(), 10) == TerminalExit(None, "SIGHUP")
    finally:
        signal.signal(signal.SIGHUP, was)
        await host.stop()


async def test_an_agent_at_its_persons_cap_is_refused_a_command_and_an_exited_one_frees_it(
    tmp_path,
):
    """A session's command that exited holds no process: it is kept for reading until the
    session goes, and counts against nobody's cap."""
    settings = TerminalSettings(kill_grace_s=0.5, per_person=2)
    host = Host(MemoryStore(), HostSettings(terminals=settings, close_wait_s=0.1))
    await host.start()
    try:
        agent = AgentTerminals(
            host.terminals, SESSION, "ahp-chat:/c", host.sandbox.jail("user:ann", [])
        )
        env = {"PATH": os.environ["PATH"]}

        def sleeping() -> AgentTerminal:
            return agent.open(["sleep", "30"], title="s", cwd=tmp_path, env=env, turn_id=None)

        first, _ = sleeping(), sleeping()
        with pytest.raises(TerminalCap) as refused:
            sleeping()
        assert str(refused.value) == (
            "user:ann already has 2 terminals open, the most one person may have "
            "(AHPD_TERMINALS_PER_PERSON=2): dispose of one first"
        )
        assert host.terminals.open_of("user:ann") == 2 and len(host.terminals) == 2
        await first.kill()
        await first.wait()
        assert host.terminals.open_of("user:ann") == 1
        sleeping()
        # Another person is not held to ann's count.
        assert host.terminals.open_of("user:bob") == 0
    finally:
        await host.stop()


async def test_a_cap_of_zero_is_no_cap(tmp_path):
    settings = TerminalSettings(kill_grace_s=0.5, per_person=0)
    host = Host(MemoryStore(), HostSettings(terminals=settings, close_wait_s=0.1))
    await host.start()
    try:
        agent = AgentTerminals(
            host.terminals, SESSION, "ahp-chat:/c", host.sandbox.jail("user:ann", [])
        )
        env = {"PATH": os.environ["PATH"]}
        for _ in range(3):
            agent.open(["sleep", "30"], title="s", cwd=tmp_path, env=env, turn_id=None)
        assert host.terminals.open_of("user:ann") == 3
    finally:
        await host.stop()
