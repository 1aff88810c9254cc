"""The connection token at the upgrade, on plain HTTP, and where it comes from."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import websockets

from tests.support.client import Client
from tests.support.server import REPO, TOKEN, ServerProcess, configuration

ROOT = "ahp-root://"


def http_get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str]]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers)


def http_base(server: ServerProcess) -> str:
    return server.base.replace("ws://", "http://")


async def test_the_token_is_accepted_as_a_tkn_query(server, connect):
    client = await connect(server.url, token=TOKEN)
    assert (await client.initialize())["protocolVersion"] == "1.0.0"


async def test_the_token_is_accepted_as_a_bearer_header(server, connect):
    client = await connect(server.url, token=None, headers={"Authorization": f"Bearer {TOKEN}"})
    assert (await client.initialize())["protocolVersion"] == "1.0.0"


@pytest.mark.parametrize(
    ("token", "challenge"),
    [(None, 'Bearer realm="ahpd"'), ("wrong", 'Bearer realm="ahpd", error="invalid_token"')],
)
async def test_a_missing_or_wrong_token_is_refused_401_at_the_upgrade(server, token, challenge):
    target = server.base + (f"?tkn={token}" if token else "")
    with pytest.raises(websockets.InvalidStatus) as refused:
        await websockets.connect(target)
    response = refused.value.response
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == challenge


async def test_a_websocket_on_another_path_is_not_found(server):
    with pytest.raises(websockets.InvalidStatus) as refused:
        await websockets.connect(server.base + f"elsewhere?tkn={TOKEN}")
    assert refused.value.response.status_code == 404


def test_plain_http_on_the_socket_path_is_426_when_the_token_would_be_admitted(server):
    status, headers = http_get(http_base(server) + f"?tkn={TOKEN}")
    assert status == 426
    assert headers["Upgrade"] == "websocket"
    assert headers["Access-Control-Allow-Origin"] == "*"
    status, _ = http_get(http_base(server), {"Authorization": f"Bearer {TOKEN}"})
    assert status == 426


def test_plain_http_on_the_socket_path_is_401_when_it_would_not(server):
    status, headers = http_get(http_base(server))
    assert status == 401
    assert headers["WWW-Authenticate"] == 'Bearer realm="ahpd"'
    status, headers = http_get(http_base(server) + "?tkn=nope")
    assert status == 401
    assert "invalid_token" in headers["WWW-Authenticate"]


async def test_without_a_token_given_one_is_made_in_the_data_directory_and_printed():
    process = ServerProcess(token=None).start()
    try:
        path = process.data_dir / "connection-token"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        token = path.read_text().strip()
        assert process.url.endswith(f"?tkn={token}")
        client = await Client.open(process.url, token=token)
        assert (await client.initialize())["protocolVersion"] == "1.0.0"
        await client.close()
        # The same token survives a restart.
        process.restart()
        assert process.url.endswith(f"?tkn={token}")
    finally:
        process.close()


async def test_two_servers_with_their_own_data_directories_run_side_by_side():
    first = ServerProcess(token=None).start()
    second = ServerProcess(token=None).start()
    try:
        assert first.port != second.port
        token_1 = (first.data_dir / "connection-token").read_text().strip()
        token_2 = (second.data_dir / "connection-token").read_text().strip()
        assert token_1 != token_2
        for process, token in ((first, token_1), (second, token_2)):
            client = await Client.open(process.url, token=token)
            await client.initialize()
            await client.close()
        with pytest.raises(websockets.InvalidStatus):
            await websockets.connect(second.base + f"?tkn={token_1}")
    finally:
        first.close()
        second.close()


def run_manage(env_extra: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AHPD_")}
    env.update(env_extra)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("env", "variable"),
    [
        ({"AHPD_PORT": "not-a-port"}, "AHPD_PORT"),
        ({"AHPD_PORT": "70000"}, "AHPD_PORT"),
        ({"AHPD_WITHOUT_CONNECTION_TOKEN": "maybe"}, "AHPD_WITHOUT_CONNECTION_TOKEN"),
        ({"DATABASE_URL": "mysql://x"}, "DATABASE_URL"),
        ({"REDIS_URL": "localhost:6379"}, "REDIS_URL"),
        ({"AHPD_CONNECTION_TOKEN_FILE": "/nonexistent/token"}, "AHPD_CONNECTION_TOKEN_FILE"),
        ({"AHPD_CLIENT_QUEUE_BYTES": "-1"}, "AHPD_CLIENT_QUEUE_BYTES"),
    ],
)
def test_a_bad_setting_is_refused_at_start_naming_the_variable(tmp_path, env, variable):
    result = run_manage({"AHPD_DATA_DIR": str(tmp_path), **env}, "serve")
    assert result.returncode != 0
    assert variable in result.stderr
    assert "Traceback" not in result.stderr


def test_no_token_on_a_non_loopback_address_refuses_to_start(tmp_path):
    result = run_manage(
        {
            "AHPD_DATA_DIR": str(tmp_path),
            "AHPD_HOST": "0.0.0.0",
            "AHPD_WITHOUT_CONNECTION_TOKEN": "1",
        },
        "serve",
    )
    assert result.returncode != 0
    assert "AHPD_WITHOUT_CONNECTION_TOKEN" in result.stderr
    assert "loopback" in result.stderr


async def test_no_token_on_loopback_admits_anyone():
    process = ServerProcess(token=None, env_extra={"AHPD_WITHOUT_CONNECTION_TOKEN": "1"}).start()
    try:
        assert "?tkn=" not in process.url
        client = await Client.open(process.url, token=None)
        assert (await client.initialize())["protocolVersion"] == "1.0.0"
        await client.close()
    finally:
        process.close()


async def test_the_data_directory_and_what_it_keeps_are_the_servers_alone():
    # Left open by an older server, or made by hand: the server closes what it finds.
    data_dir = Path(tempfile.mkdtemp(prefix="ahpd-e2e-"))
    data_dir.chmod(0o755)
    (data_dir / "secret-key").write_text("an older key\n")
    (data_dir / "connection-token").write_text("an-older-token\n")
    for name in ("secret-key", "connection-token"):
        (data_dir / name).chmod(0o644)
    process = ServerProcess(token=None, data_dir=data_dir).start()
    try:
        client = await Client.open(process.url, token="an-older-token")
        await client.initialize()
        # A write, so that the database has its write-ahead log beside it.
        await client.dispatch_and_wait(
            ROOT, {"type": "root/configChanged", "config": {"x-mode": "0600"}}
        )
        await client.close()
        assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
        kept = {path.name: stat.S_IMODE(path.stat().st_mode) for path in data_dir.iterdir()}
        expected = {"secret-key", "connection-token"}
        if configuration() == "embedded":
            expected |= {"ahpd.sqlite3", "ahpd.sqlite3-wal", "ahpd.sqlite3-shm"}
        assert expected <= kept.keys()
        assert {name: kept[name] for name in expected} == dict.fromkeys(expected, 0o600)
        # Whatever else it keeps there, no other user of the machine reads either.
        assert all(mode & 0o077 == 0 for mode in kept.values()), kept
    finally:
        process.close()
