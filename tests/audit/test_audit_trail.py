"""The audit trail against a started server: each act is recorded once, with who, what, on what
and from where, whichever way it came in (the socket, the REST API, the admin, the command
line); only admins read it; nothing in it can be changed or removed through the product."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest

from tests.e2e.test_sessions import ended
from tests.support.admin_site import add_boss, admin_signed_in
from tests.support.agents import server_with_local_agent
from tests.support.rest import call, session_over_rest
from tests.support.server import REPO, ServerProcess

ROOT = "ahp-root://"
POLICY = {"scope": "all", "effect": "allow", "match": {}}


@pytest.fixture(scope="module")
def workdir():
    with tempfile.TemporaryDirectory(prefix="ahpd-audit-") as path:
        yield Path(path)


@pytest.fixture(scope="module")
def server():
    with server_with_local_agent(AHPD_HOST_NAME="audithost") as process:
        add_boss(process)
        yield process


def run_cli(server: ServerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "ahpd", *args],
        cwd=REPO,
        env=server.env(),
        capture_output=True,
        text=True,
        timeout=60,
    )


def cli(server: ServerProcess, *args: str) -> Any:
    done = run_cli(server, *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def person(server: ServerProcess, role: str = "member") -> tuple[str, str]:
    """A new person holding `role`, with a token named `laptop`: their id and its secret."""
    name = f"p-{uuid.uuid4().hex[:8]}"
    cli(server, "user", "add", name, "--role", role)
    return name, cli(server, "user", "token", name, "--name", "laptop")["token"]


def trail(server: ServerProcess, **narrowed: str) -> list[dict[str, Any]]:
    """The audit records /api/audit/ lists (as root), newest first."""
    status, page = call(server, "GET", "audit/?" + urlencode(narrowed))
    assert status == 200, page
    return page["results"]


def one(records: list[dict[str, Any]], act: str) -> dict[str, Any]:
    """The one record of `act` among `records` (it fails on none, and on two)."""
    [record] = [r for r in records if r["act"] == act]
    return record


async def as_(server: ServerProcess, connect, token: str | None = None):
    client = await connect(server.url, **({"token": token} if token else {}))
    await client.initialize()
    return client


def admin_post(server: ServerProcess, path: str, fields: dict[str, str]) -> str:
    """POST a form to an admin page as `boss`; the page answered, after any redirect."""
    opener, csrf = admin_signed_in(server)
    page = f"http://127.0.0.1:{server.port}{path}"
    data = urlencode({"csrfmiddlewaretoken": csrf, **fields}).encode()
    request = urllib.request.Request(page, data=data, headers={"Referer": page})
    with opener.open(request, timeout=60) as answer:
        return answer.read().decode()


# -- tokens ----------------------------------------------------------------------------------


def test_a_token_minted_and_revoked_on_the_command_line_is_recorded_as_the_cli(server):
    name, _ = person(server)
    cli(server, "token", "revoke", name, "laptop")
    cli(server, "token", "revoke", name, "laptop")  # again: no new act
    records = trail(server, targetId=f"user:{name}/laptop")
    assert [r["act"] for r in records] == ["token.revoked", "token.minted"]
    for record in records:
        assert record["via"] == "cli"
        assert record["by"].startswith("os:")
        assert record["targetKind"] == "token"


def test_a_token_minted_and_revoked_over_rest_is_recorded_with_the_callers_address(server):
    name, _ = person(server)
    status, _ = call(server, "POST", f"people/{name}/tokens/", body={"name": "ci"})
    assert status == 201
    status, _ = call(server, "DELETE", f"people/{name}/tokens/ci/")
    assert status == 204
    records = trail(server, targetId=f"user:{name}/ci")
    assert [r["act"] for r in records] == ["token.revoked", "token.minted"]
    for record in records:
        assert (record["by"], record["via"]) == (server.root_ref, "rest")
        assert record["address"] == "127.0.0.1"


def test_a_token_minted_and_revoked_in_the_admin_is_recorded_as_the_person_signed_in(server):
    name, _ = person(server)
    user_pk = server.shell_json(
        "import json; from django.contrib.auth import get_user_model as m; "
        f"print(json.dumps(m().objects.get(username='{name}').pk))"
    )
    page = admin_post(server, "/admin/hosts/token/add/", {"user": str(user_pk), "name": "desk"})
    assert "was minted" in page
    token_pk = server.shell_json(
        "import json; from hosts.models import Token; "
        f"print(json.dumps(Token.objects.get(user__username='{name}', name='desk').pk))"
    )
    admin_post(
        server,
        "/admin/hosts/token/",
        {"action": "revoke", "_selected_action": str(token_pk)},
    )
    records = trail(server, targetId=f"user:{name}/desk")
    assert [r["act"] for r in records] == ["token.revoked", "token.minted"]
    for record in records:
        assert (record["by"], record["via"], record["address"]) == (
            "user:boss",
            "admin",
            "127.0.0.1",
        )


# -- roles and memberships -------------------------------------------------------------------


def test_a_persons_roles_changed_anywhere_are_recorded_with_before_and_after(server):
    name, _ = person(server, "member")
    made = one(trail(server, targetId=f"user:{name}"), "membership.changed")
    assert (made["via"], made["detail"]) == ("cli", {"before": [], "after": ["member"]})

    status, _ = call(server, "PATCH", f"people/{name}/", body={"roles": ["guest"]})
    assert status == 200
    cli(server, "user", "role", name, "guest")  # what they hold already: no act
    cli(server, "user", "role", name, "member")
    records = trail(server, targetId=f"user:{name}", act="membership.changed")
    assert [(r["via"], r["detail"]["before"], r["detail"]["after"]) for r in records] == [
        ("cli", ["guest"], ["member"]),
        ("rest", ["member"], ["guest"]),
        ("cli", [], ["member"]),
    ]
    assert records[1]["by"] == server.root_ref


def test_a_role_made_changed_and_removed_over_rest_is_recorded(server):
    role = f"r-{uuid.uuid4().hex[:6]}"
    assert call(server, "POST", "roles/", body={"name": role, "grants": ["session:list"]})[0] == 201
    assert call(server, "PATCH", f"roles/{role}/", body={"grants": ["chat:read"]})[0] == 200
    assert call(server, "DELETE", f"roles/{role}/")[0] == 204
    records = trail(server, act="role.changed", targetId=role)
    assert [(r["detail"]["grants"], r["detail"]["removed"]) for r in records] == [
        (["chat:read"], True),
        (["chat:read"], False),
        (["session:list"], False),
    ]
    assert {(r["by"], r["via"]) for r in records} == {(server.root_ref, "rest")}


def test_a_role_made_in_the_admin_is_recorded(server):
    role = f"r-{uuid.uuid4().hex[:6]}"
    page = admin_post(
        server, "/admin/hosts/role/add/", {"name": role, "grants": '["session:list"]'}
    )
    assert "errornote" not in page
    record = one(trail(server, targetId=role), "role.changed")
    assert (record["by"], record["via"]) == ("user:boss", "admin")
    assert record["detail"]["grants"] == ["session:list"]


# -- policies --------------------------------------------------------------------------------


async def test_a_policy_set_and_removed_from_every_way_in_is_recorded(server, connect):
    policy = f"audit-{uuid.uuid4().hex[:6]}"
    status, _ = call(server, "POST", "policies/", body={"id": policy, **POLICY})
    assert status == 201
    client = await as_(server, connect)
    await client.request(
        "resourceWrite",
        {
            "uri": f"policy://{policy}",
            "data": json.dumps({"effect": "deny"}),
            "encoding": "utf-8",
        },
    )
    cli(server, "policy", "set", policy, json.dumps({"effect": "allow"}))
    status, _ = call(server, "DELETE", f"policies/{policy}/")
    assert status == 204
    records = trail(server, targetKind="policy", targetId=policy)
    assert [(r["act"], r["via"]) for r in records] == [
        ("policy.removed", "rest"),
        ("policy.set", "cli"),
        ("policy.set", "socket"),
        ("policy.set", "rest"),
    ]
    assert records[2]["by"] == server.root_ref
    assert records[2]["detail"]["row"]["effect"] == "deny"
    assert records[3]["detail"]["made"] is True


def test_a_policy_saved_in_the_admin_is_recorded(server):
    policy = f"audit-{uuid.uuid4().hex[:6]}"
    page = admin_post(
        server,
        "/admin/usage/policy/add/",
        {
            "id": policy,
            "scope": "all",
            "kind": "agent",
            "effect": "allow",
            "match": "{}",
            "limits": "[]",
            "pool": "",
        },
    )
    assert "errornote" not in page, page
    record = one(trail(server, targetId=policy), "policy.set")
    assert (record["by"], record["via"], record["detail"]["made"]) == ("user:boss", "admin", True)


# -- what the engine does on someone's say ---------------------------------------------------


async def test_root_config_changed_on_the_socket_is_recorded_once_with_the_keys_moved(
    server, connect
):
    client = await as_(server, connect)
    mark = {"x-audit": uuid.uuid4().hex}
    await client.dispatch_and_wait(ROOT, {"type": "root/configChanged", "config": mark})
    # Pushed again unchanged: nothing moved, nothing recorded.
    await client.dispatch_and_wait(ROOT, {"type": "root/configChanged", "config": mark})
    # The connection's frames are taken in order: this answer comes after both pushes' work.
    await client.request("ping", {"channel": ROOT})
    moved = [r for r in trail(server, act="rootConfig.changed") if "x-audit" in r["detail"]["keys"]]
    assert len([r for r in moved if r["detail"]["keys"] == ["x-audit"]]) >= 1
    newest = trail(server, act="rootConfig.changed")[0]
    assert (newest["by"], newest["via"], newest["detail"]) == (
        server.root_ref,
        "socket",
        {"keys": ["x-audit"]},
    )
    before = len(trail(server, act="rootConfig.changed"))
    await client.dispatch_and_wait(ROOT, {"type": "root/configChanged", "config": mark})
    await client.request("ping", {"channel": ROOT})
    assert len(trail(server, act="rootConfig.changed")) == before


def test_disposing_someone_elses_session_is_recorded_and_ones_own_is_not(server, workdir):
    name, secret = person(server, "member")
    theirs = session_over_rest(server, secret, workdir, "hello")
    own = session_over_rest(server, secret, workdir, "hello")
    assert call(server, "DELETE", "sessions/" + quote(own["uri"], safe="") + "/", secret)[0] == 204
    assert call(server, "DELETE", "sessions/" + quote(theirs["uri"], safe="") + "/")[0] == 204
    assert trail(server, targetId=own["uri"]) == []
    record = one(trail(server, targetId=theirs["uri"]), "session.disposed")
    assert (record["by"], record["via"], record["targetKind"]) == (
        server.root_ref,
        "rest",
        "session",
    )
    assert record["detail"] == {"owner": f"user:{name}"}


async def test_cancelling_someone_elses_turn_is_recorded_from_the_socket_rest_and_cli(
    server, connect, workdir
):
    name, secret = person(server, "member")
    watcher = await as_(server, connect)
    for way in ("socket", "rest", "cli"):
        made = session_over_rest(server, secret, workdir, "hold")
        await watcher.request("subscribe", {"channel": made["chat"]})
        if way == "socket":
            stop = {"type": "chat/turnCancelled", "turnId": made["turnId"], "duration": 1}
            echo = await watcher.dispatch_and_wait(made["chat"], stop)
            assert "rejectionReason" not in echo
        elif way == "rest":
            path = "sessions/" + quote(made["uri"], safe="") + "/cancel/"
            assert call(server, "POST", path)[0] == 200
        else:
            cli(server, "sessions", "--cancel", made["uri"])
        await watcher.wait_action(ended(made["chat"], made["turnId"]), timeout=30)
        record = one(trail(server, targetId=made["turnId"]), "turn.cancelled")
        assert (record["by"], record["via"], record["targetKind"]) == (
            server.root_ref,
            way,
            "turn",
        )
        assert record["detail"] == {"chat": made["chat"], "owner": f"user:{name}"}


def test_an_automation_run_over_rest_is_recorded_once(server, workdir):
    automation = f"a{uuid.uuid4().hex[:6]}"
    definition = {
        "title": "audited",
        "message": {"text": "hello", "origin": {"kind": "automation"}},
        "session": {"provider": "local", "workingDirectories": [workdir.as_uri()]},
        "enabled": True,
        "triggers": [],
    }
    status, made = call(
        server, "POST", "automations/", body={"id": automation, "definition": definition}
    )
    assert status == 201, made
    status, ran = call(server, "POST", f"automations/{automation}/run/", body={"requestId": "r1"})
    assert status == 202, ran
    status, again = call(server, "POST", f"automations/{automation}/run/", body={"requestId": "r1"})
    assert again == ran
    record = one(trail(server, act="automation.ran", targetId=made["resource"]), "automation.ran")
    assert (record["by"], record["via"]) == (server.root_ref, "rest")
    assert record["detail"]["run"] == ran["resource"]


# -- reading it ------------------------------------------------------------------------------


def test_only_admins_read_the_trail_over_rest(server):
    name, _ = person(server, "admin")
    member_name, member = person(server, "member")
    _, guest = person(server, "guest")
    for secret in (member, guest):
        status, refused = call(server, "GET", "audit/", secret)
        assert status == 403
        assert "admins only" in refused["detail"]
    status, _ = call(server, "GET", "audit/1/", member)
    assert status == 403
    assert call(server, "GET", "audit/", "ahpd_not-a-token")[0] == 401
    admin_token = cli(server, "user", "token", name, "--name", "second")["token"]
    status, page = call(server, "GET", f"audit/?targetId=user:{member_name}", admin_token)
    assert status == 200
    assert set(page) == {"count", "next", "previous", "results"}
    assert [r["act"] for r in page["results"]] == ["membership.changed"]


def test_the_trail_comes_in_pages_and_bad_filters_are_refused_naming_the_parameter(server):
    person(server)
    status, page = call(server, "GET", "audit/?limit=1")
    assert status == 200 and len(page["results"]) == 1 and page["next"]
    for asked, named in (("act=token.stolen", "act"), ("via=carrier-pigeon", "via")):
        status, refused = call(server, "GET", f"audit/?{asked}")
        assert status == 400, refused
        # Refused as every list refuses a bad value (hosts/api/query_parameters.py): the
        # parameter named, what it takes, and what was sent.
        value = asked.partition("=")[2]
        assert refused["detail"].startswith(f"{named} takes "), refused
        assert repr(value) in refused["detail"]
    status, refused = call(server, "GET", "audit/?colour=red")
    assert status == 400 and "colour" in refused["detail"], refused


def test_the_command_line_lists_the_trail_filtered_and_as_json(server):
    name, _ = person(server)
    records = cli(server, "audit", "--target-id", f"user:{name}/laptop")
    assert [r["act"] for r in records] == ["token.minted"]
    assert records[0]["via"] == "cli"
    lines = run_cli(server, "audit", "--act", "token.minted", "--limit", "1")
    assert lines.returncode == 0
    assert re.search(r" token.minted token:user:\S+/\S+ via \w+", lines.stdout.replace("  ", " "))
    refused = run_cli(server, "audit", "--act", "token.stolen")
    assert refused.returncode != 0
    assert refused.stderr.strip().startswith("ahpd: --act")


# -- nothing in it changes -------------------------------------------------------------------


def test_nothing_in_the_trail_is_changed_or_removed_over_rest(server):
    person(server)
    newest = trail(server)[0]
    for method in ("PUT", "PATCH", "DELETE", "POST"):
        path = f"audit/{newest['id']}/" if method != "POST" else "audit/"
        status, _ = call(server, method, path, body={"act": "token.minted", "by": "nobody"})
        assert status == 405, method
    assert trail(server)[0] == newest


def test_the_admin_lists_the_trail_and_has_no_add_change_or_delete(server):
    person(server)
    newest = trail(server)[0]
    opener, _ = admin_signed_in(server)
    base = f"http://127.0.0.1:{server.port}/admin/audit/auditrecord/"
    listed = opener.open(base + "?act__exact=token.minted", timeout=60).read().decode()
    assert "token.minted" in listed
    assert 'href="/admin/audit/auditrecord/add/"' not in listed
    assert 'name="action"' not in listed  # no actions, so no delete_selected
    shown = opener.open(f"{base}{newest['id']}/change/", timeout=60).read().decode()
    assert 'name="_save"' not in shown  # read only
    for path in ("add/", f"{newest['id']}/delete/"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            opener.open(base + path, timeout=60)
        assert refused.value.code == 403
    assert trail(server)[0] == newest


def test_the_model_refuses_to_change_or_remove_a_record(server):
    person(server)
    said = server.shell(
        "from audit.models import AppendOnly, AuditRecord\n"
        "r = AuditRecord.objects.first()\n"
        "for attempt in (lambda: r.save(), lambda: r.delete(),\n"
        "                lambda: AuditRecord.objects.all().delete(),\n"
        "                lambda: AuditRecord.objects.filter(pk=r.pk).update(by='x')):\n"
        "    try:\n"
        "        attempt()\n"
        "        print('allowed')\n"
        "    except AppendOnly:\n"
        "        print('refused')\n"
    )
    assert said.split()[-4:] == ["refused"] * 4
    assert "allowed" not in said
