"""A run's session is made as its owner through the policy check a createSession takes
(AHPD_POLICIES_CHECK on): a row that refuses the owner fails the run naming it, and root's runs
(as automations with no owner run) are not checked."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.automations.test_operations import press
from tests.automations.test_socket import created, run_ended, watching
from tests.e2e.test_usage import put_policy
from tests.support.agents import server_with_acp_agent
from tests.support.server import TOKEN, ServerProcess

PEOPLE = """
import json
from django.contrib.auth import get_user_model
from hosts.models import Membership, Role
from hosts.store import ensure_builtin_roles, mint_token
ensure_builtin_roles()
Role.objects.create(name="automator", grants=["automation:*", "session:*", "chat:*"])
tokens = {}
for person in ("max", "olga"):
    user = get_user_model().objects.create_user(username=person)
    Membership.objects.create(user=user, role=Role.objects.get(name="automator"), primary=True)
    tokens[person] = mint_token(person, "tests").secret
print(json.dumps(tokens))
"""


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ahpd-auto-policies-") as path:
        yield Path(path)


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    with server_with_acp_agent(
        AHPD_AUTOMATION_SCHEDULER="embedded", AHPD_POLICIES_CHECK="true"
    ) as process:
        yield process


@pytest.fixture(scope="module")
def tokens(server: ServerProcess) -> dict[str, str]:
    return {**server.shell_json(PEOPLE), "root": TOKEN}


async def test_a_row_refusing_the_owner_fails_the_run_naming_it(server, connect, workdir, tokens):
    root = await watching(server, connect)
    await put_policy(root, "everyone", {"scope": "all", "match": {"agent": ["fake"]}})
    deny = {"scope": "user:max", "effect": "deny", "match": {"agent": ["fake"]}}
    await put_policy(root, "no-max", deny)
    max_ = await watching(server, connect, tokens["max"])
    uri = await created(max_, workdir)
    # Pressed by root, run as max: max's policies decide.
    state = await run_ended(root, await press(root, uri))
    assert state["lifecycle"]["status"] == "failed"
    assert state["lifecycle"]["error"] == {
        "errorType": "sessionCreationFailed",
        "message": "no-max refuses agent fake",
    }
    assert state["sessions"] == [] and state["_meta"] == {"ahpd.owner": "user:max"}
    listed = await max_.request("listSessions", {"channel": "ahp-root://"})
    assert listed["items"] == []
    await root.assert_conforms(state["resource"])
    # Someone the rows allow runs as before.
    olga = await watching(server, connect, tokens["olga"])
    hers = await created(olga, workdir)
    assert (await run_ended(olga, await press(olga, hers)))["lifecycle"]["status"] == "completed"


async def test_roots_runs_are_not_checked(server, connect, workdir):
    root = await watching(server, connect)
    await put_policy(root, "nobody", {"scope": "all", "effect": "deny", "match": {"agent": ["*"]}})
    uri = await created(root, workdir)
    state = await run_ended(root, await press(root, uri))
    assert state["lifecycle"]["status"] == "completed", state
    assert state["_meta"]["ahpd.owner"].startswith("root:")
    await root.request("resourceDelete", {"uri": "policy://nobody"})
