"""The process's one engine: made on first use, started inside the serving event loop.

What it is made of (the store, the directory, the meter, the automations' store) is the
composition root's to say: settings.AHPD_ENGINE_BUILDER names the function that makes it
(ahpsite/engine.py), so the host app imports nothing of the apps that adapt its ports.

The Django side reaches it through the engine client (engine_client.py): on its loop from this
process, through the channel layer (the named channel ENGINE_CHANNEL) from a Celery worker,
never by touching sockets.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import logging
import threading
from collections.abc import Callable, Coroutine
from functools import cache
from pathlib import Path
from typing import Any

from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.conf import settings
from django.utils.module_loading import import_string

from ..backends.base import Agent, McpServerSpec
from ..backends.config import build_agents, load_agents, load_mcp_servers
from ..backends.sandbox import SandboxSettings, decide
from ..engine.host import Host, HostSettings
from ..engine.other_nodes import feeds, messages, piped_clients
from ..engine.placement import NODES_GROUP, engine_channel
from ..engine.router import Router
from ..engine.telemetry import TelemetrySettings
from ..engine.terminals import TerminalSettings
from ..store.engine_database import close_connections_async
from . import relay

log = logging.getLogger("ahpd.runtime")


ENGINE_CHANNEL = "ahpd.engine"

#: This process as a node of its host (`serve`): its id and machine, said before the engine
#: is made (serve_as_node); None for one with no server loop (a shell, a test).
_node: tuple[str, str] | None = None
_host: Host | None = None
_router: Router | None = None
_inbox: asyncio.Task[None] | None = None
#: The loop the engine runs on (daphne's, or a thread of its own for a process with none).
_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def host_settings() -> HostSettings:
    from importlib.metadata import PackageNotFoundError, version

    try:
        server_version = version("ahpd")
    except PackageNotFoundError:
        server_version = "0.1.0"
    return HostSettings(
        server_version=server_version,
        client_queue_bytes=settings.AHPD_CLIENT_QUEUE_BYTES,
        replay_bytes=settings.AHPD_REPLAY_BYTES,
        delta_window_ms=settings.AHPD_DELTA_WINDOW_MS,
        presence_grace_s=settings.AHPD_PRESENCE_GRACE_MS / 1000,
        host_name=settings.AHPD_HOST_NAME,
        state_dir=Path(settings.AHPD_DATA_DIR),
        sleep_after_s=settings.AHPD_SLEEP_AFTER_MINUTES * 60,
        session_residency_limit=settings.AHPD_SESSION_RESIDENCY_LIMIT,
        agents_per_person=settings.AHPD_AGENTS_PER_PERSON,
        automation_triggers_max=settings.AHPD_AUTOMATION_TRIGGERS_MAX,
        automations_per_person=settings.AHPD_AUTOMATIONS_PER_PERSON,
        automation_runs_per_hour=settings.AHPD_AUTOMATION_RUNS_PER_HOUR,
        watches_per_person=settings.AHPD_WATCHES_PER_PERSON,
        client_queues_total_bytes=settings.AHPD_CLIENT_QUEUES_TOTAL_BYTES,
        served_paths=tuple(settings.AHPD_PATHS),
        resource_read_limit=settings.AHPD_RESOURCE_READ_LIMIT_BYTES,
        attachment_fetch_limit=settings.AHPD_ATTACHMENT_FETCH_LIMIT_BYTES,
        # Settings files hold secrets (a token, the secret key) and may lie in a served folder.
        private_paths=tuple(
            Path(path).expanduser()
            for path in (settings.AHPD_ENV_FILE, settings.AHPD_CONNECTION_TOKEN_FILE)
            if path
        ),
        terminals=TerminalSettings(
            scrollback_bytes=settings.AHPD_TERMINAL_SCROLLBACK_BYTES,
            shell_env=settings.AHPD_SHELL_ENV,
            per_person=settings.AHPD_TERMINALS_PER_PERSON,
        ),
        sandbox=sandbox_settings(),
        telemetry=TelemetrySettings(
            # The loggers whose lines the console writes (settings.LOGGING).
            loggers=tuple(
                name
                for name, logger in settings.LOGGING["loggers"].items()
                if "console" in logger.get("handlers", ())
            ),
            metrics_interval_s=settings.OTEL_METRIC_EXPORT_INTERVAL / 1000,
            collector=settings.AHPD_OTLP_COLLECTOR_SIGNALS,
        ),
    )


@cache
def sandbox_settings() -> SandboxSettings:
    """How people's processes start here, decided once (bubblewrap is tried at the first ask);
    SandboxError when AHPD_SANDBOX=bwrap and it cannot start."""
    data = Path(settings.AHPD_DATA_DIR)
    return decide(
        settings.AHPD_SANDBOX,
        SandboxSettings(
            network=settings.AHPD_SANDBOX_NETWORK != "none",
            read_only=tuple(settings.AHPD_SANDBOX_PATHS),
            hidden=(
                data,
                *(
                    Path(path).expanduser()
                    for path in (settings.AHPD_ENV_FILE, settings.AHPD_CONNECTION_TOKEN_FILE)
                    if path
                ),
            ),
            homes=data / "homes",
            checkout=Path(settings.BASE_DIR),
        ),
    )


@cache
def configured_agents() -> dict[str, Agent]:
    """The agents AHPD_CONFIG names (none without it). Raises ConfigError for a bad file."""
    if not settings.AHPD_CONFIG:
        return {}
    configs = load_agents(Path(settings.AHPD_CONFIG).expanduser())
    return build_agents(configs, Path(settings.AHPD_DATA_DIR))


@cache
def configured_mcp_servers() -> tuple[McpServerSpec, ...]:
    """The MCP servers AHPD_CONFIG's `mcpServers` names, every session offered them (none
    without it): each bad entry is a warning in the log, once, and is left out. The composition
    root gives them to the host's MCP directory (ahpsite/engine.py)."""
    if not settings.AHPD_CONFIG:
        return ()
    return tuple(load_mcp_servers(Path(settings.AHPD_CONFIG).expanduser()))


def serve_as_node(node_id: str, machine: str) -> None:
    """Say, before the engine is made, that this process is the node `node_id` of its host:
    its engine runs the sessions the database gives it (hosts/engine/placement.py) and reads
    the calls other processes send it by name as well as the host's."""
    global _node
    _node = (node_id, machine)


def shared_layer() -> bool:
    """Whether this process's channel layer reaches other processes (Redis), as the nodes of
    a host of several must share one; the embedded default's lives in this process alone."""
    layer = get_channel_layer()
    return layer is not None and not isinstance(layer, InMemoryChannelLayer)


def this_node() -> tuple[str, str] | None:
    """(id, machine) of this process's node, where it is one (the composition root asks)."""
    return _node


def engine_started() -> bool:
    """Whether this process's engine runs (under `serve` it always does, before the port
    opens); a page that only reads it starts none."""
    return _host is not None


async def get_host() -> Host:
    """The started engine of this process."""
    return (await get_router()).host


async def get_router() -> Router:
    """The started engine of this process, behind the router its sockets talk to."""
    global _host, _router, _inbox, _loop
    if _host is None:
        _loop = asyncio.get_running_loop()
        build: Callable[[], Host] = import_string(settings.AHPD_ENGINE_BUILDER)
        _host = build()
        _router = Router(_host)
        # A client another node's socket pipes here is answered as this node's own are.
        _host.pipes.receive = _router.receive
        await _host.start()
        await _start_automations(_host)
        # What the engine read at start lives as long as the process: the cyclic collector
        # need not walk it again at every pass (a full listing of 10k sessions halves).
        gc.freeze()
    await _host.start()
    if _inbox is None:
        channels = [ENGINE_CHANNEL, *([engine_channel(_node[0])] if _node else [])]
        if _node:
            # Told what every node is told (root config, sessions' rows) before it serves.
            await _join_nodes_group(channels[-1])
        _inbox = asyncio.get_running_loop().create_task(
            _read_inboxes(_host, channels), name="ahpd-inbox"
        )
    assert _router is not None
    return _router


async def _start_automations(host: Host) -> None:
    """The catalogue read back, and, in the embedded deployment, this process's scheduler
    (a host made with no automations' store has none)."""
    if host.automations is None:
        return
    await host.automations.start()
    if settings.AHPD_AUTOMATION_SCHEDULER == "embedded":
        host.automations.start_scheduler(settings.AHPD_AUTOMATION_TICK_SECONDS)


def forget_principals(tokens: list[int] | None, timeout: float = 10.0) -> None:
    """Tell this process's engine, if it runs, that these tokens' principals (None: any)
    changed (hosts/edge/principal_changes.py); return once it has taken it, so that whatever
    thread asked, the change holds for the next command the engine reads."""
    host, loop = _host, _loop
    if host is None or loop is None:
        return
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        host.forget_principals(tokens)
        return
    taken: concurrent.futures.Future[None] = concurrent.futures.Future()

    def forget() -> None:
        try:
            host.forget_principals(tokens)
        except BaseException as error:
            taken.set_exception(error)
            raise
        taken.set_result(None)

    try:
        loop.call_soon_threadsafe(forget)
    except RuntimeError:
        return  # the loop is closed: the engine, and what it kept, are gone
    taken.result(timeout)


def tell_engine(work: Callable[[Host], Coroutine[Any, Any, Any]]) -> None:
    """Have this process's engine, if it runs, do `work` on its loop, from any thread, without
    waiting for it (what it fails with is logged): how a change the engine did not make (a
    registry row the admin saved) reaches it."""
    host, loop = _host, _loop
    if host is None or loop is None:
        return

    async def run() -> None:
        try:
            await work(host)
        except Exception:
            log.exception("the engine could not take a change made outside it")

    try:
        asyncio.run_coroutine_threadsafe(run(), loop)
    except RuntimeError:
        pass  # the loop is closed: the engine is gone


def engine_loop() -> asyncio.AbstractEventLoop:
    """The loop this process's engine runs on: daphne's under `serve`; in a process with none
    (a shell, a test) one on a thread of its own, its engine started there now. The engine
    client (engine_client.py) is what calls it."""
    global _loop
    with _loop_lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="ahpd-engine", daemon=True).start()
            asyncio.run_coroutine_threadsafe(get_host(), loop).result(60)
        assert _loop is not None
        return _loop


async def shutdown() -> None:
    """Stop the engine cleanly (Host.stop: running turns ended, every client closed 1001, the
    store written); called as the server stops, on SIGTERM or SIGINT. Safe to call again."""
    global _inbox
    if _inbox is not None:
        _inbox.cancel()
        _inbox = None
    if _host is not None:
        if _host.automations is not None:
            _host.automations.stop()
        await _host.stop()
    # What the engine's database threads hold goes with it (a test's database is dropped
    # next; a server's process ends).
    await close_connections_async()


async def _read_inboxes(host: Host, channels: list[str]) -> None:
    """Read every channel this engine is asked on: the host's (any node may take a message
    sent there) and, for a node, its own (what another node carries to the sessions it
    runs, and what every node is told)."""
    readers = [_read_inbox(host, channel) for channel in channels]
    if host.placement.node_id:
        readers.append(_stay_in_nodes_group(channels[-1]))
    await asyncio.gather(*readers)


async def _join_nodes_group(inbox: str) -> None:
    layer = get_channel_layer()
    if layer is not None:
        await layer.group_add(NODES_GROUP, inbox)


async def _stay_in_nodes_group(inbox: str) -> None:
    """Keep this node's inbox in the group every node tells the others through (a member
    not added again within the layer's group expiry, a day, would drop out)."""
    while True:
        await asyncio.sleep(3600)
        try:
            await _join_nodes_group(inbox)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("joining %s again failed", NODES_GROUP)


async def _read_inbox(host: Host, channel: str) -> None:
    """What other processes ask of this engine: host actions to say, one at a time, in order,
    and service calls (relay.py), each answered on its own."""
    layer = get_channel_layer()
    if layer is None:
        return
    while True:
        try:
            message = await layer.receive(channel)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("reading %s failed; retrying", channel)
            await asyncio.sleep(1)
            continue
        kind = message.get("type")
        if kind == relay.CALL:
            asyncio.get_running_loop().create_task(relay.answer_call(host, layer, message))
            continue
        try:
            # From the other nodes, taken in the order they sent it.
            if kind == feeds.FRAMES:
                host.mirrors.take(message["frames"])
                continue
            if kind == feeds.LOST:
                await host.nodes.feeder_lost(str(message["node"]))
                continue
            if kind == relay.DISPATCH:
                await relay.take_dispatch(host, message)
                continue
            if kind in messages.HEARD:
                await host.nodes.heard(message)
                continue
            if kind in piped_clients.KINDS:
                await host.pipes.heard(message)
                continue
            elsewhere = await host.wake(str(message.get("channel")))
            if elsewhere is not None:
                # The session is another node's: said there, in the order it came.
                await layer.send(elsewhere.channel, message)
                continue
            await _apply(host, message)
        except Exception:
            log.exception("engine message %r failed", message.get("type"))


async def _apply(host: Host, message: dict[str, Any]) -> None:
    if message.get("type") != "host.action":
        log.warning("engine message of unknown type %r ignored", message.get("type"))
        return
    reason = await host.say_host_action(message.get("channel"), message.get("action"))
    if reason is not None:
        log.warning("host action refused: %s", reason)
