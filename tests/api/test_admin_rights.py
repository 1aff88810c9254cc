"""The admin site's rights follow the admin role, whichever surface gave or took it: the REST
API, `manage.py ahpd` and the admin's own memberships (one rule, hosts/store/roles.py)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from hosts import store
from hosts.edge import connection_token as edge_token
from hosts.models import Membership, Role, Team

pytestmark = pytest.mark.django_db

User = get_user_model()
ROOT = "test-root"


@pytest.fixture(autouse=True)
def connection_token(settings: Any) -> Iterator[None]:
    settings.AHPD_CONNECTION_TOKEN = ROOT
    settings.AHPD_CONNECTION_TOKEN_FILE = None
    settings.AHPD_WITHOUT_CONNECTION_TOKEN = False
    edge_token.connection_token.cache_clear()
    store.ensure_builtin_roles()
    yield
    edge_token.connection_token.cache_clear()


@pytest.fixture
def root() -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {ROOT}")
    return api


def rights(user_id: str) -> tuple[bool, bool]:
    user = User.objects.get(username=user_id)
    return user.is_staff, user.is_superuser


def test_a_person_made_an_admin_over_rest_may_use_the_admin_site(root: APIClient) -> None:
    made = root.post("/api/people/", {"id": "ada", "roles": ["admin"]}, format="json")
    assert made.status_code == 201, made.content
    assert rights("ada") == (True, True)

    assert root.patch("/api/people/ada/", {"roles": ["member"]}, format="json").status_code == 200
    assert rights("ada") == (False, False)

    again = root.patch("/api/people/ada/", {"roles": ["guest", "admin"]}, format="json")
    assert again.status_code == 200
    assert rights("ada") == (True, True)


def test_a_person_made_without_the_admin_role_over_rest_is_no_staff(root: APIClient) -> None:
    assert (
        root.post("/api/people/", {"id": "bo", "roles": ["member"]}, format="json").status_code
        == 201
    )
    assert root.post("/api/people/", {"id": "cy"}, format="json").status_code == 201
    assert rights("bo") == rights("cy") == (False, False)


def test_a_change_that_leaves_the_roles_alone_leaves_the_rights_alone(root: APIClient) -> None:
    root.post("/api/people/", {"id": "ada", "roles": ["admin"]}, format="json")
    changed = root.patch("/api/people/ada/", {"email": "a@example.org"}, format="json")
    assert changed.status_code == 200
    assert rights("ada") == (True, True)


def test_an_admin_role_held_within_a_team_is_no_admin_of_the_host(root: APIClient) -> None:
    # A role held through a membership grants within that scope only: no *:* host-wide.
    root.post("/api/people/", {"id": "ada", "roles": ["member"]}, format="json")
    ada = User.objects.get(username="ada")
    team = Team.objects.create(slug="core")
    Membership.objects.create(user=ada, role=Role.objects.get(name="admin"), team=team)
    held = store.held_by(ada.pk)
    assert "*:*" not in held.grants and "*:*" in held.scoped["team:core"]
    root.patch("/api/people/ada/", {"roles": []}, format="json")
    assert rights("ada") == (False, False)
    root.patch("/api/people/ada/", {"roles": ["admin"]}, format="json")
    assert rights("ada") == (True, True)


def test_the_command_line_and_rest_keep_one_rule() -> None:
    out = io.StringIO()
    call_command("ahpd", "user", "add", "ana", "--role", "admin", "--json", stdout=out)
    assert rights("ana") == (True, True)
    call_command("ahpd", "user", "role", "ana", "member", "--json", stdout=out)
    assert rights("ana") == (False, False)


def membership_form(user: Any, role: Role | None) -> dict[str, Any]:
    """The admin's change form of `user`, as the page sends it, with one membership of `role`
    (or none). Tokens are shown but never added there."""
    form: dict[str, Any] = {
        "username": user.username,
        "first_name": "",
        "last_name": "",
        "email": "",
        "is_active": "on",
        "date_joined_0": "2026-01-01",
        "date_joined_1": "00:00:00",
        "memberships-TOTAL_FORMS": "1" if role else "0",
        "memberships-INITIAL_FORMS": "0",
        "tokens-TOTAL_FORMS": "0",
        "tokens-INITIAL_FORMS": "0",
    }
    if role is not None:
        form |= {
            "memberships-0-role": role.pk,
            "memberships-0-team": "",
            "memberships-0-project": "",
        }
    return form


def test_a_membership_added_in_the_admin_gives_the_rights_and_removing_it_takes_them(
    client: Client,
) -> None:
    boss = User.objects.create(username="boss", is_staff=True, is_superuser=True)
    client.force_login(boss)
    ada = User.objects.create(username="ada")
    page = reverse("admin:auth_user_change", args=[ada.pk])

    saved = client.post(page, membership_form(ada, Role.objects.get(name="admin")))
    assert saved.status_code == 302, saved.content.decode()[:2000]
    assert rights("ada") == (True, True)

    held = Membership.objects.get(user=ada)
    removal = membership_form(ada, None) | {
        "memberships-TOTAL_FORMS": "1",
        "memberships-INITIAL_FORMS": "1",
        "memberships-0-id": held.pk,
        "memberships-0-user": ada.pk,
        "memberships-0-role": held.role_id,
        "memberships-0-DELETE": "on",
    }
    assert client.post(page, removal).status_code == 302
    assert not Membership.objects.filter(user=ada).exists()
    assert rights("ada") == (False, False)


def test_the_admin_does_not_tick_staff_or_superuser_by_hand(client: Client) -> None:
    boss = User.objects.create(username="boss", is_staff=True, is_superuser=True)
    client.force_login(boss)
    ada = User.objects.create(username="ada")
    page = reverse("admin:auth_user_change", args=[ada.pk])
    ticked = membership_form(ada, None) | {"is_staff": "on", "is_superuser": "on"}
    assert client.post(page, ticked).status_code == 302
    assert rights("ada") == (False, False)
