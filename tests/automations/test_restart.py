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
from tests.support.client import RpcError
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


def keep_finished_runs(server: ServerProcess, uri: str, count: int) -> None:
    script = (
        "from automations.models import Automation, AutomationRun\n"
        f"automation = Automation.objects.get(uri={uri!r})\n"
        f"for n in range({count}):\n"
        "    at = f'2027-01-01T09:{n:02d}:00.000Z'\n"
        "    AutomationRun.objects.create(\n"
        "        uri=f'ahp-automation-run:/kept-{n}', automation=automation,\n"
        "        origin_kind='manual', status='completed', created_ms=n,\n"
        "        request_id=f'kept-request-{n}',\n"
        "        lifecycle={'status': 'completed', 'createdAt': at, 'startedAt': at,\n"
        "                   'completedAt': at})\n"
    )
    server.shell(script)


async def test_an_entry_shows_a_page_of_runs_and_fetching_adds_the_next(server, connect, workdir):
    client = await watching(server, connect)
    uri = await created(client, workdir)
    await client.close()
    keep_finished_runs(server, uri, 25)
    server.restart()
    client = await watching(server, connect)
    shown = entry(client, uri)
    assert [r["resource"] for r in shown["runs"]] == [
        f"ahp-automation-run:/kept-{n}" for n in range(24, 4, -1)
    ]
    cursor = shown["runsNextCursor"]
    params = {"channel": CATALOGUE, "automation": uri}
    # A request asked again whose run is older than the page read is that run, subscribable.
    asked = {**params, "requestId": "kept-request-0"}
    oldest = (await client.request("runAutomation", asked))["resource"]
    assert oldest == "ahp-automation-run:/kept-0"
    state = (await client.request("subscribe", {"channel": oldest}))["snapshot"]["state"]
    assert state["lifecycle"]["status"] == "completed"
    with pytest.raises(RpcError) as refused:
        await client.request("fetchAutomationRuns", {**params, "cursor": "stale"})
    assert refused.value.code == -32602
    assert refused.value.message == "Automation run-history cursor is no longer available: stale"
    assert await client.request("fetchAutomationRuns", {**params, "cursor": cursor}) == {}
    await client.wait_for(lambda: len(entry(client, uri)["runs"]) == 25)
    assert "runsNextCursor" not in entry(client, uri)
    await client.assert_conforms(CATALOGUE)
