"""The engine keeps each token's principal, and every way a person's token or grants change
tells it: a revocation through the command line (another process), the REST API or the admin
(the server's own) holds on the next command of a connection already open, and a changed role
too."""

from __future__ import annotations

import urllib.parse
import urllib.request
import uuid

import pytest

from tests.e2e.test_grants import ROOT, as_, cli
from tests.support import rest
from tests.support.admin_site import add_boss, admin_signed_in
from tests.support.client import RpcError
from tests.support.server import ServerProcess


@pytest.fixture(scope="module")
def server():
    process = ServerProcess().start()
    add_boss(process)
    yield process
    process.close()


def someone(server: ServerProcess, role: str = "member") -> tuple[str, str]:
    """A new person with one token: their id and its secret."""
    person = f"p-{uuid.uuid4().hex[:8]}"
    cli(server, "user", "add", person, "--role", role)
    return person, cli(server, "user", "token", person, "--name", "laptop")["token"]


async def signed_in_and_checked(server, connect, secret: str):
    """A connection signed in with `secret` whose principal the engine has read and kept."""
    client = await as_(server, connect, secret)
    await client.request("listSessions", {"channel": ROOT})
    await client.request("listSessions", {"channel": ROOT})
    return client


async def assert_signed_out(client) -> None:
    with pytest.raises(RpcError) as refused:
        await client.request("listSessions", {"channel": ROOT})
    assert refused.value.code == -32007
    assert refused.value.data["resources"][0]["resource"] == "ahpd://users"


async def test_a_token_revoked_on_the_command_line_is_refused_on_the_next_command(server, connect):
    person, secret = someone(server)
    client = await signed_in_and_checked(server, connect, secret)
    cli(server, "token", "revoke", person, "laptop")
    await assert_signed_out(client)


async def test_a_token_revoked_over_rest_is_refused_on_the_next_command(server, connect):
    person, secret = someone(server)
    client = await signed_in_and_checked(server, connect, secret)
    status, _ = rest.call(server, "DELETE", f"people/{person}/tokens/laptop/")
    assert status == 204
    await assert_signed_out(client)


async def test_a_token_revoked_in_the_admin_is_refused_on_the_next_command(server, connect):
    person, secret = someone(server)
    client = await signed_in_and_checked(server, connect, secret)
    token_id = server.shell_json(
        "import json; from hosts.models import Token; "
        f"print(json.dumps(Token.objects.get(user__username='{person}', name='laptop').pk))"
    )
    opener, csrf = admin_signed_in(server)
    page = f"http://127.0.0.1:{server.port}/admin/hosts/token/"
    data = urllib.parse.urlencode(
        {
            "csrfmiddlewaretoken": csrf,
            "action": "revoke",
            "_selected_action": str(token_id),
        }
    ).encode()
    with opener.open(urllib.request.Request(page, data=data, headers={"Referer": page})) as answer:
        assert answer.status == 200  # the changelist again, after the redirect
    await assert_signed_out(client)


async def test_a_role_taken_away_on_the_command_line_holds_on_the_next_command(server, connect):
    person, secret = someone(server, "member")
    client = await signed_in_and_checked(server, connect, secret)
    cli(server, "user", "role", person, "guest")
    with pytest.raises(RpcError) as refused:
        await client.request("createSession", {"channel": f"ahp-session:/{uuid.uuid4()}"})
    assert refused.value.code == -32009
    cli(server, "user", "role", person, "member")
    with pytest.raises(RpcError) as refused:
        await client.request("createSession", {"channel": f"ahp-session:/{uuid.uuid4()}"})
    assert refused.value.code != -32009  # the grant is back; no agent here makes it


async def test_a_role_whose_grants_change_over_rest_holds_on_the_next_command(server, connect):
    role = f"r-{uuid.uuid4().hex[:6]}"
    status, _ = rest.call(server, "POST", "roles/", body={"name": role, "grants": ["session:list"]})
    assert status == 201
    person, secret = someone(server, role)
    client = await signed_in_and_checked(server, connect, secret)
    status, _ = rest.call(server, "PATCH", f"roles/{role}/", body={"grants": ["automation:read"]})
    assert status == 200
    with pytest.raises(RpcError) as refused:
        await client.request("listSessions", {"channel": ROOT})
    assert refused.value.code == -32009
