"""Session work over REST (create with a first message, send, cancel, dispose) against the
running server, with a socket client watching what every client sees."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.e2e.test_sessions import ended
from tests.support.agents import server_with_local_agent
from tests.support.rest import call
from tests.support.server import REPO


@pytest.fixture(scope="module")
def workdir():
    with tempfile.TemporaryDirectory(prefix="ahpd-rest-") as path:
        yield Path(path)


@pytest.fixture(scope="module")
def server():
    with server_with_local_agent() as process:
        yield process


def person(server, role: str) -> str:
    name = f"{role}-{uuid.uuid4().hex[:6]}"
    env = server.env()
    subprocess.run(
        [sys.executable, "manage.py", "ahpd", "user", "add", name, "--role", role, "--json"],
        cwd=REPO,
        env=env,
        check=True,
        capture_output=True,
    )
    out = subprocess.run(
        [sys.executable, "manage.py", "ahpd", "user", "token", name, "--json"],
        cwd=REPO,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out)["token"]


async def test_a_session_made_over_rest_runs_its_first_message(server, connect, workdir):
    status, made = call(
        server,
        "POST",
        "sessions/",
        body={
            "provider": "local",
            "workingDirectories": [workdir.as_uri()],
            "message": "from rest",
        },
    )
    assert status == 201, made
    watcher = await connect(server.url)
    await watcher.initialize()
    state = (await watcher.request("subscribe", {"channel": made["chat"]}))["snapshot"]["state"]
    if state.get("activeTurn"):
        await watcher.wait_action(ended(made["chat"], made["turnId"]), timeout=30)
    status, session = call(server, "GET", "sessions/" + quote(made["uri"], safe="") + "/")
    assert status == 200
    turns = session["chats"][0]["turns"]
    assert turns[0]["message"]["text"] == "from rest"
    assert turns[0]["message"]["_meta"]["ahpd.sender"].startswith("root:")

    status, sent = call(
        server,
        "POST",
        "sessions/" + quote(made["uri"], safe="") + "/messages/",
        body={"message": "slow"},
    )
    assert status == 202, sent
    await watcher.wait_action(
        lambda e: (
            e["channel"] == made["chat"]
            and e["action"]["type"] == "chat/delta"
            and e["action"]["turnId"] == sent["turnId"]
        ),
        timeout=30,
    )
    # Sent while a turn runs, a message is taken: it takes the running turn's place.
    status, again = call(
        server,
        "POST",
        "sessions/" + quote(made["uri"], safe="") + "/messages/",
        body={"message": "too soon"},
    )
    assert status == 202
    status, cancelled = call(server, "POST", "sessions/" + quote(made["uri"], safe="") + "/cancel/")
    assert (status, cancelled) == (200, {"cancelled": [again["turnId"]]})
    stop = await watcher.wait_action(ended(made["chat"], again["turnId"]))
    assert stop["action"]["type"] == "chat/turnCancelled"
    await watcher.assert_conforms(made["chat"])

    status, _ = call(server, "DELETE", "sessions/" + quote(made["uri"], safe="") + "/")
    assert status == 204
    status, _ = call(server, "GET", "sessions/" + quote(made["uri"], safe="") + "/")
    assert status == 404


async def test_rest_session_work_honours_grants_and_owners(server, workdir):
    # These paths leave the trailing slash off: the API answers them the same, POSTs included.
    guest = person(server, "guest")
    member = person(server, "member")
    status, refused = call(server, "POST", "sessions", guest, {"message": "hi"})
    assert status == 403
    assert refused["detail"].endswith("may not session:create here")
    status, made = call(
        server,
        "POST",
        "sessions",
        body={"provider": "local", "workingDirectories": [workdir.as_uri()], "message": "root's"},
    )
    assert status == 201
    status, refused = call(server, "DELETE", "sessions/" + quote(made["uri"], safe=""), member)
    assert status == 403
    status, missing = call(
        server,
        "POST",
        "sessions/" + quote("ahp-session:/nope", safe="") + "/messages",
        member,
        {"message": "x"},
    )
    assert status == 404
    assert missing["detail"] == "Session not found: ahp-session:/nope"
