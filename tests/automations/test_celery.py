"""Celery fires schedules in the compose deployment: a real worker (with beat's one entry,
embedded in it by -B) claims the due run in the database and asks the running server, over
the channel layer, to start it. PostgreSQL + Redis only: the in-memory layer is no bridge."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from tests.automations.test_socket import (
    CATALOGUE,
    created,
    entry,
    run_ended,
    watching,
)
from tests.support.agents import server_with_acp_agent
from tests.support.celery_worker import (
    celery_worker,
    worker_output_on_failure,
    worker_ticking,
)
from tests.support.celery_worker import worker_log as log_of
from tests.support.server import ServerProcess

pytestmark = pytest.mark.skipif(
    not os.environ.get("REDIS_URL"), reason="Celery's broker and the channel layer are Redis"
)


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ahpd-celery-") as path:
        yield Path(path)


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    # Under Redis the server leaves schedules to Celery (AHPD_AUTOMATION_SCHEDULER=celery).
    with server_with_acp_agent() as process:
        yield process


@pytest.fixture(scope="module")
def worker(server: ServerProcess, workdir: Path) -> Iterator[subprocess.Popen[str]]:
    with celery_worker(server.env(), workdir) as process:
        yield process


@pytest.fixture(scope="module")
def worker_log(workdir: Path) -> Path:
    return log_of(workdir)


def seconds_between(earlier: str, later: str) -> float:
    return (datetime.fromisoformat(later) - datetime.fromisoformat(earlier)).total_seconds()


async def test_a_celery_worker_starts_a_scheduled_run_in_the_running_server(
    server, connect, workdir, worker, worker_log
):
    with worker_output_on_failure(worker_log):
        await worker_ticking(worker_log)
        client = await watching(server, connect)
        trigger = {
            "id": "beat",
            "kind": "schedule",
            "schedule": {"expression": "* * * * *", "timeZone": "UTC"},
            "misfirePolicy": "runOnce",
        }
        # Due at the next minute boundary: beat ticks every second, and the worker claims it.
        uri = await created(client, workdir, "from celery", triggers=[trigger])
        await client.wait_for(lambda: entry(client, uri)["runs"], timeout=90)
        run = entry(client, uri)["runs"][0]
        origin = run["origin"]
        assert origin["kind"] == "trigger" and origin["triggerId"] == "beat"
        assert "catchUp" not in origin
        state = await run_ended(client, run["resource"], timeout=60)
        assert state["lifecycle"]["status"] == "completed", state
        # Started within 5 s of its due time, as the server recorded both.
        late = seconds_between(origin["scheduledFor"], state["lifecycle"]["startedAt"])
        assert 0 <= late <= 5, (origin["scheduledFor"], state["lifecycle"])
        assert worker.poll() is None
        await client.assert_conforms(CATALOGUE)
        await client.assert_conforms(run["resource"])
        off = {"type": "automation/updateRequested", "resource": uri, "changes": {"enabled": False}}
        assert "rejectionReason" not in await client.dispatch_and_wait(CATALOGUE, off)
        # Beat kept firing: the due time was claimed once.
        await client.settle()
        scheduled = [r["origin"].get("scheduledFor") for r in entry(client, uri)["runs"]]
        assert scheduled.count(origin["scheduledFor"]) == 1
