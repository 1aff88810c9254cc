"""The admin's session page shows the turns running now (status, what they said so far, who
sent them, for how long) and cancels or disposes through the engine's services, as the person
signed in, with their grants; an engine started in this process runs the turns."""

from __future__ import annotations

import asyncio
import re
from urllib.parse import quote

import pytest
from django.contrib.admin.utils import quote as admin_quote
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from hosts import store
from hosts.edge import engine_client
from hosts.engine.host import Host
from hosts.models import Membership, Role, StoredSession
from hosts.protocol.versions import parse_version
from tests.api import test_api_session_work as session_work
from tests.api.test_api_session_work import api, turn_ended
from tests.support.transport import FakeTransport

pytestmark = pytest.mark.django_db(transaction=True)

User = get_user_model()

#: An engine in this process with the local agent against a fake model.
engine = session_work.engine


def signed_in(username: str, *, superuser: bool, role: str | None = None) -> Client:
    user = User.objects.create(username=username, is_staff=True, is_superuser=superuser)
    if role is not None:
        Membership.objects.create(user=user, role=Role.objects.get(name=role))
    if not superuser:
        # Staff who may look at sessions in the admin, and hold only their role's grants.
        from django.contrib.auth.models import Permission

        user.user_permissions.add(Permission.objects.get(codename="view_storedsession"))
    browser = Client()
    browser.force_login(user)
    return browser


def admin_url(action: str, uri: str) -> str:
    return reverse(f"admin:hosts_storedsession_{action}", args=[admin_quote(uri)])


class Watching(FakeTransport):
    """A watcher of a chat inside the engine: told each frame, as a socket would be."""

    def __init__(self) -> None:
        super().__init__()
        self.arrived = asyncio.Event()

    async def send(self, text: str) -> None:
        await super().send(text)
        self.arrived.set()


def streaming(chat: str) -> None:
    """Wait, on the engine's loop, until the chat's running turn has said some text."""

    async def wait(host: Host) -> None:
        live = host.sessions.chat(chat)
        assert live is not None
        watcher = Watching()
        conn = host.connect(watcher, "test")
        conn.version = parse_version("1.0.0")
        host.fanout.subscribe(conn, live.channel)
        try:
            while not any(
                p.get("kind") == "markdown" and p.get("content")
                for p in (live.state().get("activeTurn") or {}).get("responseParts", [])
            ):
                watcher.arrived.clear()
                await watcher.arrived.wait()
        finally:
            host.disconnect(conn)

    engine_client.read(wait, what="the engine settled")


def start_slow_turn(tmp_path) -> tuple[str, str, str]:
    made = api().post(
        "/api/sessions/",
        {"provider": "local", "workingDirectories": [tmp_path.as_uri()], "message": "hello"},
        format="json",
    )
    assert made.status_code == 201, made.content
    uri, chat = made.data["uri"], made.data["chat"]
    turn_ended(chat)
    path = "/api/sessions/" + quote(uri, safe="") + "/messages/"
    sent = api().post(path, {"message": "slow"}, format="json")
    assert sent.status_code == 202
    return uri, chat, sent.data["turnId"]


def test_a_running_turn_shows_live_with_who_sent_it_and_what_it_said(engine, tmp_path):
    uri, chat, turn_id = start_slow_turn(tmp_path)
    streaming(chat)
    boss = signed_in("boss", superuser=True)
    page = boss.get(admin_url("change", uri))
    assert page.status_code == 200
    html = page.content.decode()
    assert turn_id in html
    assert "running" in html
    assert "root:" in html  # the deployment's own token sent it
    assert re.search(r"markdown: word1", html)
    assert admin_url("running", uri) in html
    # The live part alone, as the page reads it again every two seconds.
    live = boss.get(admin_url("running", uri))
    assert live.status_code == 200
    assert "no-store" in live["Cache-Control"]
    assert turn_id in live.content.decode()

    stopped = boss.post(admin_url("cancel", uri), follow=True)
    assert stopped.status_code == 200
    assert f"Stopped {turn_id} for every client." in stopped.content.decode()
    turn_ended(chat)
    assert "No turn is running." in boss.get(admin_url("running", uri)).content.decode()
    [kept] = [
        t
        for t in api().get("/api/sessions/" + quote(uri, safe="") + "/").data["chats"][0]["turns"]
        if t["id"] == turn_id
    ]
    assert kept["state"] == "cancelled"

    disposed = boss.post(admin_url("dispose", uri), follow=True)
    assert disposed.status_code == 200
    assert f"Disposed of {uri} for every client." in disposed.content.decode()
    assert not StoredSession.objects.filter(uri=uri).exists()


def test_staff_without_the_grant_are_refused_in_the_engines_words(engine, tmp_path):
    uri, chat, turn_id = start_slow_turn(tmp_path)
    streaming(chat)
    guest = signed_in("gus", superuser=False, role="guest")
    assert guest.get(admin_url("change", uri)).status_code == 200
    refused = guest.post(admin_url("cancel", uri), follow=True)
    # The admin capitalizes a message's first letter.
    assert "User:gus may not chat:cancel here" in refused.content.decode()
    assert turn_id in guest.get(admin_url("running", uri)).content.decode()
    refused = guest.post(admin_url("dispose", uri), follow=True)
    assert "may not" in refused.content.decode()
    assert StoredSession.objects.filter(uri=uri).exists()
    # A GET changes nothing.
    guest.get(admin_url("cancel", uri))
    assert turn_id in guest.get(admin_url("running", uri)).content.decode()
    store.ensure_builtin_roles()
    stopped = api().post("/api/sessions/" + quote(uri, safe="") + "/cancel/")
    assert stopped.status_code == 200


def test_the_live_part_is_for_who_may_view_sessions(engine, tmp_path):
    uri, chat, _ = start_slow_turn(tmp_path)
    nobody = User.objects.create(username="nil", is_staff=True)
    browser = Client()
    browser.force_login(nobody)
    for action in ("running", "cancel", "dispose"):
        assert browser.get(admin_url(action, uri)).status_code in (403, 404)
    assert browser.post(admin_url("cancel", uri)).status_code in (403, 404)
    anonymous = Client()
    assert anonymous.get(admin_url("running", uri)).status_code == 302  # to the sign-in
    api().post("/api/sessions/" + quote(uri, safe="") + "/cancel/")
    turn_ended(chat)
