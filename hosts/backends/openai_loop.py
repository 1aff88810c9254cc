"""An agent loop the host runs itself, against any OpenAI-compatible Chat Completions endpoint.

Local model servers (ollama, llama.cpp's llama-server, vLLM) and hosted APIs all speak the same
streaming Chat Completions wire format, but none of them is an agent: a model proposes tool calls
and waits. This module is the agent around it. It keeps the conversation, streams each answer
into `TurnEvents`, runs the proposed tools itself — confined to the chat's working folders, and
asking the person first where the session's permission mode says so — and feeds the results back
until the model answers without tools.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import signal
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openai
from openai import AsyncOpenAI
from openai.types.chat import (
    ChatCompletionChunk,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageParam,
)
from openai.types.chat.chat_completion_chunk import ChoiceDelta
from openai.types.completion_usage import CompletionUsage

from .base import (
    AgentConfig,
    ChatContext,
    PermissionOption,
    TurnEnd,
    TurnEvents,
    TurnRequest,
)

log = logging.getLogger("ahpd.backends.openai")

#: Model calls one turn may make; a model that keeps calling tools is stopped, not trusted.
MAX_MODEL_CALLS = 25
#: A shell command is killed after this long, so a hung command cannot hold the turn forever.
COMMAND_TIMEOUT_S = 120.0
#: Characters of command output, and bytes of a file, handed back to the model: its context is
#: small and a runaway command must not fill the host's memory.
OUTPUT_CAP = 32_000
READ_CAP = 256_000
LIST_CAP = 500
#: Connecting is quick or broken; a first token from a local model on a CPU can take minutes.
CONNECT_TIMEOUT_S = 10.0

PERMISSION_MODES = ("default", "acceptEdits", "bypassPermissions")
PERMISSION_LABELS = ("Ask before edits and commands", "Ask before commands", "Never ask")

ALLOW = PermissionOption("allow", "Allow", "approve")
DENY = PermissionOption("deny", "Deny", "deny")

#: Variables a command inherits from the host. Everything else (the host's own secrets and
#: API keys) stays out of reach of commands a model wrote.
COMMAND_ENV_KEYS = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TMPDIR", "SHELL")


class ToolError(Exception):
    """A tool call could not run; the message is shown to the person and told to the model."""


@dataclass(frozen=True, slots=True)
class _Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    #: ACP's tool kind, so a client can pick an icon.
    kind: str
    #: The title shown before the call's arguments have streamed in.
    label: str
    #: The permission modes under which a person is asked before the call runs.
    asks_in: frozenset[str]

    def param(self) -> ChatCompletionFunctionToolParam:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


_PATH = {"type": "string", "description": "A path relative to the working folder."}

TOOLS: dict[str, _Tool] = {
    tool.name: tool
    for tool in (
        _Tool(
            "read_file",
            "Read a text file in the working folder.",
            _object({"path": _PATH}, ["path"]),
            "read",
            "Read file",
            frozenset(),
        ),
        _Tool(
            "list_directory",
            "List the entries of a folder in the working folder; folders end with '/'.",
            _object({"path": {**_PATH, "default": "."}}, []),
            "read",
            "List folder",
            frozenset(),
        ),
        _Tool(
            "write_file",
            "Create or overwrite a text file in the working folder with the given content.",
            _object({"path": _PATH, "content": {"type": "string"}}, ["path", "content"]),
            "edit",
            "Write file",
            frozenset({"default"}),
        ),
        _Tool(
            "run_command",
            "Run a shell command in the working folder and return its exit code and output.",
            _object({"command": {"type": "string"}}, ["command"]),
            "execute",
            "Run command",
            frozenset({"default", "acceptEdits"}),
        ),
    )
}
TOOL_PARAMS = [tool.param() for tool in TOOLS.values()]


class OpenAiAgent:
    """One configured OpenAI-compatible endpoint, announced with its models."""

    def __init__(self, config: AgentConfig) -> None:
        self.config = config

    def models(self) -> list[str]:
        """The models a session may pick: the configured list, else the one default model."""
        return list(self.config.models) or ([self.config.model] if self.config.model else [])

    def info(self) -> dict[str, Any]:
        config = self.config
        return {
            "provider": config.provider,
            "displayName": config.display_name,
            "description": config.description or f"A model at {config.base_url}, run by the host",
            "models": [
                {"id": model, "provider": config.provider, "name": model} for model in self.models()
            ],
        }

    def session_config_schema(self) -> dict[str, Any]:
        model: dict[str, Any] = {"type": "string", "title": "Model"}
        models = self.models()
        if models:
            model["enum"] = models
            model["default"] = self.config.model or models[0]
        return {
            "type": "object",
            "properties": {
                "model": model,
                "permissionMode": {
                    "type": "string",
                    "title": "Permission mode",
                    "enum": list(PERMISSION_MODES),
                    "default": "default",
                    "enumLabels": list(PERMISSION_LABELS),
                },
            },
        }

    async def open_chat(self, context: ChatContext) -> OpenAiChat:
        return OpenAiChat(self.config, context)


@dataclass(slots=True)
class _PendingCall:
    """A tool call being assembled from streamed fragments."""

    call_id: str
    name: str = ""
    arguments: str = ""
    #: Whether `events.tool_call` has announced it yet (it needs the name).
    started: bool = False


@dataclass(slots=True)
class _Reply:
    """One model answer as it streams in."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, _PendingCall] = field(default_factory=dict)
    #: Whether the assistant message is already in the conversation.
    recorded: bool = False


@dataclass(slots=True)
class _Usage:
    """Tokens summed over a turn's model calls."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    model: str | None = None

    def add(self, usage: CompletionUsage, model: str | None) -> None:
        self.input_tokens = (self.input_tokens or 0) + usage.prompt_tokens
        self.output_tokens = (self.output_tokens or 0) + usage.completion_tokens
        self.model = model or self.model


@dataclass(frozen=True, slots=True)
class _Outcome:
    """What a tool did: a line for the person, its output, and what the model is told."""

    message: str
    output: str
    for_model: str
    success: bool = True
    error: str | None = None


class OpenAiChat:
    """One conversation: the message list, kept for the life of this object, and its turns."""

    def __init__(self, config: AgentConfig, context: ChatContext) -> None:
        self.backend_id: str | None = None
        self._config = config
        self._context = context
        self._roots = [Path(folder).resolve() for folder in context.working_directories]
        self._endpoint = config.base_url or "the default OpenAI endpoint"
        self._client = AsyncOpenAI(
            base_url=config.base_url or None,
            api_key=config.api_key or "none",
            max_retries=0,
            timeout=openai.Timeout(config.prompt_timeout_s, connect=CONNECT_TIMEOUT_S),
        )
        self._messages: list[ChatCompletionMessageParam] = [
            {"role": "system", "content": self._system_prompt()}
        ]
        for earlier in context.history:
            if earlier.get("user"):
                self._messages.append({"role": "user", "content": earlier["user"]})
            if earlier.get("assistant"):
                self._messages.append({"role": "assistant", "content": earlier["assistant"]})
        self._task: asyncio.Task[TurnEnd] | None = None
        self._steering: list[str] = []

    def _system_prompt(self) -> str:
        if not self._roots:
            return (
                "You are a helpful coding assistant. This chat has no working folder, "
                "so the file and command tools will refuse every call."
            )
        where = f"the folder {self._roots[0]}"
        if len(self._roots) > 1:
            where += " (also usable: " + ", ".join(str(root) for root in self._roots[1:]) + ")"
        return (
            f"You are a coding agent working in {where}. You may use the tools read_file, "
            "list_directory, write_file and run_command to look at and change files and to run "
            "shell commands there; paths are relative to that folder and cannot leave it. "
            "The person may deny a tool call; then do not retry it. Answer in Markdown."
        )

    # -- turns ---------------------------------------------------------------------------------

    async def run_turn(self, request: TurnRequest, events: TurnEvents) -> TurnEnd:
        """Run the turn in a task of its own, so `cancel` can stop it wherever it waits."""
        if self._task is not None and not self._task.done():
            return TurnEnd("error", "A turn is already running in this chat.")
        task = asyncio.create_task(self._turn(request, events), name=f"turn {request.turn_id}")
        self._task = task
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # our caller was cancelled, not the turn: let that through
            return TurnEnd("cancelled")
        finally:
            if self._task is task:
                self._task = None

    async def cancel(self) -> None:
        task = self._task
        if task is None or task.done():
            return
        task.cancel()
        await asyncio.wait({task}, timeout=10)

    async def close(self) -> None:
        await self.cancel()
        await self._client.close()

    def steer(self, text: str) -> bool:
        """Take a person's steering into the running turn, before its next model call.

        False when no turn runs: the host then runs the message as a turn of its own.
        """
        if self._task is None or self._task.done():
            return False
        self._steering.append(text)
        return True

    def _take_steering(self) -> bool:
        """Put steering that arrived into the conversation; whether there was any."""
        if not self._steering:
            return False
        for text in self._steering:
            self._messages.append({"role": "user", "content": text})
        self._steering.clear()
        return True

    def _model(self, request: TurnRequest) -> str:
        configured = self._context.config.get("model")
        if request.model:
            return request.model
        return configured if isinstance(configured, str) and configured else self._config.model

    def _permission_mode(self) -> str:
        mode = self._context.config.get("permissionMode")
        return mode if mode in PERMISSION_MODES else "default"

    async def _turn(self, request: TurnRequest, events: TurnEvents) -> TurnEnd:
        model = self._model(request)
        if not model:
            return TurnEnd("error", f"No model is configured for {self._config.display_name}.")
        self._messages.append({"role": "user", "content": request.text})
        usage = _Usage()
        reply = _Reply()
        try:
            for _ in range(MAX_MODEL_CALLS):
                reply = _Reply()
                await self._stream_reply(model, reply, events, usage)
                self._record(reply)
                # Tools run whenever the answer holds calls rather than on finish_reason
                # "tool_calls" alone: ollama and some llama.cpp templates finish with "stop".
                if not reply.calls:
                    if self._take_steering():
                        continue
                    self._report(usage, model, events)
                    return TurnEnd("complete")
                for call in reply.calls.values():
                    content = await self._run_tool(call, events)
                    self._messages.append(
                        {"role": "tool", "tool_call_id": call.call_id, "content": content}
                    )
                self._take_steering()
            self._report(usage, model, events)
            return TurnEnd(
                "error", f"Stopped after {MAX_MODEL_CALLS} model calls without a final answer."
            )
        except asyncio.CancelledError:
            self._settle(reply, "The turn was cancelled before this tool call ran.")
            raise
        except openai.OpenAIError as err:
            self._settle(reply, "The turn failed before this tool call ran.")
            self._report(usage, model, events)
            return TurnEnd("error", self._describe(err))
        except Exception as err:
            # A bug here must still end the turn (once) rather than leave it hanging.
            log.exception("openai turn %s of %s failed", request.turn_id, self._context.chat)
            self._settle(reply, "The turn failed before this tool call ran.")
            return TurnEnd("error", f"The agent loop failed: {err}")

    async def _stream_reply(
        self, model: str, reply: _Reply, events: TurnEvents, usage: _Usage
    ) -> None:
        stream = await self._client.chat.completions.create(
            model=model,
            messages=self._messages,
            tools=TOOL_PARAMS,
            stream=True,
            stream_options={"include_usage": True},
        )
        # Only the last usage seen counts: OpenAI sends it once at the end, but vLLM can send a
        # running total on every chunk.
        last: ChatCompletionChunk | None = None
        async with stream:
            async for chunk in stream:
                if chunk.usage is not None:
                    last = chunk
                for choice in chunk.choices:
                    if choice.index != 0:
                        continue
                    self._take_delta(choice.delta, reply, events)
        if last is not None and last.usage is not None:
            usage.add(last.usage, last.model)

    def _take_delta(self, delta: ChoiceDelta, reply: _Reply, events: TurnEvents) -> None:
        if delta.content:
            reply.text.append(delta.content)
            events.text(delta.content)
        # Not in the OpenAI schema: DeepSeek, vLLM and llama.cpp send `reasoning_content`,
        # ollama and OpenRouter `reasoning`.
        extra = delta.model_extra or {}
        for key in ("reasoning_content", "reasoning"):
            thought = extra.get(key)
            if isinstance(thought, str) and thought:
                events.reasoning(thought)
                break
        for fragment in delta.tool_calls or ():
            call = reply.calls.get(fragment.index)
            if call is None:
                call_id = fragment.id or f"call_{secrets.token_hex(8)}"
                call = reply.calls[fragment.index] = _PendingCall(call_id)
            elif fragment.id and not call.started:
                call.call_id = fragment.id
            function = fragment.function
            piece = (function.arguments if function else None) or ""
            call.arguments += piece
            if function and function.name and not call.name:
                call.name = function.name
            if not call.started and call.name:
                # Announced once its name is known; arguments that came first follow at once.
                call.started = True
                tool = TOOLS.get(call.name)
                events.tool_call(
                    call.call_id,
                    name=call.name,
                    title=tool.label if tool else call.name,
                    kind=tool.kind if tool else "other",
                )
                if call.arguments:
                    events.tool_call(call.call_id, name=call.name, partial_input=call.arguments)
            elif call.started and piece:
                events.tool_call(call.call_id, name=call.name, partial_input=piece)

    def _record(self, reply: _Reply) -> None:
        """Add the model's answer to the conversation, as the endpoint expects to see it again."""
        # A call that never got a name cannot be run or answered; it is left out entirely.
        reply.calls = {i: c for i, c in sorted(reply.calls.items()) if c.started}
        text = "".join(reply.text)
        if reply.calls:
            self._messages.append(
                {
                    "role": "assistant",
                    "content": text or None,
                    "tool_calls": [
                        {
                            "id": call.call_id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": call.arguments or "{}"},
                        }
                        for call in reply.calls.values()
                    ],
                }
            )
        else:
            self._messages.append({"role": "assistant", "content": text})
        reply.recorded = True

    def _settle(self, reply: _Reply, unanswered: str) -> None:
        """Leave the conversation valid after a turn stopped midway, for the next turn.

        Text the person already saw stays; every tool call the model made gets an answer,
        because endpoints refuse a conversation with a tool call left unanswered.
        """
        if not reply.recorded:
            text = "".join(reply.text)
            if text:
                self._messages.append({"role": "assistant", "content": text})
            return
        answered = {
            message["tool_call_id"] for message in self._messages if message["role"] == "tool"
        }
        for call in reply.calls.values():
            if call.call_id not in answered:
                self._messages.append(
                    {"role": "tool", "tool_call_id": call.call_id, "content": unanswered}
                )

    def _report(self, usage: _Usage, model: str, events: TurnEvents) -> None:
        if usage.input_tokens is not None or usage.output_tokens is not None:
            events.usage(
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                model=usage.model or model,
            )

    def _describe(self, err: openai.OpenAIError) -> str:
        where = self._endpoint
        if isinstance(err, openai.APITimeoutError):
            return f"The model endpoint {where} did not answer in time."
        if isinstance(err, openai.APIConnectionError):
            cause = f": {err.__cause__}" if err.__cause__ else ""
            return f"Could not reach the model endpoint {where}{cause}"
        if isinstance(err, openai.APIStatusError):
            return f"The model endpoint {where} answered HTTP {err.status_code}: {err.message}"[
                :500
            ]
        return f"The model endpoint {where} failed: {err}"[:500]

    # -- tools ---------------------------------------------------------------------------------

    async def _run_tool(self, call: _PendingCall, events: TurnEvents) -> str:
        """Run one call through the confirmation path; return what the model is told."""
        tool_input = call.arguments or "{}"
        tool = TOOLS.get(call.name)
        title = tool.label if tool else call.name
        try:
            if tool is None:
                raise ToolError(f"There is no tool named {call.name!r}.")
            args = _parse_arguments(call.arguments)
            title = _title(tool, args)
            # Checked before anybody is asked, so nobody approves a call that cannot run.
            action = self._prepare(tool, args)
        except ToolError as err:
            events.tool_running(call.call_id, title=title, tool_input=tool_input)
            return _failed(events, call.call_id, title, str(err))

        if self._permission_mode() in tool.asks_in:
            answer = await events.permission(
                call.call_id, title=title, tool_input=tool_input, options=(ALLOW, DENY)
            )
            if not answer.approved:
                events.tool_result(
                    call.call_id,
                    success=False,
                    message=f"{title}: denied",
                    error="denied by the user",
                )
                return "The user denied this tool call, so it did not run. Do not retry it."
        else:
            events.tool_running(call.call_id, title=title, tool_input=tool_input)

        try:
            outcome = await action()
        except (ToolError, OSError, UnicodeError) as err:
            return _failed(events, call.call_id, title, str(err))
        events.tool_result(
            call.call_id,
            success=outcome.success,
            message=outcome.message,
            output=outcome.output,
            error=outcome.error,
        )
        return outcome.for_model

    def _prepare(self, tool: _Tool, args: Mapping[str, Any]) -> Callable[[], Awaitable[_Outcome]]:
        """Check a call's arguments and return the action that runs it."""
        if tool.name == "run_command":
            command = _string(args, "command")
            if not command.strip():
                raise ToolError("The command is empty.")
            cwd = self._folder()
            return lambda: self._run_command(command, cwd)
        raw = _string(args, "path", default="." if tool.name == "list_directory" else None)
        self._resolve(raw)
        if tool.name == "read_file":
            return lambda: asyncio.to_thread(self._read_file, raw)
        if tool.name == "list_directory":
            return lambda: asyncio.to_thread(self._list_directory, raw)
        content = _string(args, "content")
        return lambda: asyncio.to_thread(self._write_file, raw, content)

    def _folder(self) -> Path:
        if not self._roots:
            raise ToolError("This chat has no working folder.")
        return self._roots[0]

    def _resolve(self, raw: str) -> Path:
        """The path a call names, only if it lies inside a working folder.

        Resolving follows symlinks and `..`, so a link or a relative path pointing out of the
        folder is refused like an absolute path outside it.
        """
        base = self._folder()
        if not raw.strip() or "\0" in raw:
            raise ToolError(f"{raw!r} is not a usable path.")
        target = (base / raw).resolve()
        if any(target == root or target.is_relative_to(root) for root in self._roots):
            return target
        raise ToolError(
            f"{raw} is outside the working folder {base}; only paths inside it may be used."
        )

    def _shown(self, path: Path) -> str:
        for root in self._roots:
            if path.is_relative_to(root):
                return str(path.relative_to(root)) or "."
        return str(path)

    # Each action resolves its path again: the file system may have changed while a person
    # was deciding.

    def _read_file(self, raw: str) -> _Outcome:
        path = self._resolve(raw)
        if not path.exists():
            raise ToolError(f"{raw} does not exist.")
        if path.is_dir():
            raise ToolError(f"{raw} is a folder; use list_directory.")
        with path.open("rb") as handle:
            data = handle.read(READ_CAP + 1)
        text = data[:READ_CAP].decode("utf-8", errors="replace")
        if len(data) > READ_CAP:
            text += f"\n[... cut after {READ_CAP} bytes]"
        return _Outcome(f"Read {self._shown(path)}", text, text)

    def _list_directory(self, raw: str) -> _Outcome:
        path = self._resolve(raw)
        if not path.is_dir():
            raise ToolError(f"{raw} is not a folder.")
        names = sorted(entry.name + ("/" if entry.is_dir() else "") for entry in path.iterdir())
        listing = "\n".join(names[:LIST_CAP])
        if len(names) > LIST_CAP:
            listing += f"\n[... and {len(names) - LIST_CAP} more]"
        shown = self._shown(path)
        return _Outcome(f"Listed {shown} ({len(names)} entries)", listing, listing or "(empty)")

    def _write_file(self, raw: str, content: str) -> _Outcome:
        path = self._resolve(raw)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        size = len(content.encode("utf-8"))
        message = f"Wrote {size} bytes to {self._shown(path)}"
        return _Outcome(message, "", message)

    async def _run_command(self, command: str, cwd: Path) -> _Outcome:
        env = {key: value for key, value in os.environ.items() if key in COMMAND_ENV_KEYS}
        env.update({"TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat"})
        process = await asyncio.create_subprocess_shell(
            command,
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            # Its own process group, so a timeout or a cancel kills whatever the shell started.
            start_new_session=True,
        )
        output = bytearray()
        cut = False

        async def collect() -> None:
            nonlocal cut
            assert process.stdout is not None
            while chunk := await process.stdout.read(65536):
                room = OUTPUT_CAP - len(output)
                output.extend(chunk[: max(room, 0)])
                cut = cut or len(chunk) > room
            await process.wait()

        timed_out = False
        try:
            await asyncio.wait_for(collect(), COMMAND_TIMEOUT_S)
        except TimeoutError:
            timed_out = True
        finally:
            if process.returncode is None:
                _kill_group(process.pid)
                await process.wait()

        text = output.decode("utf-8", errors="replace")
        if cut:
            text += f"\n[... output cut after {OUTPUT_CAP} bytes]"
        if timed_out:
            error = f"timed out after {COMMAND_TIMEOUT_S:g} s and was killed"
        elif process.returncode:
            error = f"exited with code {process.returncode}"
        else:
            error = None
        status = error or "exited with code 0"
        return _Outcome(
            message=f"Ran {_short(command)}: {status}",
            output=text,
            for_model=f"The command {status}.\n{text}",
            success=error is None,
            error=error,
        )


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _failed(events: TurnEvents, call_id: str, title: str, error: str) -> str:
    events.tool_result(call_id, success=False, message=f"{title}: failed", error=error)
    return f"Error: {error}"


def _parse_arguments(arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments or "{}")
    except json.JSONDecodeError as err:
        raise ToolError(f"The arguments are not valid JSON: {err}") from None
    if not isinstance(value, dict):
        raise ToolError("The arguments must be a JSON object.")
    return value


def _string(args: Mapping[str, Any], key: str, default: str | None = None) -> str:
    value = args.get(key, default)
    if not isinstance(value, str):
        raise ToolError(f"The argument {key!r} must be a string.")
    return value


def _short(text: str, limit: int = 120) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _title(tool: _Tool, args: Mapping[str, Any]) -> str:
    """A title that says what the call will do, for the person who may be asked about it."""
    if tool.name == "run_command":
        return f"Run {_short(str(args.get('command', '')))}"
    path = str(args.get("path", "."))
    verb = {"read_file": "Read", "list_directory": "List", "write_file": "Write"}[tool.name]
    return f"{verb} {_short(path)}"
