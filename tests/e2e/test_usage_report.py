"""AHPD_USAGE_PER=report: a running turn is billed report by report, and stopped when its
paying row's budget is spent, in an error naming the row (the fake ACP agent's `spend` says
100 tokens more every 50 ms, until it is stopped)."""

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
from tests.support.server import REPO, ServerProcess

SETUP = """
import json
from django.contrib.auth import get_user_model
from hosts.models import Membership, Role
from hosts.store import mint_token
user = get_user_model().objects.create_user(username="rita")
Membership.objects.create(user=user, role=Role.objects.get(name="member"), primary=True)
print(json.dumps(mint_token("rita", "tests").secret))
"""


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    env = {"AHPD_USAGE_PER": "report", "AHPD_POLICIES_CHECK": "1"}
    with server_with_acp_agent(**env) as process:
        yield process


@pytest.fixture(scope="module")
def token(server: ServerProcess) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", SETUP],
        cwd=REPO,
        env=server.env(),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return str(json.loads(result.stdout.strip().splitlines()[-1]))


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


async def test_a_running_turn_is_stopped_when_its_budget_is_spent(server, connect, token, workdir):
    limits = [{"amount": 250, "measure": "tokens", "period": "day", "pool": "each"}]
    policy(server, "small", {"scope": "all", "match": {"agent": ["fake"]}, "limits": limits})
    client = await connect(server.url, token=token)
    await client.initialize()
    uri = f"ahp-session:/{uuid.uuid4()}"
    params = {"channel": uri, "provider": "fake", "workingDirectories": [workdir.as_uri()]}
    await client.request("createSession", params)
    state = (await client.request("subscribe", {"channel": uri}))["snapshot"]["state"]
    chat = state["defaultChat"]
    await client.request("subscribe", {"channel": chat})
    action = turn("spend")
    await client.dispatch_and_wait(chat, action)
    end = (await client.wait_action(ended(chat, action["turnId"]), timeout=30))["action"]
    assert end["type"] == "chat/error"
    message = end["part"]["error"]["message"]
    assert message == "small has spent each person's 250 tokens a day: the turn is stopped"
    answer = await client.request("resourceRead", {"uri": "usage://user%3Arita/records"})
    records = json.loads(answer["data"])["records"]
    # One record per report, each holding what that report added: three of 100 crossed 250.
    assert [r["inputTokens"] for r in records[-3:]] == [100, 100, 100]
    following = turn("hello")
    await client.dispatch_and_wait(chat, following)
    refused = (await client.wait_action(ended(chat, following["turnId"]), timeout=30))["action"]
    assert refused["type"] == "chat/error"
    assert refused["part"]["error"]["message"].startswith("small has spent each person's 250")
