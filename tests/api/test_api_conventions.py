"""What every resource under /api/ does alike: errors in JSON, lists in pages, filters named
in camelCase, fields in camelCase, a Location on every 201, and a schema that says all that."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from hosts.api import pages, views
from hosts.edge import runtime
from hosts.models import Membership, Project, Role, StoredSession, Team, Token
from tests.api.test_api import (  # noqa: F401 (connection_token: the fixture, autouse)
    ROOT,
    client,
    connection_token,
    person,
    stored_session,
)

pytestmark = pytest.mark.django_db

User = get_user_model()


@pytest.fixture
def root() -> APIClient:
    return client(ROOT)


# -- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/api/nope/", "/api/nope", "/api/people/x/y/"])
def test_a_path_nothing_answers_under_the_api_is_a_json_404(root: APIClient, path: str) -> None:
    response = root.get(path)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert set(response.json()) == {"detail"}
    assert "Nothing is at /api" in response.json()["detail"]


def test_a_json_404_needs_no_token() -> None:
    response = client().get("/api/nope/")
    assert (response.status_code, response.json()["detail"][:10]) == (404, "Nothing is")


def test_a_path_nothing_answers_elsewhere_is_still_djangos_page() -> None:
    response = Client().get("/nope/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")


def test_a_method_a_resource_does_not_answer_is_a_json_405(root: APIClient) -> None:
    Team.objects.create(slug="core")
    for method, path in (
        ("put", "/api/teams/core/"),
        ("delete", "/api/teams/"),
        ("post", "/api/me/"),
    ):
        response = getattr(root, method)(path, {}, format="json")
        assert response.status_code == 405, path
        assert response.json() == {"detail": f'Method "{method.upper()}" not allowed.'}


def test_a_missing_row_is_a_json_404(root: APIClient) -> None:
    response = root.get("/api/teams/ghost/")
    assert response.status_code == 404
    assert set(response.json()) == {"detail"}


def test_a_foreign_host_header_is_a_json_400(root: APIClient) -> None:
    response = root.get("/api/status/", HTTP_HOST="evil.example")
    assert response.status_code == 400
    assert response.json() == {"detail": "Bad request."}


def test_a_failure_under_the_api_is_a_json_500_that_says_nothing_of_it(
    root: APIClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(self: Any) -> None:
        raise RuntimeError("the secret inner workings")

    monkeypatch.setattr(views.TeamsView, "get_queryset", fail)
    root.raise_request_exception = False
    response = root.get("/api/teams/")
    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    assert set(response.json()) == {"detail"}
    assert "secret" not in response.content.decode()


def test_a_field_in_the_old_snake_case_is_refused_naming_the_new_one(root: APIClient) -> None:
    person("ada", "member")
    response = root.patch("/api/people/ada/", {"is_active": False}, format="json")
    assert response.status_code == 400
    assert response.json() == {"is_active": ["no such field: did you mean 'isActive'?"]}
    assert User.objects.get(username="ada").is_active
    typo = root.post("/api/teams/", {"slug": "core", "nmae": "Core"}, format="json")
    assert typo.json() == {"nmae": ["no such field"]}


# -- pages -----------------------------------------------------------------------------------


def test_every_list_comes_in_pages(root: APIClient) -> None:
    person("ada", "member")
    Team.objects.create(slug="core")
    Project.objects.create(slug="web", team=Team.objects.get(slug="core"))
    stored_session()
    for path in (
        "/api/people/",
        "/api/people/ada/tokens/",
        "/api/teams/",
        "/api/projects/",
        "/api/roles/",
        "/api/sessions/",
    ):
        body = root.get(path).json()
        assert set(body) == {"count", "next", "previous", "results"}, path
        assert body["count"] == len(body["results"]) >= 1, path
        assert (body["next"], body["previous"]) == (None, None), path


def test_a_page_is_limit_rows_from_offset_and_next_leads_to_the_rest(root: APIClient) -> None:
    for n in range(5):
        Team.objects.create(slug=f"team-{n}")
    first = root.get("/api/teams/?limit=2").json()
    assert first["count"] == 5
    assert [t["slug"] for t in first["results"]] == ["team-0", "team-1"]
    assert first["previous"] is None
    seen = [t["slug"] for t in first["results"]]
    url = first["next"]
    while url:
        page = root.get(url).json()
        seen += [t["slug"] for t in page["results"]]
        url = page["next"]
    assert seen == [f"team-{n}" for n in range(5)]
    last = root.get("/api/teams/?limit=2&offset=4").json()
    assert [t["slug"] for t in last["results"]] == ["team-4"]
    assert last["next"] is None and "offset=2" in last["previous"]


def test_a_page_holds_the_default_without_limit_and_never_more_than_the_most(
    root: APIClient,
) -> None:
    Team.objects.bulk_create([Team(slug=f"t{n:04}") for n in range(pages.MAX_LIMIT + 1)])
    assert len(root.get("/api/teams/").json()["results"]) == pages.DEFAULT_LIMIT
    huge = root.get(f"/api/teams/?limit={pages.MAX_LIMIT * 10}").json()
    assert len(huge["results"]) == pages.MAX_LIMIT
    assert huge["count"] == pages.MAX_LIMIT + 1 and huge["next"] is not None


@pytest.mark.django_db(transaction=True)
def test_the_running_turns_come_in_pages_too(root: APIClient, engine_here: None) -> None:
    assert root.get("/api/turns/").json() == {
        "count": 0,
        "next": None,
        "previous": None,
        "results": [],
    }


def test_the_schema_is_made_without_starting_an_engine() -> None:
    # GET /api/turns/ reads the engine; the schema's generator reads every view's queryset.
    SchemaGenerator().get_schema(request=None, public=True)
    assert runtime._host is None and runtime._loop is None


# -- filters ---------------------------------------------------------------------------------


def test_sessions_are_filtered_by_provider_owner_and_archived(root: APIClient) -> None:
    mine = stored_session("mine", owner="user:ada")
    theirs = stored_session("theirs", owner="user:bo")
    StoredSession.objects.filter(uri=theirs).update(is_archived=True, provider="acp")

    def uris(query: str) -> set[str]:
        return {s["uri"] for s in root.get("/api/sessions/?" + query).json()["results"]}

    assert uris("owner=user:ada") == {mine}
    assert uris("provider=acp") == {theirs}
    assert uris("isArchived=true") == {theirs}
    assert uris("isArchived=false") == {mine}
    assert uris("isArchived=false&owner=user:bo") == set()
    assert uris("") == {mine, theirs}


def test_people_are_filtered_by_role_and_team_together(root: APIClient) -> None:
    person("ada", "admin")
    person("bo", "member")
    person("cy")
    core = Team.objects.create(slug="core")
    member, admin = Role.objects.get(name="member"), Role.objects.get(name="admin")
    Membership.objects.create(user=User.objects.get(username="cy"), role=member, team=core)
    Membership.objects.create(user=User.objects.get(username="ada"), role=member, team=core)

    def ids(query: str) -> list[str]:
        return [p["id"] for p in root.get("/api/people/?" + query).json()["results"]]

    assert ids("role=member") == ["ada", "bo", "cy"]
    assert ids("team=core") == ["ada", "cy"]
    assert ids("role=member&team=core") == ["ada", "cy"]
    # Ada is an admin, and a member within core: not an admin within core.
    assert ids("role=admin") == ["ada"]
    assert ids("role=admin&team=core") == []
    Membership.objects.create(user=User.objects.get(username="bo"), role=admin, team=core)
    assert ids("role=admin&team=core") == ["bo"]
    User.objects.filter(username="cy").update(is_active=False)
    assert ids("isActive=false") == ["cy"]


def test_tokens_are_filtered_by_revoked(root: APIClient) -> None:
    person("ada")
    root.post("/api/people/ada/tokens/", {"name": "ci"}, format="json")
    root.delete("/api/people/ada/tokens/laptop/")

    def names(query: str) -> list[str]:
        listed = root.get("/api/people/ada/tokens/?" + query).json()["results"]
        return [t["name"] for t in listed]

    assert names("revoked=true") == ["laptop"]
    assert names("revoked=false") == ["ci"]
    assert names("") == ["laptop", "ci"]


def test_projects_are_filtered_by_team(root: APIClient) -> None:
    core, web = Team.objects.create(slug="core"), Team.objects.create(slug="web")
    Project.objects.create(slug="engine", team=core)
    Project.objects.create(slug="site", team=web)
    listed = root.get("/api/projects/?team=web").json()
    assert [p["slug"] for p in listed["results"]] == ["site"]
    assert listed["count"] == 1


# -- casing and Location ---------------------------------------------------------------------


def camel(key: str) -> bool:
    return "_" not in key


def keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in keys(v)}
    return set()


def test_no_field_anywhere_is_in_snake_case(root: APIClient) -> None:
    secret = person("ada", "member")
    Membership.objects.create(
        user=User.objects.get(username="ada"),
        role=Role.objects.get(name="guest"),
        team=Team.objects.create(slug="core"),
    )
    Project.objects.create(slug="web", team=Team.objects.get(slug="core"))
    uri = stored_session()
    minted = root.post("/api/people/ada/tokens/", {"name": "ci"}, format="json").json()
    paths = [
        "/api/people/",
        "/api/people/ada/",
        "/api/people/ada/tokens/",
        "/api/people/ada/tokens/ci/",
        "/api/teams/",
        "/api/projects/",
        "/api/roles/",
        "/api/sessions/",
        "/api/sessions/" + quote(uri, safe="") + "/",
    ]
    seen = keys(minted) | keys(client(secret).get("/api/me/").json())
    for path in paths:
        response = root.get(path)
        assert response.status_code == 200, path
        seen |= keys(response.json())
    assert {"isActive", "createdAt", "lastUsedAt", "revokedAt", "isAdmin"} <= seen
    assert [key for key in seen if not camel(key)] == []


def test_every_201_says_where_what_it_made_is(root: APIClient) -> None:
    person("ada")
    made = [
        ("/api/people/", {"id": "bo"}, "/api/people/bo/"),
        ("/api/people/ada/tokens/", {"name": "ci"}, "/api/people/ada/tokens/ci/"),
        ("/api/teams/", {"slug": "core"}, "/api/teams/core/"),
        ("/api/projects/", {"slug": "web", "team": "core"}, "/api/projects/web/"),
        ("/api/roles/", {"name": "ops", "grants": []}, "/api/roles/ops/"),
    ]
    for path, body, where in made:
        response = root.post(path, body, format="json")
        assert response.status_code == 201, (path, response.content)
        assert response["Location"] == "http://testserver" + where
        assert root.get(response["Location"]).json() == {
            k: v for k, v in response.json().items() if k not in ("token", "url")
        }
    assert Token.objects.filter(name="ci").count() == 1


# -- the schema ------------------------------------------------------------------------------


def test_the_schema_says_the_pages_the_refusals_and_the_location() -> None:
    schema = client().get("/api/schema/?format=json").json()
    paths, components = schema["paths"], schema["components"]["schemas"]
    assert components["Error"]["properties"] == {
        "detail": {"type": "string", "description": "what was wrong, in words"}
    }
    listed = paths["/api/teams/"]["get"]["responses"]["200"]["content"]["application/json"]
    assert listed["schema"] == {"$ref": "#/components/schemas/PaginatedTeamList"}
    assert set(components["PaginatedTeamList"]["properties"]) == {
        "count",
        "next",
        "previous",
        "results",
    }
    for path, method, codes in (
        ("/api/teams/", "post", {"201", "400", "401", "403"}),
        ("/api/teams/{slug}/", "get", {"200", "401", "403", "404"}),
        ("/api/me/tokens/{name}/", "delete", {"204", "401", "403", "404"}),
    ):
        responses = paths[path][method]["responses"]
        assert set(responses) == codes, (path, method)
        for code in codes - {"200", "201", "204"}:
            error = responses[code]["content"]["application/json"]["schema"]
            assert error == {"$ref": "#/components/schemas/Error"}
    assert "Location" in paths["/api/sessions/"]["post"]["responses"]["201"]["headers"]
    parameters = {p["name"] for p in paths["/api/sessions/"]["get"]["parameters"]}
    assert {"limit", "offset", "provider", "owner", "isArchived"} <= parameters
    # The schema's own pages are open to anyone: they have no refusals to say.
    assert not any(path.startswith(("/api/schema/", "/api/docs/")) for path in paths)
