"""/api/automations/ with DRF's APIClient, done by an engine started in this process: list,
read, create, patch, delete, run now and runs, held to the socket's grants and owners."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from automations.models import AutomationRun
from hosts import store
from hosts.edge import engine_client
from hosts.engine.host import Host
from hosts.models import Membership, Role
from tests.api.test_api_session_work import api, engine  # noqa: F401 (a fixture)
from usage.models import UsageRecord

pytestmark = pytest.mark.django_db(transaction=True)


def definition(folder: Path, text: str = "hello rest", **extra: Any) -> dict[str, Any]:
    return {
        "title": "From REST",
        "message": {"text": text, "origin": {"kind": "automation"}},
        "session": {"provider": "local", "workingDirectories": [folder.as_uri()]},
        "enabled": True,
        "triggers": [],
        **extra,
    }


def runs_settled() -> None:
    async def wait(host: Host) -> None:
        await host.automations.runs.settled()
        await host.writes.drain()

    engine_client.read(wait, what="the engine settled")


def person(name: str, role: str) -> str:
    user = get_user_model().objects.create(username=name)
    Membership.objects.create(user=user, role=Role.objects.get(name=role))
    return store.mint_token(name, "laptop").secret


def test_an_automation_is_made_read_patched_run_and_removed(engine, tmp_path):  # noqa: F811
    made = api().post(
        "/api/automations/", {"id": "nightly", "definition": definition(tmp_path)}, format="json"
    )
    assert made.status_code == 201, made.content
    assert made["Location"] == "http://testserver/api/automations/nightly/"
    assert made.data["resource"] == "ahp-automation:/nightly"
    assert made.data["operations"] == ["update", "remove", "run"]
    listed = api().get("/api/automations/")
    assert listed.status_code == 200 and listed.data["count"] == 1
    read = api().get("/api/automations/nightly/")
    assert read.data["title"] == "From REST" and read.data["enabled"] is True
    assert read.data["owner"].startswith("root:")

    patched = api().patch("/api/automations/nightly/", {"title": "Renamed"}, format="json")
    assert patched.status_code == 200, patched.content
    assert patched.data["definition"]["title"] == "Renamed"
    assert patched.data["definition"]["message"]["text"] == "hello rest"

    ran = api().post("/api/automations/nightly/run/", {"requestId": "r1"}, format="json")
    assert ran.status_code == 202, ran.content
    again = api().post("/api/automations/nightly/run/", {"requestId": "r1"}, format="json")
    assert again.data == ran.data
    runs_settled()
    runs = api().get("/api/automations/nightly/runs/")
    [run] = runs.data["results"]
    assert run["resource"] == ran.data["resource"]
    assert run["status"] == "completed" and run["origin"] == {"kind": "manual"}
    assert run["primarySession"].startswith("ahp-session:/")
    assert api().get("/api/automations/nightly/runs/?status=failed").data["count"] == 0
    # What its session used: the sum of the session's usage records.
    records = UsageRecord.objects.filter(session=run["primarySession"])
    assert records.exists()
    assert run["usage"]["records"] == records.count()
    assert run["usage"]["inputTokens"] == sum(r.input_tokens for r in records) > 0
    assert run["usage"]["outputTokens"] == sum(r.output_tokens for r in records) > 0

    assert api().delete("/api/automations/nightly/").status_code == 204
    assert api().get("/api/automations/nightly/").status_code == 404
    assert AutomationRun.objects.count() == 0


def test_bad_input_is_refused_naming_what_was_wrong(engine, tmp_path):  # noqa: F811
    bad = definition(tmp_path, disableConditions=[{"kind": "afterRuns", "max": 0}])
    refused = api().post("/api/automations/", {"definition": bad}, format="json")
    assert refused.status_code == 400
    assert "afterRuns.max" in refused.content.decode()
    unknown = api().post("/api/automations/", {"definiton": {}}, format="json")
    assert unknown.status_code == 400 and "definiton" in unknown.content.decode()
    missing = api().patch("/api/automations/nobody/", {"title": "x"}, format="json")
    assert missing.status_code == 404
    assert "Automation not found: ahp-automation:/nobody" in missing.content.decode()
    assert api().get("/api/automations/").data["count"] == 0


def test_automations_are_held_to_grants_and_owners(engine, tmp_path):  # noqa: F811
    admin, member, guest = person("ana", "admin"), person("max", "member"), person("gus", "guest")
    assert api(member).get("/api/automations/").status_code == 403
    refused = api(guest).post(
        "/api/automations/", {"definition": definition(tmp_path)}, format="json"
    )
    assert refused.status_code == 403
    assert "user:gus may not automation:create here" in refused.content.decode()
    made = api(admin).post(
        "/api/automations/", {"id": "anas", "definition": definition(tmp_path)}, format="json"
    )
    assert made.status_code == 201
    assert api(guest).get("/api/automations/anas/").data["owner"] == "user:ana"
    assert api(guest).post("/api/automations/anas/run/", {}, format="json").status_code == 403
    assert api(admin).post("/api/automations/anas/run/", {}, format="json").status_code == 202
    runs_settled()
    # What ana's run used is ana's usage: hers to read, and a usage:read holder's, not a guest's.
    [seen_by_guest] = api(guest).get("/api/automations/anas/runs/").data["results"]
    assert seen_by_guest["status"] == "completed" and seen_by_guest["usage"] is None
    [seen_by_ana] = api(admin).get("/api/automations/anas/runs/").data["results"]
    assert seen_by_ana["usage"]["tokens"] > 0
    assert api(guest).delete("/api/automations/anas/").status_code == 403
    assert api().get("/api/automations/anas/").status_code == 200


def test_someone_elses_automation_takes_others_work(engine, tmp_path):  # noqa: F811
    Role.objects.create(name="automator", grants=["automation:*", "session:*", "chat:*"])
    olga, otto = person("olga", "automator"), person("otto", "automator")
    made = api(olga).post(
        "/api/automations/", {"id": "olgas", "definition": definition(tmp_path)}, format="json"
    )
    assert made.status_code == 201, made.content
    for answer in (
        api(otto).patch("/api/automations/olgas/", {"title": "mine"}, format="json"),
        api(otto).post("/api/automations/olgas/run/", {}, format="json"),
        api(otto).delete("/api/automations/olgas/"),
    ):
        assert answer.status_code == 403
        assert "user:otto may not others:work here" in answer.content.decode()
    assert api(otto).get("/api/automations/olgas/").data["title"] == "From REST"
    # An entry answered over REST offers what its caller may do, as the catalogue shows it.
    patched = api(olga).patch("/api/automations/olgas/", {"title": "Hers"}, format="json")
    assert patched.data["operations"] == ["update", "remove", "run"]
    ran = api(olga).post("/api/automations/olgas/run/", {}, format="json")
    assert ran.status_code == 202
    runs_settled()
    [run] = api(olga).get("/api/automations/olgas/runs/").data["results"]
    # The run acts as its owner: the session is olga's.
    assert run["owner"] == "user:olga" and run["status"] == "completed", run
    session = api(olga).get(
        "/api/sessions/" + run["primarySession"].replace(":", "%3A").replace("/", "%2F") + "/"
    )
    assert session.data["owner"] == "user:olga"


def test_an_entry_answered_offers_only_what_its_caller_may_do(engine, tmp_path):  # noqa: F811
    grants = ["automation:read", "automation:create", "automation:update"]
    Role.objects.create(name="maker", grants=grants)
    maker = person("mia", "maker")
    made = api(maker).post(
        "/api/automations/", {"id": "mias", "definition": definition(tmp_path)}, format="json"
    )
    assert made.status_code == 201, made.content
    assert made.data["operations"] == ["update"]
    refused = api(maker).delete("/api/automations/mias/")
    assert refused.status_code == 403
    assert "user:mia may not automation:remove here" in refused.content.decode()
