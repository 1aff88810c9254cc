"""A small scripted ACP agent, run as a real subprocess by the ACP backend's tests.

It speaks ACP through the `agent-client-protocol` package exactly as a real agent would, so the
tests exercise the host's real client side: streaming, tool calls, permission questions, the
host's file system and terminals, cancellation, a crash, and `session/load` after a restart
(history lives in `$HOME/fake-acp/<session id>.json`, so a new process can replay it).

The person's message is a prompt's last text block; blocks before it are context the host added
(the earlier turns of a chat the agent has no record of). What a prompt does is decided by the
message's first word:

* `read <path>`: a read tool call served by the host's `fs/read_text_file`.
* `write <path> <text>`: an edit tool call; asks permission, then `fs/write_text_file`.
* `edit <path>=<text> ...`: an edit tool call per file, asking nothing (an agent allowed to
  edit), each written with `fs/write_text_file`; `\\n` in a text is a newline.
* `run <command> [args...]`: a terminal on the host (create, name it in the tool call's
  content, wait, output, release).
* `slow`: a chunk every 50 ms until `session/cancel`, then `stopReason: cancelled`.
* `hang`: says `hanging` (so a test knows it was prompted), then nothing more, and ignores
  `session/cancel` (a misbehaving agent).
* `crash`: exits the process with code 3 in the middle of the turn.
* `recall`: replies with the earlier prompts of the session (proves the history survived).
* `heard`: replies `heard: ` and, as JSON, every prompt of the session so far, this one included,
  each as the list of its text blocks as the host sent them.
* `env`: replies with the names of its environment variables.
* `open <path>`: reads the file itself (not through the host) and replies with its first words,
  or `cannot-open` and why; `put <path> <text>` writes one itself; `signal <pid>` sends signal
  0 to a process (`cannot-signal` and why); `whoami`: its PID and HOME. What a sandbox allows.
* `pay <amount> [currency]`: the session's cumulative cost grows by `amount` (in USD unless
  another ISO 4217 code is named); from then on every `usage_update` says it as `cost`.
* `spend`: a usage_update every 50 ms, the context 100 tokens fuller and the cost $0.25 more
  each, until `session/cancel` (a budget's end).
* `sloppy`: sends what real agents have sent and the SDK's models reject or do not expect
  (`usage_update` with `used: null`, an update for a tool call never announced, an unknown
  update kind), then replies as usual.
* `mcp?`: replies with the MCP servers its session was handed (session/new or load), each as
  `<name>=<command> <args...>` (stdio, with `env:<names>`) or `<name>=http <url>` (with
  `headers:<names>`), `none` when there were none. Secrets' values are never said.
* `clienttool <name> <json>`: calls the tool `<name>` with the JSON arguments through the MCP
  server named `client` its session was handed (over HTTP, or a stdio one it starts), as an MCP
  client (the mcp SDK): said as an
  ACP tool call titled `mcp__client__<name>` first, the request naming that call in its `_meta`
  under `claudecode/toolUseId` as Claude Code names it, and the call completed with what the
  server answered. Replies `clienttool: <the result's text>` (`clienttool error: ...` when the
  server answered an error). `clienttool-anon` does the same without the `_meta` id.
* `dirs?`: replies `dirs: ` and the folders its session was opened in (session/new or load),
  the cwd first, then the additional directories, joined by ` | `.
* anything else: `echo: <prompt>`, streamed word by word.

Set `FAKE_ACP_REQUIRE_AUTH=1` to make sessions need `authenticate(method_id="fake-login")`, and
`FAKE_ACP_NO_LOAD=1` to make the agent say it cannot load sessions. It says it takes MCP servers
over HTTP unless `FAKE_ACP_NO_MCP_HTTP=1`; a session handed a server whose name starts with
`broken` is refused, naming it. `FAKE_ACP_MORE_DIRS=1` makes it say it takes additional
directories beside its cwd (`sessionCapabilities.additionalDirectories`).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import uuid
from pathlib import Path
from typing import Any, Literal, cast

import acp
from acp import RequestError
from acp.schema import (
    AgentCapabilities,
    AllowedOutcome,
    AuthenticateResponse,
    AuthMethodAgent,
    AvailableCommand,
    AvailableCommandInput,
    AvailableCommandsUpdate,
    Cost,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    SessionAdditionalDirectoriesCapabilities,
    SessionCapabilities,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
    SetSessionModeResponse,
    ToolCallUpdate,
    UnstructuredCommandInput,
    Usage,
    UsageUpdate,
)

AUTH_METHOD = "fake-login"


def _modes(current: str = "default") -> SessionModeState:
    return SessionModeState(
        current_mode_id=current,
        available_modes=[
            SessionMode(id="default", name="Default"),
            SessionMode(id="plan", name="Plan", description="Think, do not touch files"),
        ],
    )


def _model_option() -> SessionConfigOptionSelect:
    return SessionConfigOptionSelect(
        id="model",
        name="Model",
        category="model",
        type="select",
        current_value="fake-small",
        options=[
            SessionConfigSelectOption(value="fake-small", name="Fake Small"),
            SessionConfigSelectOption(value="fake-large", name="Fake Large"),
        ],
    )


def _described(block: Any) -> str:
    """A prompt block as `heard` says it: a text's text; what else a prompt carries, named."""
    kind = getattr(block, "type", "")
    if kind == "image":
        return f"[image {block.mime_type} {len(base64.b64decode(block.data))} bytes]"
    if kind == "resource":
        return f"[resource {block.resource.uri}] {getattr(block.resource, 'text', '')}"
    if kind == "resource_link":
        return f"[link {block.uri}]"
    return str(getattr(block, "text", ""))


def _opened(path: Path) -> str:
    """Read a file as the agent's own process (not through the host): what a sandbox is for."""
    try:
        first = path.read_bytes()[:40].decode(errors="replace").split()
    except OSError as error:
        return f"cannot-open {path}: {error.strerror}"
    return f"opened {path}: {' '.join(first)}"


def _put(path: Path, text: str) -> str:
    try:
        path.write_text(text)
    except OSError as error:
        return f"cannot-put {path}: {error.strerror}"
    return f"put {path}"


def _signalled(pid: int) -> str:
    try:
        os.kill(pid, 0)
    except OSError as error:
        return f"cannot-signal {pid}: {error.strerror}"
    return f"signalled {pid}"


def _mcp_servers(servers: Any) -> list[str]:
    """The MCP servers a session was handed, each said as `mcp?` says it (no secret's value);
    a server named `broken...` is refused, as an agent that cannot start one would."""
    said = []
    for server in servers or []:
        name = server.name
        if name.startswith("broken"):
            raise RequestError.invalid_params({"details": f"cannot start MCP server {name}"})
        if getattr(server, "type", None) == "http":
            headers = ",".join(h.name for h in server.headers)
            said.append(f"{name}=http {server.url} headers:{headers}")
        else:
            env = ",".join(e.name for e in server.env)
            said.append(f"{name}={' '.join([server.command, *server.args])} env:{env}")
    return said


def _usage(used: int, data: dict[str, Any]) -> UsageUpdate:
    """A usage_update: the context's fill, and the session's cost once it has one."""
    cost = None
    if "cost" in data:
        cost = Cost(amount=data["cost"], currency=data.get("currency", "USD"))
    return UsageUpdate(session_update="usage_update", used=used, size=100_000, cost=cost)


class FakeAgent:
    """The agent side: one process, any number of sessions, each with a JSON history file."""

    def __init__(self) -> None:
        self._conn: Any = None
        self._authenticated = False
        self._cancelled: dict[str, asyncio.Event] = {}
        self._calls = 0
        #: The MCP servers each session was handed, as session/new or load handed them.
        self._handed: dict[str, list[Any]] = {}
        self._store = Path(os.environ.get("HOME", ".")) / "fake-acp"

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    # -- session bookkeeping -------------------------------------------------------------------

    def _file(self, session_id: str) -> Path:
        return self._store / f"{session_id}.json"

    def _load(self, session_id: str) -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads(self._file(session_id).read_text())
        except FileNotFoundError:
            raise RequestError.resource_not_found(session_id) from None
        return data

    def _save(self, session_id: str, data: dict[str, Any]) -> None:
        self._store.mkdir(parents=True, exist_ok=True)
        self._file(session_id).write_text(json.dumps(data))

    async def _send(self, session_id: str, update: Any) -> None:
        await self._conn.session_update(session_id=session_id, update=update)

    def _announce_commands_later(self, session_id: str) -> None:
        """Real agents announce their commands just after answering session/new; so do we."""

        async def announce() -> None:
            await asyncio.sleep(0.01)
            await self._send(
                session_id,
                AvailableCommandsUpdate(
                    session_update="available_commands_update",
                    available_commands=[
                        AvailableCommand(name="recall", description="Repeat earlier prompts"),
                        AvailableCommand(
                            name="read",
                            description="Read a file",
                            input=AvailableCommandInput(UnstructuredCommandInput(hint="path")),
                        ),
                    ],
                ),
            )

        asyncio.get_running_loop().create_task(announce())

    # -- ACP agent methods ---------------------------------------------------------------------

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=acp.PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=not os.environ.get("FAKE_ACP_NO_LOAD"),
                mcp_capabilities=McpCapabilities(http=not os.environ.get("FAKE_ACP_NO_MCP_HTTP")),
                prompt_capabilities=PromptCapabilities(image=True, embedded_context=True),
                session_capabilities=SessionCapabilities(
                    additional_directories=SessionAdditionalDirectoriesCapabilities()
                )
                if os.environ.get("FAKE_ACP_MORE_DIRS")
                else None,
            ),
            auth_methods=[AuthMethodAgent(id=AUTH_METHOD, name="Fake login")],
            agent_info=Implementation(name="fake-acp-agent", title="Fake ACP agent", version="1"),
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse:
        if method_id != AUTH_METHOD:
            raise RequestError.invalid_params({"methodId": method_id})
        self._authenticated = True
        return AuthenticateResponse()

    def _check_auth(self) -> None:
        if os.environ.get("FAKE_ACP_REQUIRE_AUTH") and not self._authenticated:
            raise RequestError.auth_required()

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        self._check_auth()
        mcp = _mcp_servers(kwargs.get("mcp_servers"))
        session_id = f"fake-{uuid.uuid4().hex[:12]}"
        self._handed[session_id] = list(kwargs.get("mcp_servers") or [])
        more = list(kwargs.get("additional_directories") or [])
        self._save(session_id, {"cwd": cwd, "more": more, "history": [], "mcp": mcp})
        self._announce_commands_later(session_id)
        return NewSessionResponse(
            session_id=session_id, modes=_modes(), config_options=[_model_option()]
        )

    async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> LoadSessionResponse:
        self._check_auth()
        data = self._load(session_id)
        data["cwd"] = cwd
        data["more"] = list(kwargs.get("additional_directories") or [])
        data["mcp"] = _mcp_servers(kwargs.get("mcp_servers"))
        self._handed[session_id] = list(kwargs.get("mcp_servers") or [])
        self._save(session_id, data)
        for entry in data["history"]:
            await self._send(session_id, acp.update_user_message_text(entry["user"]))
            await self._send(session_id, acp.update_agent_message_text(entry["agent"]))
        if "cost" in data:
            # As the RFD asks of a resumed session: what it holds and has cost so far.
            await self._send(session_id, _usage(0, data))
        self._announce_commands_later(session_id)
        return LoadSessionResponse(modes=_modes(), config_options=[_model_option()])

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        return SetSessionModeResponse()

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self._cancelled.setdefault(session_id, asyncio.Event()).set()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        data = self._load(session_id)
        cwd = Path(data["cwd"])
        blocks = [_described(block) for block in prompt]
        texts = [block.text for block in prompt if getattr(block, "type", "") == "text"]
        text = texts[-1].strip() if texts else ""
        cancelled = self._cancelled[session_id] = asyncio.Event()
        words = text.split()
        verb = words[0] if words else ""
        await self._send(session_id, acp.update_agent_thought_text(f"thinking about {verb}"))

        stop: Literal["end_turn", "cancelled"] = "end_turn"
        if verb == "read" and len(words) > 1:
            reply = await self._read(session_id, cwd / words[1])
        elif verb == "write" and len(words) > 2:
            reply = await self._write(session_id, cwd / words[1], " ".join(words[2:]))
        elif verb == "edit" and len(words) > 1:
            edits = [word.partition("=")[::2] for word in words[1:]]
            for name, content in edits:
                await self._edit(session_id, cwd / name, content.replace("\\n", "\n"))
            reply = "edited " + " ".join(name for name, _ in edits)
        elif verb == "run" and len(words) > 1:
            reply = await self._run(session_id, words[1], words[2:])
        elif verb == "slow":
            reply = ""
            for _ in range(600):
                if cancelled.is_set():
                    break
                await self._send(session_id, acp.update_agent_message_text("tick "))
                reply += "tick "
                await asyncio.sleep(0.05)
            stop = "cancelled"
        elif verb == "pay" and len(words) > 1:
            data["cost"] = data.get("cost", 0.0) + float(words[1])
            data["currency"] = words[2] if len(words) > 2 else "USD"
            reply = f"paid {words[1]}"
        elif verb == "spend":
            # A usage report every 50 ms, $0.25 more each, until stopped (a budget's end).
            reply = ""
            for step in range(1, 600):
                if cancelled.is_set():
                    break
                data["cost"] = data.get("cost", 0.0) + 0.25
                await self._send(session_id, _usage(100 * step, data))
                await asyncio.sleep(0.05)
            stop = "cancelled"
        elif verb == "hang":
            await self._send(session_id, acp.update_agent_message_text("hanging"))
            await asyncio.sleep(3600)
            reply = ""
        elif verb == "crash":
            await self._send(session_id, acp.update_agent_message_text("about to crash"))
            await asyncio.sleep(0.05)
            os._exit(3)
        elif verb == "recall":
            earlier = [entry["user"] for entry in data["history"]]
            reply = "you said: " + " | ".join(earlier)
        elif verb == "heard":
            heard = [entry.get("blocks", [entry["user"]]) for entry in data["history"]]
            reply = "heard: " + json.dumps([*heard, blocks])
        elif verb == "env":
            reply = "env: " + " ".join(sorted(os.environ))
        elif verb == "open" and len(words) > 1:
            reply = _opened(cwd / words[1])
        elif verb == "put" and len(words) > 2:
            reply = _put(cwd / words[1], " ".join(words[2:]))
        elif verb == "signal" and len(words) > 1:
            reply = _signalled(int(words[1]))
        elif verb == "dirs?":
            reply = "dirs: " + " | ".join([data["cwd"], *data.get("more", [])])
        elif verb == "mcp?":
            reply = "mcp: " + (" | ".join(data.get("mcp") or []) or "none")
        elif verb in ("clienttool", "clienttool-anon") and len(words) > 1:
            arguments = json.loads(" ".join(words[2:]) or "{}")
            named = verb == "clienttool"
            reply = await self._client_tool(session_id, words[1], arguments, named=named)
        elif verb == "whoami":
            reply = f"pid={os.getpid()} home={os.environ.get('HOME', '')}"
        elif verb == "sloppy":
            await self._sloppy(session_id)
            reply = "still here"
        else:
            reply = f"echo: {text}"

        if verb != "slow":
            for index, word in enumerate(reply.split(" ")):
                await self._send(
                    session_id, acp.update_agent_message_text(word if index == 0 else f" {word}")
                )
        data["history"].append({"user": text, "agent": reply, "blocks": blocks})
        self._save(session_id, data)
        used = sum(len(e["user"].split()) + len(e["agent"].split()) for e in data["history"])
        await self._send(session_id, _usage(used, data))
        usage = Usage(input_tokens=len(words), output_tokens=len(reply.split()), total_tokens=used)
        return PromptResponse(stop_reason=stop, usage=usage)

    async def _sloppy(self, session_id: str) -> None:
        raw = self._conn._conn  # the JSON-RPC connection, to send what the models would refuse
        for update in (
            {"sessionUpdate": "usage_update", "used": None, "size": 1000},
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "ghost-1",
                "status": "completed",
                "title": "Ghost",
                "content": [{"type": "content", "content": {"type": "text", "text": "boo"}}],
            },
            {"sessionUpdate": "something_new", "whatever": 1},
        ):
            await raw.send_notification(
                "session/update", {"sessionId": session_id, "update": update}
            )

    # -- tools ---------------------------------------------------------------------------------

    async def _client_tool(
        self, session_id: str, name: str, arguments: dict[str, Any], *, named: bool
    ) -> str:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client
        from mcp.client.streamable_http import streamable_http_client

        server = next((s for s in self._handed.get(session_id, []) if s.name == "client"), None)
        if server is None:
            return "clienttool error: no MCP server named client was handed"
        call_id = self._call_id("client")
        await self._send(
            session_id,
            acp.start_tool_call(
                call_id, f"mcp__client__{name}", kind="other", status="pending", raw_input=arguments
            ),
        )
        meta = {"claudecode/toolUseId": call_id} if named else None
        if getattr(server, "type", None) == "http":
            transport = streamable_http_client(server.url)
        else:
            env = {e.name: e.value for e in server.env}
            transport = stdio_client(
                StdioServerParameters(command=server.command, args=server.args, env=env)
            )
        async with transport as (read, write):
            async with ClientSession(read, write) as mcp_session:
                await mcp_session.initialize()
                result = await mcp_session.call_tool(name, arguments, meta=meta)
        text = " ".join(getattr(block, "text", "") for block in result.content)
        await self._send(
            session_id,
            acp.update_tool_call(
                call_id,
                status="failed" if result.is_error else "completed",
                content=[acp.tool_content(acp.text_block(text))],
            ),
        )
        return f"clienttool error: {text}" if result.is_error else f"clienttool: {text}"

    def _call_id(self, kind: str) -> str:
        self._calls += 1
        return f"{kind}-{self._calls}"

    async def _read(self, session_id: str, path: Path) -> str:
        call_id = self._call_id("read")
        await self._send(session_id, acp.start_read_tool_call(call_id, f"Read {path}", str(path)))
        try:
            response = await self._conn.read_text_file(session_id=session_id, path=str(path))
        except RequestError as error:
            await self._send(
                session_id,
                acp.update_tool_call(
                    call_id,
                    status="failed",
                    content=[acp.tool_content(acp.text_block(str(error)))],
                ),
            )
            return f"could not read {path.name}"
        await self._send(
            session_id,
            acp.update_tool_call(
                call_id,
                status="completed",
                content=[acp.tool_content(acp.text_block(response.content))],
            ),
        )
        return f"read {path.name}"

    async def _write(self, session_id: str, path: Path, content: str) -> str:
        call_id = self._call_id("edit")
        title = f"Write {path}"
        await self._send(session_id, acp.start_edit_tool_call(call_id, title, str(path), content))
        answer = await self._conn.request_permission(
            session_id=session_id,
            tool_call=ToolCallUpdate(
                tool_call_id=call_id,
                title=title,
                kind="edit",
                raw_input={"path": str(path), "content": content},
            ),
            options=[
                PermissionOption(option_id="allow_once", name="Allow", kind="allow_once"),
                PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
            ],
        )
        outcome = answer.outcome
        allowed = isinstance(outcome, AllowedOutcome) and outcome.option_id.startswith("allow")
        if not allowed:
            await self._send(
                session_id,
                acp.update_tool_call(
                    call_id,
                    status="failed",
                    content=[acp.tool_content(acp.text_block("the user refused"))],
                ),
            )
            return f"did not write {path.name}"
        await self._send(session_id, acp.update_tool_call(call_id, status="in_progress"))
        try:
            await self._conn.write_text_file(session_id=session_id, path=str(path), content=content)
        except RequestError as error:
            await self._send(
                session_id,
                acp.update_tool_call(
                    call_id,
                    status="failed",
                    content=[acp.tool_content(acp.text_block(str(error)))],
                ),
            )
            return f"could not write {path.name}"
        await self._send(
            session_id,
            acp.update_tool_call(
                call_id,
                status="completed",
                content=[acp.tool_content(acp.text_block(f"wrote {len(content)} chars"))],
            ),
        )
        return f"wrote {path.name}"

    async def _edit(self, session_id: str, path: Path, content: str) -> None:
        call_id = self._call_id("edit")
        title = f"Edit {path}"
        await self._send(session_id, acp.start_edit_tool_call(call_id, title, str(path), content))
        await self._send(session_id, acp.update_tool_call(call_id, status="in_progress"))
        await self._conn.write_text_file(session_id=session_id, path=str(path), content=content)
        await self._send(session_id, acp.update_tool_call(call_id, status="completed"))

    async def _run(self, session_id: str, command: str, args: list[str]) -> str:
        call_id = self._call_id("run")
        line = " ".join([command, *args])
        await self._send(
            session_id,
            acp.start_tool_call(
                call_id,
                f"Run {line}",
                kind="execute",
                status="pending",
                raw_input={"command": line},
            ),
        )
        await self._send(session_id, acp.update_tool_call(call_id, status="in_progress"))
        try:
            terminal = await self._conn.create_terminal(
                session_id=session_id, command=command, args=args
            )
        except RequestError as error:
            await self._send(
                session_id,
                acp.update_tool_call(
                    call_id,
                    status="failed",
                    content=[acp.tool_content(acp.text_block(str(error)))],
                ),
            )
            return "could not run"
        terminal_id = terminal.terminal_id
        # As real agents do: the call's content names the terminal once it exists.
        await self._send(
            session_id,
            acp.update_tool_call(call_id, content=[acp.tool_terminal_ref(terminal_id)]),
        )
        exit_status = await self._conn.wait_for_terminal_exit(
            session_id=session_id, terminal_id=terminal_id
        )
        output = await self._conn.terminal_output(session_id=session_id, terminal_id=terminal_id)
        await self._conn.release_terminal(session_id=session_id, terminal_id=terminal_id)
        await self._send(
            session_id,
            acp.update_tool_call(
                call_id,
                status="completed" if exit_status.exit_code == 0 else "failed",
                content=[acp.tool_content(acp.text_block(output.output))],
            ),
        )
        return f"exit {exit_status.exit_code}: {output.output.strip()}"


def main() -> None:
    asyncio.run(acp.run_agent(cast(acp.Agent, FakeAgent())))


if __name__ == "__main__":
    main()
