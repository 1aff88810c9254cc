"""A real Celery worker, with beat's one entry embedded (-B), for the tests that have it fire
schedules into running servers; and what it says, which is all it tells."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.server import REPO


@contextmanager
def celery_worker(env: dict[str, str], workdir: Path) -> Iterator[subprocess.Popen[str]]:
    """A worker (beat inside it, ticking every second) on the servers' database and Redis as
    `env` names them, writing its output to `worker_log(workdir)`; stopped after."""
    env = {**env, "AHPD_AUTOMATION_TICK_SECONDS": "1"}
    with worker_log(workdir).open("w") as log:
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
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            yield process
        finally:
            process.terminate()
            process.wait(30)


def worker_log(workdir: Path) -> Path:
    return workdir / "worker.log"


@contextmanager
def worker_output_on_failure(log: Path) -> Iterator[None]:
    """What the worker said, printed under a failure (pytest shows it with the test)."""
    try:
        yield
    except BaseException:
        print(f"--- the Celery worker's output ({log}) ---")
        print(log.read_text() if log.exists() else "(none)")
        raise


async def worker_ticking(log: Path, timeout: float = 60) -> None:
    """Until beat's first tick was run by the worker: a due time after it is fired on time."""

    async def ticked() -> None:
        while "fire_due_automations[" not in log.read_text() or "succeeded" not in log.read_text():
            await asyncio.sleep(0.2)  # the worker's own log is the only thing it tells

    await asyncio.wait_for(ticked(), timeout)
