"""Without a connection token, the upgrade takes loopback Host names only (DNS rebinding) and
the same Origin check as with one."""

from __future__ import annotations

import pytest

from tests.support.server import ServerProcess
from tests.support.upgrade import admitted, refused


@pytest.fixture(scope="module")
def server():
    process = ServerProcess(token=None, env_extra={"AHPD_WITHOUT_CONNECTION_TOKEN": "1"}).start()
    yield process
    process.close()


@pytest.mark.parametrize(
    "host", ["evil.example", "evil.example:{port}", "127.0.0.1.evil.example:{port}", "10.0.0.7"]
)
async def test_a_host_that_is_not_a_loopback_name_is_refused_403(server, host):
    await refused(server, host=host.format(port=server.port), token=None)


async def test_the_refusal_is_logged_as_a_warning_naming_the_host(server):
    await refused(server, host="rebound-name.example", token=None)
    assert server.wait_output(lambda line: "WARNING" in line and "rebound-name.example" in line)


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1:{port}",
        "127.0.0.1",
        "127.1.2.3:{port}",
        "localhost:{port}",
        "LOCALHOST",
        "[::1]:{port}",
        "[::1]",
    ],
)
async def test_a_loopback_host_is_admitted(server, host):
    await admitted(server, host=host.format(port=server.port), token=None)


async def test_a_foreign_origin_is_refused(server):
    await refused(server, origin="http://evil.example", token=None)
    # Even one that names the loopback address it rebound to, by another name.
    await refused(
        server,
        origin=f"http://evil.example:{server.port}",
        host=f"127.0.0.1:{server.port}",
        token=None,
    )


async def test_the_same_origin_and_no_origin_are_admitted(server):
    await admitted(
        server,
        origin=f"http://localhost:{server.port}",
        host=f"localhost:{server.port}",
        token=None,
    )
    await admitted(server, token=None)
    await admitted(server, origin="vscode-file://vscode-app", token=None)
