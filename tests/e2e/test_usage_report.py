"""The fake ACP agent metered: its own cost is what a record charges (ACP's usage_update says
the session's cumulative cost; a turn is charged what it grew by), its tokens are the prompt's
answer's, never the context window's fill. With AHPD_USAGE_PER=report a running turn is billed
report by report and stopped when its paying row's budget is spent, in an error naming the row
(the agent's `spend` says $0.25 more every 50 ms, until it is stopped).

The same server reads its usage zone wrong (it falls back to the system's, and says so once at
start) and has AHPD_POLICIES_OWN_LIMITS off (usage://limits refused)."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_sessions import ended, turn
from tests.support.agents import server_with_acp_agent
from tests.support.client import Client, RpcError
from tests.support.server import REPO, TOKEN, ServerProcess

SETUP = """
import json
from django.contrib.auth import get_user_model
from hosts.models import Membership, Role
from hosts.store import mint_token
tokens = {}
for person in ("rita", "sam"):
    user = get_user_model().objects.create_user(username=person)
    Membership.objects.create(user=user, role=Role.objects.get(name="member"), primary=True)
    tokens[person] = mint_token(person, "tests").secret
print(json.dumps(tokens))
"""
UNREADABLE_ZONE = "Mars/Olympus_Mons"


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    env = {
        "AHPD_USAGE_PER": "report",
        "AHPD_POLICIES_CHECK": "1",
        "AHPD_POLICIES_OWN_LIMITS": "off",
        "AHPD_USAGE_TIMEZONE": UNREADABLE_ZONE,
    }
    with server_with_acp_agent(**env) as process:
        yield process


@pytest.fixture(scope="module")
def tokens(server: ServerProcess) -> dict[str, str]:
    return {**server.shell_json(SETUP), "root": TOKEN}


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ahpd-report-") as path:
        yield Path(path)


def policy(server: ServerProcess, policy_id: str, row: dict) -> None:
    result = subprocess.run(
        [sys.executable, "manage.py", "ahpd", "policy", "set", policy_id, json.dumps(row)],
        cwd=REPO,
        env=server.env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


async def chat_for(server: ServerProcess, connect, token: str, workdir: Path) -> tuple[Client, str]:
    client = await connect(server.url, token=token)
    await client.initialize()
    uri = f"ahp-session:/{uuid.uuid4()}"
    params = {"channel": uri, "provider": "fake", "workingDirectories": [workdir.as_uri()]}
    await client.request("createSession", params)
    state = (await client.request("subscribe", {"channel": uri}))["snapshot"]["state"]
    chat = state["defaultChat"]
    await client.request("subscribe", {"channel": chat})
    return client, chat


async def run(client: Client, chat: str, text: str) -> tuple[str, dict]:
    action = turn(text)
    await client.dispatch_and_wait(chat, action)
    end = (await client.wait_action(ended(chat, action["turnId"]), timeout=30))["action"]
    return action["turnId"], end


async def records_of(client: Client, person: str) -> list[dict]:
    answer = await client.request("resourceRead", {"uri": f"usage://user%3A{person}/records"})
    return json.loads(answer["data"])["records"]


def test_an_unreadable_usage_zone_is_said_once_at_start_and_the_systems_used(server):
    said = [line for line in server.output if "AHPD_USAGE_TIMEZONE" in line]
    assert len(said) == 1
    assert f"names no zone this host can read ('{UNREADABLE_ZONE}')" in said[0]
    assert "cut in the system's zone" in said[0]


async def test_a_record_charges_the_cost_the_agent_said_a_turn_added(
    server, connect, tokens, workdir
):
    policy(server, "sams", {"scope": "user:sam", "match": {"agent": ["fake"]}})
    client, chat = await chat_for(server, connect, tokens["sam"], workdir)
    first, _ = await run(client, chat, "pay 0.125")
    second, _ = await run(client, chat, "pay 0.25")
    _, end = await run(client, chat, "crash")
    assert end["type"] == "chat/error"
    # The agent is started again and its session loaded; it says what the session has cost
    # so far, which is where the next turn counts from.
    third, end = await run(client, chat, "pay 0.0625")
    assert end["type"] == "chat/turnComplete"
    records = await records_of(client, "sam")
    charged: dict[str, float] = {}
    for record in records:
        assert record["cost"]["from"] == "harness", record
        charged[record["turn"]] = charged.get(record["turn"], 0.0) + record["cost"]["usd"]
    assert charged == {first: 0.125, second: 0.25, third: 0.0625}
    # The tokens are the prompt's answer's (two words in, two out), not the context's fill.
    tokens_of_third = [(r["inputTokens"], r["outputTokens"]) for r in records if r["turn"] == third]
    assert sorted(tokens_of_third) == [(0, 0), (2, 2)]


async def test_a_running_turn_is_stopped_when_its_budget_is_spent(server, connect, tokens, workdir):
    limits = [{"amount": 0.6, "measure": "usd", "period": "day", "pool": "each"}]
    policy(server, "small", {"scope": "all", "match": {"agent": ["fake"]}, "limits": limits})
    client, chat = await chat_for(server, connect, tokens["rita"], workdir)
    _, end = await run(client, chat, "spend")
    assert end["type"] == "chat/error"
    message = end["part"]["error"]["message"]
    assert message == "small has spent each person's 0.6 usd a day: the turn is stopped"
    records = await records_of(client, "rita")
    # One record per report, each holding what that report added: three of $0.25 crossed $0.6.
    assert [r["cost"] for r in records[-3:]] == [{"usd": 0.25, "from": "harness"}] * 3
    assert all(r["inputTokens"] == 0 for r in records)  # a usage_update is no token spent
    _, refused = await run(client, chat, "hello")
    assert refused["type"] == "chat/error"
    assert refused["part"]["error"]["message"].startswith("small has spent each person's 0.6")


async def test_with_own_limits_off_a_person_cannot_read_theirs_and_an_operator_can(
    server, connect, tokens
):
    rita = await connect(server.url, token=tokens["rita"])
    await rita.initialize()
    with pytest.raises(RpcError) as refused:
        await rita.request("resourceRead", {"uri": "usage://limits"})
    assert refused.value.code == -32009
    assert "AHPD_POLICIES_OWN_LIMITS" in refused.value.message
    root = await connect(server.url, token=tokens["root"])
    await root.initialize()
    answer = await root.request("resourceRead", {"uri": "policy://small/limits"})
    row = json.loads(answer["data"])
    assert row["id"] == "small" and row["limits"][0]["amount"] == 0.6
