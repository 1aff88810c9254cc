"""The agent process and the ACP session in it: starting, loading or opening, configuring.

The turns run in that session are `chat.py`'s; this half knows how to (re)start the agent, which
session to be in, and what the agent says about the session itself (its commands, its mode).
Everything else the agent says belongs to the running turn and goes to it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import acp
from acp import RequestError
from acp.client.connection import ClientSideConnection
from acp.schema import (
    ClientCapabilities,
    FileSystemCapabilities,
    Implementation,
    RequestPermissionResponse,
    ToolCallUpdate,
)
from acp.schema import PermissionOption as AcpPermissionOption

from hosts.backends.base import BackendError, ChatContext
from hosts.backends.fence import Fence
from hosts.backends.process import host_env

from .agent_process import AgentProcess
from .client import HostClient
from .client_tools import ClientToolsServed
from .errors import AgentGone, describe
from .json_fields import string
from .mcp_servers import HandedServers, needs
from .permissions import ask_person
from .session_facts import SessionFacts, parse_commands
from .turn import Turn
from .updates import said_cost

if TYPE_CHECKING:
    from .agent import AcpAgent

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Host variables an agent gets; everything else it needs comes from the operator's `env`.
INHERITED_ENV = ("PATH", "LANG", "TERM")
#: How long starting an agent (initialize, authenticate, session/new or load) may take.
START_TIMEOUT_S = 60.0


class AcpSession:
    """One chat's agent process and ACP session, which can be started again after it dies."""

    def __init__(self, agent: AcpAgent, context: ChatContext) -> None:
        if not context.working_directories:
            raise BackendError("An ACP chat needs a working directory.")
        self.backend_id: str | None = context.backend_id
        #: Slash commands the agent announced: {"name", "description", "hint"}.
        self.commands: list[dict[str, Any]] = []
        self._agent = agent
        self._config = agent.config
        self._context = context
        self._jail = jail = context.jail
        # In a sandbox the agent's HOME is its session owner's, kept by the sandbox; else the
        # operator's, or one of the host's (agent.home_for).
        self._home: Path | None = None
        if jail is not None and jail.on:
            self._home_env = jail.home_env()
        else:
            self._home = agent.home_for(context)
            self._home_env = {"HOME": str(self._home)}
        # The agent is told the directories as configured; the fence compares real paths.
        self._directories = [str(Path(d).absolute()) for d in context.working_directories]
        # Commands run for the agent get the plain environment, not the operator's secrets.
        terminal_env = {**host_env(INHERITED_ENV), **self._home_env}
        self.client = HostClient(
            Fence(context.working_directories),
            terminal_env,
            self._ask,
            host=context.terminals,
            turn_id=lambda: self._turn.turn_id if self._turn is not None else None,
        )
        self._link = AgentProcess(self._name)
        self._facts = SessionFacts()
        #: What the agent said its prompts may carry beside text (images, embedded files).
        self.prompt_capabilities: Any = None
        self._model: str | None = None
        self._mode: str | None = None
        #: While a session is being loaded: its replayed history is not a turn's.
        self._loading = False
        #: The raw result of the last session/new or session/load.
        self._session_result: Any = None
        #: The session's MCP servers as the agent was last handed them.
        self._mcp = HandedServers(context.mcp_servers, False, context.mcp_state)
        #: The session's clients' tools, served to the agent as the MCP server `client`.
        self.client_tools = ClientToolsServed(context.client_tools)
        #: The chat's completed turns, {"user", "assistant"}: handed to a new agent session.
        self._history: list[Mapping[str, str]] = list(context.history)
        #: Whether the next prompt opens a new agent session that has not been given them.
        self._history_due = False
        #: The turn running in the session, which the agent's other updates belong to.
        self._turn: Turn | None = None
        #: The session's cumulative cost as the agent last said it (ACP's usage_update):
        #: 0 for a session just made, not known (None) for a loaded one until it says one.
        self.cost_said: float | None = None

    @property
    def _name(self) -> str:
        return self._config.display_name or self._config.provider

    # -- the agent process and its session ------------------------------------------------------

    def _alive(self) -> bool:
        return self._link.alive

    async def start(self) -> None:
        """Spawn the agent, initialize, authenticate if configured, then load or open a session."""
        try:
            await asyncio.wait_for(self._start(), START_TIMEOUT_S)
        except TimeoutError:
            await self._stop(kill=True)
            raise BackendError(
                f"{self._name} did not start within {START_TIMEOUT_S:g} s."
            ) from None
        except AgentGone as gone:
            await self._stop(kill=True)
            raise BackendError(str(gone)) from None
        except RequestError as error:
            await self._stop(kill=True)
            raise BackendError(f"{self._name}: {describe(error)}") from None
        except BaseException:
            await self._stop(kill=True)
            raise

    async def _start(self) -> None:
        if self._home is not None:
            self._home.mkdir(parents=True, exist_ok=True)
        env = {**host_env(INHERITED_ENV), **self._home_env, **self._config.env}
        self._link = link = AgentProcess(self._name)
        relay = await self.client_tools.prepare()
        conn = await link.start(
            [self._config.command, *self._config.args],
            env=env,
            cwd=self._directories[0],
            client=cast(acp.Client, self.client),
            on_update=self._on_update,
            on_session=self._on_session_result,
            jail=self._jail,
            # The paths its configuration names, bound read-only where they lie, and what it
            # needs to start the session's MCP servers.
            needs=(
                *self._config.args,
                *self._config.env.values(),
                *needs(self._context.mcp_servers),
                *relay,
            ),
        )
        init = await link.rpc(
            conn.initialize(
                protocol_version=acp.PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(
                    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True),
                    terminal=True,
                ),
                client_info=Implementation(name="ahpd", version="1"),
            )
        )
        if self._config.auth_method:
            await link.rpc(conn.authenticate(method_id=self._config.auth_method))
        capabilities = init.agent_capabilities
        self.prompt_capabilities = capabilities.prompt_capabilities if capabilities else None
        can_load = bool(capabilities and capabilities.load_session)
        sessions = capabilities.session_capabilities if capabilities else None
        self._agent.learn_directories(bool(sessions and sessions.additional_directories))
        # More than one working directory only where the agent said it takes them.
        more = self._directories[1:] if sessions and sessions.additional_directories else None
        mcp = capabilities.mcp_capabilities if capabilities else None
        self._mcp = HandedServers(
            self._context.mcp_servers, bool(mcp and mcp.http), self._context.mcp_state
        )
        self._mcp.starting()
        over_http = self._over_http(bool(mcp and mcp.http))
        try:
            servers = [*self._mcp.servers(), *await self.client_tools.handed(over_http=over_http)]
            await self._open_session(conn, can_load, more or None, servers)
        except RequestError as error:
            self._mcp.failed(f"{self._name}: {describe(error)}")
            raise
        except BaseException:
            self._mcp.failed(f"{self._name} did not open its session.")
            raise
        self._mcp.ready()

    def _over_http(self, takes_http: bool) -> bool:
        """Whether the agent reaches an MCP server on the host's loopback: it takes HTTP ones,
        and its sandbox shares the host's network (unless the operator cut it)."""
        jail = self._jail
        return takes_http and not (
            jail is not None and jail.on and not jail.sandbox.settings.network
        )

    async def _open_session(
        self,
        conn: ClientSideConnection,
        can_load: bool,
        more: list[str] | None,
        servers: list[Any],
    ) -> None:
        cwd = self._directories[0]
        if self.backend_id and can_load:
            self._loading = True
            self.cost_said = None  # until the loaded session says what it has cost
            try:
                await self._rpc(
                    conn.load_session(
                        cwd=cwd,
                        session_id=self.backend_id,
                        mcp_servers=servers,
                        additional_directories=more,
                    )
                )
            except RequestError as error:
                # The agent lost the session (its HOME was wiped, say): the chat goes on in a
                # new one rather than not at all.
                log.warning(
                    "%s could not load session %s (%s); starting a new one",
                    self._name,
                    self.backend_id,
                    describe(error),
                )
            else:
                self._session_opened()
                return
            finally:
                self._loading = False
        elif self.backend_id:
            log.info("%s cannot load sessions; %s starts a new one", self._name, self._context.chat)
        previous, self.backend_id = self.backend_id, None
        try:
            response = await self._rpc(
                conn.new_session(cwd=cwd, mcp_servers=servers, additional_directories=more)
            )
        except BaseException:
            self.backend_id = previous  # kept, so a later start may still load it
            raise
        self.backend_id = response.session_id
        self.cost_said = 0.0
        # A new session knows nothing of the chat: its first prompt brings the kept turns.
        self._history_due = bool(self._history)
        self._session_opened()
        await self._apply_config(conn)

    def _session_opened(self) -> None:
        facts = SessionFacts.parse(self._session_result)
        self._session_result = None
        self._facts = facts
        self._mode = facts.current_mode
        self._model = facts.current_model
        self._agent.learn(facts)

    async def _apply_config(self, conn: ClientSideConnection) -> None:
        """Put a new session in the mode and model the chat was configured with, if offered."""
        mode = self._context.config.get("mode")
        if isinstance(mode, str) and mode != self._mode:
            if any(known["id"] == mode for known in self._facts.modes):
                try:
                    await self._rpc(conn.set_session_mode(session_id=self._session, mode_id=mode))
                    self._mode = mode
                except RequestError as error:
                    log.warning("%s refused mode %s: %s", self._name, mode, describe(error))
        model = self._context.config.get("model")
        if isinstance(model, str):
            await self._select_model(model)

    async def _select_model(self, model: str) -> None:
        facts = self._facts
        conn = self._link.conn
        if model == self._model or facts.model_option is None or conn is None:
            return
        if all(model_id != model for model_id, _ in facts.models):
            return
        try:
            await self._rpc(
                conn.set_config_option(
                    config_id=facts.model_option, session_id=self._session, value=model
                )
            )
            self._model = model
        except RequestError as error:
            log.warning("%s refused model %s: %s", self._name, model, describe(error))

    @property
    def _session(self) -> str:
        assert self.backend_id is not None
        return self.backend_id

    async def _rpc(self, call: Awaitable[T]) -> T:
        return await self._link.rpc(call)

    async def _stop(self, *, kill: bool = False) -> None:
        """End the agent process, and the terminals it left, before it is signalled."""
        await self._link.stop(kill=kill, first=self.client.close_terminals)

    # -- what the agent says ----------------------------------------------------------------------

    def _on_session_result(self, result: Any) -> None:
        self._session_result = result

    def _on_update(self, params: Any) -> None:
        """One `session/update`, synchronously and in wire order (see `pipe.py`)."""
        if not isinstance(params, Mapping):
            return
        update = params.get("update")
        session_id = params.get("sessionId")
        if not isinstance(update, Mapping) or (self.backend_id and session_id != self.backend_id):
            return
        kind = update.get("sessionUpdate")
        if kind == "available_commands_update":
            self.commands = parse_commands(update.get("availableCommands"))
            return
        if kind == "current_mode_update":
            self._mode = string(update.get("currentModeId")) or self._mode
            return
        if kind == "usage_update" and (said := said_cost(update)) is not None:
            # Where the next turn's cost counts from (after the running turn's own use).
            self.cost_said = said.amount
        if self._loading:
            return  # the replayed history of a loaded session, not news
        turn = self._turn
        if turn is None:
            log.debug("%s: %s outside a turn, dropped", self._name, kind)
            return
        turn.updates.apply(update)

    async def _ask(
        self, tool_call: ToolCallUpdate, options: Sequence[AcpPermissionOption]
    ) -> RequestPermissionResponse:
        return await ask_person(self._turn, tool_call, options)
