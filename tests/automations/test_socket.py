"""Automations over the socket, end to end, with the fake ACP agent: the catalogue, manual and
scheduled runs, cancelling, the refusals in the seed's words, and runs a restart left
unfinished. Every frame is schema-checked by the Client; channels are conformance-checked."""

from __future__ import annotations

import tempfile
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_grants import cli
from tests.support.agents import server_with_acp_agent
from tests.support.client import Client, RpcError
from tests.support.server import ServerProcess

CATALOGUE = "ahp-automations://"


@pytest.fixture(scope="module")
def workdir():
    with tempfile.TemporaryDirectory(prefix="ahpd-auto-") as path:
        yield Path(path)


@pytest.fixture(scope="module")
def server():
    # The server fires schedules itself on both configurations here; the Celery worker's
    # firing is test_celery.py's.
    with server_with_acp_agent(AHPD_AUTOMATION_SCHEDULER="embedded") as process:
        yield process


@pytest.fixture(scope="module")
def tokens(server):
    made = {}
    for person, role in (("ana", "admin"), ("max", "member"), ("gus", "guest")):
        cli(server, "user", "add", person, "--role", role)
        made[person] = cli(server, "user", "token", person)["token"]
    return made


def definition(workdir: Path, text: str = "hello", **extra: Any) -> dict[str, Any]:
    return {
        "title": f"Say {text}",
        "message": {"text": text, "origin": {"kind": "automation"}},
        "session": {"provider": "fake", "workingDirectories": [workdir.as_uri()]},
        "enabled": True,
        "triggers": [],
        **extra,
    }


async def watching(server: ServerProcess, connect, token: str | None = None) -> Client:
    client = await (connect(server.url, token=token) if token else connect(server.url))
    await client.initialize(subscriptions=["ahp-root://", CATALOGUE])
    return client


async def created(client: Client, workdir: Path, text: str = "hello", **extra: Any) -> str:
    uri = f"ahp-automation:/{uuid.uuid4()}"
    action = {
        "type": "automation/createRequested",
        "resource": uri,
        "definition": definition(workdir, text, **extra),
    }
    answer = await client.dispatch_and_wait(CATALOGUE, action)
    assert "rejectionReason" not in answer, answer
    return uri


def entry(client: Client, uri: str) -> dict[str, Any]:
    entries = client.tracked[CATALOGUE][0]["entries"]
    return next(e for e in entries if e["resource"] == uri)


async def run_ended(client: Client, run: str, timeout: float = 30) -> dict[str, Any]:
    await client.request("subscribe", {"channel": run})

    def over() -> Any:
        state = client.tracked.get(run, [None])[0]
        status = state and state["lifecycle"]["status"]
        return state if status in ("completed", "failed", "cancelled") else None

    return await client.wait_for(over, timeout)


async def test_initialize_advertises_the_automations_a_host_keeps(server, connect):
    client = await connect(server.url)
    result = await client.initialize()
    assert result["automations"] == {
        "create": {},
        "schedules": {},
        "runCancellation": {},
        "runHistoryLimit": 20,
    }


async def test_the_catalog_spelling_is_answered_under_the_spelling_asked(server, connect):
    client = await connect(server.url)
    await client.initialize()
    answer = await client.request("subscribe", {"channel": "ahp-automations://catalog"})
    assert answer["snapshot"]["resource"] == "ahp-automations://catalog"
    assert "entries" in answer["snapshot"]["state"]


async def test_a_create_is_said_as_held_then_answered_by_itself(server, connect, workdir):
    client = await watching(server, connect)
    uri = await created(client, workdir)
    said = [e["action"]["type"] for e in client.actions if e["action"].get("resource") == uri]
    sets = [e for e in client.actions if e["action"].get("automation", {}).get("resource") == uri]
    assert said == ["automation/createRequested"] and len(sets) == 1
    held = entry(client, uri)
    assert held["definition"]["title"] == "Say hello"
    assert held["runs"] == [] and held["operations"] == ["update", "remove", "run"]
    assert held["_meta"]["ahpd.owner"].startswith("root:")
    await client.assert_conforms(CATALOGUE)


async def test_a_create_again_with_another_definition_is_refused(server, connect, workdir):
    client = await watching(server, connect)
    uri = await created(client, workdir)
    again = {
        "type": "automation/createRequested",
        "resource": uri,
        "definition": definition(workdir, "other"),
    }
    answer = await client.dispatch_and_wait(CATALOGUE, again)
    assert answer["rejectionReason"] == f"Automation already exists: {uri}"
    same = {**again, "definition": definition(workdir)}
    assert "rejectionReason" not in await client.dispatch_and_wait(CATALOGUE, same)
    await client.assert_conforms(CATALOGUE)


@pytest.mark.parametrize(
    ("conditions", "words"),
    [
        ([{"kind": "afterRuns", "max": 1}, {"kind": "afterRuns", "max": 2}], "more than once"),
        ([{"kind": "afterCoffee"}], "is not a condition kind"),
        ([{"kind": "afterRuns", "max": 0}], "whole number of one or more"),
        ([{"kind": "afterRuns", "max": 1.5}], "whole number of one or more"),
        ([{"kind": "afterDate", "date": "tomorrow"}], "not an ISO 8601 timestamp"),
    ],
)
async def test_bad_disable_conditions_are_refused_naming_the_reason(
    server, connect, workdir, conditions, words
):
    client = await watching(server, connect)
    uri = f"ahp-automation:/{uuid.uuid4()}"
    action = {
        "type": "automation/createRequested",
        "resource": uri,
        "definition": definition(workdir, disableConditions=conditions),
    }
    answer = await client.dispatch_and_wait(CATALOGUE, action)
    assert words in answer["rejectionReason"]
    assert all(e["resource"] != uri for e in client.tracked[CATALOGUE][0]["entries"])
    assert not client.closed


async def test_a_bad_schedule_is_refused_and_the_connection_stays(server, connect, workdir):
    client = await watching(server, connect)
    trigger = {
        "id": "t",
        "kind": "schedule",
        "schedule": {"expression": "@daily", "timeZone": "UTC"},
    }
    action = {
        "type": "automation/createRequested",
        "resource": f"ahp-automation:/{uuid.uuid4()}",
        "definition": definition(workdir, triggers=[trigger]),
    }
    answer = await client.dispatch_and_wait(CATALOGUE, action)
    assert "exactly five fields" in answer["rejectionReason"]
    await client.settle()


async def test_an_update_is_a_patch_and_one_of_nothing_is_refused(server, connect, workdir):
    client = await watching(server, connect)
    uri = await created(client, workdir)
    patch = {"type": "automation/updateRequested", "resource": uri, "changes": {"title": "New"}}
    assert "rejectionReason" not in await client.dispatch_and_wait(CATALOGUE, patch)
    held = entry(client, uri)["definition"]
    assert held["title"] == "New" and held["message"]["text"] == "hello"
    missing = {**patch, "resource": "ahp-automation:/nobody"}
    answer = await client.dispatch_and_wait(CATALOGUE, missing)
    assert answer["rejectionReason"] == "Automation not found: ahp-automation:/nobody"
    await client.assert_conforms(CATALOGUE)


async def test_a_manual_run_makes_a_session_as_the_owner_and_completes(server, connect, workdir):
    client = await watching(server, connect)
    uri = await created(client, workdir, "ping")
    params = {"channel": CATALOGUE, "automation": uri, "requestId": "press-1"}
    run = (await client.request("runAutomation", params))["resource"]
    state = await run_ended(client, run)
    assert state["lifecycle"]["status"] == "completed", state
    assert state["origin"] == {"kind": "manual"}
    assert state["lifecycle"]["startedAt"] and state["lifecycle"]["completedAt"]
    session = state["primarySession"]
    assert state["sessions"] == [session]
    snapshot = (await client.request("subscribe", {"channel": session}))["snapshot"]["state"]
    origin = {"kind": "automation", "automation": uri, "run": run}
    assert snapshot["origin"] == origin
    listed = await client.request("listSessions", {"channel": "ahp-root://"})
    assert next(r for r in listed["items"] if r["resource"] == session)["origin"] == origin
    chat = snapshot["defaultChat"]
    turns = (await client.request("subscribe", {"channel": chat}))["snapshot"]["state"]["turns"]
    assert turns[0]["message"]["text"] == "ping"
    assert turns[0]["message"]["origin"] == {"kind": "automation"}
    assert turns[0]["state"] == "complete"
    # Asked again with the same request: the same run, no other.
    assert (await client.request("runAutomation", params))["resource"] == run
    await client.settle()
    assert [r["resource"] for r in entry(client, uri)["runs"]] == [run]
    assert entry(client, uri)["runs"][0]["lifecycle"]["status"] == "completed"
    await client.assert_conforms(CATALOGUE)
    await client.assert_conforms(run)


async def test_a_run_of_an_automation_nobody_keeps_is_not_found_in_its_words(server, connect):
    client = await watching(server, connect)
    params = {"channel": CATALOGUE, "automation": "ahp-automation:/gone", "requestId": "x"}
    with pytest.raises(RpcError) as refused:
        await client.request("runAutomation", params)
    # The protocol's NotFound, not the reference's -32603 (issue 23): a client can tell it
    # from this host failing.
    assert refused.value.code == -32008
    assert refused.value.message == "Automation not found: ahp-automation:/gone"


async def test_a_run_whose_turn_errors_fails_with_the_error(server, connect, workdir):
    client = await watching(server, connect)
    uri = await created(client, workdir, "crash")
    params = {"channel": CATALOGUE, "automation": uri, "requestId": str(uuid.uuid4())}
    run = (await client.request("runAutomation", params))["resource"]
    state = await run_ended(client, run)
    assert state["lifecycle"]["status"] == "failed"
    assert state["lifecycle"]["error"]["message"]
    await client.assert_conforms(run)


async def test_a_cancel_stops_the_run_and_a_second_is_refused(server, connect, workdir):
    client = await watching(server, connect)
    uri = await created(client, workdir, "slow")
    params = {"channel": CATALOGUE, "automation": uri, "requestId": str(uuid.uuid4())}
    run = (await client.request("runAutomation", params))["resource"]
    await client.request("subscribe", {"channel": run})
    await client.wait_for(
        lambda: client.tracked[run][0]["lifecycle"]["status"] == "running", timeout=30
    )
    answer = await client.dispatch_and_wait(run, {"type": "automationRun/cancelRequested"})
    assert "rejectionReason" not in answer
    state = await run_ended(client, run)
    assert state["lifecycle"]["status"] == "cancelled"
    again = await client.dispatch_and_wait(run, {"type": "automationRun/cancelRequested"})
    assert again["rejectionReason"] == f"Automation run is already terminal: {run}"
    nobody = "ahp-automation-run:/nobody"
    unknown = await client.dispatch_and_wait(nobody, {"type": "automationRun/cancelRequested"})
    assert unknown["rejectionReason"] == f"Automation run not found: {nobody}"
    await client.assert_conforms(run)


async def test_fetching_runs_past_the_last_page_is_answered_at_once(server, connect, workdir):
    client = await watching(server, connect)
    uri = await created(client, workdir)
    params = {"channel": CATALOGUE, "automation": uri}
    assert await client.request("fetchAutomationRuns", params) == {}
    with pytest.raises(RpcError) as refused:
        await client.request("fetchAutomationRuns", {**params, "automation": "ahp-automation:/x"})
    assert refused.value.message == "Automation not found: ahp-automation:/x"
    listed = await client.request("listAutomationTriggerDefinitions", {"channel": "ahp-root://"})
    assert listed == {"items": []}


def backdate(server: ServerProcess, uri: str, seconds: int) -> None:
    """Move an automation's schedule cursors back, as if the scheduler had last looked then."""
    script = (
        "from datetime import UTC, datetime, timedelta\n"
        "from automations.models import Automation\n"
        f"row = Automation.objects.get(uri={uri!r})\n"
        f"at = (datetime.now(UTC) - timedelta(seconds={seconds})).isoformat()\n"
        "row.cursors = {key: at for key in row.cursors}\n"
        "row.save()\n"
    )
    server.shell(script)


async def test_a_scheduled_run_fires_once_for_its_due_time(server, connect, workdir):
    client = await watching(server, connect)
    every_minute = {
        "id": "each-minute",
        "kind": "schedule",
        "schedule": {"expression": "* * * * *", "timeZone": "Europe/Berlin"},
    }
    uri = await created(
        client,
        workdir,
        "tick",
        triggers=[every_minute],
        disableConditions=[{"kind": "afterRuns", "max": 1}],
    )
    entry_at_creation = dict(entry(client, uri))
    assert entry(client, uri)["runCount"] == 0 and entry(client, uri)["nextRunAt"]
    # Due at the next minute boundary: the server's own scheduler claims it.
    await client.wait_for(lambda: entry(client, uri)["runs"], timeout=90)
    run = entry(client, uri)["runs"][0]
    origin = run["origin"]
    assert origin["kind"] == "trigger" and origin["triggerId"] == "each-minute"
    assert origin["scheduledFor"] == entry_at_creation["nextRunAt"] and "catchUp" not in origin
    state = await run_ended(client, run["resource"])
    assert state["lifecycle"]["status"] == "completed"
    # Started within 5 s of its due time, as the server recorded both.
    started = datetime.fromisoformat(state["lifecycle"]["startedAt"])
    late = (started - datetime.fromisoformat(origin["scheduledFor"])).total_seconds()
    assert 0 <= late <= 5, (origin, state["lifecycle"])
    assert state["_meta"]["ahpd.owner"].startswith("root:")
    # afterRuns: 1 admitted, the automation switched itself off and says so.
    await client.wait_for(lambda: entry(client, uri)["definition"]["enabled"] is False)
    assert entry(client, uri)["runCount"] == 1
    await client.assert_conforms(CATALOGUE)


async def test_someone_without_the_grant_or_the_automation_is_refused(
    server, connect, workdir, tokens
):
    ana = await watching(server, connect, tokens["ana"])
    uri = await created(ana, workdir)
    gus = await watching(server, connect, tokens["gus"])
    action = {
        "type": "automation/createRequested",
        "resource": f"ahp-automation:/{uuid.uuid4()}",
        "definition": definition(workdir),
    }
    answer = await gus.dispatch_and_wait(CATALOGUE, action)
    assert answer["rejectionReason"] == "user:gus may not automation:create here"
    max_ = await connect(server.url, token=tokens["max"])
    await max_.initialize()
    with pytest.raises(RpcError) as refused:
        await max_.request("subscribe", {"channel": CATALOGUE})
    assert refused.value.code == -32009
    with pytest.raises(RpcError) as refused:
        params = {"channel": CATALOGUE, "automation": uri, "requestId": "max"}
        await max_.request("runAutomation", params)
    assert refused.value.code == -32009
    remove = {"type": "automation/removed", "resource": uri}
    answer = await gus.dispatch_and_wait(CATALOGUE, remove)
    assert answer["rejectionReason"] == "user:gus may not automation:remove here"
    await gus.settle()
    assert any(e["resource"] == uri for e in gus.tracked[CATALOGUE][0]["entries"])


async def test_removing_twice_is_the_idempotent_no_op(server, connect, workdir):
    client = await watching(server, connect)
    uri = await created(client, workdir)
    remove = {"type": "automation/removed", "resource": uri}
    assert "rejectionReason" not in await client.dispatch_and_wait(CATALOGUE, remove)
    assert "rejectionReason" not in await client.dispatch_and_wait(CATALOGUE, remove)
    assert all(e["resource"] != uri for e in client.tracked[CATALOGUE][0]["entries"])
    await client.assert_conforms(CATALOGUE)


async def test_a_disposed_session_is_unlinked_from_its_run(server, connect, workdir):
    client = await watching(server, connect)
    uri = await created(client, workdir, "ping")
    params = {"channel": CATALOGUE, "automation": uri, "requestId": str(uuid.uuid4())}
    run = (await client.request("runAutomation", params))["resource"]
    state = await run_ended(client, run)
    session = state["primarySession"]
    await client.request("disposeSession", {"channel": session})
    await client.wait_for(lambda: client.tracked[run][0]["sessions"] == [])
    assert "primarySession" not in client.tracked[run][0]
    said = [e["action"]["type"] for e in client.actions if e["channel"] == run]
    assert said[-2:] == ["automationRun/sessionRemoved", "automationRun/primarySessionChanged"]
    await client.assert_conforms(run)
    await client.assert_conforms(CATALOGUE)


async def test_switching_back_on_starts_a_fresh_allowance(server, connect, workdir):
    client = await watching(server, connect)
    trigger = {
        "id": "t",
        "kind": "schedule",
        "schedule": {"expression": "0 9 * * *", "timeZone": "Asia/Tokyo"},
    }
    uri = await created(
        client,
        workdir,
        enabled=False,
        triggers=[trigger],
        disableConditions=[{"kind": "afterRuns", "max": 2}],
    )
    assert "nextRunAt" not in entry(client, uri)
    on = {"type": "automation/updateRequested", "resource": uri, "changes": {"enabled": True}}
    assert "rejectionReason" not in await client.dispatch_and_wait(CATALOGUE, on)
    assert entry(client, uri)["runCount"] == 0
    assert entry(client, uri)["nextRunAt"].endswith(":00:00Z")
    bad = {**on, "changes": {"disableConditions": [{"kind": "afterDate", "date": 3}]}}
    answer = await client.dispatch_and_wait(CATALOGUE, bad)
    assert "afterDate.date is not an ISO 8601 timestamp" in answer["rejectionReason"]
    assert entry(client, uri)["definition"]["disableConditions"] == [
        {"kind": "afterRuns", "max": 2}
    ]
    await client.assert_conforms(CATALOGUE)
