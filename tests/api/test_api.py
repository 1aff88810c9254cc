"""The HTTP API under /api: who may do what with the socket's tokens, every endpoint once."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from django.contrib.auth import get_user_model
from django.urls import URLPattern, reverse
from drf_spectacular.drainage import GENERATOR_STATS
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.validation import validate_schema
from rest_framework.test import APIClient

from ahpsite.urls import api_urlpatterns
from hosts import store
from hosts.api.auth import host_name
from hosts.edge import connection_token as edge_token
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
ROOT = "test-root"


@pytest.fixture(autouse=True)
def connection_token(settings: Any) -> Iterator[str]:
    settings.AHPD_CONNECTION_TOKEN = ROOT
    settings.AHPD_CONNECTION_TOKEN_FILE = None
    settings.AHPD_WITHOUT_CONNECTION_TOKEN = False
    edge_token.connection_token.cache_clear()
    store.ensure_builtin_roles()
    yield ROOT
    edge_token.connection_token.cache_clear()


def client(token: str | None = None) -> APIClient:
    api = APIClient()
    if token is not None:
        api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return api


def person(user_id: str, *roles: str) -> str:
    """A person holding `roles` host-wide, and a token of theirs."""
    user = User.objects.create(username=user_id)
    for name in roles:
        Membership.objects.create(user=user, role=Role.objects.get(name=name))
    return store.mint_token(user_id, "laptop").secret


def stored_session(title: str = "a session", modified_ms: int = 2_000, owner: str = "") -> str:
    uri = f"ahp-session:/{uuid.uuid4()}"
    chat = f"ahp-chat:/{uuid.uuid4()}"
    session = StoredSession.objects.create(
        uri=uri,
        provider="fake",
        title=title,
        created_ms=1_000,
        modified_ms=modified_ms,
        default_chat=chat,
        chats=[chat],
        owner=owner,
        working_directories=["/work"],
    )
    row = StoredChat.objects.create(uri=chat, session=session, title="main", created_ms=1_000)
    for position in (1, 0):
        StoredTurn.objects.create(
            chat=row,
            position=position,
            turn_id=f"t{position}",
            data={"id": f"t{position}", "state": "complete"},
        )
    return uri


def session_path(uri: str) -> str:
    return "/api/sessions/" + quote(uri, safe="") + "/"


@pytest.fixture
def root() -> APIClient:
    return client(ROOT)


# -- signing in ------------------------------------------------------------------------------


def test_no_token_is_401_with_a_bearer_challenge() -> None:
    response = client().get("/api/status/")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="ahpd"'


@pytest.mark.parametrize("header", ["Bearer nope", "Bearer ", "Basic dXNlcjpwYXNz"])
def test_a_wrong_token_or_scheme_is_401(header: str) -> None:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=header)
    response = api.get("/api/people/")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith('Bearer realm="ahpd"')


def test_a_query_token_does_not_sign_the_api_in() -> None:
    assert client().get(f"/api/status/?tkn={ROOT}").status_code == 401


@pytest.mark.django_db(transaction=True)
def test_status_says_who_asks(root: APIClient, engine_here: None) -> None:
    stored_session()
    person("ada", "member")
    body = root.get("/api/status/").json()
    assert body["host"] == host_name()
    assert body["principal"] == f"root:{host_name()}"
    assert body["grants"] == ["*:*"]
    assert (body["sessions"], body["people"]) == (1, 1)
    assert body["version"]
    # What the engine holds now: nobody connected, nothing running.
    assert (body["connections"], body["runningTurns"], body["agents"]) == (0, 0, [])


@pytest.mark.django_db(transaction=True)
def test_status_needs_no_grant(engine_here: None) -> None:
    body = client(person("nobody")).get("/api/status/").json()
    assert body["principal"] == "user:nobody"
    assert body["grants"] == []


def test_a_revoked_token_is_401(root: APIClient) -> None:
    secret = person("ada", "admin")
    assert client(secret).get("/api/people/").status_code == 200
    assert root.delete("/api/people/ada/tokens/laptop/").status_code == 204
    response = client(secret).get("/api/status/")
    assert response.status_code == 401
    assert 'error="invalid_token"' in response["WWW-Authenticate"]


def test_an_inactive_persons_token_is_401(root: APIClient) -> None:
    secret = person("ada", "member")
    assert root.patch("/api/people/ada/", {"isActive": False}, format="json").status_code == 200
    assert client(secret).get("/api/status/").status_code == 401


def test_grants_are_read_fresh_on_every_request(root: APIClient) -> None:
    secret = person("ada", "guest")
    assert client(secret).get("/api/people/").status_code == 403
    assert root.patch("/api/people/ada/", {"roles": ["admin"]}, format="json").status_code == 200
    assert client(secret).get("/api/people/").status_code == 200


@pytest.mark.django_db(transaction=True)
def test_using_a_token_notes_when(root: APIClient, engine_here: None) -> None:
    secret = person("ada", "member")
    client(secret).get("/api/status/")
    listed = root.get("/api/people/ada/tokens/").json()["results"]
    assert listed[0]["lastUsedAt"] is not None


# -- who may do what -------------------------------------------------------------------------


def test_a_member_reads_sessions_but_may_not_create_people() -> None:
    uri = stored_session()
    member = client(person("mia", "member"))
    assert member.get("/api/sessions/").status_code == 200
    assert member.get(session_path(uri)).status_code == 200
    response = member.post("/api/people/", {"id": "eve"}, format="json")
    assert response.status_code == 403
    assert response.json() == {"detail": "user:mia may not user:create here"}
    assert member.get("/api/config/").status_code == 403
    assert not User.objects.filter(username="eve").exists()


def test_a_guest_reads_sessions_and_nothing_else() -> None:
    uri = stored_session()
    guest = client(person("gus", "guest"))
    assert guest.get("/api/sessions/").status_code == 200
    assert guest.get(session_path(uri)).status_code == 200
    for path in ("/api/people/", "/api/teams/", "/api/projects/", "/api/roles/", "/api/config/"):
        response = guest.get(path)
        assert response.status_code == 403, path
        assert response.json()["detail"].startswith("user:gus may not ")


def every_request() -> list[tuple[str, str, dict[str, Any] | None, str]]:
    """(method, path, body, the grant it needs) for every endpoint but status and schema."""
    return [
        ("get", "/api/people/", None, "user:read"),
        ("post", "/api/people/", {"id": "new"}, "user:create"),
        ("get", "/api/people/ada/", None, "user:read"),
        ("patch", "/api/people/ada/", {"email": "a@example.org"}, "user:update"),
        ("delete", "/api/people/ada/", None, "user:remove"),
        ("get", "/api/people/ada/tokens/", None, "user:read"),
        ("post", "/api/people/ada/tokens/", {"name": "ci"}, "user:token"),
        ("get", "/api/people/ada/tokens/laptop/", None, "user:read"),
        ("delete", "/api/people/ada/tokens/laptop/", None, "user:token"),
        ("get", "/api/teams/", None, "team:read"),
        ("post", "/api/teams/", {"slug": "new"}, "team:create"),
        ("get", "/api/teams/core/", None, "team:read"),
        ("patch", "/api/teams/core/", {"name": "Core"}, "team:update"),
        ("delete", "/api/teams/core/", None, "team:remove"),
        ("get", "/api/projects/", None, "project:read"),
        ("post", "/api/projects/", {"slug": "new", "team": "core"}, "project:create"),
        ("get", "/api/projects/web/", None, "project:read"),
        ("patch", "/api/projects/web/", {"name": "Web"}, "project:update"),
        ("delete", "/api/projects/web/", None, "project:remove"),
        ("get", "/api/roles/", None, "role:read"),
        ("post", "/api/roles/", {"name": "new", "grants": []}, "role:create"),
        ("get", "/api/roles/ops/", None, "role:read"),
        ("patch", "/api/roles/ops/", {"grants": []}, "role:update"),
        ("delete", "/api/roles/ops/", None, "role:remove"),
        ("get", "/api/config/", None, "config:settings"),
        ("get", "/api/sessions/", None, "session:list"),
        ("get", "SESSION", None, "session:state"),
    ]


@pytest.mark.parametrize(
    ("method", "path", "body", "needed"), every_request(), ids=lambda v: str(v)
)
def test_a_person_with_no_role_is_refused_everywhere_but_status(
    method: str, path: str, body: dict[str, Any] | None, needed: str
) -> None:
    person("ada", "member")
    team = Team.objects.create(slug="core")
    Project.objects.create(slug="web", team=team)
    Role.objects.create(name="ops", grants=["session:read"])
    uri = stored_session()
    nobody = client(person("nobody"))
    path = session_path(uri) if path == "SESSION" else path
    response = getattr(nobody, method)(path, body, format="json")
    assert response.status_code == 403
    assert response.json() == {"detail": f"user:nobody may not {needed} here"}
    # Status, which they may read, is test_status_needs_no_grant's.


@pytest.mark.parametrize(
    ("method", "path", "body", "needed"),
    # Root config is the engine's: root's read of it is test_root_config_is_what_the_engine_holds.
    [r for r in every_request() if r[1] != "/api/config/"],
    ids=lambda v: str(v),
)
def test_root_may_do_everything(
    root: APIClient, method: str, path: str, body: dict[str, Any] | None, needed: str
) -> None:
    person("ada", "member")
    team = Team.objects.create(slug="core")
    Project.objects.create(slug="web", team=team)
    Role.objects.create(name="ops", grants=["session:read"])
    uri = stored_session()
    path = session_path(uri) if path == "SESSION" else path
    response = getattr(root, method)(path, body, format="json")
    assert response.status_code in (200, 201, 204), response.content


def test_a_role_of_ones_own_grants_opens_just_those() -> None:
    Role.objects.create(name="teamlead", grants=["team:read", "team:create"])
    lead = client(person("lea", "teamlead"))
    assert lead.post("/api/teams/", {"slug": "core"}, format="json").status_code == 201
    assert lead.get("/api/teams/core/").status_code == 200
    refused = lead.delete("/api/teams/core/")
    assert refused.json() == {"detail": "user:lea may not team:remove here"}


def test_put_is_not_an_answer(root: APIClient) -> None:
    Team.objects.create(slug="core")
    assert root.put("/api/teams/core/", {"slug": "core"}, format="json").status_code == 405


# -- people and tokens -----------------------------------------------------------------------


def test_people_are_made_read_changed_and_removed(root: APIClient) -> None:
    made = root.post(
        "/api/people/",
        {"id": "ada", "email": "ada@example.org", "roles": ["member", "guest"]},
        format="json",
    )
    assert made.status_code == 201, made.content
    assert made.json()["roles"] == ["guest", "member"]
    user = User.objects.get(username="ada")
    assert not user.has_usable_password()
    assert "session:write" in store.held_by(user.pk).grants

    listed = root.get("/api/people/").json()["results"]
    assert [(p["id"], p["roles"], p["isActive"]) for p in listed] == [
        ("ada", ["guest", "member"], True)
    ]
    one = root.get("/api/people/ada/").json()
    assert one["email"] == "ada@example.org"
    assert {m["role"] for m in one["memberships"]} == {"guest", "member"}

    changed = root.patch("/api/people/ada/", {"roles": ["admin"]}, format="json")
    assert changed.json()["roles"] == ["admin"]
    assert root.patch("/api/people/ada/", {"id": "bob"}, format="json").status_code == 400

    assert root.delete("/api/people/ada/").status_code == 204
    assert root.get("/api/people/ada/").status_code == 404


def test_a_person_needs_a_fresh_id_and_known_roles(root: APIClient) -> None:
    person("ada")
    taken = root.post("/api/people/", {"id": "ada"}, format="json")
    assert taken.status_code == 400 and "id" in taken.json()
    bad = root.post("/api/people/", {"id": "bob", "roles": ["overlord"]}, format="json")
    assert bad.status_code == 400
    assert "overlord" in str(bad.json()["roles"])
    assert root.post("/api/people/", {"id": "no spaces"}, format="json").status_code == 400


def test_team_scoped_memberships_outlast_a_change_of_host_wide_roles(root: APIClient) -> None:
    person("ada", "guest")
    team = Team.objects.create(slug="core")
    Membership.objects.create(
        user=User.objects.get(username="ada"), role=Role.objects.get(name="member"), team=team
    )
    body = root.patch("/api/people/ada/", {"roles": []}, format="json").json()
    assert body["roles"] == []
    assert body["memberships"] == [
        {"role": "member", "team": "core", "project": None, "primary": False}
    ]


@pytest.mark.django_db(transaction=True)
def test_minting_shows_the_secret_once_then_only_the_prefix(
    root: APIClient, settings: Any, engine_here: None
) -> None:
    settings.AHPD_HOST, settings.AHPD_PORT = "10.0.0.5", 9999
    person("ada")
    minted = root.post("/api/people/ada/tokens/", {"name": "ci"}, format="json")
    assert minted.status_code == 201
    assert "no-store" in minted["Cache-Control"]
    body = minted.json()
    secret = body["token"]
    assert secret.startswith(store.TOKEN_PREFIX)
    assert body["url"] == f"ws://10.0.0.5:9999/?tkn={secret}"
    assert body["prefix"] == secret[:10]
    # The prefix shown later is not the secret: it names the token, it does not open the door.
    assert len(secret) > len(body["prefix"]) + 20

    token = Token.objects.get(user__username="ada", name="ci")
    assert token.digest == store.digest(secret) and secret not in token.digest

    listed = root.get("/api/people/ada/tokens/")
    assert secret not in listed.content.decode()
    tokens = listed.json()["results"]
    assert [t["name"] for t in tokens] == ["laptop", "ci"]
    assert tokens[1] == {
        "name": "ci",
        "prefix": secret[:10],
        "createdAt": tokens[1]["createdAt"],
        "lastUsedAt": None,
        "revokedAt": None,
    }
    assert client(secret).get("/api/status/").json()["principal"] == "user:ada"


def test_a_token_name_is_one_per_person(root: APIClient) -> None:
    person("ada")
    again = root.post("/api/people/ada/tokens/", {"name": "laptop"}, format="json")
    assert again.status_code == 400
    assert "laptop" in str(again.json()["name"])
    assert root.post("/api/people/ada/tokens/", {}, format="json").status_code == 400
    assert root.post("/api/people/nobody/tokens/", {"name": "x"}, format="json").status_code == 404


def test_revoking_is_kept_and_said_once(root: APIClient) -> None:
    person("ada")
    assert root.delete("/api/people/ada/tokens/laptop/").status_code == 204
    revoked_at = Token.objects.get(name="laptop").revoked_at
    assert revoked_at is not None
    assert root.delete("/api/people/ada/tokens/laptop/").status_code == 204
    assert Token.objects.get(name="laptop").revoked_at == revoked_at
    assert root.get("/api/people/ada/tokens/").json()["results"][0]["revokedAt"] is not None
    assert root.delete("/api/people/ada/tokens/other/").status_code == 404


# -- teams, projects, roles ------------------------------------------------------------------


def test_teams_and_projects(root: APIClient) -> None:
    assert (
        root.post("/api/teams/", {"slug": "core", "name": "Core"}, format="json").status_code == 201
    )
    made = root.post("/api/projects/", {"slug": "web", "team": "core"}, format="json")
    assert made.status_code == 201
    assert made.json() == {"slug": "web", "name": "", "team": "core"}
    assert root.get("/api/teams/core/").json() == {
        "slug": "core",
        "name": "Core",
        "projects": ["web"],
    }
    assert [p["slug"] for p in root.get("/api/projects/").json()["results"]] == ["web"]
    nowhere = root.post("/api/projects/", {"slug": "api", "team": "nope"}, format="json")
    assert nowhere.status_code == 400
    assert root.patch("/api/projects/web/", {"name": "Web"}, format="json").json()["name"] == "Web"
    assert root.delete("/api/teams/core/").status_code == 204
    assert root.get("/api/projects/web/").status_code == 404


def test_roles_have_their_grants_checked(root: APIClient) -> None:
    made = root.post(
        "/api/roles/", {"name": "ops", "grants": ["session:*", "config:settings"]}, format="json"
    )
    assert made.status_code == 201
    assert made.json() == {
        "name": "ops",
        "grants": ["session:*", "config:settings"],
        "builtin": False,
    }
    bad = root.post("/api/roles/", {"name": "bad", "grants": ["session:fly"]}, format="json")
    assert bad.status_code == 400
    assert "session:fly" in str(bad.json()["grants"])
    bad = root.patch("/api/roles/ops/", {"grants": ["wizard:read"]}, format="json")
    assert bad.status_code == 400 and "wizard:read" in str(bad.json()["grants"])
    names = [r["name"] for r in root.get("/api/roles/").json()["results"]]
    assert names == ["admin", "guest", "lead", "member", "ops"]
    assert root.delete("/api/roles/ops/").status_code == 204


def test_a_roles_grants_are_kept_once_each_and_a_bad_one_is_named(root: APIClient) -> None:
    twice = ["chat:send", "session:read", "chat:send"]
    made = root.post("/api/roles/", {"name": "ops", "grants": twice}, format="json")
    assert made.json()["grants"] == ["chat:send", "session:read"]
    bad = root.post("/api/roles/", {"name": "bad", "grants": ["session:fly"]}, format="json")
    assert bad.json() == {"grants": ["unknown operation in grant 'session:fly'"]}


@pytest.mark.parametrize("name", ["admin", "member", "guest"])
def test_built_in_roles_are_neither_changed_nor_removed(root: APIClient, name: str) -> None:
    removed = root.delete(f"/api/roles/{name}/")
    assert removed.status_code == 409
    assert name in removed.json()["detail"]
    assert root.patch(f"/api/roles/{name}/", {"grants": []}, format="json").status_code == 409
    assert Role.objects.get(name=name).grants


# -- root config and sessions ----------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_root_config_is_what_the_engine_holds(root: APIClient, engine_here: None) -> None:
    # Kept before the engine starts: it reads them back at its start, as after a restart.
    RootConfig.objects.create(
        key="root", values={"replayBytes": 2 * 1024 * 1024, "githubToken": "s3cret"}
    )
    config = root.get("/api/config/").json()
    properties = config["schema"]["properties"]
    assert set(properties) == {
        "clientQueueBytes",
        "replayBytes",
        "defaultShell",
        "chatMoves.enabled",
    }
    assert config["values"] == {
        "clientQueueBytes": properties["clientQueueBytes"]["default"],
        "replayBytes": 2 * 1024 * 1024,
        "defaultShell": "",
        "chatMoves.enabled": properties["chatMoves.enabled"]["default"],
        "githubToken": "<set>",
    }


def test_sessions_most_recently_modified_first(root: APIClient) -> None:
    older = stored_session("older", modified_ms=5_000, owner="user:ada")
    newer = stored_session("newer", modified_ms=9_000)
    listed = root.get("/api/sessions/").json()["results"]
    assert [s["uri"] for s in listed] == [newer, older]
    assert listed[1] == {
        "uri": older,
        "provider": "fake",
        "title": "older",
        "createdAt": "1970-01-01T00:00:01.000Z",
        "modifiedAt": "1970-01-01T00:00:05.000Z",
        "owner": "user:ada",
        "scope": "",
        "isRead": False,
        "isArchived": False,
    }


def test_a_session_with_its_chats_and_turns(root: APIClient) -> None:
    uri = stored_session()
    body = root.get(session_path(uri)).json()
    assert body["uri"] == uri
    assert body["workingDirectories"] == ["/work"]
    assert body["defaultChat"] == body["chats"][0]["uri"]
    assert [t["id"] for t in body["chats"][0]["turns"]] == ["t0", "t1"]
    assert root.get(session_path("ahp-session:/nope")).status_code == 404


# -- the schema, the browsable API, the Host header ------------------------------------------


def test_the_openapi_schema_validates_and_generates_without_warnings() -> None:
    response = client().get("/api/schema/?format=json")
    assert response.status_code == 200
    schema = response.json()
    validate_schema(schema)
    assert "/api/sessions/{uri}/" in schema["paths"]
    assert "bearerAuth" in schema["components"]["securitySchemes"]

    GENERATOR_STATS._warn_cache.clear()
    GENERATOR_STATS._error_cache.clear()
    SchemaGenerator().get_schema(request=None, public=True)
    assert not GENERATOR_STATS, (GENERATOR_STATS._warn_cache, GENERATOR_STATS._error_cache)


@pytest.mark.django_db(transaction=True)
def test_the_browsable_api_answers_html(root: APIClient, engine_here: None) -> None:
    for path in ("/api/status/", "/api/people/", "/api/roles/", "/api/sessions/"):
        response = root.get(path, HTTP_ACCEPT="text/html")
        assert response.status_code == 200, path
        assert response["Content-Type"].startswith("text/html")


def test_the_api_takes_json_only(root: APIClient) -> None:
    response = root.post("/api/teams/", {"slug": "core"})  # multipart
    assert response.status_code == 415


@pytest.mark.django_db(transaction=True)
def test_a_foreign_host_header_is_400(root: APIClient, engine_here: None) -> None:
    assert root.get("/api/status/", HTTP_HOST="evil.example").status_code == 400
    assert root.get("/api/status/", HTTP_HOST="localhost").status_code == 200


# -- paths: DRF's trailing slash, and the same path without it -------------------------------


def test_every_route_reverse_and_the_schema_end_in_a_slash(root: APIClient) -> None:
    # The API's root is the mount's own path, /api/: every other route ends in a slash.
    patterns = [p for p in api_urlpatterns if isinstance(p, URLPattern) and p.name != "root"]
    assert patterns and all(str(p.pattern).rstrip("$").endswith("/") for p in patterns)
    assert reverse("api:root") == "/api/"
    assert reverse("api:sessions") == "/api/sessions/"
    assert reverse("api:session-cancel", kwargs={"uri": "ahp-session:/a"}).endswith("/cancel/")
    paths = root.get("/api/schema/?format=json").json()["paths"]
    assert paths and all(path.endswith("/") for path in paths)


@pytest.mark.django_db(transaction=True)
def test_every_get_answers_the_same_with_or_without_the_trailing_slash(
    root: APIClient, engine_here: None
) -> None:
    uri = stored_session()
    person("ada", "member")
    Team.objects.create(slug="core", name="core")
    Project.objects.create(slug="web", name="web", team=Team.objects.get(slug="core"))
    routes = [
        "status/",
        "people/",
        "people/ada/",
        "people/ada/tokens/",
        "people/ada/tokens/laptop/",
        "teams/",
        "teams/core/",
        "projects/",
        "projects/web/",
        "roles/",
        "roles/admin/",
        "config/",
        "sessions/",
        "sessions/" + quote(uri, safe="") + "/",
        "schema/",
    ]
    for route in routes:
        slashed = root.get("/api/" + route, HTTP_ACCEPT="application/json")
        bare = root.get("/api/" + route.removesuffix("/"), HTTP_ACCEPT="application/json")
        assert slashed.status_code == bare.status_code == 200, route
        if route == "status/":
            # The one field that moves between two reads.
            assert {**slashed.json(), "uptimeSeconds": 0} == {**bare.json(), "uptimeSeconds": 0}
            continue
        assert slashed.content == bare.content, route


def test_a_post_without_the_trailing_slash_keeps_its_body(root: APIClient) -> None:
    bare = root.post("/api/teams", {"slug": "core", "name": "Core"}, format="json")
    slashed = root.post("/api/teams/", {"slug": "web", "name": "Web"}, format="json")
    assert (bare.status_code, slashed.status_code) == (201, 201)
    assert bare.json()["name"] == "Core" and slashed.json()["name"] == "Web"
    assert sorted(Team.objects.values_list("slug", flat=True)) == ["core", "web"]


def test_an_unknown_api_path_is_404_either_way(root: APIClient) -> None:
    assert root.get("/api/nothing").status_code == 404
    assert root.get("/api/nothing/").status_code == 404
