"""The REST API keeps the README's word (issue 25 point 3), against a started server, reached
as a client reaches it: every list's query is checked (an unknown parameter or a bad value is
a 400 naming it and what it takes), every list comes in pages, errors are said in the API's
own nouns and casing, a policy's every bad field is named, /api/config/ shows what the socket
shows, and /api/ lists the resources."""

from __future__ import annotations

import json
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.support.agents import server_with_local_agent
from tests.support.rest import call
from tests.support.server import ServerProcess

ROOT_URI = "ahp-root://"

PEOPLE = """
import json
from django.contrib.auth import get_user_model
from hosts.models import Membership, Role
from hosts.store import ensure_builtin_roles, mint_token, sync_admin_site
ensure_builtin_roles()
tokens = {}
people = (("ana", "admin", True), ("max", "member", True), ("ivy", "member", False))
for name, role, active in people:
    user = get_user_model().objects.create_user(username=name, is_active=active)
    Membership.objects.create(user=user, role=Role.objects.get(name=role), primary=True)
    sync_admin_site(user)
    tokens[name] = mint_token(name, "tests").secret
print(json.dumps(tokens))
"""

#: What Django and DRF would say, which no answer of the API may.
DJANGO_WORDS = (
    "matches the given query",
    "non_field_errors",
    "does not exist",
    "does not match the required pattern",
    "This field",
    "Invalid data",
)


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    with server_with_local_agent() as process:
        yield process


@pytest.fixture(scope="module")
def tokens(server: ServerProcess) -> dict[str, str]:
    return dict(server.shell_json(PEOPLE))


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ahpd-rest-conventions-") as path:
        yield Path(path)


def refused(server: ServerProcess, path: str, token: str | None = None) -> str:
    """The `detail` of a GET of `path` that must be a 400."""
    status, body = call(server, "GET", path, *([token] if token else []))
    assert status == 400, (path, status, body)
    assert set(body) == {"detail"}, body
    return str(body["detail"])


def post_text(server: ServerProcess, path: str, token: str, text: str) -> tuple[int, Any]:
    """(status, JSON answer) of a POST whose body is `text`, as it is."""
    request = urllib.request.Request(
        server.base.replace("ws://", "http://") + "api/" + path,
        data=text.encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def without_django_words(body: Any) -> None:
    text = json.dumps(body)
    assert not [words for words in DJANGO_WORDS if words in text], text


# -- query parameters ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "takes"),
    [
        ("people/?colour=red", "isActive, limit, offset, role, team"),
        ("people/?is_active=false", "isActive, limit, offset, role, team"),
        ("sessions/?archived=true", "isArchived, isRead, limit, offset, owner, provider"),
        ("teams/?team=core", "limit, offset"),
        ("roles/?name=admin", "limit, offset"),
        ("projects/?slug=web", "limit, offset, team"),
        ("people/ana/tokens/?live=true", "limit, offset, revoked"),
        ("me/tokens/?live=true", "limit, offset, revoked"),
        ("turns/?session=x", "limit, offset"),
        ("policies/?kind=agent", "limit, offset"),
        ("usage/?pool=user:ana", "limit, offset"),
        ("usage/user:ana/records/?since=2026-01-01", "from, limit, offset, until"),
        ("automations/?enabled=true", "limit, offset, owner, title"),
    ],
)
def test_a_query_parameter_a_list_does_not_take_is_refused_naming_it(
    server: ServerProcess, tokens: dict[str, str], path: str, takes: str
) -> None:
    name = path.partition("?")[2].partition("=")[0]
    detail = refused(server, path, tokens["ana"])
    route = "/api/" + path.partition("?")[0]
    assert detail == f"no query parameter {name!r} here: {route} takes {takes}"


@pytest.mark.parametrize(
    ("path", "said"),
    [
        ("people/?isActive=no", "isActive takes true or false, not 'no'"),
        ("people/?isActive=True", "isActive takes true or false, not 'True'"),
        ("people/?isActive=1", "isActive takes true or false, not '1'"),
        ("sessions/?isArchived=yes", "isArchived takes true or false, not 'yes'"),
        ("people/ana/tokens/?revoked=0", "revoked takes true or false, not '0'"),
        ("people/?limit=abc", "limit takes a whole number of rows, 1 or more, not 'abc'"),
        ("people/?limit=0", "limit takes a whole number of rows, 1 or more, not '0'"),
        ("teams/?offset=-1", "offset takes a whole number of rows to skip, 0 or more, not '-1'"),
        ("policies/?limit=ten", "limit takes a whole number of rows, 1 or more, not 'ten'"),
        ("turns/?offset=x", "offset takes a whole number of rows to skip, 0 or more, not 'x'"),
        (
            "usage/user:ana/records/?from=yesterday",
            "from takes a day, YYYY-MM-DD, not 'yesterday'",
        ),
        (
            "usage/user:ana/records/?until=2026-02-30",
            "until takes a day, YYYY-MM-DD, not '2026-02-30'",
        ),
    ],
)
def test_a_value_a_parameter_does_not_take_is_refused_saying_what_it_takes(
    server: ServerProcess, tokens: dict[str, str], path: str, said: str
) -> None:
    assert refused(server, path, tokens["ana"]) == said


def test_true_and_false_narrow_the_list_as_they_say(
    server: ServerProcess, tokens: dict[str, str]
) -> None:
    status, inactive = call(server, "GET", "people/?isActive=false", tokens["ana"])
    assert status == 200
    assert [p["id"] for p in inactive["results"]] == ["ivy"]
    status, active = call(server, "GET", "people/?isActive=true&limit=1000", tokens["ana"])
    assert status == 200 and "ivy" not in [p["id"] for p in active["results"]]
    assert {"ana", "max"} <= {p["id"] for p in active["results"]}


def test_a_run_status_not_one_of_the_statuses_is_refused_naming_them(
    server: ServerProcess, tokens: dict[str, str], workdir: Path
) -> None:
    definition = {
        "title": "Conventions",
        "message": {"text": "hello", "origin": {"kind": "automation"}},
        "session": {"provider": "local", "workingDirectories": [workdir.as_uri()]},
        "enabled": False,
        "triggers": [],
    }
    made = call(
        server, "POST", "automations/", tokens["ana"], {"id": "conv", "definition": definition}
    )
    assert made[0] == 201, made
    detail = refused(server, "automations/conv/runs/?status=nope", tokens["ana"])
    assert detail.startswith("status takes one of ") and detail.endswith(", not 'nope'")
    assert "failed" in detail
    status, runs = call(server, "GET", "automations/conv/runs/?status=failed", tokens["ana"])
    assert (status, runs["count"]) == (200, 0)


# -- pages -----------------------------------------------------------------------------------


def test_every_list_comes_in_pages(server: ServerProcess, tokens: dict[str, str]) -> None:
    for n in range(3):
        row = {"id": f"paged-{n}", "scope": "all", "effect": "allow", "match": {"agent": ["x"]}}
        assert call(server, "POST", "policies/", tokens["ana"], row)[0] == 201
    for path in ("policies/", "usage/", "turns/", "automations/", "people/", "me/tokens/"):
        status, body = call(server, "GET", path, tokens["ana"])
        assert status == 200, (path, body)
        assert isinstance(body, dict) and set(body) == {"count", "next", "previous", "results"}
    status, first = call(server, "GET", "policies/?limit=2", tokens["ana"])
    assert status == 200 and first["count"] >= 3 and len(first["results"]) == 2
    assert first["next"] is not None and first["previous"] is None
    seen = [row["id"] for row in first["results"]]
    url = first["next"]
    while url:
        with urllib.request.urlopen(
            urllib.request.Request(url, headers={"Authorization": f"Bearer {tokens['ana']}"})
        ) as page:
            body = json.loads(page.read())
        seen += [row["id"] for row in body["results"]]
        url = body["next"]
    assert {f"paged-{n}" for n in range(3)} <= set(seen) and len(seen) == first["count"]


# -- errors in the API's words ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "said"),
    [
        ("people/nope/", "no such person: nope"),
        ("people/nope/tokens/", "no such person: nope"),
        ("people/ana/tokens/nope/", "no such token: nope"),
        ("me/tokens/nope/", "no such token: nope"),
        ("teams/nope/", "no such team: nope"),
        ("projects/nope/", "no such project: nope"),
        ("roles/nope/", "no such role: nope"),
        ("policies/nope/", "no such policy: nope"),
        (
            "sessions/" + quote("ahp-session:/nope", safe="") + "/",
            "no such session: ahp-session:/nope",
        ),
    ],
)
def test_what_is_not_there_is_named_in_the_apis_nouns(
    server: ServerProcess, tokens: dict[str, str], path: str, said: str
) -> None:
    status, body = call(server, "GET", path, tokens["ana"])
    assert (status, body) == (404, {"detail": said})


def test_a_bad_body_is_told_in_the_apis_words(
    server: ServerProcess, tokens: dict[str, str]
) -> None:
    ana = tokens["ana"]
    answers = [
        (
            call(server, "POST", "projects/", ana, {"slug": "web", "team": "nope"}),
            {"team": ["no such team: nope"]},
        ),
        (
            call(server, "POST", "me/tokens/", ana, {"name": "a/b"}),
            {"name": ["must match ^[^/]+$"]},
        ),
        (
            call(server, "POST", "people/", ana, {"id": "bad id!"}),
            {"id": [r"must match ^[\w.@+-]+\Z"]},
        ),
        (
            call(server, "POST", "teams/", ana, {"slug": "bad slug"}),
            {"slug": ["must match ^[-a-zA-Z0-9_]+$"]},
        ),
        (call(server, "POST", "teams/", ana, {}), {"slug": ["required"]}),
        (
            call(server, "POST", "teams/", ana, []),
            {"detail": "the body must be a JSON object, not a list"},
        ),
        (
            call(server, "POST", "people/", ana, {"id": "ana"}),
            {"id": ["a person has this id already"]},
        ),
        (
            call(server, "PATCH", "people/max/", ana, {"isActive": "perhaps"}),
            {"isActive": ["true or false, not 'perhaps'"]},
        ),
        (
            call(server, "POST", "roles/", ana, {"name": "ops", "grants": "all"}),
            {"grants": ["must be a list"]},
        ),
    ]
    for (status, body), said in answers:
        assert (status, body) == (400, said)
        without_django_words(body)
    status, body = post_text(server, "people/", ana, "{not json")
    assert status == 400 and body["detail"].startswith("the body is not JSON: ")
    # Nothing was made of any of them.
    assert call(server, "GET", "teams/", ana)[1]["count"] == 0
    assert call(server, "GET", "projects/", ana)[1]["count"] == 0


def test_a_policy_is_refused_naming_every_field_that_is_wrong(
    server: ServerProcess, tokens: dict[str, str]
) -> None:
    row = {
        "id": "wrong-everywhere",
        "kind": "nope",
        "effect": "maybe",
        "scope": "everyone",
        "limits": [{"amount": "lots", "measure": "usd", "period": "day", "pool": "shared"}],
        "until": "someday",
    }
    status, body = call(server, "POST", "policies/", tokens["ana"], row)
    assert status == 400
    assert set(body) == {"kind", "effect", "scope", "limits", "until"}, body
    assert body["kind"] == ["kind must be one of agent, model, computer"]
    assert body["effect"] == ["effect must be allow or deny"]
    assert body["limits"][0].startswith("limits[0]: amount ")
    assert call(server, "GET", "policies/wrong-everywhere/", tokens["ana"])[0] == 404
    # A change is held to the same, field by field, and leaves the row as it was.
    made = {"id": "kept-row", "effect": "allow", "match": {"agent": ["x"]}}
    assert call(server, "POST", "policies/", tokens["ana"], made)[0] == 201
    status, body = call(server, "PATCH", "policies/kept-row/", tokens["ana"], {"kind": 1, "cap": 2})
    assert (status, set(body)) == (400, {"kind", "cap"})
    assert call(server, "GET", "policies/kept-row/", tokens["ana"])[1]["kind"] == "agent"


# -- root config -----------------------------------------------------------------------------


async def test_config_is_what_the_socket_shows_with_credentials_hidden(
    server: ServerProcess, tokens: dict[str, str], connect: Any
) -> None:
    admin = await connect(server.url)
    await admin.initialize()
    pushed = {"replayBytes": 2 * 1024 * 1024, "githubToken": "s3cret-value"}
    await admin.dispatch_and_wait(ROOT_URI, {"type": "root/configChanged", "config": pushed})
    snapshot = (await admin.request("subscribe", {"channel": ROOT_URI}))["snapshot"]["state"]
    said = snapshot["config"]
    assert said["values"]["githubToken"] == "s3cret-value"

    status, config = call(server, "GET", "config/", tokens["ana"])
    assert status == 200
    assert config["schema"] == said["schema"]
    assert config["values"] == {**said["values"], "githubToken": "<set>"}
    assert config["values"]["replayBytes"] == 2 * 1024 * 1024
    assert "s3cret-value" not in json.dumps(config)
    # A member holds no config:settings, as on the socket (whose root shows them no values).
    status, body = call(server, "GET", "config/", tokens["max"])
    assert (status, body) == (403, {"detail": "user:max may not config:settings here"})


# -- the API's root --------------------------------------------------------------------------


def test_the_api_root_lists_every_resource_to_who_is_signed_in(
    server: ServerProcess, tokens: dict[str, str]
) -> None:
    status, listing = call(server, "GET", "", tokens["max"])
    assert status == 200
    base = server.base.replace("ws://", "http://") + "api/"
    assert listing["people"] == base + "people/"
    assert listing["policies"] == base + "policies/"
    assert listing["automations"] == base + "automations/"
    assert {"status", "me", "teams", "projects", "roles", "config", "sessions", "turns"} <= set(
        listing
    )
    assert {"usage", "schema", "docs", "redoc"} <= set(listing)
    # Each is there: root reads every one.
    for name, url in listing.items():
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {tokens['ana']}"})
        with urllib.request.urlopen(request, timeout=60) as answer:
            assert answer.status == 200, name
    assert call(server, "GET", "", "not-a-token")[0] == 401
    try:
        urllib.request.urlopen(base, timeout=60)
    except urllib.error.HTTPError as error:
        assert error.code == 401
    else:
        raise AssertionError("/api/ answered without a token")
