"""Every REST and admin write of every resource answers within its own work and does exactly
what it answered (issue 24.1), against a started server, reached as a person reaches it: over
HTTP, the admin through its own sign-in form.

A sync view holds the thread its request runs on while the engine does the work; nothing the
engine does may need that thread (its database calls run on an executor of its own, and views
reach it through one engine client), so none of these waits on itself. Each write is then read
back, over REST or the socket, to see that what it answered is what happened.
"""

from __future__ import annotations

import json
import re
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.e2e.test_sessions import ended
from tests.e2e.test_static_pages import http, signed_in
from tests.support.agents import server_with_local_agent
from tests.support.rest import call
from tests.support.server import ServerProcess

PEOPLE = """
import json
from django.contrib.auth import get_user_model
from hosts.models import Membership, Role
from hosts.store import ensure_builtin_roles, mint_token, sync_admin_site
ensure_builtin_roles()
user = get_user_model().objects.create_user(username="ana", password="pw-ana-1")
Membership.objects.create(user=user, role=Role.objects.get(name="admin"), primary=True)
sync_admin_site(user)
print(json.dumps({"ana": mint_token("ana", "tests").secret}))
"""


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ahpd-writes-") as path:
        yield Path(path)


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    with server_with_local_agent(AHPD_AUTOMATION_SCHEDULER="embedded") as process:
        yield process


@pytest.fixture(scope="module")
def ana(server: ServerProcess) -> str:
    return str(server.shell_json(PEOPLE)["ana"])


class Browser:
    """The admin, as a person signed in through its own pages uses it."""

    def __init__(self, server: ServerProcess) -> None:
        self.base = http(server)
        self.opener, self.csrf = signed_in(server, "ana")

    def post(self, path: str, fields: dict[str, str]) -> tuple[int, str, str]:
        """(status, the page it ended on, its text) of the form at `path` sent with `fields`
        filled in (and its hidden fields as the page holds them: an inline's management form)."""
        url = self.base + path
        with self.opener.open(url, timeout=60) as page:
            form = page.read().decode()
        hidden = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form))
        data = urllib.parse.urlencode(
            {**hidden, "csrfmiddlewaretoken": self.csrf, **fields}
        ).encode()
        request = urllib.request.Request(url, data=data, headers={"Referer": url})
        try:
            with self.opener.open(request, timeout=60) as page:
                return page.status, page.url, page.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, url, error.read().decode()


@pytest.fixture(scope="module")
def browser(server: ServerProcess, ana: str) -> Browser:
    return Browser(server)


def problems(text: str) -> list[str]:
    """What an admin page says went wrong: a form's errors, and the messages said as errors."""
    said = re.findall(r'<ul class="errorlist[^"]*"[^>]*>(.*?)</ul>', text, re.S)
    said += re.findall(r'<li class="error">(.*?)</li>', text, re.S)
    return [re.sub(r"<[^>]+>", " ", words).strip() for words in said]


def automation(workdir: Path, text: str, **extra: Any) -> dict[str, Any]:
    return {
        "title": f"Say {text}",
        "message": {"text": text, "origin": {"kind": "automation"}},
        "session": {"provider": "local", "workingDirectories": [workdir.as_uri()]},
        "enabled": True,
        "triggers": [],
        **extra,
    }


def session_path(uri: str, tail: str = "") -> str:
    return "sessions/" + quote(uri, safe="") + "/" + tail


def admin_path(model: str, key: str, tail: str) -> str:
    # The admin's own quoting of a primary key (django.contrib.admin.utils.quote).
    quoted = re.sub(r"[:/_#?;@&=+$,\"\[\]<>%\n\\]", lambda m: f"_{ord(m.group()):02X}", key)
    return f"/admin/{model}/{quoted}/{tail}"


async def run_ended(client: Any, run: str) -> dict[str, Any]:
    await client.request("subscribe", {"channel": run})

    def over() -> Any:
        state = client.tracked.get(run, [None])[0]
        status = state and state["lifecycle"]["status"]
        return state if status in ("completed", "failed", "cancelled") else None

    return await client.wait_for(over, 30)


def test_team_project_and_role_writes_answer_and_are_kept(server):
    assert call(server, "POST", "teams/", body={"slug": "web", "name": "Web"})[0] == 201
    assert call(server, "PATCH", "teams/web/", body={"name": "The web"})[0] == 200
    assert call(server, "GET", "teams/web/")[1]["name"] == "The web"
    made = call(server, "POST", "projects/", body={"slug": "site", "name": "Site", "team": "web"})
    assert made[0] == 201, made
    assert call(server, "PATCH", "projects/site/", body={"name": "The site"})[0] == 200
    assert call(server, "GET", "projects/site/")[1]["name"] == "The site"
    role = {"name": "reader", "grants": ["session:read"]}
    assert call(server, "POST", "roles/", body=role)[0] == 201
    assert call(server, "PATCH", "roles/reader/", body={"grants": ["session:list"]})[0] == 200
    assert call(server, "GET", "roles/reader/")[1]["grants"] == ["session:list"]
    for path in ("projects/site/", "teams/web/", "roles/reader/"):
        assert call(server, "DELETE", path)[0] == 204
        assert call(server, "GET", path)[0] == 404


def test_people_and_token_writes_answer_and_are_kept(server, ana):
    assert call(server, "POST", "people/", body={"id": "bo", "roles": ["member"]})[0] == 201
    assert call(server, "PATCH", "people/bo/", body={"email": "bo@example.org"})[0] == 200
    assert call(server, "GET", "people/bo/")[1]["email"] == "bo@example.org"
    status, minted = call(server, "POST", "people/bo/tokens/", body={"name": "laptop"})
    assert status == 201
    assert call(server, "GET", "me/", minted["token"])[0] == 200
    assert call(server, "DELETE", "people/bo/tokens/laptop/")[0] == 204
    assert call(server, "GET", "me/", minted["token"])[0] == 401
    status, mine = call(server, "POST", "me/tokens/", ana, {"name": "phone"})
    assert status == 201
    assert call(server, "DELETE", "me/tokens/phone/", ana)[0] == 204
    assert call(server, "GET", "me/", mine["token"])[0] == 401
    assert call(server, "DELETE", "people/bo/")[0] == 204
    assert call(server, "GET", "people/bo/")[0] == 404


def test_policy_writes_answer_and_are_kept(server):
    row = {"id": "everyone", "scope": "all", "effect": "allow", "match": {"agent": ["*"]}}
    assert call(server, "POST", "policies/", body=row)[0] == 201
    assert call(server, "PATCH", "policies/everyone/", body={"effect": "deny"})[0] == 200
    assert call(server, "GET", "policies/everyone/")[1]["effect"] == "deny"
    assert call(server, "DELETE", "policies/everyone/")[0] == 204
    assert call(server, "GET", "policies/everyone/")[0] == 404


async def test_session_writes_answer_and_are_done(server, connect, workdir):
    body = {"provider": "local", "workingDirectories": [workdir.as_uri()], "message": "hello"}
    status, made = call(server, "POST", "sessions/", body=body)
    assert status == 201, made
    watcher = await connect(server.url)
    await watcher.initialize()
    await watcher.request("subscribe", {"channel": made["chat"]})
    await watcher.wait_action(ended(made["chat"], made["turnId"]), timeout=30)
    status, sent = call(
        server, "POST", session_path(made["uri"], "messages/"), body={"message": "hold"}
    )
    assert status == 202, sent
    status, cancelled = call(server, "POST", session_path(made["uri"], "cancel/"))
    assert (status, cancelled) == (200, {"cancelled": [sent["turnId"]]})
    stop = await watcher.wait_action(ended(made["chat"], sent["turnId"]))
    assert stop["action"]["type"] == "chat/turnCancelled"
    assert call(server, "DELETE", session_path(made["uri"]))[0] == 204
    assert call(server, "GET", session_path(made["uri"]))[0] == 404


async def test_automation_writes_answer_and_are_done(server, connect, workdir):
    status, made = call(
        server, "POST", "automations/", body={"id": "rest", "definition": automation(workdir, "a")}
    )
    assert status == 201, made
    status, patched = call(server, "PATCH", "automations/rest/", body={"title": "Renamed"})
    assert status == 200, patched
    assert call(server, "GET", "automations/rest/")[1]["title"] == "Renamed"
    status, ran = call(server, "POST", "automations/rest/run/", body={"requestId": "r1"})
    assert status == 202, ran
    watcher = await connect(server.url)
    await watcher.initialize()
    assert (await run_ended(watcher, ran["resource"]))["lifecycle"]["status"] == "completed"
    assert call(server, "DELETE", "automations/rest/")[0] == 204
    assert call(server, "GET", "automations/rest/")[0] == 404


async def test_admin_automation_writes_answer_and_are_done(server, workdir, browser):
    fields = {"uri": "ahp-automation:/admin", "definition": json.dumps(automation(workdir, "b"))}
    status, page, text = browser.post("/admin/automations/automation/add/", fields)
    assert (status, problems(text)) == (200, [])
    assert call(server, "GET", "automations/admin/")[1]["title"] == "Say b"
    change = admin_path("automations/automation", "ahp-automation:/admin", "change/")
    renamed = json.dumps(automation(workdir, "b", title="Renamed in the admin"))
    status, page, text = browser.post(change, {"definition": renamed})
    assert (status, problems(text)) == (200, [])
    assert call(server, "GET", "automations/admin/")[1]["title"] == "Renamed in the admin"
    delete = admin_path("automations/automation", "ahp-automation:/admin", "delete/")
    status, page, text = browser.post(delete, {"post": "yes"})
    assert (status, problems(text)) == (200, [])
    assert call(server, "GET", "automations/admin/")[0] == 404


async def test_admin_session_cancel_and_dispose_answer_and_are_done(
    server, connect, workdir, browser
):
    body = {"provider": "local", "workingDirectories": [workdir.as_uri()], "message": "hold"}
    status, made = call(server, "POST", "sessions/", body=body)
    assert status == 201, made
    watcher = await connect(server.url)
    await watcher.initialize()
    await watcher.request("subscribe", {"channel": made["chat"]})
    cancel = admin_path("hosts/storedsession", made["uri"], "cancel/")
    status, page, text = browser.post(cancel, {})
    assert status == 200 and f"Stopped {made['turnId']}" in text, text[-2000:]
    stop = await watcher.wait_action(ended(made["chat"], made["turnId"]))
    assert stop["action"]["type"] == "chat/turnCancelled"
    dispose = admin_path("hosts/storedsession", made["uri"], "dispose/")
    status, page, text = browser.post(dispose, {})
    assert status == 200 and f"Disposed of {made['uri']}" in text, text[-2000:]
    assert call(server, "GET", session_path(made["uri"]))[0] == 404


def test_admin_team_writes_answer_and_are_kept(server, browser):
    status, page, text = browser.post("/admin/hosts/team/add/", {"slug": "ops", "name": "Ops"})
    assert (status, problems(text)) == (200, [])
    assert call(server, "GET", "teams/ops/")[1]["name"] == "Ops"
    # The page it ended on links the team made, by its key.
    made = re.search(r'href="(/admin/hosts/team/\d+/)change/"', text)
    assert made, text
    status, page, text = browser.post(made.group(1) + "delete/", {"post": "yes"})
    assert (status, problems(text)) == (200, [])
    assert call(server, "GET", "teams/ops/")[0] == 404
