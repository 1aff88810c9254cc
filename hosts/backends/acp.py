"""The ACP backend: any Agent Client Protocol agent, run as a subprocess, behind `Agent`.

One chat is one agent process and one ACP session. The host plays the ACP *client*: it answers
the agent's permission questions by asking a person (through `TurnEvents.permission`), and it
serves the agent's file-system and terminal requests itself, confined to the chat's working
directories, so an agent that uses them cannot reach outside the workspace through the host.

Choices the SDK (`agent-client-protocol`) does not make for us, and why:

* The process is spawned here, not with `acp.spawn_agent_process`, because that helper always
  adds the host's USER, LOGNAME and SHELL to the child's environment and pipes the child's
  stderr without ever reading it (a chatty agent then blocks on a full pipe). We give the agent
  exactly PATH, LANG, TERM, its own HOME and the operator's `env`, and drain stderr for error
  messages.
* The SDK's connection runs on our own message transport (`_AgentPipe`, the SDK's `Transport`
  seam) over the agent's stdio. `session/update` notifications are taken out there, as raw JSON,
  synchronously and in wire order, instead of going to the typed `session_update` callback: the
  SDK runs each callback in a task of its own and drops (with a logged traceback) any
  notification its pydantic models reject, such as the `usage_update` with `"used": null` that
  a real agent sends. So chunk order is exact, a sloppy update is still reported, and every
  update that came before the `session/prompt` answer has been reported when the turn ends.
* The raw results of `session/new` and `session/load` are read there too, because the SDK's
  typed responses drop fields it does not know, such as the `models` some agents report.
* Writing to a dead agent raises `ConnectionError` at once; the SDK's own stdio sender would
  leave later requests waiting forever once one write had failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

import acp
from acp import RequestError
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    DeniedOutcome,
    EnvVariable,
    FileSystemCapabilities,
    Implementation,
    KillTerminalResponse,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    ToolCallUpdate,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)
from acp.schema import PermissionOption as AcpPermissionOption

from hosts.backends.base import (
    AgentConfig,
    BackendError,
    ChatContext,
    PermissionAnswer,
    PermissionOption,
    TurnEnd,
    TurnEvents,
    TurnRequest,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Host variables an agent gets; everything else it needs comes from the operator's `env`.
INHERITED_ENV = ("PATH", "LANG", "TERM")
#: The read buffer for the agent's stdout: a whole file can travel in one message (longer
#: lines are still read, in pieces).
STDOUT_LIMIT = 50 * 1024 * 1024
#: How long starting an agent (initialize, authenticate, session/new or load) may take.
START_TIMEOUT_S = 60.0
#: How long a closing agent may take to exit after its stdin closed, and again after SIGTERM.
SHUTDOWN_GRACE_S = 2.0
#: How many of the agent's last stderr lines are kept to explain why it died.
STDERR_TAIL_LINES = 20
#: The default cap on what one terminal keeps of its output.
TERMINAL_OUTPUT_LIMIT = 1024 * 1024

_CANCELLED = RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))


# -- what the agent reports about its sessions ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class _SessionFacts:
    """Modes and models from a raw `session/new` or `session/load` result, when it has them."""

    modes: tuple[dict[str, str], ...] = ()
    current_mode: str | None = None
    models: tuple[tuple[str, str], ...] = ()
    current_model: str | None = None
    #: The config option that selects the model (the ACP way since configOptions exist).
    model_option: str | None = None

    @classmethod
    def parse(cls, result: Any) -> _SessionFacts:
        if not isinstance(result, Mapping):
            return cls()
        modes: list[dict[str, str]] = []
        current_mode = None
        raw_modes = result.get("modes")
        if isinstance(raw_modes, Mapping):
            current_mode = _str(raw_modes.get("currentModeId"))
            for mode in _dicts(raw_modes.get("availableModes")):
                mode_id = _str(mode.get("id"))
                if mode_id:
                    modes.append({"id": mode_id, "name": _str(mode.get("name")) or mode_id})
        models: dict[str, str] = {}
        current_model = model_option = None
        # The older, unstable `models` field some agents still send.
        raw_models = result.get("models")
        if isinstance(raw_models, Mapping):
            current_model = _str(raw_models.get("currentModelId"))
            for model in _dicts(raw_models.get("availableModels")):
                model_id = _str(model.get("modelId"))
                if model_id:
                    models.setdefault(model_id, _str(model.get("name")) or model_id)
        for option in _dicts(result.get("configOptions")):
            if option.get("category") != "model" or option.get("type") != "select":
                continue
            model_option = _str(option.get("id"))
            current_model = _str(option.get("currentValue")) or current_model
            for choice in _select_choices(option.get("options")):
                value = _str(choice.get("value"))
                if value:
                    models.setdefault(value, _str(choice.get("name")) or value)
        return cls(
            modes=tuple(modes),
            current_mode=current_mode,
            models=tuple(models.items()),
            current_model=current_model,
            model_option=model_option,
        )


def _select_choices(options: Any) -> Iterable[Mapping[str, Any]]:
    """The choices of a select config option, flat or in groups."""
    for item in _dicts(options):
        if "options" in item:
            yield from _dicts(item.get("options"))
        else:
            yield item


def _dicts(value: Any) -> list[Mapping[str, Any]]:
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


# -- the Agent -----------------------------------------------------------------------------------


class AcpAgent:
    """One configured ACP agent command. It learns modes and models from the sessions it opens."""

    def __init__(self, config: AgentConfig, data_dir: Path) -> None:
        self.config = config
        self.data_dir = data_dir
        self._facts = _SessionFacts()

    def info(self) -> dict[str, Any]:
        """AgentInfo; models only once an agent has reported them (never a guessed list)."""
        return {
            "provider": self.config.provider,
            "displayName": self.config.display_name,
            "description": self.config.description,
            "models": [
                {"id": model_id, "provider": self.config.provider, "name": name}
                for model_id, name in self._facts.models
            ],
        }

    def session_config_schema(self) -> dict[str, Any]:
        """Only what the agent said it has: its modes, and its models when it reported them."""
        properties: dict[str, Any] = {}
        facts = self._facts
        if facts.modes:
            properties["mode"] = {
                "type": "string",
                "title": "Mode",
                "enum": [mode["id"] for mode in facts.modes],
                "enumLabels": [mode["name"] for mode in facts.modes],
                **({"default": facts.current_mode} if facts.current_mode else {}),
            }
        if facts.models:
            properties["model"] = {
                "type": "string",
                "title": "Model",
                "enum": [model_id for model_id, _ in facts.models],
                "enumLabels": [name for _, name in facts.models],
                **({"default": facts.current_model} if facts.current_model else {}),
            }
        return {"type": "object", "properties": properties}

    async def open_chat(self, context: ChatContext) -> AcpChat:
        """Start the agent process and open (or load) the chat's session in it."""
        chat = AcpChat(self, context)
        try:
            await chat.start()
        except BaseException:
            await chat.close()
            raise
        return chat

    def home_for(self, context: ChatContext) -> Path:
        """The agent's HOME: the operator's, else the chat's state folder, else one of our own."""
        if self.config.home:
            return Path(self.config.home)
        if context.state_dir is not None:
            return context.state_dir
        return self.data_dir / "acp" / self.config.provider

    def learn(self, facts: _SessionFacts) -> None:
        """Keep what a session reported, so root state and config schemas can offer it."""
        if facts.modes or facts.models:
            self._facts = _SessionFacts(
                modes=facts.modes or self._facts.modes,
                current_mode=facts.current_mode if facts.modes else self._facts.current_mode,
                models=facts.models or self._facts.models,
                current_model=facts.current_model if facts.models else self._facts.current_model,
                model_option=facts.model_option or self._facts.model_option,
            )


# -- one turn's bookkeeping ----------------------------------------------------------------------


@dataclass(slots=True)
class _Call:
    """What the host reported of one tool call, so updates become upserts reported once each."""

    name: str
    title: str
    tool_input: str | None = None
    output: str | None = None
    running: bool = False
    denied: bool = False
    done: bool = False


@dataclass(slots=True)
class _Turn:
    events: TurnEvents
    calls: dict[str, _Call] = field(default_factory=dict)
    #: Permission questions waiting for a person; cancel answers them.
    questions: set[asyncio.Future[PermissionAnswer]] = field(default_factory=set)
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)


# -- the host's side of the workspace: files and terminals ----------------------------------------


@dataclass(slots=True)
class _Terminal:
    process: asyncio.subprocess.Process
    limit: int
    reader: asyncio.Task[None] | None = None
    output: bytearray = field(default_factory=bytearray)
    truncated: bool = False

    def append(self, data: bytes) -> None:
        """Keep the newest `limit` bytes, cut at a character boundary as ACP asks."""
        self.output += data
        if len(self.output) > self.limit:
            del self.output[: len(self.output) - self.limit]
            while self.output and self.output[0] & 0xC0 == 0x80:
                del self.output[0]
            self.truncated = True

    def exit_status(self) -> TerminalExitStatus | None:
        code = self.process.returncode
        if code is None:
            return None
        return TerminalExitStatus(exit_code=code if code >= 0 else None, signal=_signal_name(code))


def _signal_name(returncode: int | None) -> str | None:
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return str(-returncode)


def _kill_group(process: asyncio.subprocess.Process, sig: int) -> None:
    """Signal the process and what it started (it leads its own process group)."""
    if process.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


class _Workspace:
    """Files and terminals the agent asks the host for, confined to the working directories.

    Confinement resolves `..` and symlinks before comparing, so neither leads outside. For a
    terminal only its working directory is confined: the command itself is the agent's, and
    this is no sandbox (the agent process could run it on its own anyway).
    """

    def __init__(self, roots: Sequence[Path], env: Mapping[str, str]) -> None:
        self.roots = [Path(os.path.realpath(root)) for root in roots]
        self.cwd = self.roots[0]
        self._env = dict(env)
        self._terminals: dict[str, _Terminal] = {}
        self._next_terminal = 0

    def confine(self, path: str) -> Path:
        """The real path of `path`, or an error the agent sees when it lies outside."""
        target = Path(path)
        if not target.is_absolute():
            target = self.cwd / target
        real = Path(os.path.realpath(target))
        if any(real == root or real.is_relative_to(root) for root in self.roots):
            return real
        raise RequestError(
            -32602,
            f"Access denied: {path} is outside the chat's working directories",
            {"path": path},
        )

    async def read(self, path: str, line: int | None, limit: int | None) -> ReadTextFileResponse:
        target = self.confine(path)
        try:
            text = await asyncio.to_thread(target.read_text, encoding="utf-8")
        except FileNotFoundError:
            raise RequestError.resource_not_found(path) from None
        except (OSError, UnicodeDecodeError) as error:
            raise RequestError(-32603, f"Cannot read {path}: {error}", {"path": path}) from None
        if line is not None or limit is not None:
            lines = text.splitlines(keepends=True)
            start = max((line or 1) - 1, 0)
            text = "".join(lines[start : None if limit is None else start + limit])
        return ReadTextFileResponse(content=text)

    async def write(self, path: str, content: str) -> WriteTextFileResponse:
        target = self.confine(path)

        def write() -> None:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")

        try:
            await asyncio.to_thread(write)
        except OSError as error:
            raise RequestError(-32603, f"Cannot write {path}: {error}", {"path": path}) from None
        return WriteTextFileResponse()

    async def create_terminal(
        self,
        command: str,
        args: Sequence[str] | None,
        env: Sequence[EnvVariable] | None,
        cwd: str | None,
        output_byte_limit: int | None,
    ) -> CreateTerminalResponse:
        workdir = self.confine(cwd) if cwd else self.cwd
        if not workdir.is_dir():
            raise RequestError.invalid_params({"cwd": cwd, "details": "not a directory"})
        # A command without arguments is taken as a shell line, which is what agents that send
        # `{"command": "ls -la"}` mean.
        argv = [command, *args] if args else ["/bin/sh", "-c", command]
        process_env = {**self._env, **{variable.name: variable.value for variable in env or ()}}
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                cwd=workdir,
                env=process_env,
                start_new_session=True,
            )
        except OSError as error:
            raise RequestError(-32603, f"Cannot run {command}: {error}") from None
        self._next_terminal += 1
        terminal_id = f"term-{self._next_terminal}"
        terminal = _Terminal(process, output_byte_limit or TERMINAL_OUTPUT_LIMIT)
        terminal.reader = asyncio.create_task(self._pump(terminal), name=f"acp {terminal_id}")
        self._terminals[terminal_id] = terminal
        return CreateTerminalResponse(terminal_id=terminal_id)

    @staticmethod
    async def _pump(terminal: _Terminal) -> None:
        stdout = terminal.process.stdout
        assert stdout is not None
        while chunk := await stdout.read(65536):
            terminal.append(chunk)

    def _terminal(self, terminal_id: str) -> _Terminal:
        terminal = self._terminals.get(terminal_id)
        if terminal is None:
            raise RequestError.invalid_params({"terminalId": terminal_id, "details": "unknown"})
        return terminal

    async def output(self, terminal_id: str) -> TerminalOutputResponse:
        terminal = self._terminal(terminal_id)
        if terminal.process.returncode is not None and terminal.reader is not None:
            # The process is gone; let the pump read what is left in the pipe.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(terminal.reader), 1.0)
        return TerminalOutputResponse(
            output=terminal.output.decode("utf-8", errors="replace"),
            truncated=terminal.truncated,
            exit_status=terminal.exit_status(),
        )

    async def wait_for_exit(self, terminal_id: str) -> WaitForTerminalExitResponse:
        terminal = self._terminal(terminal_id)
        code = await terminal.process.wait()
        if terminal.reader is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(terminal.reader), 1.0)
        return WaitForTerminalExitResponse(
            exit_code=code if code >= 0 else None, signal=_signal_name(code)
        )

    async def kill(self, terminal_id: str) -> KillTerminalResponse:
        _kill_group(self._terminal(terminal_id).process, signal.SIGKILL)
        return KillTerminalResponse()

    async def release(self, terminal_id: str) -> ReleaseTerminalResponse:
        terminal = self._terminal(terminal_id)
        del self._terminals[terminal_id]
        await self._stop(terminal)
        return ReleaseTerminalResponse()

    async def close(self) -> None:
        """Kill every terminal the agent left behind (it died, or the chat closes)."""
        terminals = list(self._terminals.values())
        self._terminals.clear()
        for terminal in terminals:
            await self._stop(terminal)

    @staticmethod
    async def _stop(terminal: _Terminal) -> None:
        _kill_group(terminal.process, signal.SIGKILL)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(terminal.process.wait(), SHUTDOWN_GRACE_S)
        if terminal.reader is not None:
            terminal.reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await terminal.reader


# -- the agent's stdio, as the SDK's message transport ---------------------------------------------


class _AgentPipe:
    """Newline-delimited JSON-RPC over the agent's stdin and stdout (an `acp` `Transport`).

    `receive` hands `session/update` notifications to `on_update` right where they are read,
    and the raw results of `session/new` and `session/load` to `on_session`, before passing
    everything else on to the SDK's connection.
    """

    _SESSION_METHODS = ("session/new", "session/load")

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        on_update: Callable[[Any], None],
        on_session: Callable[[Any], None],
    ) -> None:
        assert process.stdin is not None and process.stdout is not None
        self._stdin = process.stdin
        self._stdout = process.stdout
        self._on_update = on_update
        self._on_session = on_session
        #: Ids of our session/new and session/load requests, whose results are read here.
        self._session_requests: set[Any] = set()

    async def send(self, message: dict[str, Any]) -> None:
        if self._stdin.is_closing():
            raise ConnectionError("the agent's stdin is closed")
        if message.get("method") in self._SESSION_METHODS and "id" in message:
            self._session_requests.add(message["id"])
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"
        try:
            self._stdin.write(line.encode("utf-8"))
            await self._stdin.drain()
        except (OSError, RuntimeError) as error:
            raise ConnectionError(f"cannot write to the agent: {error}") from error

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._read_line()
            if not line:
                return None
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                log.warning("not JSON-RPC from the agent, ignored: %.200r", line)
                continue
            if not isinstance(message, dict):
                continue
            if message.get("method") == "session/update" and "id" not in message:
                try:
                    self._on_update(message.get("params"))
                except Exception:
                    log.exception("cannot report an update from the agent")
                continue
            if "method" not in message and message.get("id") in self._session_requests:
                self._session_requests.discard(message["id"])
                self._on_session(message.get("result"))
            return message

    async def _read_line(self) -> bytes:
        chunks: list[bytes] = []
        try:
            while True:
                try:
                    chunks.append(await self._stdout.readuntil(b"\n"))
                    return b"".join(chunks)
                except asyncio.LimitOverrunError as overrun:
                    # Longer than the buffer limit: take it in pieces rather than fail.
                    chunks.append(await self._stdout.readexactly(overrun.consumed))
        except asyncio.IncompleteReadError as eof:
            chunks.append(eof.partial)
        except (OSError, ValueError):
            pass
        return b"".join(chunks)

    async def close(self) -> None:
        if not self._stdin.is_closing():
            with contextlib.suppress(OSError, RuntimeError, AttributeError):
                self._stdin.write_eof()


# -- the ACP client the agent talks to -----------------------------------------------------------


class _HostClient:
    """The `acp.Client` callbacks, each handed to the chat or its workspace.

    There is no `session_update`: `_AgentPipe` takes those notifications before the SDK sees them.
    """

    def __init__(self, chat: AcpChat) -> None:
        self._chat = chat

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[AcpPermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        return await self._chat.ask_permission(tool_call, options)

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        return await self._chat.workspace.read(path, line, limit)

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        return await self._chat.workspace.write(path, content)

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[EnvVariable] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:
        return await self._chat.workspace.create_terminal(
            command, args, env, cwd, output_byte_limit
        )

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        return await self._chat.workspace.output(terminal_id)

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        return await self._chat.workspace.wait_for_exit(terminal_id)

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> KillTerminalResponse:
        return await self._chat.workspace.kill(terminal_id)

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> ReleaseTerminalResponse:
        return await self._chat.workspace.release(terminal_id)


# -- the chat ------------------------------------------------------------------------------------


class _AgentGone(Exception):
    """The agent process exited (or its pipes closed) while the host was talking to it."""


class AcpChat:
    """One conversation: one agent process and one ACP session in it, restarted when it dies."""

    #: How long a cancelled (or timed-out) turn waits for the agent to stop before giving up on it.
    cancel_grace_s: float = 3.0

    def __init__(self, agent: AcpAgent, context: ChatContext) -> None:
        if not context.working_directories:
            raise BackendError("An ACP chat needs a working directory.")
        self.backend_id: str | None = context.backend_id
        #: Slash commands the agent announced: {"name", "description", "hint"}.
        self.commands: list[dict[str, Any]] = []
        self._agent = agent
        self._config = agent.config
        self._context = context
        self._home = agent.home_for(context)
        # The agent is told the directories as configured; confinement compares real paths.
        self._directories = [str(Path(d).absolute()) for d in context.working_directories]
        self.workspace = _Workspace(context.working_directories, self._terminal_env())
        self._process: asyncio.subprocess.Process | None = None
        self._conn: ClientSideConnection | None = None
        self._stderr: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self._stderr_task: asyncio.Task[None] | None = None
        self._facts = _SessionFacts()
        self._model: str | None = None
        self._mode: str | None = None
        #: While a session is being loaded: its replayed history is not a turn's.
        self._loading = False
        #: The raw result of the last session/new or session/load.
        self._session_result: Any = None
        self._turn: _Turn | None = None
        self._turn_lock = asyncio.Lock()
        self._closed = False

    @property
    def _name(self) -> str:
        return self._config.display_name or self._config.provider

    # -- process life ---------------------------------------------------------------------------

    def _agent_env(self) -> dict[str, str]:
        env = {key: os.environ[key] for key in INHERITED_ENV if key in os.environ}
        env["HOME"] = str(self._home)
        env.update(self._config.env)
        return env

    def _terminal_env(self) -> dict[str, str]:
        """Commands run for the agent get the plain environment, not the operator's secrets."""
        env = {key: os.environ[key] for key in INHERITED_ENV if key in os.environ}
        env["HOME"] = str(self._home)
        return env

    def _alive(self) -> bool:
        return (
            self._conn is not None
            and self._process is not None
            and self._process.returncode is None
        )

    async def start(self) -> None:
        """Spawn the agent, initialize, authenticate if configured, then load or open a session."""
        try:
            await asyncio.wait_for(self._start(), START_TIMEOUT_S)
        except TimeoutError:
            await self._stop(kill=True)
            raise BackendError(
                f"{self._name} did not start within {START_TIMEOUT_S:g} s."
            ) from None
        except _AgentGone as gone:
            await self._stop(kill=True)
            raise BackendError(str(gone)) from None
        except RequestError as error:
            await self._stop(kill=True)
            raise BackendError(f"{self._name}: {_describe(error)}") from None
        except BaseException:
            await self._stop(kill=True)
            raise

    async def _start(self) -> None:
        self._home.mkdir(parents=True, exist_ok=True)
        try:
            process = await asyncio.create_subprocess_exec(
                self._config.command,
                *self._config.args,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self._agent_env(),
                cwd=self._directories[0],
                limit=STDOUT_LIMIT,
                # Its own process group, so stopping it also stops what it started.
                start_new_session=True,
            )
        except OSError as error:
            raise BackendError(f"Cannot start {self._name}: {error}") from None
        assert process.stdin is not None and process.stdout is not None
        self._process = process
        self._stderr.clear()
        self._stderr_task = asyncio.create_task(self._drain_stderr(process))
        pipe = _AgentPipe(process, self._on_update, self._on_session_result)
        conn = acp.connect_to_agent(cast(acp.Client, _HostClient(self)), pipe)
        self._conn = conn
        init = await self._rpc(
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
            await self._rpc(conn.authenticate(method_id=self._config.auth_method))
        capabilities = init.agent_capabilities
        can_load = bool(capabilities and capabilities.load_session)
        sessions = capabilities.session_capabilities if capabilities else None
        # More than one working directory only where the agent said it takes them.
        more = self._directories[1:] if sessions and sessions.additional_directories else None
        await self._open_session(conn, can_load, more or None)

    async def _open_session(
        self, conn: ClientSideConnection, can_load: bool, more: list[str] | None
    ) -> None:
        cwd = self._directories[0]
        if self.backend_id and can_load:
            self._loading = True
            try:
                await self._rpc(
                    conn.load_session(
                        cwd=cwd,
                        session_id=self.backend_id,
                        mcp_servers=[],
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
                    _describe(error),
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
                conn.new_session(cwd=cwd, mcp_servers=[], additional_directories=more)
            )
        except BaseException:
            self.backend_id = previous  # kept, so a later start may still load it
            raise
        self.backend_id = response.session_id
        self._session_opened()
        await self._apply_config(conn)

    def _session_opened(self) -> None:
        facts = _SessionFacts.parse(self._session_result)
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
                    log.warning("%s refused mode %s: %s", self._name, mode, _describe(error))
        model = self._context.config.get("model")
        if isinstance(model, str):
            await self._select_model(model)

    async def _select_model(self, model: str) -> None:
        facts = self._facts
        if model == self._model or facts.model_option is None or self._conn is None:
            return
        if all(model_id != model for model_id, _ in facts.models):
            return
        try:
            await self._rpc(
                self._conn.set_config_option(
                    config_id=facts.model_option, session_id=self._session, value=model
                )
            )
            self._model = model
        except RequestError as error:
            log.warning("%s refused model %s: %s", self._name, model, _describe(error))

    @property
    def _session(self) -> str:
        assert self.backend_id is not None
        return self.backend_id

    async def _rpc(self, call: Awaitable[T]) -> T:
        """Await one request to the agent; a dead agent becomes `_AgentGone` with its last words."""
        try:
            return await call
        except ConnectionError:
            raise _AgentGone(await self._exit_message()) from None

    async def _exit_message(self) -> str:
        process = self._process
        code: int | None = None
        if process is not None:
            with contextlib.suppress(TimeoutError):
                code = await asyncio.wait_for(process.wait(), SHUTDOWN_GRACE_S)
        if self._stderr_task is not None:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._stderr_task), 0.5)
        if code is None:
            message = f"{self._name} closed its connection"
        elif code < 0:
            message = f"{self._name} exited on signal {_signal_name(code)}"
        else:
            message = f"{self._name} exited with code {code}"
        if self._stderr:
            message += f": {self._stderr[-1]}"
        return message

    async def _drain_stderr(self, process: asyncio.subprocess.Process) -> None:
        """Read the agent's stderr so it never blocks on a full pipe; keep the tail for errors."""
        stream = process.stderr
        assert stream is not None
        with contextlib.suppress(ValueError, ConnectionError):
            while line := await stream.readline():
                text = line.decode("utf-8", errors="replace").rstrip()[:500]
                if text:
                    self._stderr.append(text)
                    log.debug("%s stderr: %s", self._name, text)

    async def _stop(self, *, kill: bool = False) -> None:
        """End the process (EOF first, then SIGTERM, then SIGKILL) and everything tied to it."""
        conn, process = self._conn, self._process
        self._conn = self._process = None
        await self.workspace.close()
        if process is not None and process.returncode is None:
            if not kill and process.stdin is not None:
                with contextlib.suppress(OSError, RuntimeError, AttributeError):
                    process.stdin.write_eof()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(process.wait(), SHUTDOWN_GRACE_S)
            for sig in (signal.SIGTERM, signal.SIGKILL):
                if process.returncode is not None:
                    break
                _kill_group(process, sig)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(process.wait(), SHUTDOWN_GRACE_S)
        if conn is not None:
            # The pipes are closed now, so closing cannot block on a write the agent never reads.
            with contextlib.suppress(Exception):
                await conn.close()
        if self._stderr_task is not None:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(self._stderr_task, 1.0)
            self._stderr_task = None

    async def close(self) -> None:
        """Let the agent go: a running turn is cancelled first, then the process ends."""
        self._closed = True
        await self.cancel()
        await self._stop()

    # -- session/update ---------------------------------------------------------------------------

    def _on_session_result(self, result: Any) -> None:
        self._session_result = result

    def _on_update(self, params: Any) -> None:
        """One `session/update`, synchronously and in wire order (see `_AgentPipe`)."""
        if not isinstance(params, Mapping):
            return
        update = params.get("update")
        session_id = params.get("sessionId")
        if not isinstance(update, Mapping) or (self.backend_id and session_id != self.backend_id):
            return
        kind = update.get("sessionUpdate")
        if kind == "available_commands_update":
            self.commands = _commands(update.get("availableCommands"))
            return
        if kind == "current_mode_update":
            self._mode = _str(update.get("currentModeId")) or self._mode
            return
        if self._loading:
            return  # the replayed history of a loaded session, not news
        turn = self._turn
        if turn is None:
            log.debug("%s: %s outside a turn, dropped", self._name, kind)
            return
        events = turn.events
        if kind == "agent_message_chunk":
            if text := _text(update.get("content")):
                events.text(text)
        elif kind == "agent_thought_chunk":
            if text := _text(update.get("content")):
                events.reasoning(text)
        elif kind in ("tool_call", "tool_call_update"):
            self._on_tool(turn, update)
        elif kind == "usage_update" and isinstance(update.get("used"), int):
            # ACP's usage_update says how full the context is (what the next request will
            # send), not what the turn produced; exact counts come with the prompt's answer.
            events.usage(input_tokens=update["used"], output_tokens=None, model=self._model)

    def _on_tool(self, turn: _Turn, update: Mapping[str, Any]) -> _Call | None:
        """A tool_call or tool_call_update, as an upsert: an unknown id starts the call."""
        call_id = _str(update.get("toolCallId"))
        if call_id is None:
            return None
        title = _str(update.get("title"))
        kind = _str(update.get("kind"))
        call = turn.calls.get(call_id)
        if call is None:
            name = title or kind or "tool"
            call = turn.calls[call_id] = _Call(name=name, title=title or name)
            turn.events.tool_call(call_id, name=name, title=title, kind=kind)
        elif title:
            call.title = title
        if update.get("rawInput") is not None:
            call.tool_input = _json(update.get("rawInput"))
        if update.get("content") is not None:
            call.output = _content_text(update.get("content")) or call.output
        status = update.get("status")
        if status == "in_progress" and not (call.running or call.denied or call.done):
            call.running = True
            turn.events.tool_running(call_id, title=call.title, tool_input=call.tool_input)
        elif status in ("completed", "failed") and not call.done:
            call.done = True
            success = status == "completed"
            turn.events.tool_result(
                call_id,
                success=success,
                message=call.title,
                output=call.output,
                error=None if success else (call.output or f"{call.title} failed"),
            )
        return call

    # -- permission ------------------------------------------------------------------------------

    async def ask_permission(
        self, tool_call: ToolCallUpdate, options: Sequence[AcpPermissionOption]
    ) -> RequestPermissionResponse:
        """Ask a person about the call; the answer becomes one of the agent's own options."""
        turn = self._turn
        if turn is None or turn.cancelled.is_set():
            return _CANCELLED
        raw = tool_call.model_dump(mode="json", by_alias=True, exclude_none=True)
        raw.pop("status", None)  # asking is not progress
        call = self._on_tool(turn, raw)
        if call is None:
            return _CANCELLED
        ours = [
            PermissionOption(
                option.option_id,
                option.name,
                "approve" if option.kind.startswith("allow") else "deny",
            )
            for option in options
        ]
        question = asyncio.ensure_future(
            turn.events.permission(
                tool_call.tool_call_id, title=call.title, tool_input=call.tool_input, options=ours
            )
        )
        turn.questions.add(question)
        try:
            answer = await question
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # the connection is closing, not the question being answered
            return _CANCELLED
        finally:
            turn.questions.discard(question)
        return self._answer(call, answer, ours)

    @staticmethod
    def _answer(
        call: _Call, answer: PermissionAnswer, options: Sequence[PermissionOption]
    ) -> RequestPermissionResponse:
        wanted: Literal["approve", "deny"] = "approve" if answer.approved else "deny"
        matching = [option.option_id for option in options if option.kind == wanted]
        chosen = answer.option_id if answer.option_id in matching else None
        # Without the person's pick, the first option of the right kind: a refusal the agent
        # understands as such, where `cancelled` would mean the whole turn was stopped.
        chosen = chosen or (matching[0] if matching else None)
        if answer.approved:
            if chosen is None:
                return _CANCELLED
            call.running = True  # the approval itself makes the call run
            return RequestPermissionResponse(
                outcome=AllowedOutcome(outcome="selected", option_id=chosen)
            )
        call.denied = True
        if chosen is None:
            return _CANCELLED
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=chosen)
        )

    # -- turns -----------------------------------------------------------------------------------

    async def run_turn(self, request: TurnRequest, events: TurnEvents) -> TurnEnd:
        """Prompt the agent and report the turn; restart (and reload) an agent that died."""
        async with self._turn_lock:
            turn = _Turn(events)
            self._turn = turn
            try:
                if self._closed:
                    return TurnEnd("cancelled")
                if not self._alive():
                    await self._stop(kill=True)
                    try:
                        await self.start()
                    except BackendError as error:
                        return TurnEnd("error", str(error))
                    except Exception as error:
                        log.exception("%s: cannot restart the agent", self._name)
                        return TurnEnd("error", f"Cannot restart {self._name}: {error}")
                if turn.cancelled.is_set():
                    return TurnEnd("cancelled")
                if request.model:
                    try:
                        await self._select_model(request.model)
                    except _AgentGone as gone:
                        await self._stop(kill=True)
                        return TurnEnd("error", str(gone))
                return await self._prompt(turn, request)
            finally:
                self._turn = None
                for question in turn.questions:
                    question.cancel()

    async def _prompt(self, turn: _Turn, request: TurnRequest) -> TurnEnd:
        conn = self._conn
        assert conn is not None
        prompt = asyncio.ensure_future(
            conn.prompt(session_id=self._session, prompt=[acp.text_block(request.text)])
        )
        cancelled = asyncio.ensure_future(turn.cancelled.wait())
        timeout = self._config.prompt_timeout_s if self._config.prompt_timeout_s > 0 else None
        try:
            while True:
                done, _ = await asyncio.wait(
                    {prompt, cancelled}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
                )
                if done or not turn.questions:
                    break
                # A person is deciding; that is not the agent being slow. The clock restarts
                # once nobody is being asked.
                waiting: set[asyncio.Future[Any]] = {prompt, cancelled, *turn.questions}
                await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            if prompt.done():
                return await self._finish(turn, prompt)
            timed_out = not cancelled.done()
            if timed_out:
                log.warning("%s: turn %s timed out", self._name, request.turn_id)
                await self._interrupt(turn)
            await asyncio.wait({prompt}, timeout=self.cancel_grace_s)
            if prompt.done() and not timed_out:
                return await self._finish(turn, prompt)
            if not prompt.done():
                # The agent did not stop when asked: it may still be busy with this prompt,
                # so the next turn gets a fresh process (and the session back by loading).
                log.warning(
                    "%s did not stop within %g s; restarting it", self._name, self.cancel_grace_s
                )
                prompt.cancel()
                await self._stop(kill=True)
            if timed_out:
                return TurnEnd(
                    "error",
                    f"{self._name} did not finish within {timeout:g} s; the turn timed out.",
                )
            return TurnEnd("cancelled")
        finally:
            cancelled.cancel()
            if not prompt.done():
                prompt.cancel()

    async def _finish(self, turn: _Turn, prompt: asyncio.Future[Any]) -> TurnEnd:
        try:
            response = prompt.result()
        except ConnectionError:
            message = await self._exit_message()
            await self._stop(kill=True)
            if turn.cancelled.is_set():
                return TurnEnd("cancelled")  # stopped as asked, if more abruptly (close, say)
            return TurnEnd("error", message)
        except RequestError as error:
            if turn.cancelled.is_set():
                return TurnEnd("cancelled")
            return TurnEnd("error", f"{self._name}: {_describe(error)}")
        except Exception as error:
            # An answer the SDK cannot read (an unknown stopReason, say).
            log.exception("%s: unreadable answer to session/prompt", self._name)
            return TurnEnd("error", f"{self._name} gave an unreadable answer: {error}")
        if response.usage is not None:
            turn.events.usage(
                input_tokens=response.usage.input_tokens,
                output_tokens=response.usage.output_tokens,
                model=self._model,
            )
        stop = response.stop_reason
        if turn.cancelled.is_set() or stop == "cancelled":
            return TurnEnd("cancelled")
        if stop == "refusal":
            return TurnEnd("error", f"{self._name} refused to continue.")
        if stop == "max_tokens":
            return TurnEnd("complete", "The reply was cut off at the model's token limit.")
        if stop == "max_turn_requests":
            return TurnEnd("complete", "The agent stopped at its limit of requests for one turn.")
        return TurnEnd("complete")

    async def cancel(self) -> None:
        """Stop the running turn: open questions are answered `cancelled`, the agent is told."""
        turn = self._turn
        if turn is None or turn.cancelled.is_set():
            return
        turn.cancelled.set()
        await self._interrupt(turn)

    async def _interrupt(self, turn: _Turn) -> None:
        for question in list(turn.questions):
            question.cancel()
        conn = self._conn
        if conn is None or self.backend_id is None or not self._alive():
            return
        try:
            # A notification; bounded because a wedged agent may have stopped reading stdin.
            await asyncio.wait_for(conn.cancel(session_id=self.backend_id), SHUTDOWN_GRACE_S)
        except (TimeoutError, ConnectionError, OSError) as error:
            log.warning("%s: cannot send session/cancel: %s", self._name, error)


# -- small helpers -------------------------------------------------------------------------------


def _text(content: Any) -> str | None:
    """The text of a content block; other kinds (images, resources) are not text to stream."""
    if isinstance(content, Mapping) and content.get("type") == "text":
        return _str(content.get("text"))
    return None


def _content_text(content: Any) -> str | None:
    """The text parts of a tool call's content, joined."""
    parts = [
        text
        for item in _dicts(content)
        if item.get("type") == "content" and (text := _text(item.get("content")))
    ]
    return "\n".join(parts) if parts else None


def _json(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _commands(raw: Any) -> list[dict[str, Any]]:
    commands: list[dict[str, Any]] = []
    for command in _dicts(raw):
        name = _str(command.get("name"))
        if name is None:
            continue
        hint = command.get("input")
        commands.append(
            {
                "name": name,
                "description": _str(command.get("description")) or "",
                "hint": _str(hint.get("hint")) if isinstance(hint, Mapping) else None,
            }
        )
    return commands


def _describe(error: RequestError) -> str:
    """An agent's JSON-RPC error as a sentence, with its details when it gave some."""
    message = str(error)
    data = error.data
    if isinstance(data, Mapping):
        details = data.get("details") or data.get("message")
        if isinstance(details, str) and details and details != message:
            message = f"{message}: {details}"
    elif isinstance(data, str) and data:
        message = f"{message}: {data}"
    return message
