"""The Django MCP directory the engine asks when a session opens, against the database: the
operator's file's servers first, then the registry's enabled rows offered host-wide, to the
session's owner, to its scope, and to a project's team; a disabled row, or one whose name the
file has, is offered to nobody."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from hosts.backends.config import check_mcp_server
from hosts.models import Project, Team
from hosts.store.engine_database import close_connections
from mcp_servers import registry
from mcp_servers.directory import DjangoMcpDirectory
from mcp_servers.models import McpServer

pytestmark = pytest.mark.django_db(transaction=True)

FILE_SERVER = check_mcp_server("files", "stdio", command="mcp-files", env={"TOKEN": "f"})


@pytest.fixture(autouse=True)
def engine_threads() -> Iterator[None]:
    yield
    # The engine's database threads let go of their connections: the test database is flushed.
    close_connections()


@pytest.fixture
def people() -> None:
    get_user_model().objects.create(username="ana")
    get_user_model().objects.create(username="bo")
    core = Team.objects.create(slug="core")
    Team.objects.create(slug="ops")
    Project.objects.create(slug="web", team=core)
    Project.objects.create(slug="api", team=core)


def server(name: str, **fields: Any) -> None:
    body = {"name": name, "command": f"run-{name}", "env": {"KEY": f"secret-{name}"}, **fields}
    registry.create(body)


def offered(owner: str, scope: str = "", listed: tuple[Any, ...] = ()) -> list[str]:
    directory = DjangoMcpDirectory(listed)
    return [spec.name for spec in asyncio.run(directory.offered(owner, scope))]


def test_each_owner_and_scope_is_offered_what_is_offered_to_them(people):
    server("everyone", hostWide=True)
    server("anas", offeredTo=["user:ana"])
    server("cores", offeredTo=["team:core"])
    server("webs", offeredTo=["project:web"])
    server("ops-and-bo", offeredTo=["team:ops", "user:bo"])
    server("off", hostWide=True, enabled=False)

    assert offered("user:ana") == ["anas", "everyone"]
    assert offered("user:bo") == ["everyone", "ops-and-bo"]
    assert offered("user:ana", "team:core") == ["anas", "cores", "everyone"]
    # A project's session is offered what its team is, and what the project is.
    assert offered("user:bo", "project:web") == ["cores", "everyone", "ops-and-bo", "webs"]
    assert offered("user:bo", "project:api") == ["cores", "everyone", "ops-and-bo"]
    assert offered("root:host", "team:ops") == ["everyone", "ops-and-bo"]
    assert offered("root:host") == ["everyone"]


def test_the_files_servers_come_first_and_keep_their_name(people, settings, tmp_path):
    server("everyone", hostWide=True)
    # Made before the file named it (a registry write now would be refused the name).
    McpServer.objects.create(name="files", command="shadowed", host_wide=True)
    assert offered("user:ana", listed=(FILE_SERVER,)) == ["files", "everyone"]
    [files, everyone] = asyncio.run(DjangoMcpDirectory((FILE_SERVER,)).offered("user:ana", ""))
    assert files is FILE_SERVER
    # The agent is given the row's secrets: the directory is the engine's alone.
    assert (everyone.id, everyone.command, dict(everyone.env)) == (
        "mcp:everyone",
        "run-everyone",
        {"KEY": "secret-everyone"},
    )


def test_a_change_is_read_when_the_next_session_opens(people):
    server("later", offeredTo=["user:ana"])
    assert offered("user:ana") == ["later"]
    registry.update("later", {"enabled": False})
    assert offered("user:ana") == []
    registry.update("later", {"enabled": True, "offeredTo": ["user:bo"]})
    assert offered("user:ana") == [] and offered("user:bo") == ["later"]
    registry.remove("later")
    assert offered("user:bo") == []
