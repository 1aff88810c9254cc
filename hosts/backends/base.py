"""The one interface every agent backend implements, and what a backend reports a turn through.

A backend knows its agent and nothing of the protocol's actions: it reports what happens in a
turn through `TurnEvents`, and the engine turns each report into the protocol's actions with
the protocol's rules (a part is opened before it streams, a tool call is started before it is
ready, `confirmed: 'not-needed'` unless a person was asked, one ending per turn). Backends import
nothing from Django.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from .managed_settings import ManagedSettings
from .sandbox import Jail


class BackendError(Exception):
    """A backend could not do what it was asked; the message is shown to the person."""


@dataclass(frozen=True, slots=True)
class AgentConfig:
    """One entry of the operator's AHPD_CONFIG `agents` list."""

    provider: str
    kind: Literal["acp", "openai", "claude"]
    display_name: str
    description: str = ""
    # acp
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    #: HOME for the agent process; default: a folder of its own under the data directory.
    home: str | None = None
    auth_method: str | None = None
    prompt_timeout_s: float = 600.0
    # openai
    base_url: str = ""
    model: str = ""
    api_key: str = ""
    models: tuple[str, ...] = ()
    # claude
    #: Another `claude` CLI to run than the one claude-agent-sdk bundles.
    cli_path: str = ""
    #: US dollars per million tokens, by model (a `*` glob): {"input", "output", "cacheRead",
    #: "cacheWrite"}. What a turn's usage is charged when the agent reports no cost.
    prices: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    #: The operator's managed permission rules (AHPD_CONFIG's root keys), for every backend.
    managed: ManagedSettings = field(default_factory=ManagedSettings)


@dataclass(frozen=True, slots=True)
class McpServerSpec:
    """One MCP server a session's agent is offered (the operator's `mcpServers` entry, or the
    team's registry row), in VS Code's two shapes: stdio (`command`, `args`, `cwd`, `env`) or
    http (`url`, `headers`). `env` and `headers` hold secrets: never shown, never logged."""

    #: The session's customization id for it (McpServerCustomization.id): `mcp:<name>`.
    id: str
    #: The name a person gave it (the key of `mcpServers`; ACP's and the model's `name`).
    name: str
    transport: Literal["stdio", "http"]
    command: str = ""
    args: tuple[str, ...] = ()
    cwd: str | None = None
    #: Secrets, left out of the spec's repr: a spec logged or in a traceback shows none.
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)


@dataclass(frozen=True, slots=True)
class McpTool:
    """One tool of a ready MCP server, as the host's own agent loop offers it to a model."""

    #: The server's McpServerSpec.id (`mcp:<name>`): the call's contributor.
    server_id: str
    server_name: str
    #: The tool's own name on its server.
    name: str
    title: str | None = None
    description: str = ""
    #: JSON Schema of its input (an object schema).
    input_schema: Mapping[str, Any] = field(default_factory=dict)
    #: Its annotations say it changes nothing (readOnlyHint): nobody is asked before it runs.
    read_only: bool = False


@dataclass(frozen=True, slots=True)
class McpCallOutcome:
    """What a call to an MCP tool came to: its text for the model, and whether it failed;
    `auth`: the McpAuthRequirement where it failed for want of a sign-in (the server answered
    401 and named its protected resource), which a person may still give."""

    success: bool
    text: str
    auth: Mapping[str, Any] | None = None


class McpServers(Protocol):
    """The MCP servers a session's host-run agent loop reaches (hosts/backends/mcp): the
    engine starts and stops each; a turn lists their tools and calls them."""

    def tools(self) -> list[McpTool]:
        """The tools of every server that is ready now."""

    async def settled(self) -> None:
        """Wait until no server is still starting (each ready, failed or stopped)."""

    async def call(
        self, tool: McpTool, arguments: Mapping[str, Any], events: TurnEvents
    ) -> McpCallOutcome:
        """Call the tool, one call at a time per server; a question the server asks meanwhile
        (elicitation) is asked through `events.ask`."""

    async def until_signed_in(self, server_id: str) -> bool:
        """Wait while the server waits for a sign-in: True once it is ready again (a person
        pushed a token), False once it stopped or failed instead."""


@dataclass(frozen=True, slots=True)
class ClientTool:
    """A tool one of the session's active clients provides (SessionActiveClient.tools): that
    client runs a call to it and answers with chat/toolCallComplete."""

    client_id: str
    name: str
    title: str | None = None
    description: str = ""
    #: JSON Schema of its input (ToolDefinition.inputSchema); None: the client gave none.
    input_schema: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class InputAnswer:
    """How a question was answered (chat/inputCompleted): `accept` with the answers by question
    id (the protocol's ChatInputAnswer objects), or `decline` / `cancel` (the turn ending
    before anybody answered is a `cancel`)."""

    response: Literal["accept", "decline", "cancel"]
    answers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PermissionOption:
    option_id: str
    label: str
    kind: Literal["approve", "deny"]


@dataclass(frozen=True, slots=True)
class PermissionAnswer:
    approved: bool
    #: The option the person picked, by the backend's own id, when options were offered.
    option_id: str | None = None


@dataclass(frozen=True, slots=True)
class TerminalExit:
    """How a command run in a host terminal ended: its exit code, or the signal it died of."""

    exit_code: int | None
    signal: str | None = None


class HostTerminal(Protocol):
    """One command the host runs for a backend in a host terminal: a pty every client may
    subscribe to (`uri`) and watch, claimed by the chat's session and turn."""

    uri: str
    title: str

    def output(self) -> tuple[str, bool]:
        """What it printed that the terminal still holds, and whether older output was lost."""

    def exit_status(self) -> TerminalExit | None:
        """How it ended, or None while it runs."""

    async def wait(self) -> TerminalExit:
        """Wait for it to end."""

    async def kill(self) -> None:
        """Stop it (SIGHUP, then SIGKILL after a grace); the terminal stays, exited."""

    def claim_for(self, tool_call_id: str) -> None:
        """Name the tool call it runs for in its claim (known only after it was started)."""


class HostTerminals(Protocol):
    """The host's terminals, as a backend may use them for one chat (the engine's, over the
    host's terminal table; a backend must not import the engine)."""

    def open(
        self,
        argv: Sequence[str],
        *,
        title: str,
        cwd: Path,
        env: Mapping[str, str],
        turn_id: str | None,
    ) -> HostTerminal:
        """Start `argv` (no shell) under a pty in `cwd`, with exactly `env`, in a terminal the
        chat's session claims for `turn_id`; OSError if it cannot start."""


@dataclass(frozen=True, slots=True)
class BackgroundTask:
    """Work an agent runs in the background of a chat, past the call that started it: a shell
    command, or a subagent. The host builds each row (BackgroundWork) from these."""

    #: The agent's own id for it.
    task_id: str
    kind: Literal["shell", "subagent"]
    #: What it is for, in a few words.
    label: str
    #: When it started, ISO 8601.
    started_at: str
    #: A shell's command line.
    command: str | None = None
    #: The tool call that started it.
    tool_call_id: str | None = None


class ChatReports(Protocol):
    """What a backend says of a chat outside any one turn (the engine's, per chat)."""

    def background_work(self, tasks: Sequence[BackgroundTask]) -> None:
        """The whole set of work the agent runs in the background now (none: nothing runs)."""

    def activity(self, activity: str | None) -> None:
        """What the agent is doing now, in one line; None when it is idle."""


@dataclass(frozen=True, slots=True)
class ChatContext:
    """What a backend needs to open (or resume) one conversation."""

    #: The chat's URI, for logs.
    chat: str
    working_directories: Sequence[Path]
    #: The backend's own id for this conversation when it is resumed (ACP session id).
    backend_id: str | None = None
    #: Earlier turns, oldest first, as {"user": text, "assistant": text}: the whole conversation
    #: for a backend that keeps none of its own (the openai loop), and for one that does (ACP),
    #: what to give a new conversation of its own that has no record of them.
    history: Sequence[Mapping[str, str]] = ()
    #: The session's config values (model, permissionMode, ...).
    config: Mapping[str, Any] = field(default_factory=dict)
    #: A folder this backend may keep state in (the agent's HOME for ACP).
    state_dir: Path | None = None
    #: Where commands the agent asks for run so clients can watch them; None: the backend
    #: runs them as plain subprocesses of its own (a backend's unit tests).
    terminals: HostTerminals | None = None
    #: The sandbox the agent and what it runs start in (its session owner's, over its
    #: folders); None: as the server's user (a backend's unit tests).
    jail: Jail | None = None
    #: The MCP servers enabled for the session now (its owner is offered them and nobody
    #: switched them off), for a backend whose agent starts its own (ACP's session/new).
    mcp_servers: Sequence[McpServerSpec] = ()
    #: Where a backend whose agent starts its own MCP servers reports what the host can know of
    #: their state (McpServerState by spec id); None: nobody is told.
    mcp_state: Callable[[str, Mapping[str, Any]], None] | None = None
    #: The session's MCP servers as the host connects to them, for a backend that runs its
    #: own agent loop (the openai loop); None: none.
    mcp: McpServers | None = None
    #: The tools the session's active clients provide, read as each turn starts (a running
    #: turn keeps the set it started with); None: no client can run a tool here.
    client_tools: Callable[[], Sequence[ClientTool]] | None = None
    #: Where the backend says its background work and its activity; None: nobody listens.
    reports: ChatReports | None = None


@dataclass(frozen=True, slots=True)
class Attachment:
    """What a message carried beside its text, as the host found it: a text file's content
    (or what its producer says the model should read), an image's bytes, or, where the host
    has no copy, only its label and URI, left as sent."""

    label: str
    uri: str | None = None
    text: str | None = None
    image: bytes | None = None
    mime: str | None = None


@dataclass(frozen=True, slots=True)
class TurnRequest:
    turn_id: str
    text: str
    #: The model the message asked for, if any.
    model: str | None = None
    #: The message's attachments as the client sent them (the protocol's MessageAttachment).
    sent: tuple[Mapping[str, Any], ...] = ()
    #: The same, as the host found them (sessions/attachments.py), before the turn runs.
    attachments: tuple[Attachment, ...] = ()
    #: Who sent the message (`user:<id>`), whose client's files an attachment may name.
    sender: str | None = None


@dataclass(frozen=True, slots=True)
class Cost:
    """What a turn cost by the agent's own account, in an ISO 4217 currency."""

    amount: float
    currency: str = "USD"


@dataclass(frozen=True, slots=True)
class Context:
    """How full the conversation's context window is: tokens in it, and its size."""

    used: int
    size: int


@dataclass(frozen=True, slots=True)
class TurnEnd:
    """How a turn ended: `complete`, `cancelled`, or `error` with a message."""

    state: Literal["complete", "cancelled", "error"]
    message: str = ""
    #: An error the backend can run the turn again from (its `resume_turn`): the error part
    #: says `resumable: true`, and a client may send chat/turnResume.
    resumable: bool = False


class TurnEvents(Protocol):
    """What a backend reports while a turn runs. Every method but `permission` returns at once."""

    def text(self, content: str) -> None:
        """Assistant text, appended to the turn's current markdown part."""

    def reasoning(self, content: str) -> None:
        """Thinking, appended to the turn's current reasoning part."""

    def tool_call(
        self,
        call_id: str,
        *,
        name: str,
        title: str | None = None,
        kind: str | None = None,
        partial_input: str | None = None,
        contributor: Mapping[str, Any] | None = None,
    ) -> None:
        """A tool call named (again): started the first time, its input streamed after.
        `contributor`: the protocol's ToolCallContributor of a call the agent does not run
        itself (`{"kind": "mcp", "customizationId"}`), said on its start."""

    async def permission(
        self,
        call_id: str,
        *,
        title: str,
        tool_input: str | None,
        options: Sequence[PermissionOption] = (),
    ) -> PermissionAnswer:
        """Ask a person whether the call may run; waits for the answer (or the turn's end)."""

    def tool_running(
        self, call_id: str, *, title: str | None = None, tool_input: str | None = None
    ) -> None:
        """The call runs without anybody having been asked (or after an approval)."""

    def tool_auth_required(self, call_id: str, auth: Mapping[str, Any]) -> None:
        """A running call to an MCP server's tool waits for a person to sign in to that server
        (`auth`: the McpAuthRequirement; answered by the `authenticate` command)."""

    def tool_auth_resolved(self, call_id: str) -> None:
        """The sign-in the call waited for was given: it runs on."""

    async def ask(self, request: Mapping[str, Any]) -> InputAnswer:
        """Ask the person a question (a ChatInputRequest: `id`, `message`, `url`, `questions`)
        and wait for the answer (chat/inputCompleted), or a `cancel` when the turn ends first."""

    async def run_client_tool(
        self, call_id: str, tool: ClientTool, *, title: str, tool_input: str
    ) -> Mapping[str, Any]:
        """Have the client that provides `tool` run the call, started under `call_id`, and
        wait for the ToolCallResult it completes it with (a failed one when that client
        leaves, the result is denied, or the turn ends first)."""

    def tool_result(
        self,
        call_id: str,
        *,
        success: bool,
        message: str,
        output: str | None = None,
        error: str | None = None,
        content: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        """The call finished; a failed call is completed with success False. `content`: the
        protocol's ToolResultContent items beside the output's text (a terminal's)."""

    def tool_content(self, call_id: str, content: Sequence[Mapping[str, Any]]) -> None:
        """What a running call shows so far (ToolResultContent: a terminal a client can
        watch), replacing what it showed before."""

    def usage(
        self,
        *,
        input_tokens: int | None,
        output_tokens: int | None,
        model: str | None,
        cache_read_tokens: int | None = None,
        cache_write_tokens: int | None = None,
        cost: Cost | None = None,
        context: Context | None = None,
    ) -> None:
        """What the turn has spent so far, as running totals for this turn: tokens where this
        report says them (None: not said), its cost by the agent's own account, and how full
        the context window is (which is no spending)."""


class AgentChat(Protocol):
    """One conversation with a backend."""

    #: The backend's own id for the conversation, kept so it can be resumed after a restart.
    backend_id: str | None

    async def run_turn(self, request: TurnRequest, events: TurnEvents) -> TurnEnd:
        """Run one turn to its end. Cancelled by `cancel`, which makes it return `cancelled`."""

    async def cancel(self) -> None:
        """Stop the running turn, if any."""

    async def close(self) -> None:
        """Let the conversation go (the process, the connection)."""


@runtime_checkable
class ResumableChat(AgentChat, Protocol):
    """A conversation that can run a turn it ended resumable again (Agent.resumes_turns)."""

    async def resume_turn(self, request: TurnRequest, events: TurnEvents) -> TurnEnd:
        """Run the turn `request` names again from where its resumable error left it, its
        message not added to the conversation again (the openai loop asks the model again from
        the conversation as the failed call left it; Claude cuts the conversation back before
        the prompt and sends it again). One it holds no such turn for ends in a resumable
        error."""


class Agent(Protocol):
    """One configured backend: what root state announces, and how its chats are opened."""

    config: AgentConfig
    #: Whether each chat it opens runs a process of its own (an ACP agent), which this host
    #: lets go of while the chat is idle and opens again, by the chat's backend id, when the
    #: chat next needs it. A backend whose chat is an object in this process (the openai loop,
    #: which holds the conversation's tool calls) is never let go.
    holds_process: bool
    #: Whether its agent starts the session's MCP servers itself, handed them in
    #: ChatContext.mcp_servers (ACP), rather than the host connecting to them for it
    #: (ChatContext.mcp, the openai loop).
    starts_mcp_servers: bool
    #: Whether its chats are ResumableChat: a turn they end resumable can be run again.
    resumes_turns: bool

    @property
    def multiple_working_directories(self) -> bool:
        """Whether its agent works in more than one folder, so a session's folders may change:
        a chat opened again (resumed by its backend id) takes the new set at its next turn."""

    def info(self) -> dict[str, Any]:
        """The AgentInfo root state lists: provider, displayName, description, models."""

    def session_config_schema(self) -> dict[str, Any]:
        """The SessionConfigSchema resolveSessionConfig answers (model, permission mode)."""

    async def session_config_completions(self, key: str, query: str) -> list[dict[str, str]]:
        """The values of one of its own config keys matching `query` (SessionConfigValueItem
        objects); none for a key whose values its schema already lists."""

    async def open_chat(self, context: ChatContext) -> AgentChat:
        """Start (or resume, when context.backend_id is set) a conversation."""
