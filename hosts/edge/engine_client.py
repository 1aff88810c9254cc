"""The engine client: the one way the Django side reaches the engine. DRF views, the admin,
Celery tasks and management commands (through the REST API of the running server) call
`perform`, a service by name as a principal (hosts/engine/services/calls.py), or `read`, a look
at this process's engine.

Where the engine is decides how. In this process (`serve`; or a process with no server loop,
a shell or a test, which starts one on a thread of its own) the call runs on the engine's loop.
A Celery worker runs no engine (ahpsite/celery.py says so at its start): its calls go over the
channel layer to the server's (ENGINE_CHANNEL, relay.py). Either way the caller's thread only
waits, at most `timeout` seconds, and is told EngineUnavailable naming what did not answer; the
engine's own database calls never need that thread (hosts/store/engine_database.py), so a
request cannot wait on itself.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from ..engine.host import Host
from ..engine.principal import Principal
from ..engine.services.calls import perform as perform_on
from . import relay, runtime

T = TypeVar("T")

#: How long a caller waits for the engine's answer unless it says otherwise.
TIMEOUT_S = 60.0

#: This process runs no engine (a Celery worker): calls go over the channel layer.
_elsewhere = False


class EngineUnavailable(Exception):
    """The engine did not answer in time, or cannot be reached from this process."""


def engine_elsewhere() -> None:
    """Say this process runs no engine of its own (a Celery worker, at its start): every call
    goes over the channel layer to the server's."""
    global _elsewhere
    _elsewhere = True


def engine_here() -> None:
    """Say this process's engine is its own again (a test that played a worker)."""
    global _elsewhere
    _elsewhere = False


def perform(service: str, principal: Principal, *, timeout: float = TIMEOUT_S, **args: Any) -> Any:
    """Run the engine's service `service` as `principal` and return its JSON answer; the
    ProtocolError it refused with, or EngineUnavailable after `timeout` seconds."""
    if _elsewhere:
        return _over_layer(service, principal, args, timeout)
    return _on_loop(lambda host: perform_on(host, service, principal, **args), service, timeout)


def read(work: Callable[[Host], Awaitable[T]], *, what: str, timeout: float = TIMEOUT_S) -> T:
    """What `work` reads of this process's engine (running turns, figures), on its loop;
    EngineUnavailable where the engine is another process's or does not answer in time."""
    if _elsewhere:
        raise EngineUnavailable(f"{what}: the engine runs in the server's process, not here")
    return _on_loop(work, what, timeout)


def tell(work: Callable[[Host], Coroutine[Any, Any, Any]]) -> None:
    """Have this process's engine, if one runs here, do `work` without waiting for it (a change
    the engine did not make, which it takes on its own time); a process running none (a shell,
    a Celery worker) starts none for it."""
    runtime.tell_engine(work)


def _on_loop(work: Callable[[Host], Awaitable[T]], what: str, timeout: float) -> T:
    async def run() -> T:
        return await work(await runtime.get_host())

    loop = runtime.engine_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        raise RuntimeError(f"{what}: called from the engine's own loop, it would wait on itself")
    future = asyncio.run_coroutine_threadsafe(run(), loop)
    try:
        return future.result(timeout)
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise EngineUnavailable(f"{what}: the engine did not answer within {timeout:g} s") from None


def _over_layer(service: str, principal: Principal, args: dict[str, Any], timeout: float) -> Any:
    layer = get_channel_layer()
    if layer is None:
        raise EngineUnavailable(f"{service}: no channel layer reaches the server's engine")
    call = relay.LayerRelay(layer, timeout_s=timeout).call
    try:
        return async_to_sync(call)(runtime.ENGINE_CHANNEL, service, principal, args)
    except relay.NoAnswer as exc:
        raise EngineUnavailable(exc.message) from None
