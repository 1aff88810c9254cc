"""The upgrade's Origin check: a web page elsewhere cannot open a socket, even with a token.

No Origin at all (editors, scripts) and non-web origins (VS Code's `vscode-file://`) are let in;
an http(s) origin is let in when it is this server by the Host the request came with, a loopback
name, or one of AHPD_ALLOWED_ORIGINS.
"""

from __future__ import annotations

import pytest

from tests.support.server import ServerProcess
from tests.support.upgrade import admitted, refused

ALLOWED = "https://app.example, http://tools.example:8080"


@pytest.fixture(scope="module")
def server():
    process = ServerProcess(env_extra={"AHPD_ALLOWED_ORIGINS": ALLOWED}).start()
    yield process
    process.close()


@pytest.mark.parametrize(
    "origin",
    [
        "http://evil.example",
        "https://evil.example",
        "http://127.0.0.1.evil.example",
        # A sandboxed frame or a file page: a web page with no origin to name.
        "null",
        # AHPD_ALLOWED_ORIGINS names origins, scheme and port included.
        "http://app.example",
        "http://tools.example",
        "https://tools.example:8080",
    ],
)
async def test_a_foreign_web_origin_is_refused_403_even_with_the_token(server, origin):
    await refused(server, origin=origin)


async def test_the_refusal_is_logged_as_a_warning_naming_the_origin(server):
    await refused(server, origin="http://named-in-the-log.example")
    assert server.wait_output(
        lambda line: "WARNING" in line and "http://named-in-the-log.example" in line
    )


async def test_no_origin_is_admitted(server):
    await admitted(server)


@pytest.mark.parametrize(
    "origin", ["vscode-file://vscode-app", "vscode-webview://1a2b3c", "app://obsidian.md"]
)
async def test_a_non_web_origin_is_admitted(server, origin):
    await admitted(server, origin=origin)


async def test_the_same_origin_is_admitted(server):
    await admitted(server, origin=f"http://127.0.0.1:{server.port}")
    # By whatever name the server was reached, the page that name serves is this server's.
    await admitted(
        server, origin=f"http://ahpd.example:{server.port}", host=f"ahpd.example:{server.port}"
    )
    await admitted(server, origin="https://ahpd.example", host="AHPD.example")


async def test_an_origin_on_the_servers_port_under_another_name_is_refused(server):
    await refused(
        server, origin=f"http://ahpd.example:{server.port}", host=f"other.example:{server.port}"
    )


@pytest.mark.parametrize(
    "origin", ["http://localhost:3000", "http://127.0.0.1", "http://[::1]:5173"]
)
async def test_a_loopback_origin_is_admitted(server, origin):
    await admitted(server, origin=origin)


@pytest.mark.parametrize(
    "origin", ["https://app.example", "https://APP.example:443", "http://tools.example:8080"]
)
async def test_an_allowed_origin_is_admitted(server, origin):
    await admitted(server, origin=origin)


async def test_with_a_token_any_host_is_admitted(server):
    # A VS Code with a token connects by whatever address it was given.
    await admitted(server, host=f"some.name:{server.port}")
    await admitted(server, host="10.0.0.7")


async def test_a_foreign_origin_is_refused_before_the_token_is_looked_at(server):
    # 403, not 401: a page elsewhere learns nothing about tokens.
    await refused(server, origin="http://evil.example", token="wrong")
