"""One Claude conversation as an `AgentChat`: one Claude Code CLI, driven by one
`ClaudeSDKClient`, and the CLI's session in it.

The session id is the chat's backend id, chosen here for a new chat (`--session-id`) so the
engine can keep it from the moment the chat opens; a chat opened again (after the host let an
idle CLI go, or restarted) resumes it (`--resume`) from the transcript the CLI keeps in its
HOME. A turn is one user message written to the CLI; it ends with the CLI's result, with an
interrupt (a cancel, or the prompt timeout), or when the CLI dies, which the next turn
restarts it from.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import uuid
from collections import deque
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from claude_agent_sdk import (
    ClaudeAgentOptions,
    ClaudeSDKClient,
    ConversationResetMessage,
    ResultMessage,
    ToolPermissionContext,
)
from claude_agent_sdk.types import PermissionMode

from hosts.backends.acp.history import earlier_conversation
from hosts.backends.base import (
    BackendError,
    ChatContext,
    Context,
    Cost,
    TurnEnd,
    TurnEvents,
    TurnRequest,
)
from hosts.backends.process import host_env

from .cli_process import JailedCliTransport, bundled_cli
from .client_tools_server import SERVER_NAME, ClientToolsServer
from .mcp_config import contributor, server_names, write_config
from .permissions import Decision, decide
from .prompt import user_message
from .turn import Turn

if TYPE_CHECKING:
    from .agent import ClaudeAgent

log = logging.getLogger(__name__)

#: Host variables the CLI gets; everything else it needs comes from the operator's `env`.
INHERITED_ENV = ("PATH", "LANG", "TERM")
#: Under the operator's `env`: no telemetry, error reports or update checks from a server.
DEFAULT_ENV = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
#: How long starting the CLI (its start and the SDK's initialize) may take.
START_TIMEOUT_S = 60.0
#: How many of the CLI's last stderr lines are kept to explain why it failed.
STDERR_TAIL_LINES = 20
PERMISSION_MODES: tuple[PermissionMode, ...] = (
    "default",
    "acceptEdits",
    "plan",
    "bypassPermissions",
    "dontAsk",
    "auto",
)


class ClaudeChat:
    """One conversation: one CLI process and its session, started again after it dies."""

    #: How long a cancelled (or timed-out) turn waits for the CLI to stop before killing it.
    cancel_grace_s: float = 5.0

    def __init__(self, agent: ClaudeAgent, context: ChatContext) -> None:
        if not context.working_directories:
            raise BackendError("A Claude chat needs a working directory.")
        self.backend_id: str | None = context.backend_id
        self._agent = agent
        self._config = agent.config
        self._context = context
        self._directories = [str(Path(d).absolute()) for d in context.working_directories]
        self._home = agent.home_for(context)
        model = context.config.get("model")
        self._model: str | None = model if isinstance(model, str) and model else None
        self._model = self._model or self._config.model or None
        mode = context.config.get("permissionMode")
        self._mode: PermissionMode | None = (
            cast(PermissionMode, mode) if mode in PERMISSION_MODES else None
        )
        #: The tools a person allowed for the rest of this chat.
        self._allowed = agent.allowed_tools(context.chat)
        self._client: ClaudeSDKClient | None = None
        self._transport: JailedCliTransport | None = None
        self._stderr: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self._turn: Turn | None = None
        self._turn_lock = asyncio.Lock()
        self._closed = False
        self._dead = False
        #: The chat's completed turns, {"user", "assistant"}: handed to a new CLI session.
        self._history: list[Mapping[str, str]] = list(context.history)
        self._history_due = False
        #: The team's MCP servers by the name the CLI knows each by.
        self._team = server_names(context.mcp_servers)
        #: The clients' tools, where a client can run one here.
        self._client_tools = ClientToolsServer() if context.client_tools is not None else None
        #: The CLI's `--mcp-config` file while it runs (holds the team servers' secrets).
        self._mcp_config: Path | None = None

    @property
    def _name(self) -> str:
        return self._config.display_name or self._config.provider

    # -- the CLI ---------------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the CLI on the chat's session: resumed where the CLI has its transcript, else
        a new one (under the chat's backend id where it has one)."""
        self._home.mkdir(parents=True, exist_ok=True, mode=0o700)
        known = self.backend_id if self.backend_id and _is_uuid(self.backend_id) else None
        if known is not None and self._transcript_exists(known):
            try:
                await self._connect(resume=known)
            except BackendError as error:
                # The CLI cannot read it any more: the chat goes on in a new session rather
                # than not at all, handed the turns the person sees.
                log.warning("%s could not resume %s (%s); starting anew", self._name, known, error)
            else:
                self.backend_id = known
                return
            known = None
        session = known or str(uuid.uuid4())
        await self._connect(session_id=session)
        self.backend_id = session
        self._agent.costs[session] = 0.0
        self._history_due = bool(self._history)

    def _transcript_exists(self, session: str) -> bool:
        config_dir = self._env().get("CLAUDE_CONFIG_DIR")
        root = Path(config_dir) if config_dir else self._home / ".claude"
        return any((root / "projects").glob(f"*/{session}.jsonl"))

    def _env(self) -> dict[str, str]:
        env = {**host_env(INHERITED_ENV), **DEFAULT_ENV}
        jail = self._context.jail
        if jail is not None and jail.on:
            # It is in a sandbox: the CLI, run as root there, would otherwise refuse
            # bypassPermissions.
            env["IS_SANDBOX"] = "1"
        env.update(self._config.env)
        # The person's own Claude state, whatever the operator's env says.
        env["HOME"] = str(self._home)
        if jail is not None and jail.on:
            env["TMPDIR"] = "/tmp"
        return env

    async def _connect(self, *, resume: str | None = None, session_id: str | None = None) -> None:
        cli = self._config.cli_path or bundled_cli()
        if not cli:
            raise BackendError(
                f"{self._name}: claude-agent-sdk ships no claude CLI for this machine; "
                "set cliPath to one."
            )
        sdk_servers: dict[str, Any] = {}
        if self._client_tools is not None:
            sdk_servers[SERVER_NAME] = {
                "type": "sdk",
                "name": SERVER_NAME,
                "instance": self._client_tools.server,
            }
        mcp_config = None
        if self._team or sdk_servers:
            mcp_config = self._home / ".ahpd-mcp" / f"{uuid.uuid4()}.json"
            write_config(mcp_config, self._team, bool(sdk_servers))
        options = ClaudeAgentOptions(
            cwd=self._directories[0],
            add_dirs=list(self._directories[1:]),
            cli_path=str(cli),
            model=self._model,
            permission_mode=self._mode,
            resume=resume,
            session_id=session_id,
            include_partial_messages=True,
            can_use_tool=self._can_use_tool,
            system_prompt={"type": "preset", "preset": "claude_code"},
            setting_sources=["user", "project", "local"],
            stderr=self._on_stderr,
            # The SDK routes the in-process server's messages by this; the CLI is told of
            # every server by the file (see mcp_config.py).
            mcp_servers=cast(Any, sdk_servers),
        )
        jail = self._context.jail
        if jail is not None:
            jail = dataclasses.replace(jail, writable=(*jail.writable, self._home))
        transport = JailedCliTransport(
            # What ClaudeSDKClient does to its own options when it starts its own transport:
            # permission questions come over stdio, to can_use_tool.
            dataclasses.replace(
                options,
                permission_prompt_tool_name="stdio",
                mcp_servers=str(mcp_config) if mcp_config is not None else {},
            ),
            env=self._env(),
            jail=jail,
            needs=tuple(self._config.env.values()),
        )
        client = ClaudeSDKClient(options, transport=transport)
        self._forget_mcp_config()
        self._mcp_config = mcp_config
        if self._client_tools is not None:
            self._client_tools.listed = False
        self._stderr.clear()
        try:
            await asyncio.wait_for(client.connect(), START_TIMEOUT_S)
        except TimeoutError:
            await self._disconnect(client, transport)
            raise BackendError(
                f"{self._name} did not start within {START_TIMEOUT_S:g} s{self._last_words()}"
            ) from None
        except FileNotFoundError as error:
            await self._disconnect(client, transport)
            raise BackendError(
                f"Cannot start {self._name}: {error.filename or cli} was not found"
            ) from None
        except Exception as error:
            await self._disconnect(client, transport)
            raise BackendError(f"Cannot start {self._name}: {error}{self._last_words()}") from None
        self._client, self._transport, self._dead = client, transport, False

    def _on_stderr(self, line: str) -> None:
        self._stderr.append(line[:500])
        log.debug("%s stderr: %s", self._name, line)

    def _last_words(self) -> str:
        return f": {self._stderr[-1]}" if self._stderr else ""

    def _alive(self) -> bool:
        transport = self._transport
        return (
            self._client is not None
            and not self._dead
            and transport is not None
            and transport.running()
        )

    async def _disconnect(self, client: ClaudeSDKClient, transport: JailedCliTransport) -> None:
        with contextlib.suppress(Exception):
            await client.disconnect()
        transport.kill_group()

    async def _stop(self, *, kill: bool = False) -> None:
        client, transport = self._client, self._transport
        self._client = self._transport = None
        if client is None or transport is None:
            self._forget_mcp_config()
            return
        if kill:
            transport.kill_group()
        await self._disconnect(client, transport)
        self._forget_mcp_config()

    def _forget_mcp_config(self) -> None:
        if self._mcp_config is not None:
            self._mcp_config.unlink(missing_ok=True)
            self._mcp_config = None

    def _contributor(self, tool_name: str) -> Mapping[str, Any] | None:
        if self._client_tools is not None and (found := self._client_tools.contributor(tool_name)):
            return found
        return contributor(self._team, tool_name)

    def _display(self, tool_name: str) -> str | None:
        return self._client_tools.display_name(tool_name) if self._client_tools else None

    async def _can_use_tool(
        self, tool_name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> Decision:
        return await decide(self._turn, self._allowed, tool_name, tool_input, context)

    # -- turns -----------------------------------------------------------------------------------

    async def run_turn(self, request: TurnRequest, events: TurnEvents) -> TurnEnd:
        """Write the person's message to the CLI and report the turn until its result."""
        async with self._turn_lock:
            turn = Turn(
                events,
                request.turn_id,
                contributor_of=self._contributor,
                display_of=self._display,
            )
            self._turn = turn
            try:
                if self._closed:
                    return TurnEnd("cancelled")
                # The tools the clients provide now: this turn's, whatever they say after.
                relist = self._client_tools is not None and self._client_tools.offer(
                    self._context.client_tools() if self._context.client_tools else ()
                )
                if not self._alive() or relist:
                    # A changed set of client tools starts the CLI again, resumed, as VS Code's
                    # Claude rebinds its query at the next send: the CLI lists an in-process
                    # server's tools once, and takes no reconnect of one.
                    await self._stop(kill=not relist)
                    try:
                        await self.start()
                    except BackendError as error:
                        return TurnEnd("error", str(error))
                if turn.cancelled.is_set():
                    return TurnEnd("cancelled")
                client = self._client
                assert client is not None
                if request.model and request.model != self._model:
                    try:
                        await client.set_model(request.model)
                    except Exception as error:
                        return TurnEnd(
                            "error", f"{self._name} cannot switch to {request.model}: {error}"
                        )
                    self._model = request.model
                if self._client_tools is not None:
                    self._client_tools.events = events
                earlier = earlier_conversation(self._history) if self._history_due else None
                self._history_due = False
                try:
                    await client.query(_one(user_message(request, earlier)))
                except Exception as error:
                    self._dead = True
                    return TurnEnd("error", f"{self._name} cannot be written to: {error}")
                end = await self._wait(turn, asyncio.ensure_future(self._read(turn, client)))
                if end.state == "complete":
                    self._history.append({"user": request.text, "assistant": "".join(turn.said)})
                return end
            finally:
                self._turn = None
                if self._client_tools is not None:
                    self._client_tools.events = None
                for question in turn.questions:
                    question.cancel()

    async def _read(self, turn: Turn, client: ClaudeSDKClient) -> ResultMessage | None:
        """Say what the CLI sends until the turn's result; None if its output ended first."""
        async for message in client.receive_messages():
            if isinstance(message, ConversationResetMessage):
                # `/clear`: the CLI's running totals start again from nothing.
                self._agent.costs[self.backend_id or message.session_id] = 0.0
            result = turn.apply(message)
            if result is not None:
                return result
        return None

    async def _wait(self, turn: Turn, reading: asyncio.Future[Any]) -> TurnEnd:
        cancelled: asyncio.Future[Any] = asyncio.ensure_future(turn.cancelled.wait())
        timeout = self._config.prompt_timeout_s if self._config.prompt_timeout_s > 0 else None
        try:
            while True:
                pending: set[asyncio.Future[Any]] = {reading, cancelled}
                done, _ = await asyncio.wait(
                    pending, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
                )
                if done or not turn.questions:
                    break
                # A person is deciding; that is not the CLI being slow. The clock restarts
                # once nobody is being asked.
                waiting: set[asyncio.Future[Any]] = {reading, cancelled, *turn.questions}
                await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            if reading.done():
                return self._finish(turn, reading)
            timed_out = not cancelled.done()
            if timed_out:
                log.warning("%s: turn %s timed out", self._name, turn.turn_id)
                await self._interrupt(turn)
            await asyncio.wait({reading}, timeout=self.cancel_grace_s)
            if reading.done():
                end = self._finish(turn, reading)
            else:
                # The CLI did not stop when asked: the next turn gets a fresh one, resumed.
                log.warning("%s did not stop in %g s; killing it", self._name, self.cancel_grace_s)
                reading.cancel()
                await self._stop(kill=True)
                end = TurnEnd("cancelled")
            if timed_out:
                said = f"{self._name} did not finish within {timeout:g} s; the turn timed out."
                return TurnEnd("error", said)
            return end
        finally:
            cancelled.cancel()
            if not reading.done():
                reading.cancel()

    def _finish(self, turn: Turn, reading: asyncio.Future[ResultMessage | None]) -> TurnEnd:
        try:
            result = reading.result()
        except Exception as error:
            self._dead = True
            if turn.cancelled.is_set():
                return TurnEnd("cancelled")
            return TurnEnd("error", f"{self._name} stopped: {error}{self._last_words()}")
        if result is None:
            self._dead = True
            if turn.cancelled.is_set():
                return TurnEnd("cancelled")
            return TurnEnd(
                "error", f"{self._name} ended before finishing the turn{self._last_words()}"
            )
        self._report_usage(turn, result)
        if turn.cancelled.is_set() or (result.terminal_reason or "").startswith("aborted"):
            return TurnEnd("cancelled")
        if result.is_error:
            said = result.result or "; ".join(result.errors or []) or result.subtype
            return TurnEnd("error", f"{self._name}: {said}")
        return TurnEnd("complete")

    def _report_usage(self, turn: Turn, result: ResultMessage) -> None:
        """The turn's tokens, and its cost: the CLI's total for the session (it counts on across
        a resume) less the total it said after the turn before, where that is known."""
        usage = result.usage or {}
        costs = self._agent.costs
        session = self.backend_id or result.session_id
        before = costs.get(session)
        total = result.total_cost_usd
        cost = None
        if total is not None:
            if before is not None:
                cost = Cost(max(0.0, total - before))
            costs[session] = total
        model = turn.model or next(iter(result.model_usage or {}), None) or self._model
        windows = [
            window
            for used in (result.model_usage or {}).values()
            if isinstance(window := used.get("contextWindow"), int) and window > 0
        ]
        context = None
        if turn.context_used is not None and windows:
            context = Context(turn.context_used, max(windows))
        turn.events.usage(
            input_tokens=_count(usage.get("input_tokens")),
            output_tokens=_count(usage.get("output_tokens")),
            model=model,
            cache_read_tokens=_count(usage.get("cache_read_input_tokens")),
            cache_write_tokens=_count(usage.get("cache_creation_input_tokens")),
            cost=cost,
            context=context,
        )

    async def cancel(self) -> None:
        """Stop the running turn: open questions are answered, the CLI is interrupted."""
        turn = self._turn
        if turn is None or turn.cancelled.is_set():
            return
        turn.cancelled.set()
        await self._interrupt(turn)

    async def _interrupt(self, turn: Turn) -> None:
        for question in list(turn.questions):
            question.cancel()
        client = self._client
        if client is None or not self._alive():
            return
        try:
            await asyncio.wait_for(client.interrupt(), self.cancel_grace_s)
        except Exception as error:
            log.warning("%s: cannot interrupt: %s", self._name, error)

    async def close(self) -> None:
        """Let the CLI go: a running turn is cancelled first, then the process ends."""
        self._closed = True
        await self.cancel()
        await self._stop()


async def _one(message: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
    yield message


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _is_uuid(value: str) -> bool:
    try:
        return str(uuid.UUID(value)) == value
    except ValueError:
        return False
