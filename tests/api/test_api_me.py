"""/api/me/: any signed-in person reads who they are and keeps their own tokens, with no
user:* grant, and never anybody else's; no token is 401; the deployment's token is told it is
not a person."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from hosts import store
from hosts.api.auth import host_name
from hosts.models import Membership, Role, Team, Token
from tests.api.test_api import (  # noqa: F401 (connection_token: the fixture, autouse)
    ROOT,
    client,
    connection_token,
    person,
)

pytestmark = pytest.mark.django_db

User = get_user_model()


def test_a_person_reads_who_they_are() -> None:
    secret = person("ada", "member", "guest")
    Membership.objects.create(
        user=User.objects.get(username="ada"),
        role=Role.objects.get(name="admin"),
        team=Team.objects.create(slug="core"),
    )
    body = client(secret).get("/api/me/").json()
    assert body["id"] == "ada"
    assert body["principal"] == "user:ada"
    assert body["roles"] == ["guest", "member"]  # host-wide ones
    assert {(m["role"], m["team"]) for m in body["memberships"]} == {
        ("member", None),
        ("guest", None),
        ("admin", "core"),
    }
    assert body["grants"] == list(store.held_by(User.objects.get(username="ada").pk).grants)
    assert body["isAdmin"] is False  # a plain person, not made so through roles here


def test_an_admin_is_said_to_be_one() -> None:
    root = client(ROOT)
    root.post("/api/people/", {"id": "ana", "roles": ["admin"]}, format="json")
    secret = store.mint_token("ana", "laptop").secret
    body = client(secret).get("/api/me/").json()
    assert (body["roles"], body["grants"], body["isAdmin"]) == (["admin"], ["*:*"], True)


def test_a_person_with_no_role_lists_mints_and_revokes_their_own_tokens() -> None:
    me = client(person("nobody"))
    listed = me.get("/api/me/tokens/").json()
    assert [t["name"] for t in listed["results"]] == ["laptop"]
    assert listed["count"] == 1

    minted = me.post("/api/me/tokens/", {"name": "phone"}, format="json")
    assert minted.status_code == 201, minted.content
    assert minted["Location"] == "http://testserver/api/me/tokens/phone/"
    assert "no-store" in minted["Cache-Control"]
    secret = minted.json()["token"]
    assert store.person_for_token(secret).ref == "user:nobody"  # type: ignore[union-attr]
    assert me.get("/api/me/tokens/phone/").json()["revokedAt"] is None
    assert secret not in me.get("/api/me/tokens/").content.decode()

    again = me.post("/api/me/tokens/", {"name": "phone"}, format="json")
    assert again.status_code == 400 and "phone" in str(again.json()["name"])

    assert me.delete("/api/me/tokens/phone/").status_code == 204
    assert store.person_for_token(secret) is None
    assert me.get("/api/me/tokens/?revoked=true").json()["results"][0]["name"] == "phone"
    # The operator's view of the same tokens is still refused them: they hold no user:read.
    assert me.get("/api/people/nobody/tokens/").status_code == 403


def test_revoking_ones_own_token_in_use_stops_it_at_once() -> None:
    secret = person("ada", "guest")
    me = client(secret)
    assert me.delete("/api/me/tokens/laptop/").status_code == 204
    assert me.get("/api/me/").status_code == 401


def test_another_persons_token_is_not_found_under_me() -> None:
    person("bo", "member")
    store.mint_token("bo", "phone")
    ada = client(person("ada", "admin"))  # an admin, even: /me is one's own
    for method in ("get", "delete"):
        response = getattr(ada, method)("/api/me/tokens/phone/")
        assert response.status_code == 404, method
        assert set(response.json()) == {"detail"}
    assert Token.objects.get(user__username="bo", name="phone").revoked_at is None
    assert [t["name"] for t in ada.get("/api/me/tokens/").json()["results"]] == ["laptop"]


def test_a_mint_under_me_is_always_for_oneself() -> None:
    ada = client(person("ada", "member"))
    person("bo")
    minted = ada.post("/api/me/tokens/", {"name": "ci", "user": "bo"}, format="json")
    assert minted.status_code == 400
    assert not Token.objects.filter(name="ci").exists()
    assert ada.post("/api/me/tokens/", {"name": "ci"}, format="json").status_code == 201
    assert Token.objects.get(name="ci").user.username == "ada"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/api/me/"),
        ("get", "/api/me/tokens/"),
        ("post", "/api/me/tokens/"),
        ("get", "/api/me/tokens/laptop/"),
        ("delete", "/api/me/tokens/laptop/"),
    ],
)
def test_no_token_is_401(method: str, path: str) -> None:
    person("ada")
    response = getattr(client(), method)(path, {"name": "x"}, format="json")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith('Bearer realm="ahpd"')
    assert Token.objects.filter(name="x").count() == 0


@pytest.mark.parametrize(
    ("method", "path"),
    [("get", "/api/me/"), ("get", "/api/me/tokens/"), ("post", "/api/me/tokens/")],
)
def test_the_deployments_token_is_told_it_is_not_a_person(method: str, path: str) -> None:
    response = getattr(client(ROOT), method)(path, {"name": "x"}, format="json")
    assert response.status_code == 403
    detail = response.json()["detail"]
    assert detail.startswith(f"root:{host_name()} is the deployment's own token, not a person")
    assert not Token.objects.exists()


def test_the_admin_sites_sign_in_reads_me_too() -> None:
    user = User.objects.create(username="ada")
    browser = APIClient()
    browser.force_login(user)
    body = browser.get("/api/me/", HTTP_ACCEPT="application/json").json()
    assert (body["id"], body["principal"]) == ("ada", "user:ada")
