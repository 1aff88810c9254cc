"""Session work over the API with DRF's APIClient, done by an engine started in this process
(on a thread of its own, as a process with no server loop gets one) against a fake model."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from rest_framework.test import APIClient

from hosts import store
from hosts.edge import connection_token, engine_client, runtime
from hosts.engine.host import Host
from tests.support.agents import local_agent_config
from tests.support.fake_openai import FakeOpenAi

ROOT = "test-root"

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def engine(settings: Any, tmp_path: Any) -> Iterator[None]:
    model = FakeOpenAi()
    config = tmp_path / "agents.json"
    config.write_text(json.dumps(local_agent_config(model.url)))
    settings.AHPD_CONFIG = str(config)
    settings.AHPD_CONNECTION_TOKEN = ROOT
    settings.AHPD_CONNECTION_TOKEN_FILE = None
    settings.AHPD_WITHOUT_CONNECTION_TOKEN = False
    connection_token.connection_token.cache_clear()
    runtime.configured_agents.cache_clear()
    runtime.configured_mcp_servers.cache_clear()
    store.ensure_builtin_roles()
    yield

    async def stop(host: Host) -> None:
        # The engine's database threads let go of their connections too: the test
        # database can be dropped.
        await runtime.shutdown()

    engine_client.read(stop, what="the engine stopped")
    loop = runtime._loop
    runtime._host = runtime._loop = runtime._inbox = None
    if loop is not None:
        loop.call_soon_threadsafe(loop.stop)
    runtime.configured_agents.cache_clear()
    runtime.configured_mcp_servers.cache_clear()
    connection_token.connection_token.cache_clear()
    model.close()


def api(token: str = ROOT) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def turn_ended(chat: str) -> None:
    """Wait, on the engine's loop, for the chat's running turn to be done."""

    async def wait(host: Host) -> None:
        task = host.sessions.chat(chat).task
        if task is not None:
            await asyncio.wait([task])
        # The API reads the database: what the turn's end wrote behind is written first.
        await host.writes.drain()

    engine_client.read(wait, what="the engine settled")


def path(uri: str, tail: str = "") -> str:
    return "/api/sessions/" + quote(uri, safe="") + tail + "/"


def test_a_session_is_made_messaged_stopped_and_disposed_over_the_api(engine, tmp_path):
    made = api().post(
        "/api/sessions/",
        {"provider": "local", "workingDirectories": [tmp_path.as_uri()], "message": "hello api"},
        format="json",
    )
    assert made.status_code == 201, made.content
    uri, chat = made.data["uri"], made.data["chat"]
    assert made["Location"] == "http://testserver" + path(uri)
    turn_ended(chat)
    read = api().get(path(uri))
    assert read.status_code == 200
    [turn] = read.data["chats"][0]["turns"]
    assert turn["message"]["text"] == "hello api"
    assert turn["state"] == "complete"

    sent = api().post(path(uri, "/messages"), {"message": "slow"}, format="json")
    assert sent.status_code == 202
    # A message sent while a turn runs is taken: it takes the running turn's place.
    again = api().post(path(uri, "/messages"), {"message": "again"}, format="json")
    assert again.status_code == 202
    stopped = api().post(path(uri, "/cancel"))
    assert stopped.status_code == 200
    assert stopped.data == {"cancelled": [again.data["turnId"]]}
    turn_ended(chat)

    assert api().delete(path(uri)).status_code == 204
    assert api().get(path(uri)).status_code == 404


def test_session_work_is_held_to_grants_and_owners(engine, tmp_path):
    from django.contrib.auth import get_user_model

    from hosts.models import Membership, Role

    user = get_user_model().objects.create(username="max")
    Membership.objects.create(user=user, role=Role.objects.get(name="member"))
    member = store.mint_token("max", "laptop").secret
    guest_user = get_user_model().objects.create(username="gus")
    Membership.objects.create(user=guest_user, role=Role.objects.get(name="guest"))
    guest = store.mint_token("gus", "laptop").secret

    refused = api(guest).post("/api/sessions/", {"message": "hi"}, format="json")
    assert refused.status_code == 403
    assert refused.data["detail"] == "user:gus may not session:create here"

    made = api().post(
        "/api/sessions/",
        {"message": "root's", "workingDirectories": [tmp_path.as_uri()]},
        format="json",
    )
    turn_ended(made.data["chat"])
    assert api(member).delete(path(made.data["uri"])).status_code == 403
    missing = api(member).post(
        path("ahp-session:/nope", "/messages"), {"message": "x"}, format="json"
    )
    assert missing.status_code == 404
    assert missing.data["detail"] == "Session not found: ahp-session:/nope"
    unknown = api().post("/api/sessions/", {"message": "x", "provider": "nobody"}, format="json")
    assert unknown.status_code == 400


def test_session_work_answers_without_the_trailing_slash_too(engine, tmp_path):
    made = api().post(
        "/api/sessions",
        {"provider": "local", "workingDirectories": [tmp_path.as_uri()], "message": "bare"},
        format="json",
    )
    assert made.status_code == 201, made.content
    uri, chat = made.data["uri"], made.data["chat"]
    turn_ended(chat)
    bare = path(uri).removesuffix("/")
    read = api().get(bare)
    assert (read.status_code, read.data["uri"]) == (200, uri)

    sent = api().post(bare + "/messages", {"message": "slow"}, format="json")
    assert sent.status_code == 202, sent.content
    stopped = api().post(bare + "/cancel")
    assert stopped.status_code == 200
    assert stopped.data == {"cancelled": [sent.data["turnId"]]}
    turn_ended(chat)
    assert api().delete(bare).status_code == 204
    assert api().get(bare).status_code == 404
