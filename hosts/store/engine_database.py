"""The engine's database calls: every ORM call the engine's ports make (the store, the people
directory, the usage meter, the automation store) runs on one executor of the engine's own.

Never on asgiref's thread: a sync view (REST, the admin) holds that one thread while it waits
for the engine, so an engine call sent there would wait on the request waiting on it. These
threads are no request's, so no request can wait on itself, whichever port it reaches. A few
threads: the write-behind, a turn's metering and an automation's run each write at once;
SQLite's transactions begin IMMEDIATE, so two writers wait their turn rather than fail.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from django.db import close_old_connections, connections

#: How many threads the engine's database calls share.
THREADS = 4
#: What the threads are called (in a stack dump, a profiler, `py-spy`).
THREAD_NAME = "ahpd-engine-db"

P = ParamSpec("P")
T = TypeVar("T")

_executor: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _executor
    with _lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix=THREAD_NAME)
        return _executor


def _checked(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    # Its connection checked first: no request cycle does that on these threads, and a
    # database restart would otherwise break the engine's connection for good.
    close_old_connections()
    return function(*args, **kwargs)


def db_call(function: Callable[P, T]) -> Callable[P, Awaitable[T]]:
    """`function` as a coroutine function that runs it on the engine's database executor."""

    async def call(*args: P.args, **kwargs: P.kwargs) -> T:
        work = functools.partial(_checked, function, *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(_pool(), work)

    return call


def close_connections(timeout: float = 30.0) -> None:
    """Close the connection each of the executor's threads holds, and let the threads go (the
    engine stopped: a test's database is dropped after, which a held connection would stop).
    Blocking: call it off the engine's loop."""
    global _executor
    with _lock:
        pool, _executor = _executor, None
    if pool is None:
        return
    # Every thread takes one closing call: each waits at the barrier until all are taken,
    # so no thread can take two while another takes none.
    barrier = threading.Barrier(THREADS)

    def close() -> None:
        barrier.wait(timeout)
        connections.close_all()

    for done in [pool.submit(close) for _ in range(THREADS)]:
        done.result()
    pool.shutdown(wait=True)


async def close_connections_async() -> None:
    """close_connections, awaited from the engine's loop."""
    await asyncio.get_running_loop().run_in_executor(None, close_connections)


__all__ = ["THREADS", "close_connections", "close_connections_async", "db_call"]
