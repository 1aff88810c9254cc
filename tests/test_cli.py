"""`manage.py ahpd`: people, tokens, teams, projects and roles, with output scripts can read,
ids checked as the REST API checks them, and a refusal for what would lose something."""

from __future__ import annotations

import argparse
import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.core.management.base import BaseCommand

from hosts import store
from hosts.management.commands.ahpd import Command
from hosts.models import Project, Team, Token


def run(*args: str) -> object:
    out = io.StringIO()
    call_command("ahpd", *args, "--json", stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue())


def said(*args: str) -> tuple[str, str]:
    """What a person reads: stdout and stderr, without --json."""
    out, err = io.StringIO(), io.StringIO()
    call_command("ahpd", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.mark.django_db
def test_a_person_added_with_a_role_gets_a_token_shown_once():
    assert run("user", "add", "ana", "--role", "member") == {
        "id": "ana",
        "email": "",
        "roles": ["member"],
        "teams": [],
        "projects": [],
        "tokens": 0,
    }
    minted = run("user", "token", "ana", "--name", "laptop")
    assert set(minted) == {"id", "name", "token", "url"}
    assert minted["url"].endswith(f"/?tkn={minted['token']}")
    principal = store.person_for_token(minted["token"])
    assert principal is not None and principal.ref == "user:ana"
    assert principal.may("session:create") and not principal.may("config:change")
    # Only the hash is kept.
    assert minted["token"] not in json.dumps(list(Token.objects.values("digest", "prefix", "name")))
    assert run("user", "list")[0]["tokens"] == 1


@pytest.mark.django_db
def test_json_is_read_wherever_it_is_written():
    out = io.StringIO()
    call_command("ahpd", "--json", "user", "add", "ana", stdout=out)
    assert json.loads(out.getvalue())["id"] == "ana"
    for line in (
        ["--json", "role", "list"],
        ["role", "--json", "list"],
        ["role", "list", "--json"],
    ):
        out = io.StringIO()
        call_command("ahpd", *line, stdout=out)
        assert {r["name"] for r in json.loads(out.getvalue())} >= {"admin", "member", "guest"}
    assert said("role", "list")[0].startswith("name=admin  grants=*:*")


@pytest.mark.django_db
def test_a_second_token_without_a_name_is_named_by_the_command():
    run("user", "add", "ana")
    assert [run("user", "token", "ana")["name"] for _ in range(3)] == [
        "default",
        "default-2",
        "default-3",
    ]
    with pytest.raises(CommandError, match="ana has a token named 'default-2' already"):
        run("user", "token", "ana", "--name", "default-2")
    with pytest.raises(CommandError, match="token name 'a/b'"):
        run("user", "token", "ana", "--name", "a/b")


@pytest.mark.django_db
def test_tokens_are_listed_without_secrets_and_a_revoked_one_stops_working():
    run("user", "add", "ana")
    run("user", "add", "bo")
    laptop = run("user", "token", "ana", "--name", "laptop")["token"]
    run("user", "token", "bo")
    listed = run("token", "list")
    assert [(t["id"], t["name"]) for t in listed] == [("ana", "laptop"), ("bo", "default")]
    assert laptop not in json.dumps(listed) and listed[0]["prefix"] == laptop[:10]
    assert [t["name"] for t in run("token", "list", "bo")] == ["default"]

    revoked = run("token", "revoke", "ana", "laptop")
    assert revoked["revokedAt"] is not None
    assert store.person_for_token(laptop) is None
    assert [t["id"] for t in run("token", "list")] == ["bo"]
    assert [t["name"] for t in run("token", "list", "ana", "--revoked")] == ["laptop"]
    with pytest.raises(CommandError, match="ana has no token named 'phone'"):
        run("token", "revoke", "ana", "phone")


@pytest.mark.django_db
def test_a_changed_role_is_what_the_next_command_is_checked_against():
    run("user", "add", "ana", "--role", "guest")
    token = run("user", "token", "ana")["token"]
    assert not store.person_for_token(token).may("session:create")
    assert run("user", "role", "ana", "member")["roles"] == ["member"]
    assert store.person_for_token(token).may("session:create")
    assert run("user", "role", "ana", "admin", "guest")["roles"] == ["admin", "guest"]
    from django.contrib.auth import get_user_model

    assert get_user_model().objects.get(username="ana").is_superuser
    run("user", "role", "ana", "guest")
    assert not get_user_model().objects.get(username="ana").is_staff
    with pytest.raises(CommandError, match="no role 'chief'"):
        run("user", "role", "ana", "chief")


@pytest.mark.django_db
def test_ids_are_checked_as_the_api_checks_them():
    with pytest.raises(CommandError, match=r"person id 'bad id!': must match \^\[\\w\.@\+-\]\+\\Z"):
        run("user", "add", "bad id!")
    run("user", "add", "ana@example.com")
    with pytest.raises(CommandError, match="a person has this id already"):
        run("user", "add", "ana@example.com")
    with pytest.raises(CommandError, match=r"team 'bad slug!': must match \^\[-a-zA-Z0-9_\]\+\$"):
        run("team", "add", "bad slug!")
    run("team", "add", "core")
    with pytest.raises(CommandError, match="team 'core': a team has this slug already"):
        run("team", "add", "core")
    with pytest.raises(CommandError, match="project 'a b'"):
        run("project", "add", "a b", "--team", "core")


@pytest.mark.django_db
def test_teams_projects_and_roles():
    assert run("team", "add", "core", "--name", "Core") == {"slug": "core", "name": "Core"}
    assert run("project", "add", "api", "--team", "core") == {
        "slug": "api",
        "name": "",
        "team": "core",
    }
    assert run("project", "list") == [{"slug": "api", "name": "", "team": "core"}]
    assert run("team", "list") == [{"slug": "core", "name": "Core", "projects": ["api"]}]
    roles = {r["name"]: r["grants"] for r in run("role", "list")}
    assert roles["admin"] == ["*:*"]
    assert roles["guest"] == ["session:read", "automation:read", "file:read"]
    assert run("project", "rm", "api") == {"slug": "api", "removed": True}
    assert run("team", "list") == [{"slug": "core", "name": "Core", "projects": []}]


@pytest.mark.django_db
def test_a_team_with_projects_is_removed_only_with_cascade():
    run("team", "add", "core")
    run("project", "add", "web", "--team", "core")
    run("project", "add", "api", "--team", "core")
    with pytest.raises(CommandError, match=r"team 'core' has projects \(api, web\)"):
        run("team", "rm", "core")
    assert Project.objects.count() == 2
    assert run("team", "rm", "core", "--cascade") == {
        "slug": "core",
        "removed": True,
        "projects": ["api", "web"],
    }
    assert not Team.objects.exists() and not Project.objects.exists()


@pytest.mark.django_db
def test_removing_a_person_ends_their_tokens():
    run("user", "add", "bo", "--role", "admin")
    token = run("user", "token", "bo")["token"]
    run("user", "rm", "bo")
    assert store.person_for_token(token) is None


@pytest.mark.django_db
def test_unknown_names_are_refused_naming_them():
    with pytest.raises(CommandError, match="no role 'chief'"):
        run("user", "add", "cy", "--role", "chief")
    with pytest.raises(CommandError, match="no team 'ghost'"):
        run("project", "add", "p", "--team", "ghost")
    with pytest.raises(CommandError, match="no project 'ghost'"):
        run("user", "add", "cy", "--project", "ghost")
    with pytest.raises(CommandError, match="no team 'ghost'"):
        run("team", "rm", "ghost")
    with pytest.raises(CommandError, match="no project 'ghost'"):
        run("project", "rm", "ghost")
    with pytest.raises(CommandError, match="no person 'ghost'"):
        run("user", "token", "ghost")


def test_without_a_running_server_status_and_sessions_say_so(settings, tmp_path):
    settings.AHPD_DATA_DIR = tmp_path
    for verb in ("status", "sessions"):
        with pytest.raises(CommandError, match="^the server is not running"):
            run(verb)


def _parsers(parser: argparse.ArgumentParser, path: str):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{path} {name}")


def test_every_noun_verb_and_argument_says_what_it_is():
    top = Command().create_parser("manage.py", "ahpd")
    ours = {a.dest for a in BaseCommand().create_parser("manage.py", "x")._actions}
    seen = 0
    for path, parser in _parsers(top, "ahpd"):
        assert parser.description, f"{path} has no description"
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for choice in action._choices_actions:
                    assert choice.help, f"{path} {choice.dest} has no help"
            elif path != "ahpd" or action.dest not in ours:
                assert action.help, f"{path} {action.dest} has no help"
                seen += 1
    assert seen > 30


@pytest.mark.django_db
def test_a_listing_read_from_the_server_follows_its_pages(monkeypatch, settings):
    """`ahpd sessions` reads GET /api/sessions/ page by page, by each page's `next`."""
    from rest_framework.test import APIClient

    from hosts.api import pages
    from hosts.edge import connection_token
    from hosts.edge.control import Running
    from hosts.management.ahpd import server
    from hosts.models import StoredSession

    settings.AHPD_CONNECTION_TOKEN, settings.AHPD_CONNECTION_TOKEN_FILE = "root", None
    connection_token.connection_token.cache_clear()
    record = Running(1, "here", "http://testserver/", "ws://testserver/", "root")
    monkeypatch.setattr(server, "serving", lambda: record)
    asked: list[str] = []

    def get(record, method, url, body):
        asked.append(url)
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Bearer {record.control}")
        return api.get(url).json()

    monkeypatch.setattr(server, "_request", get)
    monkeypatch.setattr(pages.Pages, "default_limit", 2)
    StoredSession.objects.bulk_create(
        StoredSession(uri=f"ahp-session:/{n}", provider="p", created_ms=n, modified_ms=n)
        for n in range(5)
    )
    try:
        found = server.listing("sessions/")
    finally:
        connection_token.connection_token.cache_clear()
    assert [row["uri"] for row in found] == [f"ahp-session:/{n}" for n in (4, 3, 2, 1, 0)]
    assert len(asked) == 3
