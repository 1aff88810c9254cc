"""`manage.py ahpd`: people, tokens, teams, projects and roles, with output scripts can read."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from hosts import store
from hosts.models import Token


def run(*args: str) -> object:
    out = io.StringIO()
    call_command("ahpd", *args, "--json", stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue())


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
def test_teams_projects_and_roles():
    assert run("team", "add", "core", "--name", "Core") == {"slug": "core", "name": "Core"}
    assert run("project", "add", "api", "--team", "core") == {
        "slug": "api",
        "name": "",
        "team": "core",
    }
    assert run("project", "list") == [{"slug": "api", "name": "", "team": "core"}]
    roles = {r["name"]: r["grants"] for r in run("role", "list")}
    assert roles["admin"] == ["*:*"]
    assert roles["guest"] == ["session:read", "automation:read"]
    assert run("project", "rm", "api") == {"slug": "api", "removed": True}
    assert run("team", "list") == [{"slug": "core", "name": "Core"}]


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
