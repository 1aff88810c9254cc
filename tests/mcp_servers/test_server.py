"""The team's MCP servers against a started server, as a client and the operator reach them:
/api/mcp-servers/ (CRUD, its strict query, its pages, who may), `manage.py ahpd mcp` over the
same REST API, and the audit trail; AHPD_CONFIG's `mcpServers` listed beside the registry's and
its bad entry warned of at start. A secret (an env or header value) is never said by any of
them, nor in the server's log: `<set>` for each key, and `<set>` sent back keeps the value."""

from __future__ import annotations

import json
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_cli_server import ahpd, answer, one_line_refusal, shell
from tests.e2e.test_rest_conventions import PEOPLE, without_django_words
from tests.support.agents import local_agent_config
from tests.support.fake_openai import FakeOpenAi
from tests.support.rest import call
from tests.support.server import ServerProcess

FILE_SECRET = "file-secret-71c3"
BAD_SECRET = "bad-entry-secret-4d2a"
ENV_SECRET = "env-secret-58e1"
HEADER_SECRET = "Bearer header-secret-0b9f"
CLI_SECRET = "cli-secret-2a7c"
SECRETS = (FILE_SECRET, BAD_SECRET, ENV_SECRET, "header-secret-0b9f", CLI_SECRET)

MCP_SERVERS = {
    "files": {
        "type": "stdio",
        "command": "mcp-server-filesystem",
        "args": ["/srv"],
        "env": {"TOKEN": FILE_SECRET},
    },
    "broken": {"type": "http", "url": "ftp://nowhere", "headers": {"X-Key": BAD_SECRET}},
}

ROWS = """
import json
from mcp_servers.models import McpServer
print(json.dumps({r.name: {"env": r.env, "headers": r.headers} for r in McpServer.objects.all()}))
"""

TEAMS = """
from hosts.models import Project, Team
core = Team.objects.create(slug="core")
Project.objects.create(slug="web", team=core)
print("{}")
"""


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    model = FakeOpenAi()
    with tempfile.TemporaryDirectory(prefix="ahpd-mcp-") as folder:
        config = Path(folder) / f"ahpd-{uuid.uuid4().hex}.json"
        config.write_text(json.dumps({**local_agent_config(model.url), "mcpServers": MCP_SERVERS}))
        process = ServerProcess(env_extra={"AHPD_CONFIG": str(config)}).start()
        try:
            yield process
        finally:
            process.close()
            model.close()


@pytest.fixture(scope="module")
def tokens(server: ServerProcess) -> dict[str, str]:
    people = dict(server.shell_json(PEOPLE))
    server.shell_json(TEAMS)
    return people


@pytest.fixture(scope="module")
def cli(server: ServerProcess) -> dict[str, str]:
    return shell(server.env_file)


def no_secret(*said: Any) -> None:
    text = json.dumps(said)
    assert not [secret for secret in SECRETS if secret in text], text


def ok(server: ServerProcess, method: str, path: str, token: str, body: Any = None) -> Any:
    status, answer = call(server, method, path, token, body)
    assert status in (200, 201, 204), (method, path, status, answer)
    no_secret(answer)
    return answer


def stored(server: ServerProcess) -> dict[str, Any]:
    return dict(server.shell_json(ROWS))


def test_the_files_servers_are_listed_and_its_bad_entry_was_warned_of(server, tokens):
    listed = ok(server, "GET", "mcp-servers/?source=config", tokens["ana"])
    assert listed["count"] == 1
    [files] = listed["results"]
    assert files == {
        "name": "files",
        "source": "config",
        "transport": "stdio",
        "command": "mcp-server-filesystem",
        "args": ["/srv"],
        "cwd": "",
        "env": {"TOKEN": "<set>"},
        "url": "",
        "headers": {},
        "description": "",
        "enabled": True,
        "hostWide": True,
        "offeredTo": [],
        "createdAt": None,
        "modifiedAt": None,
    }
    [warned] = [line for line in server.output if "mcpServers['broken']" in line]
    assert "url: an http server needs an http:// or https:// URL; it is left out" in warned
    # The file's server is the file's: changed there, not here.
    for method, body in (("PATCH", {"enabled": False}), ("DELETE", None)):
        status, said = call(server, method, "mcp-servers/files/", tokens["ana"], body)
        assert status == 409 and "AHPD_CONFIG" in said["detail"], said


def test_a_server_is_made_read_changed_and_removed_and_its_secrets_never_said(server, tokens):
    ana = tokens["ana"]
    body = {
        "name": "issues",
        "url": "https://mcp.example.com/mcp",
        "headers": {"Authorization": HEADER_SECRET, "X-Empty": ""},
        "description": "the tracker",
        "offeredTo": ["team:core", "user:max"],
    }
    status, made = call(server, "POST", "mcp-servers/", ana, body)
    assert status == 201, made
    no_secret(made)
    assert made["source"] == "registry" and made["transport"] == "http"
    assert made["headers"] == {"Authorization": "<set>", "X-Empty": ""}
    assert (made["hostWide"], made["offeredTo"], made["enabled"]) == (
        False,
        ["team:core", "user:max"],
        True,
    )
    assert ok(server, "GET", "mcp-servers/issues/", ana) == made

    # <set> sent back keeps the value; a new value replaces; a key left out is removed.
    patched = ok(
        server,
        "PATCH",
        "mcp-servers/issues/",
        ana,
        {"headers": {"Authorization": "<set>", "X-Team": "core"}, "hostWide": True},
    )
    assert patched["headers"] == {"Authorization": "<set>", "X-Team": "<set>"}
    assert patched["hostWide"] is True and patched["description"] == "the tracker"
    assert stored(server)["issues"]["headers"] == {
        "Authorization": HEADER_SECRET,
        "X-Team": "core",
    }
    # Moved to stdio: the http fields it does not send are left behind.
    moved = ok(
        server,
        "PATCH",
        "mcp-servers/issues/",
        ana,
        {"transport": "stdio", "command": "issues-mcp", "env": {"KEY": ENV_SECRET}},
    )
    assert (moved["url"], moved["headers"], moved["env"]) == ("", {}, {"KEY": "<set>"})

    ok(server, "DELETE", "mcp-servers/issues/", ana)
    status, said = call(server, "GET", "mcp-servers/issues/", ana)
    assert (status, said) == (404, {"detail": "no such MCP server: issues"})
    status, said = call(server, "DELETE", "mcp-servers/issues/", ana)
    assert status == 404


def test_a_bad_server_is_refused_naming_each_field(server, tokens):
    ana = tokens["ana"]
    for body, field, words in (
        ({"name": "a b", "command": "x"}, "name", "letters, digits, - and _"),
        ({"name": "s", "transport": "stdio"}, "command", "a stdio server needs a command"),
        ({"name": "h", "transport": "http", "url": "ftp://x"}, "url", "http:// or https://"),
        ({"name": "n", "command": "x", "args": ["a", 1]}, "args", "list of strings"),
        ({"name": "e", "command": "x", "env": {"K": 5}}, "env", "'K' must be a string"),
        ({"name": "o", "command": "x", "offeredTo": ["team:nope"]}, "offeredTo", "no such team"),
        ({"name": "u", "command": "x", "offeredTo": ["nobody"]}, "offeredTo", "is not team:"),
        ({"name": "k", "command": "x", "env": {"K": "<set>"}}, "env", "none is"),
        ({"name": "f", "command": "x", "colour": "red"}, "colour", "no such field"),
        ({"name": "l", "command": "x" * 1001}, "command", "at most 1000 characters"),
    ):
        status, said = call(server, "POST", "mcp-servers/", ana, body)
        assert status == 400, (body, said)
        assert words in said[field][0], (body, said)
        without_django_words(said)
    status, said = call(server, "POST", "mcp-servers/", ana, ["x"])  # type: ignore[arg-type]
    assert (status, said) == (400, {"detail": "the body must be a JSON object, not a list"})


def test_a_name_the_file_or_another_server_has_is_refused_saying_so(server, tokens):
    ana = tokens["ana"]
    status, said = call(server, "POST", "mcp-servers/", ana, {"name": "files", "command": "x"})
    assert status == 409
    assert said["detail"] == (
        "files is the name of an MCP server of the operator's AHPD_CONFIG mcpServers: "
        "a registry server cannot take it"
    )
    ok(server, "POST", "mcp-servers/", ana, {"name": "twice", "command": "x"})
    status, said = call(server, "POST", "mcp-servers/", ana, {"name": "twice", "command": "y"})
    assert (status, said) == (409, {"detail": "an MCP server is named twice already"})
    status, said = call(server, "PATCH", "mcp-servers/twice/", ana, {"name": "thrice"})
    assert status == 400 and said["name"] == ["a server's name cannot change"]
    ok(server, "DELETE", "mcp-servers/twice/", ana)


def test_the_list_comes_in_pages_and_its_query_is_checked(server, tokens):
    ana = tokens["ana"]
    for name in ("page-a", "page-b", "page-c"):
        ok(server, "POST", "mcp-servers/", ana, {"name": name, "url": "http://127.0.0.1:1/m"})
    ok(server, "PATCH", "mcp-servers/page-b/", ana, {"enabled": False})
    first = ok(server, "GET", "mcp-servers/?source=registry&limit=2", ana)
    assert first["count"] == 3 and first["previous"] is None
    assert [r["name"] for r in first["results"]] == ["page-a", "page-b"]
    assert first["next"].endswith("/api/mcp-servers/?limit=2&offset=2&source=registry")
    second = ok(server, "GET", "mcp-servers/?source=registry&limit=2&offset=2", ana)
    assert [r["name"] for r in second["results"]] == ["page-c"] and second["next"] is None
    off = ok(server, "GET", "mcp-servers/?enabled=false", ana)
    assert [r["name"] for r in off["results"]] == ["page-b"]
    http = ok(server, "GET", "mcp-servers/?transport=http", ana)
    assert [r["name"] for r in http["results"]] == ["page-a", "page-b", "page-c"]
    for query, words in (
        ("enabled=no", "enabled takes true or false, not 'no'"),
        ("transport=sse", "transport takes one of stdio, http, not 'sse'"),
        ("source=file", "source takes one of registry, config, not 'file'"),
        ("limit=abc", "limit takes a whole number of rows, 1 or more, not 'abc'"),
        ("name=page-a", "no query parameter 'name' here"),
    ):
        status, said = call(server, "GET", f"mcp-servers/?{query}", ana)
        assert status == 400 and words in said["detail"], (query, said)
    for name in ("page-a", "page-b", "page-c"):
        ok(server, "DELETE", f"mcp-servers/{name}/", ana)


def test_who_holds_no_mcp_grant_is_refused_and_the_api_root_lists_the_servers(server, tokens):
    status, said = call(server, "GET", "mcp-servers/", tokens["max"])
    assert (status, said) == (403, {"detail": "user:max may not mcp:read here"})
    status, said = call(
        server, "POST", "mcp-servers/", tokens["max"], {"name": "m", "command": "x"}
    )
    assert (status, said) == (403, {"detail": "user:max may not mcp:write here"})
    status, said = call(server, "GET", "mcp-servers/files/", tokens["max"])
    assert status == 403
    status, said = call(server, "PUT", "mcp-servers/files/", tokens["ana"], {"name": "files"})
    assert status == 405
    listing = ok(server, "GET", "", tokens["max"])
    assert listing["mcpServers"].endswith("/api/mcp-servers/")


def test_each_change_is_on_the_audit_trail_without_its_secrets(server, tokens):
    ana = tokens["ana"]
    body = {"name": "audited", "command": "run", "env": {"KEY": ENV_SECRET}, "hostWide": True}
    ok(server, "POST", "mcp-servers/", ana, body)
    ok(server, "PATCH", "mcp-servers/audited/", ana, {"env": {"KEY": "<set>", "MORE": CLI_SECRET}})
    ok(server, "DELETE", "mcp-servers/audited/", ana)
    trail = ok(server, "GET", "audit/?targetKind=mcpServer&targetId=audited", ana)["results"]
    assert [(r["act"], r["by"], r["via"]) for r in trail] == [
        ("mcpServer.removed", "user:ana", "rest"),
        ("mcpServer.set", "user:ana", "rest"),
        ("mcpServer.set", "user:ana", "rest"),
    ]
    changed, made = trail[1]["detail"], trail[2]["detail"]
    assert made["made"] is True and made["server"]["env"] == {"KEY": "<set>"}
    assert changed["made"] is False and changed["changed"] == ["env"]
    assert changed["server"]["env"] == {"KEY": "<set>", "MORE": "<set>"}


def test_the_command_line_lists_adds_updates_shows_and_removes_over_rest(server, tokens, cli):
    listed = ahpd(cli, "mcp", "list").stdout.splitlines()
    assert listed[0] == (
        "files  source=config  stdio=mcp-server-filesystem  enabled  offered=everyone"
    )
    env = {**cli, "ISSUES_TOKEN": CLI_SECRET}
    made = answer(
        env,
        "mcp",
        "add",
        "tracker",
        "--command",
        "tracker-mcp",
        "--arg=--stdio",
        "--env",
        "ISSUES_TOKEN",
        "--env",
        "PLAIN=visible",
        "--offer",
        "team:core",
    )
    assert made["env"] == {"ISSUES_TOKEN": "<set>", "PLAIN": "<set>"}
    assert made["args"] == ["--stdio"] and made["offeredTo"] == ["team:core"]
    assert stored(server)["tracker"]["env"] == {"ISSUES_TOKEN": CLI_SECRET, "PLAIN": "visible"}

    updated = answer(
        cli,
        "mcp",
        "update",
        "tracker",
        "--unset-env",
        "PLAIN",
        "--env",
        "MODE=fast",
        "--offer",
        "user:max",
        "--unoffer",
        "team:core",
        "--disable",
    )
    assert updated["env"] == {"ISSUES_TOKEN": "<set>", "MODE": "<set>"}
    assert (updated["offeredTo"], updated["enabled"]) == (["user:max"], False)
    assert stored(server)["tracker"]["env"] == {"ISSUES_TOKEN": CLI_SECRET, "MODE": "fast"}

    shown = ahpd(cli, "mcp", "show", "tracker")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[:3] == [
        "tracker  source=registry  stdio=tracker-mcp  disabled  offered=user:max",
        "  args: --stdio",
        "  env: ISSUES_TOKEN=<set>, MODE=<set>",
    ]
    refused = one_line_refusal(ahpd(cli, "mcp", "add", "files", "--command", "x"))
    assert "files is the name of an MCP server of the operator's AHPD_CONFIG" in refused
    refused = one_line_refusal(ahpd(cli, "mcp", "add", "nothing", "--env", "NOT_SET_ANYWHERE"))
    assert (
        refused == "ahpd: --env NOT_SET_ANYWHERE: no NOT_SET_ANYWHERE in this command's environment"
    )
    assert answer(cli, "mcp", "remove", "tracker") == {"name": "tracker", "removed": True}
    refused = one_line_refusal(ahpd(cli, "mcp", "show", "tracker"))
    assert refused.endswith("no such MCP server: tracker")
    trail = ok(server, "GET", "audit/?targetId=tracker", tokens["ana"])["results"]
    assert {record["via"] for record in trail} == {"cli"}
    for done in (listed, shown.stdout, shown.stderr):
        no_secret(done)


def test_no_secret_reached_the_servers_log(server, tokens):
    # Last: every test above has written its secrets through the server by now.
    no_secret(list(server.output))
