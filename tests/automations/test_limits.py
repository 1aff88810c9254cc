"""No one person's automations crowd out the others' (issue 23): the schedules one automation
carries, the automations one person keeps and the runs one person's automations start in an
hour are bounded, and the size of what a definition holds; each refused on every way in (the
socket, REST, the admin, the scheduler) naming its bound, with nothing kept. Driven against a
started server with small bounds."""

from __future__ import annotations

import json
import tempfile
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.automations.test_operations import press
from tests.automations.test_socket import (
    CATALOGUE,
    backdate,
    created,
    definition,
    entry,
    run_ended,
    watching,
)
from tests.e2e.test_static_pages import http, signed_in
from tests.support.agents import server_with_acp_agent
from tests.support.client import RpcError
from tests.support.rest import call
from tests.support.server import TOKEN, ServerProcess

PEOPLE = """
import json
from django.contrib.auth import get_user_model
from hosts.models import Membership, Role
from hosts.store import ensure_builtin_roles, mint_token, sync_admin_site
ensure_builtin_roles()
Role.objects.create(name="automator", grants=["automation:*", "session:*", "chat:*"])
tokens = {}
people = (("ana", "admin"), ("pat", "automator"), ("sam", "automator"))
for person, role in people:
    user = get_user_model().objects.create_user(username=person, password=f"pw-{person}-1")
    Membership.objects.create(user=user, role=Role.objects.get(name=role), primary=True)
    sync_admin_site(user)
    tokens[person] = mint_token(person, "tests").secret
print(json.dumps(tokens))
"""

EVERY_MINUTE = {"expression": "* * * * *", "timeZone": "UTC"}


def schedules(count: int) -> list[dict[str, Any]]:
    return [{"id": f"t{i}", "kind": "schedule", "schedule": EVERY_MINUTE} for i in range(count)]


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ahpd-auto-limits-") as path:
        yield Path(path)


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    with server_with_acp_agent(
        AHPD_AUTOMATION_SCHEDULER="embedded",
        AHPD_AUTOMATION_TRIGGERS_MAX="3",
        AHPD_AUTOMATIONS_PER_PERSON="2",
        AHPD_AUTOMATION_RUNS_PER_HOUR="2",
    ) as process:
        yield process


@pytest.fixture(scope="module")
def tokens(server: ServerProcess) -> dict[str, str]:
    return {**server.shell_json(PEOPLE), "root": TOKEN}


def kept(server: ServerProcess) -> list[str]:
    return server.shell_json(
        "import json\nfrom automations.models import Automation\n"
        "print(json.dumps(sorted(Automation.objects.values_list('uri', flat=True))))"
    )


TRIGGERS_WORDS = "triggers: 4 triggers, more than one automation may carry "
TRIGGERS_WORDS += "(AHPD_AUTOMATION_TRIGGERS_MAX=3)"


async def test_more_triggers_than_one_automation_may_carry_are_refused_on_every_way_in(
    server, connect, workdir, tokens
):
    client = await watching(server, connect)
    uri = f"ahp-automation:/{uuid.uuid4()}"
    too_many = definition(workdir, triggers=schedules(4))
    create = {"type": "automation/createRequested", "resource": uri, "definition": too_many}
    answer = await client.dispatch_and_wait(CATALOGUE, create)
    assert answer["rejectionReason"] == TRIGGERS_WORDS
    status, body = call(server, "POST", "automations/", body={"definition": too_many})
    assert (status, body) == (400, {"detail": TRIGGERS_WORDS})
    # The admin, as a person signed in through its own pages, is told on the page.
    browser, csrf = signed_in(server, "ana")
    add = http(server) + "/admin/automations/automation/add/"
    form = urllib.parse.urlencode(
        {"csrfmiddlewaretoken": csrf, "uri": "", "definition": json.dumps(too_many)}
    ).encode()
    with browser.open(urllib.request.Request(add, data=form, headers={"Referer": add})) as page:
        assert f"Not kept: {TRIGGERS_WORDS}" in page.read().decode()
    assert kept(server) == []
    # A patch that would carry more is refused too, and the automation stays as it was.
    mine = await created(client, workdir, triggers=schedules(3))
    update = {
        "type": "automation/updateRequested",
        "resource": mine,
        "changes": {"triggers": schedules(4)},
    }
    assert (await client.dispatch_and_wait(CATALOGUE, update))["rejectionReason"] == TRIGGERS_WORDS
    patch = {"triggers": schedules(4)}
    status, body = call(server, "PATCH", f"automations/{mine.split('/', 1)[1]}/", body=patch)
    assert (status, body) == (400, {"detail": TRIGGERS_WORDS})
    await client.settle()
    assert len(entry(client, mine)["definition"]["triggers"]) == 3
    remove = {"type": "automation/removed", "resource": mine}
    assert "rejectionReason" not in await client.dispatch_and_wait(CATALOGUE, remove)


async def test_a_person_keeps_no_more_automations_than_the_bound(server, connect, workdir, tokens):
    pat = await watching(server, connect, tokens["pat"])
    first = await created(pat, workdir)
    await created(pat, workdir)
    words = (
        "user:pat already keeps 2 automations, the most one person may "
        "(AHPD_AUTOMATIONS_PER_PERSON=2): remove one first"
    )
    third = {
        "type": "automation/createRequested",
        "resource": f"ahp-automation:/{uuid.uuid4()}",
        "definition": definition(workdir),
    }
    assert (await pat.dispatch_and_wait(CATALOGUE, third))["rejectionReason"] == words
    body = {"definition": definition(workdir)}
    assert call(server, "POST", "automations/", tokens["pat"], body) == (403, {"detail": words})
    await pat.settle()
    entries = pat.tracked[CATALOGUE][0]["entries"]
    assert [e["_meta"]["ahpd.owner"] for e in entries].count("user:pat") == 2
    # Root is no person: the deployment's token keeps what the operator makes.
    status, _ = call(server, "POST", "automations/", body=body)
    assert status == 201
    # One removed makes room again.
    remove = {"type": "automation/removed", "resource": first}
    assert "rejectionReason" not in await pat.dispatch_and_wait(CATALOGUE, remove)
    assert "rejectionReason" not in await pat.dispatch_and_wait(CATALOGUE, third)


async def test_runs_past_the_hourly_window_fail_on_schedule_and_are_refused_by_hand(
    server, connect, workdir, tokens
):
    sam = await watching(server, connect, tokens["sam"])
    uri = await created(sam, workdir, "tick", triggers=schedules(3))
    # Each schedule is a minute late now: the scheduler catches each up at once, three runs
    # claimed together, two of which the window has room for.
    backdate(server, uri, 120)
    await sam.wait_for(lambda: len(entry(sam, uri)["runs"]) >= 3, timeout=60)
    runs = [await run_ended(sam, r["resource"]) for r in entry(sam, uri)["runs"]]
    refused = [r for r in runs if (r["lifecycle"].get("error") or {}).get("errorType")]
    refused = [r for r in refused if r["lifecycle"]["error"]["errorType"] == "runLimitReached"]
    started = [r for r in runs if r not in refused]
    assert len(started) == 2 and all(r["sessions"] for r in started), runs
    words = (
        "user:sam's automations started 2 runs in the last hour, the most one person's may "
        "start in an hour (AHPD_AUTOMATION_RUNS_PER_HOUR=2)"
    )
    for run in refused:
        assert run["lifecycle"]["status"] == "failed" and run["sessions"] == []
        assert run["lifecycle"]["error"] == {"errorType": "runLimitReached", "message": words}
    # By hand, on the socket and over REST: refused before any run is kept.
    with pytest.raises(RpcError) as refusal:
        await press(sam, uri)
    assert (refusal.value.code, refusal.value.message) == (-32009, words)
    path = f"automations/{uri.split('/', 1)[1]}/run/"
    assert call(server, "POST", path, tokens["sam"], {}) == (403, {"detail": words})
    await sam.settle()
    assert all(r["origin"]["kind"] == "trigger" for r in entry(sam, uri)["runs"])
    await sam.assert_conforms(CATALOGUE)
    # The window is the owner's, whoever presses: root pressing sam's automation is refused.
    root = await watching(server, connect)
    with pytest.raises(RpcError) as refusal:
        await press(root, uri)
    assert (refusal.value.code, refusal.value.message) == (-32009, words)
    # Its schedules would go on failing each minute: taken away.
    remove = {"type": "automation/removed", "resource": uri}
    assert "rejectionReason" not in await sam.dispatch_and_wait(CATALOGUE, remove)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"title": "t" * 513}, "title is 513 characters, more than 512"),
        (
            {"message": {"text": "x" * 10_001, "origin": {"kind": "automation"}}},
            "message.text is 10001 characters, more than 10000",
        ),
        (
            {"triggers": [{"id": "i" * 257, "kind": "schedule", "schedule": EVERY_MINUTE}]},
            "triggers: a trigger's id is at most 256 characters",
        ),
        (
            {"session": {"provider": "fake", "config": {"padding": "p" * 40_000}}},
            "definition is 40",
        ),
    ],
)
async def test_an_oversized_field_is_refused_naming_it(server, connect, workdir, change, words):
    client = await watching(server, connect)
    create = {
        "type": "automation/createRequested",
        "resource": f"ahp-automation:/{uuid.uuid4()}",
        "definition": {**definition(workdir), **change},
    }
    answer = await client.dispatch_and_wait(CATALOGUE, create)
    assert answer["rejectionReason"].startswith(words), answer["rejectionReason"]
    status, body = call(server, "POST", "automations/", body={"definition": create["definition"]})
    assert status == 400 and body["detail"].startswith(words)
    assert create["resource"] not in kept(server)


async def test_a_resource_or_request_id_longer_than_the_store_keeps_is_refused(
    server, connect, workdir
):
    client = await watching(server, connect)
    long_uri = "ahp-automation:/" + "a" * 500
    create = {
        "type": "automation/createRequested",
        "resource": long_uri,
        "definition": definition(workdir),
    }
    answer = await client.dispatch_and_wait(CATALOGUE, create)
    assert answer["rejectionReason"] == "An automation's resource is at most 512 characters"
    uri = await created(client, workdir)
    with pytest.raises(RpcError) as refusal:
        await press(client, uri, "r" * 257)
    assert (refusal.value.code, refusal.value.message) == (
        -32602,
        "runAutomation: requestId is at most 256 characters",
    )
    await client.settle()
    assert entry(client, uri)["runs"] == []
