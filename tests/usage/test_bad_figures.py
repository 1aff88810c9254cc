"""A policy's figures that no decimal or column can hold (NaN, Infinity, 1e400, past what a
spend is kept in) are refused on every way a row is written, naming the field, before anything
is kept (issue 23.6): the `policy:` scheme over the socket, REST over HTTP and the command
line, each against a started server."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.test_usage import put_policy
from tests.support.client import RpcError
from tests.support.rest import call
from tests.support.server import REPO, TOKEN, ServerProcess


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    process = ServerProcess().start()
    yield process
    process.close()


def row_text(amount: str) -> str:
    """A row as JSON text with `amount` written as is: JSON as Python reads it takes NaN,
    Infinity and 1e400, which json.dumps of a float would never spell."""
    return (
        '{"scope": "all", "match": {"agent": ["*"]}, "limits": '
        f'[{{"amount": {amount}, "measure": "usd", "period": "day", "pool": "shared"}}]}}'
    )


def post_text(server: ServerProcess, method: str, path: str, text: str) -> tuple[int, Any]:
    request = urllib.request.Request(
        server.base.replace("ws://", "http://") + "api/" + path,
        method=method,
        data=text.encode(),
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def kept(server: ServerProcess) -> list[str]:
    return [row["id"] for row in call(server, "GET", "policies/?limit=1000")[1]["results"]]


@pytest.mark.parametrize(
    ("amount", "words"),
    [
        ("NaN", "amount must be a finite number, not nan"),
        ("Infinity", "amount must be a finite number, not inf"),
        ("1e400", "amount must be a finite number, not inf"),
        ("1e300", "amount is more than 9999999999999999.99999999, the most it can be"),
        ("-1", "amount must be a number, 0 or more, not -1"),
    ],
)
async def test_a_figure_no_row_can_keep_is_refused_over_the_socket(server, connect, amount, words):
    client = await connect(server.url)
    await client.initialize()
    params = {"uri": "policy://sock", "data": row_text(amount), "encoding": "utf-8"}
    with pytest.raises(RpcError) as refused:
        await client.request("resourceWrite", params)
    assert refused.value.code == -32602
    assert refused.value.message == f"resourceWrite: policy sock: limits[0]: {words}"
    # The connection stays, and nothing was kept.
    assert "sock" not in kept(server)
    await put_policy(client, "sock", json.loads(row_text("5")))
    await client.request("resourceDelete", {"uri": "policy://sock"})


@pytest.mark.parametrize(
    ("amount", "words"),
    [
        ("1e400", "amount must be a finite number, not inf"),
        ("1e300", "amount is more than 9999999999999999.99999999, the most it can be"),
        ("10000000000000000", "amount is more than 9999999999999999.99999999"),
    ],
)
def test_a_figure_no_row_can_keep_is_a_400_over_rest(server, amount, words):
    body = row_text(amount).replace("{", '{"id": "rest", ', 1)
    status, answer = post_text(server, "POST", "policies/", body)
    assert status == 400 and answer["limits"][0].startswith(f"limits[0]: {words}")
    assert "rest" not in kept(server)
    # A change to a kept row is held to the same, and leaves it as it was.
    made = call(server, "POST", "policies/", body={"id": "kept", **json.loads(row_text("5"))})
    assert made[0] == 201
    status, answer = post_text(server, "PATCH", "policies/kept/", row_text(amount))
    assert status == 400 and answer["limits"][0].startswith(f"limits[0]: {words}")
    assert call(server, "GET", "policies/kept/")[1]["limits"][0]["amount"] == 5
    assert call(server, "DELETE", "policies/kept/")[0] == 204


def test_a_figure_no_row_can_keep_is_said_plainly_on_the_command_line(server):
    done = subprocess.run(
        [sys.executable, "manage.py", "ahpd", "policy", "set", "cli", row_text("Infinity")],
        cwd=REPO,
        env=server.env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "policy cli: limits[0]: amount must be a finite number, not inf" in done.stderr
    assert "Traceback" not in done.stderr
    assert "cli" not in kept(server)
