"""The admin: every page loads for a superuser; tokens are minted with the secret shown once;
roles' grants are checked; sessions, chats and turns are read only."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from hosts import store
from hosts.models import (
    Membership,
    Project,
    Role,
    RootConfig,
    StoredChat,
    StoredSession,
    StoredTurn,
    Team,
    Token,
)

pytestmark = pytest.mark.django_db

User = get_user_model()
SESSION = "ahp-session:/8d3f"
CHAT = "ahp-chat:/91aa"


@pytest.fixture
def boss(client: Client) -> Client:
    user = User.objects.create(username="boss", is_staff=True, is_superuser=True)
    client.force_login(user)
    return client


@pytest.fixture
def rows() -> dict[type, Any]:
    """One row of every model the admin shows."""
    store.ensure_builtin_roles()
    ada = User.objects.create(username="ada")
    team = Team.objects.create(slug="core")
    project = Project.objects.create(slug="web", team=team)
    Membership.objects.create(user=ada, role=Role.objects.get(name="member"), team=team)
    token = store.mint_token("ada", "laptop").token
    session = StoredSession.objects.create(
        uri=SESSION,
        provider="fake",
        title="a session",
        created_ms=1_000,
        modified_ms=2_000,
        default_chat=CHAT,
        chats=[CHAT],
    )
    chat = StoredChat.objects.create(uri=CHAT, session=session, created_ms=1_000)
    turn = StoredTurn.objects.create(
        chat=chat, position=0, turn_id="t0", data={"id": "t0", "state": "complete"}
    )
    config = RootConfig.objects.create(key="root", values={"workspaceTrust": True})
    return {
        User: ada,
        Team: team,
        Project: project,
        Role: Role.objects.create(name="ops", grants=["session:read"]),
        Token: token,
        StoredSession: session,
        StoredTurn: turn,
        RootConfig: config,
    }


def url(model: type, view: str, *args: Any) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


def test_every_changelist_add_and_change_page_loads(boss: Client, rows: dict[type, Any]) -> None:
    registered = admin.site._registry
    for model in (User, Team, Project, Role, Token, StoredSession, StoredTurn, RootConfig):
        assert model in registered, model
    for model, model_admin in registered.items():
        assert boss.get(url(model, "changelist")).status_code == 200, model
        add = boss.get(url(model, "add"))
        request = add.wsgi_request
        expected = 200 if model_admin.has_add_permission(request) else 403
        assert add.status_code == expected, model
        if model in rows:
            change = boss.get(url(model, "change", rows[model].pk))
            assert change.status_code == 200, model


def test_the_person_page_shows_memberships_tokens_and_a_mint_link(
    boss: Client, rows: dict[type, Any]
) -> None:
    page = boss.get(url(User, "change", rows[User].pk)).content.decode()
    assert "laptop" in page and rows[Token].prefix in page
    assert "core" in page  # the team of the membership
    assert url(Token, "add") + f"?user={rows[User].pk}" in page


def test_minting_a_token_shows_its_secret_once(boss: Client, rows: dict[type, Any]) -> None:
    ada = rows[User]
    form = boss.get(url(Token, "add") + f"?user={ada.pk}")
    assert form.status_code == 200
    minted = boss.post(url(Token, "add"), {"user": ada.pk, "name": "ci"})
    assert minted.status_code == 200
    assert "no-store" in minted["Cache-Control"]
    page = minted.content.decode()
    found = re.search(r'id="ahpd-secret"[^>]*value="([^"]+)"', page)
    assert found is not None
    secret = found.group(1)
    assert secret.startswith(store.TOKEN_PREFIX)
    assert f"?tkn={secret}" in page

    token = Token.objects.get(user=ada, name="ci")
    assert token.digest == store.digest(secret)
    assert token.prefix == secret[:10]
    assert store.person_for_token(secret) is not None

    for page_url in (url(Token, "changelist"), url(Token, "change", token.pk)):
        shown = boss.get(page_url).content.decode()
        assert token.prefix in shown and secret not in shown
    shown = boss.get(url(User, "change", ada.pk)).content.decode()
    assert secret not in shown


def test_a_token_name_is_one_per_person_in_the_admin(boss: Client, rows: dict[type, Any]) -> None:
    again = boss.post(url(Token, "add"), {"user": rows[User].pk, "name": "laptop"})
    assert again.status_code == 200
    assert "errorlist" in again.content.decode()
    assert Token.objects.filter(name="laptop").count() == 1


def test_revoking_from_the_admin(boss: Client, rows: dict[type, Any]) -> None:
    token = rows[Token]
    response = boss.post(
        url(Token, "changelist"), {"action": "revoke", "_selected_action": [token.pk]}
    )
    assert response.status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None


def test_role_grants_are_checked(boss: Client, rows: dict[type, Any]) -> None:
    bad = boss.post(url(Role, "add"), {"name": "bad", "grants": '["session:fly"]'})
    assert bad.status_code == 200
    assert "session:fly" in bad.content.decode()
    assert not Role.objects.filter(name="bad").exists()
    not_a_list = boss.post(url(Role, "add"), {"name": "bad", "grants": '"session:read"'})
    assert not_a_list.status_code == 200 and not Role.objects.filter(name="bad").exists()
    good = boss.post(url(Role, "add"), {"name": "good", "grants": '["session:read", "chat:*"]'})
    assert good.status_code == 302
    assert Role.objects.get(name="good").grants == ["session:read", "chat:*"]


def test_role_grants_are_kept_once_each_and_a_bad_one_is_named(
    boss: Client, rows: dict[type, Any]
) -> None:
    twice = '["chat:send", "session:read", "chat:send"]'
    assert boss.post(url(Role, "add"), {"name": "leads", "grants": twice}).status_code == 302
    assert Role.objects.get(name="leads").grants == ["chat:send", "session:read"]
    bad = boss.post(url(Role, "add"), {"name": "bad", "grants": '["session:fly"]'})
    assert "unknown operation in grant &#x27;session:fly&#x27;" in bad.content.decode()


def test_built_in_roles_cannot_be_deleted(boss: Client, rows: dict[type, Any]) -> None:
    member = Role.objects.get(name="member")
    assert boss.get(url(Role, "delete", member.pk)).status_code == 403
    assert boss.get(url(Role, "delete", rows[Role].pk)).status_code == 200


def test_sessions_and_turns_are_read_only(boss: Client, rows: dict[type, Any]) -> None:
    session = rows[StoredSession]
    page = boss.get(url(StoredSession, "change", session.pk)).content.decode()
    assert CHAT in page and "1 turns" in page
    assert boss.post(url(StoredSession, "change", session.pk), {"title": "x"}).status_code == 403
    assert boss.get(url(StoredSession, "delete", session.pk)).status_code == 403
    assert boss.get(url(StoredTurn, "delete", rows[StoredTurn].pk)).status_code == 403
    turns = boss.get(url(StoredTurn, "changelist"), {"chat": CHAT})
    assert turns.status_code == 200 and "t0" in turns.content.decode()
    session.refresh_from_db()
    assert session.title == "a session"


def test_the_nodes_page_lists_the_nodes_whose_lease_holds_and_changes_none(boss: Client) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from hosts.models import Node

    now = timezone.now()
    common = {"instance": "i", "machine": "m", "pid": 7, "started_at": now, "renewed_at": now}
    Node.objects.create(
        node_id="live-1", address="ws://m:1/", lease_until=now + timedelta(60), **common
    )
    Node.objects.create(node_id="gone-1", lease_until=now - timedelta(seconds=1), **common)
    page = boss.get(url(Node, "changelist")).content.decode()
    assert "live-1" in page and "ws://m:1/" in page and "gone-1" not in page
    assert boss.get(url(Node, "add")).status_code == 403
    assert boss.post(url(Node, "delete", "live-1"), {"post": "yes"}).status_code == 403
    assert Node.objects.filter(node_id="live-1").exists()
