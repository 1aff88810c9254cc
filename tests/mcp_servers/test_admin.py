"""The admin's MCP server pages: a server made and changed through the registry's one check and
onto the audit trail, and a secret never on a page: each env and header key whose value is set
reads `<set>`, leaving it keeps the value, and a name of the operator's file is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from audit.models import AuditRecord
from hosts.models import Team
from mcp_servers.models import McpServer

pytestmark = pytest.mark.django_db

SECRET = "admin-env-secret-3f1d"
HEADER_SECRET = "admin-header-secret-77aa"
ADD = "admin:mcp_servers_mcpserver_add"
CHANGE = "admin:mcp_servers_mcpserver_change"
LIST = "admin:mcp_servers_mcpserver_changelist"
DELETE = "admin:mcp_servers_mcpserver_delete"


def superuser() -> Client:
    user = get_user_model().objects.create(username="root", is_staff=True, is_superuser=True)
    browser = Client()
    browser.force_login(user)
    return browser


def form(**fields: Any) -> dict[str, Any]:
    base = {
        "name": "files",
        "transport": "stdio",
        "command": "mcp-files",
        "args": "[]",
        "cwd": "",
        "env": "{}",
        "url": "",
        "headers": "{}",
        "description": "",
        "enabled": "on",
        "offered_to": "[]",
    }
    return {**base, **fields}


def page(browser: Client, route: str, *args: Any) -> str:
    answer = browser.get(reverse(route, args=args))
    assert answer.status_code == 200
    return answer.content.decode()


def test_a_server_made_and_changed_in_the_admin_never_shows_its_secrets():
    browser = superuser()
    Team.objects.create(slug="core")
    assert "{}" in page(browser, ADD)
    made = browser.post(
        reverse(ADD),
        form(env=json.dumps({"TOKEN": SECRET, "EMPTY": ""}), offered_to='["team:core"]'),
    )
    assert made.status_code == 302, made.content.decode()
    row = McpServer.objects.get()
    assert (row.env, row.offered_to, row.host_wide) == (
        {"TOKEN": SECRET, "EMPTY": ""},
        ["team:core"],
        False,
    )
    change = page(browser, CHANGE, row.pk)
    assert SECRET not in change
    assert "&quot;TOKEN&quot;: &quot;&lt;set&gt;&quot;" in change
    listing = page(browser, LIST)
    assert "files" in listing and "team:core" in listing and SECRET not in listing

    # `<set>` left keeps the value; a key added is kept; the page shows neither.
    kept = browser.post(
        reverse(CHANGE, args=[row.pk]),
        form(env=json.dumps({"TOKEN": "<set>", "MORE": "added"}), host_wide="on"),
    )
    assert kept.status_code == 302, kept.content.decode()
    row.refresh_from_db()
    assert row.env == {"TOKEN": SECRET, "MORE": "added"} and row.host_wide is True
    assert row.offered_to == []
    assert SECRET not in page(browser, CHANGE, row.pk)

    # Moved to http: its URL and a header, the stdio fields emptied.
    moved = browser.post(
        reverse(CHANGE, args=[row.pk]),
        form(
            transport="http",
            command="",
            url="https://mcp.example.com/mcp",
            headers=json.dumps({"Authorization": HEADER_SECRET}),
        ),
    )
    assert moved.status_code == 302, moved.content.decode()
    row.refresh_from_db()
    assert (row.transport, row.command, row.env) == ("http", "", {})
    assert HEADER_SECRET not in page(browser, CHANGE, row.pk)

    removed = browser.post(reverse(DELETE, args=[row.pk]), {"post": "yes"})
    assert removed.status_code == 302
    assert not McpServer.objects.exists()

    trail = list(AuditRecord.objects.filter(target_kind="mcpServer").order_by("pk"))
    assert [(r.act, r.by, r.via) for r in trail] == [
        ("mcpServer.set", "user:root", "admin"),
        ("mcpServer.set", "user:root", "admin"),
        ("mcpServer.set", "user:root", "admin"),
        ("mcpServer.removed", "user:root", "admin"),
    ]
    assert trail[0].detail["made"] is True and trail[1].detail["changed"] == [
        "env",
        "hostWide",
        "offeredTo",
    ]
    text = json.dumps([r.detail for r in trail])
    assert SECRET not in text and HEADER_SECRET not in text and "added" not in text


def test_a_bad_server_or_a_name_the_file_has_is_said_on_the_page(settings, tmp_path: Path):
    config = tmp_path / "ahpd.json"
    config.write_text(json.dumps({"agents": [], "mcpServers": {"issues": {"url": "http://x/"}}}))
    settings.AHPD_CONFIG = str(config)
    browser = superuser()
    for fields, said in (
        ({"name": "issues"}, "the operator&#x27;s AHPD_CONFIG mcpServers"),
        ({"command": ""}, "a stdio server needs a command"),
        ({"env": '{"K": 5}'}, "&#x27;K&#x27; must be a string"),
        ({"env": '{"K": "<set>"}'}, "keeps the value kept for it, and none is"),
        ({"offered_to": '["team:nope"]'}, "no such team: nope"),
    ):
        answer = browser.post(reverse(ADD), form(**fields))
        assert answer.status_code == 200, fields
        assert said in answer.content.decode(), (fields, answer.content.decode())
    assert not McpServer.objects.exists()
    # What was typed is not drawn again either: a refused form's secrets are `<set>`.
    answer = browser.post(reverse(ADD), form(name="issues", env=json.dumps({"TOKEN": SECRET})))
    assert answer.status_code == 200 and SECRET not in answer.content.decode()
