"""Usage and policies end to end: a real server with policies checked, the openai loop on the
fake chat-completions server (which reports usage), people in a team and a project.

Everyone's prices are a dollar a token, so a pool's dollars are its tokens.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.e2e.test_sessions import ended, turn
from tests.support.agents import local_agent, server_with_config
from tests.support.client import Client, RpcError
from tests.support.fake_openai import COST_PER_CALL, FakeOpenAi
from tests.support.rest import call
from tests.support.server import REPO, TOKEN, ServerProcess

SETUP = """
import json
from django.contrib.auth import get_user_model
from hosts.models import Membership, Project, Role, Team
from hosts.store import mint_token
alpha = Team.objects.create(slug="alpha")
Project.objects.create(slug="web", team=alpha)
tokens = {}
people = (("olga", "member", "alpha"), ("max", "member", ""), ("ana", "admin", ""))
for person, role, team in people:
    user = get_user_model().objects.create_user(username=person)
    Membership.objects.create(
        user=user, role=Role.objects.get(name=role),
        team=Team.objects.get(slug=team) if team else None, primary=True,
    )
    tokens[person] = mint_token(person, "tests").secret
print(json.dumps(tokens))
"""


@pytest.fixture(scope="module")
def model() -> Iterator[FakeOpenAi]:
    fake = FakeOpenAi()
    yield fake
    fake.close()


@pytest.fixture(scope="module")
def server(model: FakeOpenAi) -> Iterator[ServerProcess]:
    prices = {"*": {"input": 1_000_000, "output": 1_000_000}}
    with server_with_config(
        {"agents": [local_agent(model.url, prices=prices)]},
        AHPD_POLICIES_CHECK="true",
        AHPD_USAGE_TIMEZONE="Europe/Berlin",
    ) as process:
        yield process


@pytest.fixture(scope="module")
def tokens(server: ServerProcess) -> dict[str, str]:
    return {**server.shell_json(SETUP), "root": TOKEN}


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ahpd-usage-work-") as path:
        yield Path(path)


def cli(server: ServerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "ahpd", *args],
        cwd=REPO,
        env=server.env(),
        capture_output=True,
        text=True,
        timeout=60,
    )


async def signed_in(server: ServerProcess, connect, token: str) -> Client:
    client = await connect(server.url, token=token)
    await client.initialize()
    return client


async def create(client: Client, workdir: Path) -> str:
    uri = f"ahp-session:/{uuid.uuid4()}"
    params = {"channel": uri, "provider": "local", "workingDirectories": [workdir.as_uri()]}
    await client.request("createSession", params)
    return uri


async def chat_of(client: Client, uri: str) -> str:
    state = (await client.request("subscribe", {"channel": uri}))["snapshot"]["state"]
    await client.request("subscribe", {"channel": state["defaultChat"]})
    return state["defaultChat"]


async def ending(client: Client, chat: str, text: str, model: str | None = None) -> dict:
    action = turn(text)
    if model is not None:
        action["message"]["model"] = {"id": model}
    await client.dispatch_and_wait(chat, action)
    return (await client.wait_action(ended(chat, action["turnId"]), timeout=30))["action"]


async def put_policy(client: Client, policy_id: str, row: dict, **extra) -> dict:
    params = {"uri": f"policy://{policy_id}", "data": json.dumps(row), "encoding": "utf-8"}
    return await client.request("resourceWrite", {**params, **extra})


async def read(client: Client, uri: str) -> dict:
    answer = await client.request("resourceRead", {"uri": uri})
    return json.loads(answer["data"])


def pool(name: str) -> str:
    return "usage://" + quote(name, safe="")


async def test_switched_on_with_no_rows_everyone_but_root_is_refused(
    server, connect, tokens, workdir
):
    max_ = await signed_in(server, connect, tokens["max"])
    with pytest.raises(RpcError) as refused:
        await create(max_, workdir)
    assert refused.value.code == -32009
    assert refused.value.message == "no policy allows agent local"
    root = await signed_in(server, connect, tokens["root"])
    await create(root, workdir)


async def test_writing_a_policy_needs_policy_write_and_a_row_that_is_one(server, connect, tokens):
    max_ = await signed_in(server, connect, tokens["max"])
    with pytest.raises(RpcError) as refused:
        await put_policy(max_, "everyone", {"effect": "allow"})
    assert refused.value.code == -32009
    assert "policy:write" in refused.value.message
    with pytest.raises(RpcError) as refused:
        await max_.request("resourceRead", {"uri": "policy://"})
    assert refused.value.code == -32009
    root = await signed_in(server, connect, tokens["root"])
    bad = {"limits": [{"amount": 1, "measure": "calls", "period": "day", "pool": "shared"}]}
    with pytest.raises(RpcError) as wrong:
        await put_policy(root, "bad", bad)
    assert wrong.value.code == -32602
    assert "measure 'calls' is not a measure of agent rows" in wrong.value.message
    assert (await root.request("resourceList", {"uri": "policy://"}))["entries"] == []
    assert (await root.request("resourceList", {"uri": "usage://"}))["entries"] == []


async def test_an_allow_list_lets_people_in_and_a_deny_refuses_a_turn_naming_its_row(
    server, connect, tokens, workdir, model
):
    root = await signed_in(server, connect, tokens["root"])
    await put_policy(root, "everyone", {"scope": "all", "match": {"agent": ["local"]}})
    deny = {"scope": "user:max", "effect": "deny", "match": {"model": ["big-*"]}}
    await put_policy(root, "no-big", deny)
    with pytest.raises(RpcError) as exists:
        await put_policy(root, "no-big", deny, createOnly=True)
    assert exists.value.code == -32010
    # A write merges: the row keeps what the body does not name.
    await put_policy(root, "no-big", {"effect": "deny"})
    assert (await read(root, "policy://no-big"))["match"] == {"model": ["big-*"]}

    max_ = await signed_in(server, connect, tokens["max"])
    chat = await chat_of(max_, await create(max_, workdir))
    asked = len(model.requests)
    refused = await ending(max_, chat, "hello", model="big-one")
    assert refused["type"] == "chat/error"
    assert refused["part"]["error"]["message"] == "no-big refuses agent local with model big-one"
    assert len(model.requests) == asked  # never reached the model
    assert (await ending(max_, chat, "hello there"))["type"] == "chat/turnComplete"
    assert len(model.requests) == asked + 1


async def test_a_spent_limit_refuses_the_next_turn_naming_its_row(server, connect, tokens, workdir):
    root = await signed_in(server, connect, tokens["root"])
    limits = [{"amount": 2, "measure": "turns", "period": "day", "pool": "shared"}]
    await put_policy(root, "olga-day", {"scope": "user:olga", "limits": limits})
    olga = await signed_in(server, connect, tokens["olga"])
    chat = await chat_of(olga, await create(olga, workdir))
    assert (await ending(olga, chat, "one"))["type"] == "chat/turnComplete"
    assert (await ending(olga, chat, "two"))["type"] == "chat/turnComplete"
    third = await ending(olga, chat, "three")
    assert third["type"] == "chat/error"
    message = third["part"]["error"]["message"]
    assert message.startswith("olga-day has spent 2 turns a day")
    row = await read(root, "policy://olga-day/limits")
    assert row["limits"][0]["spent"] == 2
    mine = await read(olga, "usage://limits")
    assert [r["id"] for r in mine["limits"]] == ["olga-day"]


async def test_usage_is_read_by_pool_over_the_usage_scheme(server, connect, tokens):
    olga = await signed_in(server, connect, tokens["olga"])
    listed = await olga.request("resourceList", {"uri": "usage://"})
    assert [e["name"] for e in listed["entries"]] == [
        "user:olga",
        "team:alpha",
        "project:alpha:web",
    ]
    mine = await read(olga, pool("user:olga"))
    assert mine["pool"] == "user:olga" and mine["kind"] == "user" and mine["name"] == "olga"
    assert mine["day"]["records"] == 2  # the refused turn is no record
    assert mine["day"]["tokens"] > 0
    assert mine["day"]["usd"] == mine["day"]["tokens"]  # a dollar a token
    assert mine["month"] == mine["week"] == mine["day"]
    assert (await read(olga, pool("user:olga") + "/week"))["week"] == mine["week"]
    team = await read(olga, pool("team:alpha"))
    assert team["day"] == mine["day"]
    records = await read(olga, pool("user:olga") + "/records")
    assert len(records["records"]) == 2
    newest = records["records"][0]
    assert newest["agent"] == "local" and newest["model"] == "fake-model"
    assert newest["cost"]["from"] == "price"
    assert newest["payers"] == ["everyone", "olga-day"]
    ranged = await read(olga, pool("user:olga") + "/range?from=2000-01-01&until=2100-01-01")
    assert ranged["records"] == 2

    max_ = await signed_in(server, connect, tokens["max"])
    with pytest.raises(RpcError) as refused:
        await read(max_, pool("user:olga"))
    assert refused.value.code == -32009
    with pytest.raises(RpcError) as bad:
        await read(olga, "usage://groups?by=planet")
    assert bad.value.code == -32602
    ana = await signed_in(server, connect, tokens["ana"])
    groups = await read(ana, "usage://groups?by=user")
    assert {g["pool"] for g in groups["groups"]} >= {"user:olga", "user:max"}
    assert sum(g["records"] for g in groups["groups"]) >= 3
    data = base64.b64encode(b"{}").decode()
    with pytest.raises(RpcError) as never:
        await olga.request("resourceWrite", {"uri": pool("user:olga"), "data": data})
    assert never.value.code == -32009


def test_usage_and_policies_over_rest(server, tokens):
    status, body = call(server, "GET", "usage/", tokens["olga"])
    assert status == 200
    assert [p["pool"] for p in body["results"]] == ["user:olga", "team:alpha", "project:alpha:web"]
    status, body = call(server, "GET", "usage/user:olga/", tokens["olga"])
    assert status == 200 and body["day"]["records"] == 2
    status, body = call(server, "GET", "usage/user:olga/?from=2000-01-01", tokens["olga"])
    assert status == 200 and body["records"] == 2
    status, body = call(server, "GET", "usage/user:olga/records/?limit=1", tokens["olga"])
    assert status == 200 and body["count"] == 2 and len(body["results"]) == 1
    assert body["next"] is not None
    assert call(server, "GET", "usage/user:olga/", tokens["max"])[0] == 403
    assert call(server, "GET", "usage/user:olga/?from=yesterday", tokens["olga"])[0] == 400
    assert call(server, "GET", "policies/", tokens["max"])[0] == 403
    row = {"id": "rest-row", "scope": "team:alpha", "effect": "deny", "match": {"model": ["x"]}}
    assert call(server, "POST", "policies/", tokens["max"], row)[0] == 403
    status, made = call(server, "POST", "policies/", tokens["ana"], row)
    assert status == 201 and made["scope"] == "team:alpha"
    assert call(server, "POST", "policies/", tokens["ana"], row)[0] == 409
    status, body = call(server, "PATCH", "policies/rest-row/", tokens["ana"], {"kind": "nope"})
    assert status == 400 and body["kind"] == ["kind must be one of agent, model, computer"]
    assert call(server, "DELETE", "policies/rest-row/", tokens["ana"])[0] == 204
    assert call(server, "GET", "policies/rest-row/", tokens["ana"])[0] == 404


def test_the_command_line_prints_a_pools_totals_and_the_policies(server, tokens):
    shown = cli(server, "usage", "user:olga", "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["day"]["records"] == 2
    listed = cli(server, "usage", "--json")
    assert "user:olga" in [p["pool"] for p in json.loads(listed.stdout)]
    rows = cli(server, "policy", "list", "--json")
    assert "olga-day" in [r["id"] for r in json.loads(rows.stdout)]
    bad = cli(server, "policy", "set", "x", '{"effect": "maybe"}')
    assert bad.returncode != 0 and "effect must be allow or deny" in bad.stderr


async def test_a_deny_at_create_session_names_its_row_and_makes_nothing(
    server, connect, tokens, workdir
):
    root = await signed_in(server, connect, tokens["root"])
    await put_policy(
        root, "no-max", {"scope": "user:max", "effect": "deny", "match": {"agent": ["local"]}}
    )
    max_ = await signed_in(server, connect, tokens["max"])
    uri = f"ahp-session:/{uuid.uuid4()}"
    params = {"channel": uri, "provider": "local", "workingDirectories": [workdir.as_uri()]}
    with pytest.raises(RpcError) as refused:
        await max_.request("createSession", params)
    assert refused.value.code == -32009
    assert refused.value.message == "no-max refuses agent local"
    listed = await max_.request("listSessions", {})
    assert uri not in [item["resource"] for item in listed["items"]]
    await root.request("resourceDelete", {"uri": "policy://no-max"})
    with pytest.raises(RpcError) as gone:
        await root.request("resourceRead", {"uri": "policy://no-max"})
    assert gone.value.code == -32008
    await max_.request("createSession", params)


BULK = """
from datetime import timedelta
from django.utils import timezone
from hosts.engine.meter import Use, Work
from usage import ledger
now = timezone.now()
for n in range(205):
    use = Use(Work("user:bulk", "", "unpriced-agent"), "s", "c", f"t{n}", input_tokens=1)
    ledger.write_record(use, now - timedelta(milliseconds=205 - n))
"""


@pytest.fixture(scope="module")
def bulk(server: ServerProcess) -> None:
    """205 records of user:bulk, t0 the oldest, from an agent with no price."""
    server.shell(BULK)


async def test_a_pools_records_are_the_newest_first_and_at_most_200(server, connect, tokens, bulk):
    root = await signed_in(server, connect, tokens["root"])
    records = (await read(root, pool("user:bulk") + "/records"))["records"]
    assert [r["turn"] for r in records] == [f"t{n}" for n in range(204, 4, -1)]
    assert all(r["cost"] is None for r in records)  # no price: tokens and no cost


def test_the_command_line_says_unpriced_rather_than_no_dollars(server, bulk):
    shown = cli(server, "usage", "user:bulk")
    assert shown.returncode == 0, shown.stderr
    assert "today 205 turns 205 tokens unpriced" in shown.stdout
    assert "$0.0000" not in shown.stdout


def test_the_command_line_shows_and_removes_a_policy_row(server):
    made = cli(server, "policy", "set", "short-lived", '{"scope": "team:alpha"}')
    assert made.returncode == 0, made.stderr
    shown = cli(server, "policy", "show", "short-lived", "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["scope"] == "team:alpha"
    removed = cli(server, "policy", "rm", "short-lived")
    assert removed.returncode == 0, removed.stderr
    for verb in ("show", "rm"):
        gone = cli(server, "policy", verb, "short-lived")
        assert gone.returncode != 0 and "no policy short-lived" in gone.stderr
    listed = cli(server, "policy", "list", "--json")
    assert "short-lived" not in [r["id"] for r in json.loads(listed.stdout)]


async def test_a_cost_the_endpoint_says_is_the_records_over_the_configured_price(
    server, connect, tokens, workdir
):
    ana = await signed_in(server, connect, tokens["ana"])
    chat = await chat_of(ana, await create(ana, workdir))
    assert (await ending(ana, chat, "costly hello"))["type"] == "chat/turnComplete"
    assert (await ending(ana, chat, "hello"))["type"] == "chat/turnComplete"
    costly, plain = reversed((await read(ana, pool("user:ana") + "/records"))["records"])
    # OpenRouter's usage.cost, not the dollar a token the agent's prices would make it.
    assert costly["cost"] == {"usd": COST_PER_CALL, "from": "harness"}
    assert plain["cost"] == {"usd": plain["tokens"], "from": "price"}
