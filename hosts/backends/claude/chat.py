"""One Claude conversation as an `AgentChat`: one Claude Code CLI, driven by one
`ClaudeSDKClient`, and the CLI's session in it.

The session id is the chat's backend id, chosen here for a new chat (`--session-id`) so the
engine can keep it from the moment the chat opens; a chat opened again (after the host let an
idle CLI go, or restarted) resumes it (`--resume`) from the transcript the CLI keeps in its
HOME. A turn is one user message written to the CLI; it ends with the CLI's result that took
that message in (after any answer the CLI still owes to a subagent or a background task that
ended in it), with an interrupt (a cancel, or the prompt timeout), or when the CLI dies, which
the next turn restarts it from.

The CLI is read for as long as it runs, not only during a turn: its background work outlives
the turn that started it (said through the context's `reports`), and what it says between
turns (its answer to a background task that ended) must not be read as the next turn's.

The CLI is handed the team's MCP servers and the clients' tools (mcp_config.py,
client_tools_server.py), the operator's managed rules (permissions.py), and no settings file
of its own (see `_connect`).
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
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    ConversationResetMessage,
    ResultMessage,
    SystemMessage,
    TaskNotificationMessage,
    TaskUpdatedMessage,
    ToolPermissionContext,
    ToolUseBlock,
    UserMessage,
)
from claude_agent_sdk.types import PermissionMode, SystemPromptPreset

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

from ..served_client_tools import SERVER_NAME
from .background_tasks import BackgroundTasks
from .cli_process import JailedCliTransport, bundled_cli
from .client_tools_server import ClientToolsServer
from .failed_turns import (
    DROPS_REFUSED,
    NO_FAILED_CALL,
    FailedTurn,
    forget_transcript,
    model_call_failed,
)
from .mcp_config import contributor, mcp_state, server_names, write_config
from .permissions import Decision, decide, managed_settings_json
from .project_memory import project_memory
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
#: What the CLI's `status` says it is doing, as the session's activity.
STATUS_ACTIVITY = {"requesting": "Thinking", "compacting": "Compacting the conversation"}
#: Put in a turn's inbox when the CLI's output ends.
_ENDED = object()
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
        if self._mode == "bypassPermissions" and self._config.managed.bypass_disabled:
            # The operator's lock takes Allow All away, whatever the session says.
            self._mode = "default"
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
        #: What the CLI runs in the background, said through the context's reports.
        self._background = BackgroundTasks(self._command_of)
        #: The Bash commands the chat's turns ran, by call id (what a background shell runs).
        self._commands: dict[str, str] = {}
        #: Reads the CLI's messages for as long as it runs: a turn's go to its inbox, and
        #: what the CLI says between turns (its background work ending, and its answer to
        #: that) is taken there.
        self._pump: asyncio.Task[None] | None = None
        self._inbox: asyncio.Queue[Any] | None = None
        self._activity: str | None = None
        #: The last entry the CLI wrote to the conversation (a message of the model's or the
        #: person's, a subagent's left out): where a turn that fails after it is cut back to.
        self._last_entry: str | None = None
        #: Whether this process began the conversation (a new CLI session, not one resumed):
        #: only then does no entry before a prompt mean the prompt was its first.
        self._began_here = False
        #: The last turn, where its model call failed: chat/turnResume runs it again.
        self._failed: FailedTurn | None = None

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
        self._began_here = True
        self.backend_id = session
        self._agent.costs[session] = 0.0
        self._history_due = bool(self._history)

    def _projects(self) -> Path:
        """Where the CLI keeps its conversations, one folder a project."""
        config_dir = self._env().get("CLAUDE_CONFIG_DIR")
        root = Path(config_dir) if config_dir else self._home / ".claude"
        return root / "projects"

    def _transcript_exists(self, session: str) -> bool:
        return any(self._projects().glob(f"*/{session}.jsonl"))

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

    async def _connect(
        self,
        *,
        resume: str | None = None,
        session_id: str | None = None,
        cut: FailedTurn | None = None,
    ) -> None:
        """Start the CLI on a session: resumed (cut back to before a failed turn, with `cut`),
        or new under `session_id`."""
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
            resume_session_at=cut.cut if cut is not None else None,
            # The CLI checks that what the cut drops is the failed turn's alone.
            resume_drops_turn=cut.prompt if cut is not None else None,
            include_partial_messages=True,
            can_use_tool=self._can_use_tool,
            system_prompt=_system_prompt(project_memory([Path(d) for d in self._directories])),
            # No settings file is read: a repository's .claude/settings.json or
            # settings.local.json, or a settings.json the agent itself wrote into its HOME
            # (which it may write), could set `env` (ANTHROPIC_BASE_URL, a proxy) or an
            # apiKeyHelper and send the operator's key elsewhere. What the host wants the CLI
            # to hold comes from the host, the project's CLAUDE.md among it
            # (project_memory.py). The cost: the CLI finds no project skills, agents, commands
            # or .mcp.json by itself.
            setting_sources=[],
            stderr=self._on_stderr,
            settings=managed_settings_json(self._config.managed),
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
        finally:
            # Read by the CLI as it started: its secrets are kept at rest no longer.
            self._forget_mcp_config()
        self._client, self._transport, self._dead = client, transport, False
        self._pump = asyncio.ensure_future(self._read_cli(client))

    async def _rewind(self, failed: FailedTurn) -> None:
        """Start the CLI on the conversation as it stood before the failed turn."""
        session = self.backend_id
        assert session is not None
        if failed.cut is None:
            # Its first turn failed: nothing to cut back to, so it starts over under its id.
            forget_transcript(self._projects(), session)
            await self._connect(session_id=session)
            self._agent.costs[session] = 0.0
            self._history_due = bool(self._history)
            return
        try:
            await self._connect(resume=session, cut=failed)
        except BackendError as error:
            if DROPS_REFUSED not in str(error):
                raise
            # Something the person did not see came after the cut (a queued message, a task's
            # word): the conversation is kept whole and the prompt sent again after it.
            log.warning("%s: %s; resuming the conversation whole", self._name, error)
            await self._connect(resume=session)
        self._last_entry = failed.cut

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
        pump, self._pump = self._pump, None
        if pump is not None:
            pump.cancel()
        if self._background.tasks:
            # Its background work ends with it.
            self._background.tasks.clear()
            self._report_background()
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
        return await decide(
            self._turn, self._allowed, tool_name, tool_input, context, self._config.managed
        )

    # -- turns -----------------------------------------------------------------------------------

    async def run_turn(self, request: TurnRequest, events: TurnEvents) -> TurnEnd:
        """Write the person's message to the CLI and report the turn until its result."""
        return await self._run(request, events, None)

    async def resume_turn(self, request: TurnRequest, events: TurnEvents) -> TurnEnd:
        """Run again the turn whose model call failed: the conversation is cut back to the end
        of the turn before (the CLI's --resume-session-at, the failed prompt and whatever the
        turn ran dropped with it) and the prompt is sent again, so the calls the failed turn
        ran are run again. A conversation whose first turn failed is started over under its
        id. A turn this chat holds no such failure for ends resumable again."""
        failed = self._failed
        if failed is None or failed.turn_id != request.turn_id:
            return TurnEnd("error", NO_FAILED_CALL, resumable=True)
        return await self._run(request, events, failed)

    async def _run(
        self, request: TurnRequest, events: TurnEvents, rewind: FailedTurn | None
    ) -> TurnEnd:
        async with self._turn_lock:
            self._failed = None
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
                if rewind is not None:
                    await self._stop()
                    try:
                        await self._rewind(rewind)
                    except BackendError as error:
                        return TurnEnd("error", str(error))
                elif not self._alive() or relist:
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
                inbox = self._inbox = asyncio.Queue()
                if self._dead:
                    inbox.put_nowait(_ENDED)
                earlier = earlier_conversation(self._history) if self._history_due else None
                self._history_due = False
                prompt = user_message(request, earlier)
                cut = self._last_entry
                try:
                    await client.query(_one(prompt))
                except Exception as error:
                    self._dead = True
                    return TurnEnd("error", f"{self._name} cannot be written to: {error}")
                reading = asyncio.ensure_future(self._read(turn, inbox, prompt["uuid"]))
                end = await self._wait(turn, reading)
                if end.state == "complete":
                    self._history.append({"user": request.text, "assistant": "".join(turn.said)})
                elif (
                    end.state == "error"
                    and model_call_failed(turn, end)
                    # Where the turn began in the conversation is known: after an entry this
                    # process saw, or first in one it began. A conversation resumed from its
                    # transcript with no entry seen since is not cut (nor started over).
                    and (cut is not None or self._began_here)
                ):
                    self._failed = FailedTurn(request.turn_id, cut, prompt["uuid"])
                    return dataclasses.replace(end, resumable=True)
                return end
            finally:
                self._turn = None
                self._inbox = None
                self._say_activity(None)
                if self._client_tools is not None:
                    self._client_tools.events = None
                for question in turn.questions:
                    question.cancel()

    async def _read_cli(self, client: ClaudeSDKClient) -> None:
        """Read what the CLI sends until its output ends: background work is said as it
        changes, a turn's messages go to it, and the rest is what the CLI says between turns."""
        try:
            async for message in client.receive_messages():
                if isinstance(message, ConversationResetMessage):
                    # `/clear`: the CLI's running totals start again from nothing.
                    self._agent.costs[self.backend_id or message.session_id] = 0.0
                if isinstance(message, AssistantMessage):
                    self._keep_commands(message)
                if (
                    isinstance(message, AssistantMessage | UserMessage)
                    and message.parent_tool_use_id is None
                    and message.uuid
                ):
                    self._last_entry = message.uuid
                if self._background.apply(message):
                    self._report_background()
                if isinstance(message, SystemMessage) and message.subtype == "init":
                    self._report_mcp(message.data.get("mcp_servers"))
                if isinstance(message, SystemMessage) and message.subtype == "status":
                    status = message.data.get("status")
                    self._say_activity(STATUS_ACTIVITY.get(status) if status else None)
                inbox = self._inbox
                if inbox is not None:
                    inbox.put_nowait(message)
                else:
                    self._between_turns(message)
        except Exception as error:
            log.warning("%s: reading the CLI failed: %s", self._name, error)
        finally:
            self._dead = True
            if self._inbox is not None:
                self._inbox.put_nowait(_ENDED)

    def _report_mcp(self, servers: Any) -> None:
        """The team servers' states as the CLI reports them as it starts a query (its init
        message's `mcp_servers`: connected, pending, failed, needs-auth, disabled), in the
        protocol's words; the clients' server is the host's own and not reported."""
        say = self._context.mcp_state
        if say is None or not isinstance(servers, list):
            return
        for entry in servers:
            if not isinstance(entry, dict):
                continue
            spec = self._team.get(str(entry.get("name")))
            state = mcp_state(str(entry.get("status")), spec.name if spec else "")
            if spec is not None and state is not None:
                say(spec.id, state)

    def _between_turns(self, message: Any) -> None:
        """The CLI answering on its own with no turn running (it tells the model of a
        background task that ended): nobody asked, so nothing of it is said; its cost counts
        into the next turn's, which starts from the running total said before it."""
        if isinstance(message, ResultMessage):
            log.info("%s answered a background task between turns", self._name)

    def _report_background(self) -> None:
        reports = self._context.reports
        if reports is not None:
            reports.background_work(list(self._background.tasks.values()))

    def _say_activity(self, activity: str | None) -> None:
        if activity != self._activity:
            self._activity = activity
            if self._context.reports is not None:
                self._context.reports.activity(activity)

    def _command_of(self, call_id: str) -> str | None:
        return self._commands.get(call_id)

    def _keep_commands(self, message: AssistantMessage) -> None:
        """The command of each Bash call, which a background shell it starts carries."""
        for block in message.content:
            if isinstance(block, ToolUseBlock) and block.name == "Bash":
                command = block.input.get("command")
                if isinstance(command, str):
                    self._commands[block.id] = command

    async def _read(
        self, turn: Turn, inbox: asyncio.Queue[Any], prompt: str
    ) -> ResultMessage | None:
        """Say the turn's messages until its result; None if the CLI's output ended first.

        The turn's result is the one that took in its prompt (`prompt`, the message's uuid),
        not one of a turn the CLI injected on its own before it (its answer to a background
        task that ended, which is said in this turn all the same). After it, a subagent still
        working, or word of a background task that ended which the CLI still owes the model
        (it answers that in a model call of its own), keeps the turn open for that answer,
        which is the person's."""
        #: Listed tasks that ended since the model was last called: the CLI owes it word.
        owed: set[str] = set()
        told: set[str] = set()
        ours = False
        last: ResultMessage | None = None
        while True:
            message = await inbox.get()
            if message is _ENDED:
                return None
            if isinstance(message, TaskNotificationMessage | TaskUpdatedMessage):
                task = message.task_id
                if task in self._background.ended and task not in told:
                    owed.add(task)
            elif (
                isinstance(message, SystemMessage)
                and message.subtype == "status"
                and message.data.get("status") == "requesting"
            ):
                # The model is asked from here on with the word of what ended before: a model
                # call already under way when a task ended (its answer streaming after) was
                # asked without it, and the CLI asks again of its own.
                told |= owed
                owed.clear()
            result = turn.apply(message)
            if result is None:
                continue
            turn.results.append(result)
            last = result
            ours = ours or _took_in(result, prompt)
            if ours and not owed and not self._background.subagents_running:
                return last

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
        """The turn's tokens (every result of it: the CLI's answer to its background work is a
        result of its own), and its cost: the CLI's total for the session (it counts on across
        a resume) less the total it said after the turn before, where that is known."""
        usage = _summed([r.usage or {} for r in turn.results] or [result.usage or {}])
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


def _system_prompt(memory: str | None) -> SystemPromptPreset:
    """Claude Code's own system prompt, with the project's memory after it."""
    preset: SystemPromptPreset = {"type": "preset", "preset": "claude_code"}
    if memory:
        preset["append"] = memory
    return preset


def _took_in(result: ResultMessage, prompt: str) -> bool:
    """Whether `result` is of the turn that took in the message sent with uuid `prompt`. One
    that names no message it took in is the prompt's unless the CLI says something else
    started it (a background task's notification): an older CLI names none."""
    if result.user_message_uuid is None and not result.user_message_uuids:
        origin: Mapping[str, Any] = result.origin or {}
        return origin.get("kind") in (None, "human")
    return prompt == result.user_message_uuid or prompt in (result.user_message_uuids or [])


def _summed(usages: list[dict[str, Any]]) -> dict[str, int]:
    """Token counts added up over several results' usage (a count none of them gives is
    left out)."""
    keys = (
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    )
    summed: dict[str, int] = {}
    for key in keys:
        counts = [n for usage in usages if (n := _count(usage.get(key))) is not None]
        if counts:
            summed[key] = sum(counts)
    return summed


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _is_uuid(value: str) -> bool:
    try:
        return str(uuid.UUID(value)) == value
    except ValueError:
        return False
