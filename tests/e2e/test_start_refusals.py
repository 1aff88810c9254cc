"""`manage.py serve` refuses to start on what it cannot serve with: non-zero, one line on
stderr naming the variable to blame (or the command to run), and nothing else."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.support.server import REPO, ServerProcess


def serve(env: dict[str, str]) -> tuple[int, list[str]]:
    """Run `serve` to its end: the exit code and stderr's lines."""
    result = subprocess.run(
        [sys.executable, "manage.py", "serve"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return result.returncode, [line for line in result.stderr.splitlines() if line.strip()]


def assert_refused(env: dict[str, str], *named: str) -> str:
    code, lines = serve(env)
    assert code != 0, lines
    assert lines, "nothing on stderr"
    assert "Traceback" not in "\n".join(lines)
    assert len(lines) == 1, lines
    (line,) = lines
    assert line.startswith("ahpd: ")
    for word in named:
        assert word in line, line
    return line


@pytest.fixture(scope="module")
def migrated() -> Iterator[ServerProcess]:
    """A data directory (or database) made ready by migrate, never served."""
    process = ServerProcess()
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v0"], cwd=REPO, env=process.env(), check=True
    )
    yield process
    process.close()


@pytest.mark.parametrize(
    ("variable", "value", "named"),
    [
        ("AHPD_LOG_LEVEL", "LOUD", ("AHPD_LOG_LEVEL", "LOUD")),
        ("AHPD_LOG_FORMAT", "xml", ("AHPD_LOG_FORMAT", "PLAIN, JSON", "xml")),
        # The rule root config's clientQueueBytes and replayBytes are pushed by.
        ("AHPD_CLIENT_QUEUE_BYTES", "10", ("AHPD_CLIENT_QUEUE_BYTES", "1048576")),
        ("AHPD_REPLAY_BYTES", "10", ("AHPD_REPLAY_BYTES", "1048576")),
        ("AHPD_MAX_FRAME_BYTES", "1000", ("AHPD_MAX_FRAME_BYTES",)),
        ("AHPD_ALLOWED_ORIGINS", "vscode-file://vscode-app", ("AHPD_ALLOWED_ORIGINS",)),
        ("AHPD_SLEEP_AFTER_MINUTES", "soon", ("AHPD_SLEEP_AFTER_MINUTES", "soon")),
        ("AHPD_SLEEP_AFTER_MINUTES", "-1", ("AHPD_SLEEP_AFTER_MINUTES", "at least 0")),
        ("AHPD_SESSION_RESIDENCY_LIMIT", "-1", ("AHPD_SESSION_RESIDENCY_LIMIT",)),
        ("AHPD_AGENTS_PER_PERSON", "many", ("AHPD_AGENTS_PER_PERSON", "many")),
        ("AHPD_TERMINALS_PER_PERSON", "-1", ("AHPD_TERMINALS_PER_PERSON", "at least 0")),
        ("AHPD_AUTOMATION_TRIGGERS_MAX", "-1", ("AHPD_AUTOMATION_TRIGGERS_MAX", "at least 0")),
        ("AHPD_AUTOMATIONS_PER_PERSON", "many", ("AHPD_AUTOMATIONS_PER_PERSON", "many")),
        ("AHPD_AUTOMATION_RUNS_PER_HOUR", "-5", ("AHPD_AUTOMATION_RUNS_PER_HOUR",)),
        ("AHPD_SANDBOX", "maybe", ("AHPD_SANDBOX", "maybe")),
        ("AHPD_SANDBOX_NETWORK", "some", ("AHPD_SANDBOX_NETWORK", "some")),
        ("AHPD_SANDBOX_PATHS", "/no/such/toolchain", ("AHPD_SANDBOX_PATHS", "/no/such/toolchain")),
    ],
)
def test_a_bad_setting(migrated, variable, value, named):
    assert_refused({**migrated.env(), variable: value}, *named)


@pytest.mark.parametrize(
    ("price", "words"),
    [
        ("NaN", "must be a finite number, not nan"),
        ("1e400", "must be a finite number, not inf"),
        ("1e7", "is more than 1000000"),
    ],
)
def test_an_agents_price_no_turn_could_be_charged_at(migrated, tmp_path, price, words):
    # JSON as Python reads it takes NaN and 1e400; each turn's cost would be a decimal
    # error when its usage is recorded, long after the server started.
    agents = tmp_path / "agents.json"
    agents.write_text(
        '{"agents": [{"provider": "local", "kind": "openai", "baseUrl": "http://127.0.0.1:9",'
        f' "prices": {{"m": {{"input": {price}}}}}}}]}}'
    )
    env = {**migrated.env(), "AHPD_CONFIG": str(agents)}
    assert_refused(env, "agents[0]: prices.m.input " + words)


def test_a_root_config_bound_of_zero_is_no_limit_and_taken(migrated):
    # 0 passes the same rule (no limit); the server gets as far as the busy port below.
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        env = {**migrated.env(), "AHPD_PORT": str(port), "AHPD_CLIENT_QUEUE_BYTES": "0"}
        assert_refused(env, "AHPD_PORT")


def test_a_busy_port(migrated):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert_refused({**migrated.env(), "AHPD_PORT": str(port)}, f"port {port}", "AHPD_PORT")


def test_an_address_not_on_this_machine(migrated):
    # TEST-NET-1 (RFC 5737): no machine has it.
    assert_refused({**migrated.env(), "AHPD_HOST": "192.0.2.1"}, "192.0.2.1", "AHPD_HOST")


def test_an_unreachable_database(migrated):
    line = assert_refused(
        {**migrated.env(), "DATABASE_URL": "postgres://ahpd:hunter2@127.0.0.1:1/x"},
        "DATABASE_URL",
        "127.0.0.1:1",
    )
    assert "hunter2" not in line


def test_an_unmigrated_database():
    fresh = ServerProcess(from_template=False)
    try:
        assert_refused(fresh.env(), "not migrated", "manage.py migrate")
    finally:
        fresh.close()


def test_an_unreachable_redis(migrated):
    assert_refused(
        {**migrated.env(), "REDIS_URL": "redis://:hunter2@127.0.0.1:1/0"},
        "REDIS_URL",
        "127.0.0.1:1",
    )


def test_a_sandbox_asked_for_that_cannot_start_stops_the_server(migrated, tmp_path):
    # No bubblewrap on this PATH: asked for by name, the server does not start without it.
    path = tmp_path / "bin"
    path.mkdir()
    env = {**migrated.env(), "AHPD_SANDBOX": "bwrap", "PATH": str(path)}
    assert_refused(env, "AHPD_SANDBOX=bwrap", "bwrap is not installed")
