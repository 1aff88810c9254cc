"""/healthz on a running server: 200 while the database and the channel layer answer, 503
naming the one that does not (with PostgreSQL and Redis, taken away behind a TCP proxy)."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.support.server import ServerProcess, configuration
from tests.support.tcp_proxy import TcpProxy

SERVICES = configuration() == "postgres+redis"


def behind(proxy: TcpProxy, url: str) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)
    host = f"127.0.0.1:{proxy.port}"
    return urlunsplit(parts._replace(netloc=f"{netloc[0]}@{host}" if len(netloc) > 1 else host))


@pytest.fixture(scope="module")
def proxies():
    if not SERVICES:
        yield {}
        return
    made = {
        "redis": TcpProxy("127.0.0.1", urlsplit(os.environ["REDIS_URL"]).port or 6379),
        "database": TcpProxy("127.0.0.1", urlsplit(os.environ["DATABASE_URL"]).port or 5432),
    }
    yield made
    for proxy in made.values():
        proxy.close()


@pytest.fixture(scope="module")
def server(proxies):
    process = ServerProcess()
    if SERVICES:
        process.env_extra["REDIS_URL"] = behind(proxies["redis"], os.environ["REDIS_URL"])
        # The server's own database, reached through the proxy.
        database = process.env()["DATABASE_URL"]
        process.env_extra["DATABASE_URL"] = behind(proxies["database"], database)
    process.start()
    yield process
    process.close()


def healthz(server: ServerProcess) -> tuple[int, dict]:
    url = f"http://127.0.0.1:{server.port}/healthz"
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_a_healthy_server_says_so_without_a_token(server):
    assert healthz(server) == (200, {"status": "ok", "database": "ok", "channelLayer": "ok"})


@pytest.mark.skipif(not SERVICES, reason="the embedded layer and SQLite live in the process")
def test_a_lost_channel_layer_is_503_naming_it(server, proxies):
    proxies["redis"].cut()
    status, body = healthz(server)
    assert status == 503
    assert body["status"] == "unavailable"
    assert body["database"] == "ok"
    assert body["channelLayer"].startswith("down")


@pytest.mark.skipif(not SERVICES, reason="the embedded layer and SQLite live in the process")
def test_a_lost_database_is_503_naming_it(server, proxies):
    proxies["database"].cut()
    status, body = healthz(server)
    assert status == 503
    assert body["database"].startswith("down")
