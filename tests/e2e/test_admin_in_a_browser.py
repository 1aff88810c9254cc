"""The admin in a real headless browser (Debian's Chromium, driven by Playwright) against a
started server: signing in, a person's page in ahpd's terms, the running-now page updating
while a turn streams and cancelling it, the Turns list, CSV export, the ahpd header and
dates in the browser's zone. Screenshots of each page are kept under test-artifacts/admin/.

One server, one model and one browser serve the whole module. Skipped, saying so, only where
no Chromium is installed (`apt-get install chromium`; .ci/run installs it)."""

from __future__ import annotations

import csv
import io
import json
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote
from zoneinfo import ZoneInfo

import pytest
import pytest_asyncio
from django.contrib.admin.utils import quote as admin_quote
from playwright.async_api import Browser, Page, async_playwright, expect

from tests.e2e.test_sessions import ended
from tests.support.client import Client
from tests.support.fake_openai import FakeOpenAi
from tests.support.rest import call
from tests.support.server import REPO, ServerProcess

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no Chromium installed: the admin's browser tests drive Debian's "
    "(apt-get install chromium)",
)

ARTIFACTS = REPO / "test-artifacts" / "admin"
#: The browser's zone: the admin's dates are shown in it.
ZONE = "Asia/Tokyo"
PASSWORD = "pw-ana-browser-1"

SETUP = f"""
import json
from django.contrib.auth import get_user_model
from hosts.models import Membership, Role, Team
from hosts.store import mint_token, sync_admin_site
core = Team.objects.create(slug="core")
ana = get_user_model().objects.create_user(username="ana", email="ana@example.com")
ana.set_password({PASSWORD!r})
ana.save()
Membership.objects.create(user=ana, role=Role.objects.get(name="admin"), primary=True)
Membership.objects.create(user=ana, role=Role.objects.get(name="member"), team=core)
sync_admin_site(ana)
print(json.dumps({{"pk": ana.pk, "token": mint_token("ana", "laptop").secret}}))
"""


@pytest.fixture(scope="module")
def model() -> Iterator[FakeOpenAi]:
    fake = FakeOpenAi()
    yield fake
    fake.close()


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ahpd-admin-work-") as path:
        yield Path(path)


@pytest.fixture(scope="module")
def server(model: FakeOpenAi) -> Iterator[ServerProcess]:
    agent = {
        "provider": "local",
        "kind": "openai",
        "displayName": "Local",
        "baseUrl": model.url,
        "model": "fake",
        "apiKey": "none",
    }
    with tempfile.TemporaryDirectory(prefix="ahpd-admin-") as folder:
        config = Path(folder) / "agents.json"
        config.write_text(json.dumps({"agents": [agent]}))
        process = ServerProcess(env_extra={"AHPD_CONFIG": str(config)}).start()
        yield process
        process.close()


@pytest.fixture(scope="module")
def ana(server: ServerProcess) -> dict[str, Any]:
    """An admin with a password for the site, in team core, with a token named laptop."""
    made: dict[str, Any] = server.shell_json(SETUP)
    return made


@pytest.fixture(scope="module")
def http(server: ServerProcess) -> str:
    return f"http://127.0.0.1:{server.port}"


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def browser() -> AsyncIterator[Browser]:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield chromium
        await chromium.close()


@pytest_asyncio.fixture(loop_scope="session")
async def page(browser: Browser, http: str, ana: dict[str, Any]) -> AsyncIterator[Page]:
    """A signed-in admin's tab, in a browser whose zone is Tokyo."""
    context = await browser.new_context(
        timezone_id=ZONE, accept_downloads=True, viewport={"width": 1400, "height": 900}
    )
    tab = await context.new_page()
    await tab.goto(http + "/admin/login/?next=/admin/")
    await tab.fill("#id_username", "ana")
    await tab.fill("#id_password", PASSWORD)
    await tab.click("input[type=submit]")
    await expect(tab.locator("#user-tools")).to_contain_text("ana")
    yield tab
    await context.close()


async def shot(page: Page, name: str) -> None:
    await page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def session_path(uri: str) -> str:
    return "sessions/" + quote(uri, safe="") + "/"


async def turn_over(server: ServerProcess, chat: str, turn_id: str) -> None:
    """Wait, as a client watching the chat, until the turn has ended."""
    watcher = await Client.open(server.url)
    try:
        await watcher.initialize()
        state = (await watcher.request("subscribe", {"channel": chat}))["snapshot"]["state"]
        if (state.get("activeTurn") or {}).get("id") == turn_id:
            await watcher.wait_action(ended(chat, turn_id), timeout=60)
    finally:
        await watcher.close()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def session(server: ServerProcess, ana: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """Ana's session, with one finished turn of hers (its usage recorded)."""
    status, made = call(
        server,
        "POST",
        "sessions/",
        token=ana["token"],
        body={
            "provider": "local",
            "workingDirectories": [workdir.as_uri()],
            "message": "costly hello there",
        },
    )
    assert status == 201, made
    await turn_over(server, made["chat"], made["turnId"])
    return dict(made)


async def test_the_header_says_ahpd_and_view_site_leads_to_the_api_docs(page: Page, http: str):
    await page.goto(http + "/admin/")
    await expect(page.locator("#site-name")).to_have_text("ahpd")
    assert "ahpd admin" in await page.title()
    # Dates are shown in the browser's zone, and the page says which.
    await expect(page.locator("#ahpd-zone")).to_have_text(f"times in {ZONE}")
    await shot(page, "index")
    view_site = page.get_by_role("link", name="View site")
    assert await view_site.get_attribute("href") == "/api/docs/"
    await view_site.click()
    await expect(page).to_have_url(http + "/api/docs/")
    await expect(page.locator("#swagger-ui")).to_be_attached()


async def test_a_persons_page_shows_roles_memberships_tokens_sessions_and_usage(
    page: Page, http: str, ana: dict[str, Any], session: dict[str, Any]
):
    await page.goto(f"{http}/admin/auth/user/{ana['pk']}/change/")
    await shot(page, "person")
    roles = page.locator(".field-roles .readonly")
    await expect(roles).to_contain_text("admin (primary)")
    await expect(roles).to_contain_text("member in team core")
    await expect(page.locator(".field-site_rights")).to_contain_text("may sign in")
    # The memberships and the tokens, as rows of their own.
    memberships = page.locator("#memberships-group tbody tr.form-row.has_original")
    await expect(memberships).to_have_count(2)
    await expect(page.locator("#tokens-group")).to_contain_text("laptop")
    # Their sessions and what they used.
    sessions = page.locator(".field-sessions")
    await expect(sessions.locator(f'a[href*="{admin_quote(session["uri"])}"]')).to_have_count(1)
    await expect(sessions).to_contain_text("local")
    await expect(page.locator(".field-usage")).to_contain_text("today $0.125000")
    # Django's groups, permissions and superuser tick are not on the page.
    for name in ("groups", "user_permissions", "is_superuser", "is_staff"):
        await expect(page.locator(f"[name={name}]")).to_have_count(0)
    await expect(page.get_by_text("Groups", exact=True)).to_have_count(0)


async def test_the_running_now_page_shows_a_streaming_turn_updating_and_cancels_it(
    page: Page, http: str, server: ServerProcess, ana: dict[str, Any], session: dict[str, Any]
):
    path = session_path(session["uri"])
    status, sent = call(
        server, "POST", path + "messages/", token=ana["token"], body={"message": "slow"}
    )
    assert status == 202, sent
    turn_id = sent["turnId"]

    await page.goto(http + "/admin/hosts/storedsession/")
    await page.get_by_role("link", name="Running now").click()
    row = page.locator(f'#ahpd-running-now tr[data-turn="{turn_id}"]')
    await expect(row).to_have_attribute("data-session", session["uri"])
    await expect(row).to_contain_text("user:ana")  # whose, and who sent it
    await expect(row).to_contain_text("local")
    said = row.locator(".ahpd-said")
    await expect(said).to_contain_text("word")
    first = await said.text_content()
    # The page reads its rows again by itself: what the turn said grows while it streams.
    await page.wait_for_function(
        """([turn, before]) => {
            const cell = document.querySelector(`tr[data-turn="${turn}"] .ahpd-said`);
            return cell !== null && cell.textContent !== before;
        }""",
        arg=[turn_id, first],
    )
    await expect(row).to_contain_text("running")
    await shot(page, "running-now")

    await row.get_by_role("button", name="Cancel").click()
    await expect(page.locator(".messagelist")).to_contain_text(
        f"Stopped {turn_id} in {session['uri']} for every client."
    )
    await expect(page.locator(f'tr[data-turn="{turn_id}"]')).to_have_count(0)
    await shot(page, "running-now-cancelled")
    status, body = call(server, "GET", path)
    assert status == 200
    [kept] = [t for t in body["chats"][0]["turns"] if t["id"] == turn_id]
    assert kept["state"] == "cancelled"


async def test_cancelling_with_no_session_named_is_refused_naming_it(page: Page, http: str):
    await page.goto(http + "/admin/hosts/storedsession/running-now/")
    token = await page.evaluate("() => (document.cookie.match(/csrftoken=([^;]+)/) || [])[1]")
    answer = await page.request.post(
        http + "/admin/hosts/storedsession/running-now/cancel/",
        form={"session": ""},
        headers={"X-CSRFToken": token, "Referer": http + "/admin/"},
    )
    assert answer.status == 400
    assert "session" in await answer.text()


async def test_the_turns_list_shows_session_sender_start_duration_and_cost(
    page: Page, http: str, server: ServerProcess, session: dict[str, Any]
):
    await page.goto(http + "/admin/hosts/storedturn/")
    headers = await page.locator("#result_list thead th").all_text_contents()
    for column in ("session", "sent by", "started", "duration", "cost"):
        assert any(column in header.lower() for header in headers), headers
    row = page.locator("#result_list tbody tr", has_text=session["turnId"])
    await expect(row.locator(f'a[href*="{admin_quote(session["uri"])}"]')).to_have_count(1)
    await expect(row).to_contain_text("user:ana")
    await expect(row).to_contain_text("$0.125000")
    await expect(row.locator(".field-duration")).to_contain_text(" s")
    # Its start in the browser's zone, as Django writes a date and time.
    status, body = call(server, "GET", session_path(session["uri"]))
    assert status == 200
    [turn] = [t for t in body["chats"][0]["turns"] if t["id"] == session["turnId"]]
    started = datetime.fromisoformat(turn["startedAt"].replace("Z", "+00:00"))
    local = started.astimezone(ZoneInfo(ZONE))
    shown = await row.locator(".field-started").text_content() or ""
    assert f"{local.day}, {local.year}" in shown, shown
    assert shown.startswith(local.strftime("%b")), shown
    await shot(page, "turns")
    # Filtered by agent, by who sent it and by when it started.
    await page.get_by_role("link", name="local", exact=True).click()
    await expect(row).to_be_visible()
    await page.get_by_role("link", name="user:ana", exact=True).click()
    await expect(row).to_be_visible()
    await page.get_by_role("link", name="Today", exact=True).click()
    await expect(row).to_be_visible()
    await page.goto(http + "/admin/hosts/storedturn/?sender=root:nobody")
    await expect(page.locator("#result_list")).to_have_count(0)


async def read_csv(page: Page, click: Any) -> list[dict[str, str]]:
    """The rows of the CSV file a click downloads; its header checked against the first."""
    async with page.expect_download() as download:
        await click()
    saved = await (await download.value).path()
    text = Path(saved).read_text()
    assert text.count("\n") >= 1, "not even a header"
    return list(csv.DictReader(io.StringIO(text)))


async def test_usage_records_days_and_runs_export_as_csv(
    page: Page, http: str, session: dict[str, Any]
):
    await page.goto(http + "/admin/usage/usagerecord/")
    await shot(page, "usage-records")
    rows = await read_csv(page, page.get_by_role("link", name="Export as CSV").click)
    [mine] = [r for r in rows if r["turn"] == session["turnId"]]
    assert mine["user_pool"] == "user:ana"
    assert mine["session"] == session["uri"]
    assert float(mine["cost_usd"]) == 0.125
    assert mine["at"].endswith("+09:00")  # in the admin user's zone

    # The days, by the action on the rows ticked.
    await page.goto(http + "/admin/usage/usageday/?pool__exact=user%3Aana")
    await page.check("#action-toggle")
    await page.select_option("select[name=action]", "export_csv")
    days = await read_csv(page, page.locator("button[name=index]").click)
    assert [d["pool"] for d in days] == ["user:ana"]
    assert float(days[0]["cost_usd"]) == 0.125

    await page.goto(http + "/admin/automations/automationrun/")
    async with page.expect_download() as download:
        await page.get_by_role("link", name="Export as CSV").click()
    header = Path(await (await download.value).path()).read_text().splitlines()
    # No automation ran: the header alone.
    assert header == [
        "uri,automation,owner,origin_kind,trigger_id,created,scheduled_for,"
        "catch_up,status,primary_session,sessions"
    ]
