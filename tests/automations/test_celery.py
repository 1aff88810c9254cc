"""Celery fires schedules in the compose deployment: a real worker (with beat's one entry,
embedded in it by -B) claims the due run in the database and asks the running server, over
the channel layer, to start it. PostgreSQL + Redis only: the in-memory layer is no bridge."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.automations.test_socket import (
    CATALOGUE,
    backdate,
    created,
    entry,
    run_ended,
    watching,
)
from tests.support.agents import server_with_acp_agent
from tests.support.server import REPO, ServerProcess

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
    env = {**server.env(), "AHPD_AUTOMATION_TICK_SECONDS": "1"}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "ahpsite",
            "worker",
            "-B",
            "--pool",
            "solo",
            "--loglevel",
            "INFO",
            "--schedule",
            str(workdir / "celerybeat-schedule"),
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    yield process
    process.terminate()
    process.wait(30)


async def test_a_celery_worker_starts_a_scheduled_run_in_the_running_server(
    server, connect, workdir, worker
):
    client = await watching(server, connect)
    trigger = {
        "id": "beat",
        "kind": "schedule",
        "schedule": {"expression": "* * * * *", "timeZone": "UTC"},
        "misfirePolicy": "runOnce",
    }
    uri = await created(client, workdir, "from celery", triggers=[trigger])
    backdate(server, uri, 61)
    await client.wait_for(lambda: entry(client, uri)["runs"], timeout=60)
    run = entry(client, uri)["runs"][0]
    assert run["origin"]["kind"] == "trigger" and run["origin"]["triggerId"] == "beat"
    state = await run_ended(client, run["resource"], timeout=60)
    assert state["lifecycle"]["status"] == "completed", state
    assert worker.poll() is None
    await client.assert_conforms(CATALOGUE)
    # Beat keeps firing: the due time was claimed once.
    await client.settle()
    assert [r["origin"].get("scheduledFor") for r in entry(client, uri)["runs"]].count(
        run["origin"]["scheduledFor"]
    ) == 1
