"""The sandbox (hosts/backends/sandbox.py) without a server: real bubblewrap, real processes."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from hosts.backends.sandbox import (
    Sandbox,
    SandboxError,
    SandboxSettings,
    decide,
    home_name,
    needs_of,
    probe,
)

needs_bwrap = pytest.mark.skipif(not probe()[0], reason="bubblewrap cannot start here")


def sandboxed(tmp_path: Path, **settings: object) -> Sandbox:
    made = SandboxSettings(mode="bwrap", homes=tmp_path / "homes", **settings)  # type: ignore[arg-type]
    return Sandbox(made)


def run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30)


def test_off_is_off_and_says_why():
    decided = decide("off", SandboxSettings())
    assert decided.mode == "off" and decided.reason == "AHPD_SANDBOX=off"


def test_bwrap_asked_for_and_missing_refuses_to_start():
    with pytest.raises(SandboxError, match="no-such-bwrap is not installed"):
        decide("bwrap", SandboxSettings(bwrap="no-such-bwrap"))


def test_unset_falls_back_to_off_saying_why():
    decided = decide("auto", SandboxSettings(bwrap="no-such-bwrap"))
    assert decided.mode == "off" and "no-such-bwrap is not installed" in decided.reason


def test_a_jail_with_the_sandbox_off_starts_a_command_as_it_is(tmp_path):
    jail = Sandbox().jail("user:ann", [tmp_path])
    assert jail.wrap(["true"], cwd=tmp_path, env={"A": "1"}) == (["true"], {"A": "1"})
    assert jail.home_env() == {}


def test_each_person_has_a_home_folder_no_other_person_shares():
    assert home_name("user:alice") == "alice"
    names = {home_name(p) for p in ("user:a/b", "user:a_b", "user:..", "user:root", "root:ahpd")}
    assert len(names) == 5
    assert all("/" not in name and name not in {"..", ".", "root"} for name in names)


def test_a_program_in_a_virtualenv_needs_the_virtualenv_and_its_python():
    needed = needs_of(sys.executable, None)
    assert Path(sys.prefix).resolve() in [p.resolve() for p in needed]
    assert Path(sys.base_prefix).resolve() in [p.resolve() for p in needed]


@needs_bwrap
def test_a_missing_program_is_refused_as_exec_would(tmp_path):
    jail = sandboxed(tmp_path).jail("user:ann", [tmp_path])
    with pytest.raises(FileNotFoundError):
        jail.wrap(["no-such-program-here"], cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})


@needs_bwrap
def test_what_must_stay_hidden_is_hidden_even_inside_a_working_folder(tmp_path):
    folder = tmp_path / "work"
    data = folder / "var"
    data.mkdir(parents=True)
    (data / "secret-key").write_text("s3cret")
    (folder / "env").write_text("TOKEN=abc")
    (folder / "mine.txt").write_text("mine")
    sandbox = sandboxed(tmp_path, hidden=(data, folder / "env"))
    argv, env = sandbox.jail("user:ann", [folder]).wrap(
        ["sh", "-c", f"cat {data}/secret-key env mine.txt; echo made > new.txt"],
        cwd=folder,
        env={"PATH": "/usr/bin:/bin"},
    )
    done = run(argv, env)
    assert "s3cret" not in done.stdout and "TOKEN" not in done.stdout
    assert "mine" in done.stdout
    assert (folder / "new.txt").read_text() == "made\n"
    # The home is the person's, kept on the host.
    assert env["HOME"] == "/home/ann" and (tmp_path / "homes" / "ann").is_dir()


@needs_bwrap
def test_the_checkout_is_hidden_where_a_working_folder_holds_it_but_not_when_served_itself(
    tmp_path,
):
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "settings.py").write_text("TOKEN = 'deploy'")
    sandbox = sandboxed(tmp_path, checkout=checkout)
    command = ["sh", "-c", f"cat {checkout}/settings.py || echo HIDDEN"]
    env = {"PATH": "/usr/bin:/bin"}
    argv, env = sandbox.jail("user:ann", [tmp_path]).wrap(command, cwd=tmp_path, env=env)
    assert run(argv, env).stdout.strip() == "HIDDEN"
    argv, env = sandbox.jail("user:ann", [checkout]).wrap(command, cwd=checkout, env=env)
    assert "deploy" in run(argv, env).stdout


@needs_bwrap
def test_the_network_is_cut_when_asked(tmp_path):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    script = f"import socket; socket.create_connection(('127.0.0.1', {port}), 2); print('OK')"
    env = {"PATH": "/usr/bin:/bin"}
    try:
        for network, expected in ((True, "OK"), (False, "")):
            jail = sandboxed(tmp_path, network=network).jail("user:ann", [tmp_path])
            argv, env = jail.wrap([sys.executable, "-c", script], cwd=tmp_path, env=env)
            assert run(argv, env).stdout.strip() == expected
    finally:
        listener.close()


@needs_bwrap
def test_a_sandboxed_process_has_no_capabilities_and_sees_only_its_own_processes(tmp_path):
    jail = sandboxed(tmp_path).jail("user:ann", [tmp_path])
    argv, env = jail.wrap(
        ["sh", "-c", "grep CapEff /proc/self/status; ls /proc | grep -c '^[0-9]'"],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
    )
    caps, count = run(argv, env).stdout.split("\n")[:2]
    assert caps.split()[1] == "0000000000000000"
    assert int(count) < 6  # bubblewrap's init, the shell, its commands: not the host's


@needs_bwrap
def test_a_program_named_through_a_link_starts_by_that_name(tmp_path):
    # A virtualenv reached through a link (a checkout's .venv linked to another's): the
    # program is run by the name it was given, so that name must lead somewhere inside too.
    linked = tmp_path / "linked-venv"
    linked.symlink_to(Path(sys.prefix).resolve())
    program = linked / "bin" / Path(sys.executable).name
    jail = sandboxed(tmp_path).jail("user:ann", [tmp_path / "work"])
    (tmp_path / "work").mkdir()
    argv, env = jail.wrap(
        [str(program), "-c", "import acp; print('started')"],
        cwd=tmp_path / "work",
        env={"PATH": "/usr/bin:/bin"},
    )
    assert run(argv, env).stdout.strip() == "started"


@needs_bwrap
def test_a_path_an_agents_configuration_names_never_brings_in_what_holds_the_data(tmp_path):
    # An env value of "/" (or a parent of the data directory) would bind the whole disk.
    data = tmp_path / "data"
    data.mkdir()
    (data / "secret-key").write_text("s3cret")
    (tmp_path / "work").mkdir()
    sandbox = sandboxed(tmp_path, hidden=(data,))
    argv, env = sandbox.jail("user:ann", [tmp_path / "work"]).wrap(
        ["sh", "-c", f"cat {data}/secret-key; ls /root /etc/shadow"],
        cwd=tmp_path / "work",
        env={"PATH": "/usr/bin:/bin"},
        needs=["/", str(tmp_path)],
    )
    done = run(argv, env)
    assert "s3cret" not in done.stdout and "No such file" in done.stderr
