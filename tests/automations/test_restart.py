"""What survives a restart: every automation and every run, and a run a crash left running
reads back as failed with the reason, never started again."""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.automations.test_socket import CATALOGUE, created, entry, watching
from tests.support.agents import server_with_acp_agent
from tests.support.server import ServerProcess


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ahpd-auto-restart-") as path:
        yield Path(path)


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    with server_with_acp_agent(AHPD_AUTOMATION_SCHEDULER="embedded") as process:
        yield process


async def test_a_run_a_crash_left_running_reads_back_failed(server, connect, workdir):
    client = await watching(server, connect)
    uri = await created(client, workdir, "hang")
    params = {"channel": CATALOGUE, "automation": uri, "requestId": str(uuid.uuid4())}
    run = (await client.request("runAutomation", params))["resource"]
    await client.request("subscribe", {"channel": run})
    await client.wait_for(
        lambda: client.tracked[run][0]["lifecycle"]["status"] == "running", timeout=30
    )
    await client.close()
    server.kill()
    server.start()
    again = await watching(server, connect)
    assert entry(again, uri)["definition"]["message"]["text"] == "hang"
    state = (await again.request("subscribe", {"channel": run}))["snapshot"]["state"]
    assert state["lifecycle"]["status"] == "failed"
    assert (
        "stopped while this run was unfinished (running)" in state["lifecycle"]["error"]["message"]
    )
    assert state["lifecycle"]["startedAt"]
    session = state["primarySession"]
    read = (await again.request("subscribe", {"channel": session}))["snapshot"]["state"]
    assert read["origin"] == {"kind": "automation", "automation": uri, "run": run}
    assert entry(again, uri)["runs"][0]["lifecycle"]["status"] == "failed"
    # The same request is the same run, not a new one.
    assert (await again.request("runAutomation", params))["resource"] == run
