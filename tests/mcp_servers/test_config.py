"""AHPD_CONFIG's `mcpServers`, read without Django: VS Code's two shapes become the engine's
McpServerSpec; a bad entry is one warning naming it (never a secret of it) and is left out, the
others kept; the file's agents are read as before."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from hosts.backends.base import McpServerSpec
from hosts.backends.config import (
    McpServerError,
    check_mcp_server,
    load_agents,
    load_mcp_servers,
    parse_mcp_servers,
)

SECRET = "env-secret-1b2c"
HEADER_SECRET = "Bearer header-secret-9f8e"

FILE = {
    "agents": [{"provider": "local", "kind": "openai", "baseUrl": "http://x/v1", "model": "m"}],
    "mcpServers": {
        "files": {
            "type": "stdio",
            "command": "mcp-server-filesystem",
            "args": ["/srv"],
            "cwd": "/srv",
            "env": {"TOKEN": SECRET},
        },
        "issues": {
            "type": "http",
            "url": "http://127.0.0.1:9310/mcp",
            "headers": {"Authorization": HEADER_SECRET},
        },
        "inferred": {"url": "https://mcp.example.com/mcp"},
        "no-command": {"type": "stdio", "env": {"TOKEN": SECRET}},
        "ftp": {"type": "http", "url": "ftp://example.com", "headers": {"X": HEADER_SECRET}},
        "numbers": {"command": "x", "args": [1, 2]},
        "bad env": {"command": "x"},
        "neither": {"description": "no command, no url"},
        "sse": {"type": "sse", "url": "http://x/sse"},
        "not-an-object": ["x"],
        "secret-typed": {"command": "x", "env": {"TOKEN": 5}},
    },
}


def test_the_two_shapes_become_specs_in_the_files_order():
    servers = parse_mcp_servers(FILE, warn=lambda said: None)
    assert [s.name for s in servers] == ["files", "issues", "inferred"]
    files, issues, inferred = servers
    assert files == McpServerSpec(
        id="mcp:files",
        name="files",
        transport="stdio",
        command="mcp-server-filesystem",
        args=("/srv",),
        cwd="/srv",
        env={"TOKEN": SECRET},
    )
    assert issues.transport == "http" and issues.url == "http://127.0.0.1:9310/mcp"
    assert issues.headers == {"Authorization": HEADER_SECRET} and issues.cwd is None
    assert (inferred.id, inferred.transport) == ("mcp:inferred", "http")


def test_each_bad_entry_is_one_warning_naming_it_and_no_secret_and_is_left_out(caplog):
    with caplog.at_level(logging.WARNING, logger="ahpd.config"):
        parse_mcp_servers(FILE)
    said = [record.getMessage() for record in caplog.records]
    bad = ["no-command", "ftp", "numbers", "bad env", "neither", "sse", "not-an-object"]
    bad.append("secret-typed")
    assert len(said) == len(bad)
    for name, line in zip(bad, said, strict=True):
        assert line.startswith(f"AHPD_CONFIG: mcpServers[{name!r}]"), line
        assert "left out" in line
    text = "\n".join(said)
    assert SECRET not in text and "header-secret" not in text
    assert "command: a stdio server needs a command" in said[0]
    assert "url: an http server needs an http:// or https:// URL" in said[1]
    assert "args: must be a list of strings" in said[2]
    assert "name: must be 1 to 64 letters, digits, - and _" in said[3]
    assert "neither a stdio server" in said[4]
    assert "type: must be stdio or http" in said[5]
    assert "env: 'TOKEN' must be a string" in said[7]


def test_a_file_with_no_mcp_servers_or_a_wrong_kind_of_list_offers_none(caplog):
    assert parse_mcp_servers({"agents": []}) == []
    with caplog.at_level(logging.WARNING, logger="ahpd.config"):
        assert parse_mcp_servers({"agents": [], "mcpServers": ["files"]}) == []
    assert "mcpServers must be an object of servers by name" in caplog.text


def test_the_file_is_read_for_its_agents_and_its_servers_alike(tmp_path: Path):
    path = tmp_path / "ahpd.json"
    path.write_text(json.dumps(FILE))
    assert [a.provider for a in load_agents(path)] == ["local"]
    assert [s.name for s in load_mcp_servers(path, warn=lambda said: None)] == [
        "files",
        "issues",
        "inferred",
    ]


def test_the_one_check_refuses_the_other_shapes_fields_and_bad_names():
    with pytest.raises(McpServerError) as refused:
        check_mcp_server("x", "http", url="https://a/mcp", command="run", env={"A": "b"})
    assert refused.value.problems == {
        "command": "a stdio server's: an http server takes none",
        "env": "a stdio server's: an http server takes none",
    }
    with pytest.raises(McpServerError) as refused:
        check_mcp_server("x", "stdio", command="run", headers={"Bad Name": "v"})
    assert refused.value.problems == {"headers": "'Bad Name' is not a header name"}
    with pytest.raises(McpServerError) as refused:
        check_mcp_server("x", "http", url="https://a/mcp", headers={"A": "one\ntwo"})
    assert refused.value.problems == {"headers": "'A' must be one line"}


def test_a_spec_shows_no_secret_in_its_repr():
    spec = check_mcp_server("x", "stdio", command="run", env={"TOKEN": SECRET})
    assert SECRET not in repr(spec)
    spec = check_mcp_server("y", "http", url="https://a/mcp", headers={"A": HEADER_SECRET})
    assert "header-secret" not in repr(spec)
