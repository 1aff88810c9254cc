"""What each person is offered in the catalogue, and the refusals the reference host words:
an entry's operations as the watcher's grants allow (live, in snapshots and in a replay), an
operation not offered, a request id used twice, a press while a run is unfinished, a cancel
nothing accepts, customizations, the `ahp-automations://catalog` spelling, and the runs that
fail to start, switch off or catch up. Every frame is schema-checked by the Client."""

from __future__ import annotations

import json
import tempfile
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.automations.test_socket import (
    CATALOGUE,
    backdate,
    created,
    definition,
    entry,
    run_ended,
    watching,
)
from tests.support.agents import server_with_acp_agent
from tests.support.client import Client, RpcError
from tests.support.server import TOKEN, ServerProcess

ALL = ["update", "remove", "run"]

PEOPLE = """
import json
from django.contrib.auth import get_user_model
from hosts.models import Membership, Role
from hosts.store import ensure_builtin_roles, mint_token
ensure_builtin_roles()
Role.objects.create(name="automator", grants=["automation:*", "session:*", "chat:*"])
tokens = {}
people = (("ana", "admin"), ("gus", "guest"), ("olga", "automator"), ("otto", "automator"))
for person, role in people:
    user = get_user_model().objects.create_user(username=person)
    Membership.objects.create(user=user, role=Role.objects.get(name=role), primary=True)
    tokens[person] = mint_token(person, "tests").secret
print(json.dumps(tokens))
"""


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ahpd-auto-ops-") as path:
        yield Path(path)


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    with server_with_acp_agent(AHPD_AUTOMATION_SCHEDULER="embedded") as process:
        yield process


@pytest.fixture(scope="module")
def tokens(server: ServerProcess) -> dict[str, str]:
    return {**server.shell_json(PEOPLE), "root": TOKEN}


async def press(client: Client, automation: str, request_id: str | None = None) -> str:
    request_id = request_id or str(uuid.uuid4())
    params = {"channel": CATALOGUE, "automation": automation, "requestId": request_id}
    return str((await client.request("runAutomation", params))["resource"])


async def test_each_watcher_is_shown_the_operations_their_grants_allow(
    server, connect, workdir, tokens
):
    ana = await watching(server, connect, tokens["ana"])
    uri = await created(ana, workdir)
    gus = await watching(server, connect, tokens["gus"])
    otto = await watching(server, connect, tokens["otto"])
    root = await watching(server, connect)
    # Snapshots: the admin and root may do all of it, a guest nothing, an automator nothing
    # to someone else's automation (that takes others:work).
    assert entry(ana, uri)["operations"] == ALL
    assert entry(root, uri)["operations"] == ALL
    assert entry(gus, uri)["operations"] == []
    assert entry(otto, uri)["operations"] == []
    his = await created(otto, workdir, "mine")
    assert entry(otto, his)["operations"] == ALL
    await gus.wait_for(
        lambda: any(e["resource"] == his for e in gus.tracked[CATALOGUE][0]["entries"])
    )
    assert entry(gus, his)["operations"] == []
    # An automation/set says each of them what it says the others, but their own operations.
    rename = {"type": "automation/updateRequested", "resource": uri, "changes": {"title": "Hi"}}
    assert "rejectionReason" not in await ana.dispatch_and_wait(CATALOGUE, rename)
    for client, offered in ((ana, ALL), (gus, []), (otto, []), (root, ALL)):
        said = await client.wait_action(
            lambda e: (
                e["action"]["type"] == "automation/set"
                and e["action"]["automation"]["resource"] == uri
                and e["action"]["automation"]["definition"]["title"] == "Hi"
            )
        )
        assert said["action"]["automation"]["operations"] == offered
        await client.assert_conforms(CATALOGUE)


async def test_a_replay_tells_the_operations_as_the_principal_sees_them(
    server, connect, workdir, tokens
):
    ana = await watching(server, connect, tokens["ana"])
    uri = await created(ana, workdir)
    gus = await connect(server.url, token=tokens["gus"], client_id=f"gus-{uuid.uuid4().hex[:6]}")
    await gus.initialize(subscriptions=["ahp-root://", CATALOGUE])
    await gus.settle()
    last_seen = gus.last_seq
    await gus.close()
    rename = {"type": "automation/updateRequested", "resource": uri, "changes": {"title": "Re"}}
    set_while_away = await ana.dispatch_and_wait(CATALOGUE, rename)
    again = await connect(server.url, token=tokens["gus"], client_id=gus.client_id)
    result = await again.request(
        "reconnect",
        {
            "channel": "ahp-root://",
            "clientId": gus.client_id,
            "lastSeenServerSeq": last_seen,
            "subscriptions": [CATALOGUE],
        },
    )
    assert result["type"] == "replay"
    sets = [
        e["action"]["automation"]
        for e in result["actions"]
        if e["action"]["type"] == "automation/set"
        and e["action"]["automation"]["resource"] == uri
        and e["serverSeq"] < set_while_away["serverSeq"]
    ]
    assert sets and all(s["operations"] == [] for s in sets)
    assert sets[-1]["definition"]["title"] == "Re"


async def test_an_operation_the_entry_does_not_offer_is_refused_in_the_references_words(
    server, connect, workdir, tokens
):
    olga = await watching(server, connect, tokens["olga"])
    uri = await created(olga, workdir)
    otto = await watching(server, connect, tokens["otto"])
    update = {"type": "automation/updateRequested", "resource": uri, "changes": {"title": "x"}}
    answer = await otto.dispatch_and_wait(CATALOGUE, update)
    assert answer["rejectionReason"] == f"Automation operation 'update' is not available: {uri}"
    remove = {"type": "automation/removed", "resource": uri}
    answer = await otto.dispatch_and_wait(CATALOGUE, remove)
    assert answer["rejectionReason"] == f"Automation operation 'remove' is not available: {uri}"
    with pytest.raises(RpcError) as refused:
        await press(otto, uri)
    assert refused.value.code == -32009
    assert refused.value.message == f"Automation operation 'run' is not available: {uri}"
    # Olga's own request asked again by Otto is refused too, not answered with her run.
    mine = await press(olga, uri, "olgas-request")
    with pytest.raises(RpcError) as refused:
        await press(otto, uri, "olgas-request")
    assert refused.value.message == f"Automation operation 'run' is not available: {uri}"
    await run_ended(olga, mine)
    await olga.settle()
    held = entry(olga, uri)
    assert held["definition"]["title"] == "Say hello"
    assert [r["resource"] for r in held["runs"]] == [mine]
    # A guest lacks the grants outright: the gate says so, as it does for every action.
    gus = await watching(server, connect, tokens["gus"])
    answer = await gus.dispatch_and_wait(CATALOGUE, update)
    assert answer["rejectionReason"] == "user:gus may not automation:update here"


async def test_a_request_id_used_for_another_automation_is_refused(server, connect, workdir):
    client = await watching(server, connect)
    first, second = await created(client, workdir, "one"), await created(client, workdir, "two")
    run = await press(client, first, "shared-request")
    with pytest.raises(RpcError) as refused:
        await press(client, second, "shared-request")
    assert refused.value.code == -32010
    assert refused.value.message == (
        "Automation run requestId is already used for another automation: shared-request"
    )
    assert await press(client, first, "shared-request") == run
    await run_ended(client, run)
    await client.settle()
    assert entry(client, second)["runs"] == []


async def test_a_second_press_while_a_run_is_unfinished_is_answered_with_that_run(
    server, connect, workdir
):
    client = await watching(server, connect)
    uri = await created(client, workdir, "slow")
    run = await press(client, uri)
    assert await press(client, uri) == run
    await client.request("subscribe", {"channel": run})
    await client.wait_for(lambda: client.tracked[run][0]["lifecycle"]["status"] == "running", 30)
    assert await press(client, uri) == run
    await client.dispatch_and_wait(run, {"type": "automationRun/cancelRequested"})
    assert (await run_ended(client, run))["lifecycle"]["status"] == "cancelled"
    assert [r["resource"] for r in entry(client, uri)["runs"]] == [run]
    # Over, a press makes a new run.
    assert await press(client, uri) != run


async def test_a_cancel_no_session_accepts_is_refused_and_the_first_still_ends_it(
    server, connect, workdir
):
    client = await watching(server, connect)
    uri = await created(client, workdir, "hang")
    run = await press(client, uri)
    await client.request("subscribe", {"channel": run})
    await client.wait_for(lambda: client.tracked[run][0]["lifecycle"]["status"] == "running", 30)
    # Running once its turn has begun; the agent is asked once it is open: wait for its word.
    session = client.tracked[run][0]["primarySession"]
    chat = (await client.request("subscribe", {"channel": session}))["snapshot"]["state"]
    chat = chat["defaultChat"]
    await client.request("subscribe", {"channel": chat})
    await client.wait_for(lambda: "hanging" in json.dumps(client.tracked[chat][0]), 30)
    cancel = {"type": "automationRun/cancelRequested"}
    assert "rejectionReason" not in await client.dispatch_and_wait(run, cancel)
    # The agent ignores a cancel, so the run is unfinished while its turn is stopped already:
    # a second cancel has no turn to stop.
    again = await client.dispatch_and_wait(run, cancel)
    assert again["rejectionReason"] == f"Automation run cancellation was not accepted: {run}"
    state = await run_ended(client, run)
    assert state["lifecycle"]["status"] == "cancelled"
    await client.assert_conforms(run)


@pytest.mark.parametrize(
    ("plugins", "words"),
    [
        (
            [{"id": "p", "uri": "file:///a"}, {"id": "p", "uri": "file:///b"}],
            "Automation customization ids must be non-empty and unique.",
        ),
        (
            [{"id": "", "uri": "file:///a"}],
            "Automation customization ids must be non-empty and unique.",
        ),
        ([{"uri": "file:///a"}], "Automation customization ids must be non-empty and unique."),
        ([{"id": "p"}], "session.customizations: p names no uri"),
        ("plugins", "session.customizations must be a list of plugin objects"),
        (
            [{"id": "p", "uri": "file:///a"}],
            "session.customizations: this host does not capture client plugins for automations",
        ),
    ],
)
async def test_customizations_are_refused_before_the_store_is_asked(
    server, connect, workdir, plugins, words
):
    client = await watching(server, connect)
    uri = f"ahp-automation:/{uuid.uuid4()}"
    made = definition(workdir)
    made["session"]["customizations"] = plugins
    action = {"type": "automation/createRequested", "resource": uri, "definition": made}
    answer = await client.dispatch_and_wait(CATALOGUE, action)
    assert answer["rejectionReason"] == words
    assert all(e["resource"] != uri for e in client.tracked[CATALOGUE][0]["entries"])
    # An empty list is a template with no plugins.
    made["session"]["customizations"] = []
    assert "rejectionReason" not in await client.dispatch_and_wait(CATALOGUE, action)


async def test_the_catalog_spelling_is_taken_by_the_commands_and_dispatch(server, connect, workdir):
    spelt = "ahp-automations://catalog"
    client = await watching(server, connect)
    uri = f"ahp-automation:/{uuid.uuid4()}"
    action = {
        "type": "automation/createRequested",
        "resource": uri,
        "definition": definition(workdir),
    }
    echo = await client.dispatch_and_wait(spelt, action)
    # Taken, and said under the protocol's name.
    assert "rejectionReason" not in echo and echo["channel"] == CATALOGUE
    assert entry(client, uri)["definition"]["title"] == "Say hello"
    params = {"channel": spelt, "automation": uri, "requestId": str(uuid.uuid4())}
    run = (await client.request("runAutomation", params))["resource"]
    assert (await run_ended(client, run))["lifecycle"]["status"] == "completed"
    assert await client.request("fetchAutomationRuns", {"channel": spelt, "automation": uri}) == {}
    with pytest.raises(RpcError) as refused:
        await client.request(
            "fetchAutomationRuns", {"channel": spelt, "automation": "ahp-automation:/x"}
        )
    assert refused.value.message == "Automation not found: ahp-automation:/x"
    await client.assert_conforms(CATALOGUE)


async def test_a_run_whose_session_cannot_start_fails_as_session_creation_failed(
    server, connect, workdir
):
    client = await watching(server, connect)
    made = definition(workdir)
    made["session"]["provider"] = "nobody"
    uri = f"ahp-automation:/{uuid.uuid4()}"
    action = {"type": "automation/createRequested", "resource": uri, "definition": made}
    assert "rejectionReason" not in await client.dispatch_and_wait(CATALOGUE, action)
    run = await press(client, uri)
    state = await run_ended(client, run)
    assert state["lifecycle"]["status"] == "failed"
    assert state["lifecycle"]["error"]["errorType"] == "sessionCreationFailed"
    assert "nobody" in state["lifecycle"]["error"]["message"]
    assert state["sessions"] == [] and "startedAt" not in state["lifecycle"]
    await client.assert_conforms(run)


async def test_an_after_date_passed_switches_the_automation_off_and_says_so(
    server, connect, workdir
):
    client = await watching(server, connect)
    past = (datetime.now().astimezone() - timedelta(seconds=1)).isoformat()
    uri = await created(client, workdir, disableConditions=[{"kind": "afterDate", "date": past}])
    assert entry(client, uri)["definition"]["enabled"] is True
    said = await client.wait_action(
        lambda e: (
            e["action"]["type"] == "automation/set"
            and e["action"]["automation"]["resource"] == uri
            and e["action"]["automation"]["definition"]["enabled"] is False
        ),
        timeout=30,
    )
    # Switched off, not removed: the conditions stay, and it still runs by hand.
    held = said["action"]["automation"]
    assert held["definition"]["disableConditions"] == [{"kind": "afterDate", "date": past}]
    assert "run" in held["operations"] and "nextRunAt" not in held
    await client.assert_conforms(CATALOGUE)


async def test_a_catch_up_run_is_marked_and_acts_as_its_owner(server, connect, workdir, tokens):
    ana = await watching(server, connect, tokens["ana"])
    # Hourly, at a minute that was between 150 and 210 s ago: past the 60 s grace, and none
    # due since.
    minute = (datetime.now(UTC) - timedelta(seconds=150)).minute
    hourly: dict[str, Any] = {
        "id": "hourly",
        "kind": "schedule",
        "schedule": {"expression": f"{minute} * * * *", "timeZone": "UTC"},
    }
    uri = await created(ana, workdir, "late", triggers=[hourly])
    # The scheduler last looked five minutes ago, so that occurrence was missed.
    backdate(server, uri, 300)
    await ana.wait_for(lambda: entry(ana, uri)["runs"], timeout=30)
    run = entry(ana, uri)["runs"][0]["resource"]
    state = await run_ended(ana, run)
    assert state["origin"]["kind"] == "trigger" and state["origin"]["catchUp"] is True
    assert state["origin"]["triggerId"] == "hourly"
    assert state["_meta"] == {"ahpd.owner": "user:ana"}
    assert state["lifecycle"]["status"] == "completed"
    session = (await ana.request("subscribe", {"channel": state["primarySession"]}))["snapshot"]
    assert session["state"]["origin"] == {"kind": "automation", "automation": uri, "run": run}
    listed = await ana.request("listSessions", {"channel": "ahp-root://"})
    mine = next(r for r in listed["items"] if r["resource"] == state["primarySession"])
    assert mine["_meta"]["ahpd.owner"] == "user:ana"
    off = {"type": "automation/updateRequested", "resource": uri, "changes": {"enabled": False}}
    assert "rejectionReason" not in await ana.dispatch_and_wait(CATALOGUE, off)
    await ana.assert_conforms(run)
