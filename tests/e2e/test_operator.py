"""What an operator sees of a running server, with the small ACP agent: /metrics and
/api/status move as turns run, start and fail; who may read them; the log (JSON here, one
object a line); and a clean stop (SIGTERM): every client is sent a close frame 1001, the
running turn ends as interrupted before it, and reads back so after the restart."""

from __future__ import annotations

import asyncio
import json
import re
import sys
import tempfile
import urllib.error
import urllib.request
import uuid
from datetime import datetime
from pathlib import Path

import pytest

from tests.e2e.test_rest_sessions import call, person
from tests.e2e.test_sessions import ended, new_session, run_turn, start_streaming
from tests.support.client import Client
from tests.support.server import REPO, TOKEN, ServerProcess

AGENT = REPO / "tests" / "agents" / "fake_acp_agent.py"

#: The fields /api/status keeps (the CLI's `status` and scripts read them by these names).
STATUS_FIELDS = {
    "host",
    "version",
    "uptimeSeconds",
    "sessions",
    "sessionsHeld",
    "people",
    "connections",
    "subscriptions",
    "runningTurns",
    "agents",
    "sandbox",
    "nodes",
    "connectionsOpened",
    "envelopes",
    "deliveries",
    "queueDrops",
    "turnsStarted",
    "turnsFinished",
    "backendErrors",
    "principal",
    "grants",
}


@pytest.fixture(scope="module")
def workdir():
    with tempfile.TemporaryDirectory(prefix="ahpd-operator-") as path:
        yield Path(path)


@pytest.fixture(scope="module")
def server(workdir):
    config = workdir.parent / f"operator-agents-{uuid.uuid4().hex}.json"
    agent = {
        "provider": "fake",
        "kind": "acp",
        "displayName": "Fake ACP agent",
        "command": sys.executable,
        "args": [str(AGENT)],
        "promptTimeoutSeconds": 60,
    }
    config.write_text(json.dumps({"agents": [agent]}))
    process = ServerProcess(
        env_extra={"AHPD_CONFIG": str(config), "AHPD_LOG_FORMAT": "json"}
    ).start()
    yield process
    process.close()
    config.unlink()


def scrape(server: ServerProcess, token: str | None = TOKEN) -> tuple[int, str, dict[str, str]]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.port}/metrics",
        headers={"Authorization": f"Bearer {token}"} if token else {},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode(), dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(), dict(error.headers)


def metrics(server: ServerProcess) -> dict[str, float]:
    """Every sample of a scrape, by its name and labels as written (`name{a="b"}`)."""
    status, text, headers = scrape(server)
    assert status == 200, text
    assert headers["Content-Type"].startswith("text/plain; version=")
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            samples[name] = float(value)
    return samples


def status(server: ServerProcess) -> dict:
    code, body = call(server, "GET", "status/")
    assert code == 200, body
    return body


def log_records(server: ServerProcess) -> list[dict]:
    """The server's log lines: each one JSON object."""
    return [json.loads(line) for line in server.output if line.startswith("{")]


def test_metrics_needs_a_token_holding_diagnostics_read(server):
    code, _, headers = scrape(server, token=None)
    assert code == 401
    assert headers["WWW-Authenticate"].startswith("Bearer")
    assert scrape(server, token="not-a-token")[0] == 401
    code, body, _ = scrape(server, token=person(server, "member"))
    assert code == 403
    assert "may not diagnostics:read" in body
    assert scrape(server, token=person(server, "admin"))[0] == 200


def test_status_says_every_field_and_a_member_reads_it(server):
    body = status(server)
    assert set(body) == STATUS_FIELDS
    assert body["agents"] == ["fake"]
    assert body["uptimeSeconds"] > 0
    assert set(body["turnsFinished"]) == {"complete", "cancelled", "error"}
    code, seen = call(server, "GET", "status/", token=person(server, "member"))
    assert code == 200
    assert seen["principal"].startswith("user:")


def test_the_schema_documents_every_status_field(server):
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.port}/api/schema/?format=json",
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        schema = json.loads(response.read())
    documented = schema["components"]["schemas"]["Status"]["properties"]
    assert set(documented) == STATUS_FIELDS
    assert all(documented[name].get("description") for name in STATUS_FIELDS)


async def test_metrics_and_status_move_as_turns_run(server, connect, workdir):
    before, before_status = metrics(server), status(server)
    client = await connect(server.url)
    await client.initialize()
    _, chat = await new_session(client, workdir, provider="fake")
    slow = await start_streaming(client, chat, "slow")

    running, running_status = metrics(server), status(server)
    assert running["ahpd_turns_running"] == 1
    assert running_status["runningTurns"] == 1
    assert running["ahpd_connections"] >= 1
    assert running_status["connections"] == running["ahpd_connections"]
    # The client watches the root, its session and its chat.
    assert running["ahpd_subscriptions"] >= 3
    assert running["ahpd_envelopes_total"] > before["ahpd_envelopes_total"]
    assert running["ahpd_deliveries_total"] > before["ahpd_deliveries_total"]
    assert running["ahpd_connections_opened_total"] > before["ahpd_connections_opened_total"]
    assert running['ahpd_turns_started_total{provider="fake"}'] == (
        before.get('ahpd_turns_started_total{provider="fake"}', 0) + 1
    )

    await client.dispatch(
        chat, {"type": "chat/turnCancelled", "turnId": slow["turnId"], "duration": 0}
    )
    await client.wait_action(ended(chat, slow["turnId"]))
    assert (await run_turn(client, chat, "hello"))["action"]["type"] == "chat/turnComplete"
    crashed = await run_turn(client, chat, "crash")
    assert crashed["action"]["type"] == "chat/error"

    after, after_status = metrics(server), status(server)

    def grew(name: str) -> float:
        return after.get(name, 0) - before.get(name, 0)

    assert after["ahpd_turns_running"] == 0
    assert grew('ahpd_turns_finished_total{ending="cancelled",provider="fake"}') == 1
    assert grew('ahpd_turns_finished_total{ending="complete",provider="fake"}') == 1
    assert grew('ahpd_turns_finished_total{ending="error",provider="fake"}') == 1
    assert grew('ahpd_backend_errors_total{provider="fake"}') == 1
    assert grew('ahpd_turn_duration_seconds_count{provider="fake"}') == 3
    assert (
        after['ahpd_turn_duration_seconds_bucket{le="+Inf",provider="fake"}']
        == (after['ahpd_turn_duration_seconds_count{provider="fake"}'])
    )
    assert after_status["runningTurns"] == 0
    assert after_status["turnsStarted"] - before_status["turnsStarted"] == 3
    finished, was = after_status["turnsFinished"], before_status["turnsFinished"]
    assert {k: finished[k] - was[k] for k in finished} == {
        "complete": 1,
        "cancelled": 1,
        "error": 1,
    }
    assert after_status["backendErrors"] - before_status["backendErrors"] == 1


async def test_connections_and_turns_are_logged_one_json_object_a_line(server, connect, workdir):
    client = await connect(server.url)
    await client.initialize()
    _, chat = await new_session(client, workdir, provider="fake")
    end = await run_turn(client, chat, "hello there")
    turn_id = end["action"]["turnId"]
    await client.close()
    await client.wait_for(lambda: client.closed)
    # Asking the server something after the close lets its log of the close be written.
    status(server)
    records = log_records(server)
    assert records, "no JSON log line"
    assert all({"time", "level", "logger", "message"} <= set(r) for r in records)
    # ISO 8601 with its zone: a shipper elsewhere reads the one instant each line was written.
    for record in records:
        when = datetime.fromisoformat(record["time"])
        assert "T" in record["time"] and when.utcoffset() is not None, record["time"]
    turn_lines = [r for r in records if r["logger"] == "ahpd.turns" and r.get("turn") == turn_id]
    assert [r.get("ending") for r in turn_lines] == [None, "complete"]
    assert turn_lines[0]["sender"].startswith("root:")
    assert turn_lines[1]["seconds"] >= 0
    connections = [r for r in records if r["logger"] == "ahpd.connections"]
    assert any(r["message"].startswith("connected:") for r in connections)
    assert any(r["message"].startswith("disconnected:") for r in connections)


async def test_a_clean_stop_closes_every_client_1001_and_a_restart_reads_the_turn_interrupted(
    server, connect, workdir
):
    client = await connect(server.url)
    await client.initialize()
    _, chat = await new_session(client, workdir, provider="fake")
    slow = await start_streaming(client, chat, "slow")
    watcher = await connect(server.url)
    await watcher.initialize()

    server.terminate()
    for each in (client, watcher):
        await each.wait_for(lambda each=each: each.closed, timeout=30)
        assert each.ws.close_code == 1001
    # The turn ended before the close, for the client that watched it.
    end = next(a for a in client.actions if ended(chat, slow["turnId"])(a))
    assert end["action"]["type"] == "chat/error"
    assert end["action"]["part"]["error"]["errorType"] == "executionInterrupted"
    assert await asyncio.to_thread(server.wait_stopped) == 0, server.log_text()[-3000:]
    stopped = [r["message"] for r in log_records(server) if r["logger"] == "ahpd.runtime"]
    assert any(m.startswith("stopping:") for m in stopped), stopped
    assert any(re.match(r"stopped: 1 turns ended as interrupted, 2 clients", m) for m in stopped)

    server.start()
    again = await Client.open(server.url)
    try:
        await again.initialize()
        state = (await again.request("subscribe", {"channel": chat}))["snapshot"]["state"]
        assert "activeTurn" not in state
        last = state["turns"][-1]
        assert last["id"] == slow["turnId"]
        assert last["state"] == "error"
        assert last["responseParts"][-1]["error"]["errorType"] == "executionInterrupted"
        assert "tick" in "".join(
            p.get("content", "") for p in last["responseParts"] if p["kind"] == "markdown"
        )
        assert (await run_turn(again, chat, "after the stop"))["action"]["type"] == (
            "chat/turnComplete"
        )
    finally:
        await again.close()
        again.assert_schema_clean()
