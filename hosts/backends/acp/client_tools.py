"""The tools a session's clients provide, served to an ACP agent as an MCP server named `client`.

As the Claude backend offers them (seed 000, "A client's tools are the client's to run"): each
tool is listed as `<clientId>__<name>`, so two clients' same-named tools do not clash, and a call
is the client's to run (`TurnEvents.run_client_tool`, with the tool as its client announced it,
its start carrying `contributor: {kind: "client", clientId}`); the client's ToolCallResult goes
back to the agent as the MCP result. A call to a tool the session's clients did not announce,
and a call made while no turn runs, is answered as an error in words and runs nothing.

How the agent reaches it: over HTTP on the host's loopback (client_tools_endpoint.py), handed in
session/new and session/load as `{type: "http", name: "client", url}`, the URL's path holding a
secret made for this chat. The agent's sandbox shares the host's network unless the operator cut
it (AHPD_SANDBOX_NETWORK=none), so 127.0.0.1 inside is the host's. An agent that takes no HTTP
MCP servers, or whose sandbox has no network, is handed a stdio server instead: a relay it runs
itself to a unix socket bound into its sandbox (client_tools_bridge.py).

The set is read when the agent's session is made or loaded; a set changed after that reaches the
agent at the next send, which starts the agent again and loads its session with the new set (an
agent lists a server's tools once, as the Claude CLI does): a running turn keeps what it had.

An agent says its own tool_call for the call too. Where the MCP request names the agent's call
(`_meta["claudecode/toolUseId"]`, which Claude Code sends to every MCP server), the host's row is
that call; else an agent's row whose name ends with a listed tool's name is taken as that call,
the oldest first; else the host makes an id of its own, and the agent's row said after it is not
drawn a second time. Either way the row is the client's:
what the agent says of it afterwards is not said again, and its permission question for it is
answered allow (the client runs its tool under its own window's confirmation).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

from acp.schema import EnvVariable, HttpMcpServer, McpServerStdio

from hosts.backends.base import ClientTool, TurnEvents
from hosts.backends.served_client_tools import (
    SERVER_NAME,
    TOOL_USE_ID,
    call_result,
    tool_names,
)
from hosts.backends.served_client_tools import listed as listed_tool

if TYPE_CHECKING:
    # The MCP SDK (and uvicorn) are a second's import, read once a chat's clients offer a tool.
    from mcp import types
    from mcp.server.lowlevel import Server

    from .client_tools_bridge import StdioBridge
    from .client_tools_endpoint import Route

log = logging.getLogger(__name__)


def _error(text: str) -> types.CallToolResult:
    from mcp import types

    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def _names(update: Mapping[str, Any]) -> list[str]:
    """What an agent's tool_call calls its tool: its title, and a `toolName` in its `_meta`
    (claude-agent-acp's `_meta.claudeCode.toolName`)."""
    found = [update.get("title")]
    meta = update.get("_meta")
    if isinstance(meta, Mapping):
        found += [v.get("toolName") for v in meta.values() if isinstance(v, Mapping)]
    return [name.strip() for name in found if isinstance(name, str) and name.strip()]


class ClientToolsServed:
    """One chat's `client` server: the set its agent was handed, and the turn whose clients run
    a call."""

    def __init__(self, read: Callable[[], Sequence[ClientTool]] | None) -> None:
        self._read = read
        #: The set the agent was last handed, by listed name.
        self.tools: dict[str, ClientTool] = {}
        #: The running turn's events; None between turns.
        self.events: TurnEvents | None = None
        self._route: Route | None = None
        self._bridge: StdioBridge | None = None
        #: The calls of the running turn that are a client's, by id.
        self._calls: dict[str, ClientTool] = {}
        #: The agent's rows for a client's tool that no MCP call has claimed yet, oldest first.
        self._unclaimed: dict[str, list[str]] = {}
        #: Calls that named no id and found no row, under an id the host made, oldest first.
        self._made: dict[str, list[str]] = {}

    @cached_property
    def server(self) -> Server[Any]:
        """The chat's `client` MCP server, made once something serves it."""
        from mcp.server.lowlevel import Server

        return Server(
            SERVER_NAME, version="1.0.0", on_list_tools=self._list, on_call_tool=self._call
        )

    def _now(self) -> dict[str, ClientTool]:
        return tool_names(self._read()) if self._read is not None else {}

    def changed(self) -> bool:
        """Whether the clients' set is not the one the agent was handed."""
        return self._now() != self.tools

    async def prepare(self) -> list[str]:
        """Before the agent starts: where its clients provide tools, the socket its relay would
        reach (the sandbox is made before the agent says whether it takes HTTP); what the
        sandbox must hold for it."""
        if self._bridge is None and self._now():
            from .client_tools_bridge import StdioBridge

            bridge = StdioBridge(self.server)
            await bridge.open()
            self._bridge = bridge
        return self._bridge.needs() if self._bridge is not None else []

    async def handed(self, *, over_http: bool) -> list[HttpMcpServer | McpServerStdio]:
        """The server as session/new or session/load hands it, the set read now (none when no
        client provides a tool): over HTTP where the agent can reach the host's loopback,
        else as the stdio relay."""
        self.tools = self._now()
        if not self.tools:
            return []
        if over_http:
            if self._route is None:
                from .client_tools_endpoint import shared_endpoint

                self._route = await (await shared_endpoint()).route(self.server)
            return [HttpMcpServer(type="http", name=SERVER_NAME, url=self._route.url, headers=[])]
        if self._bridge is None:
            log.warning("the clients' tools are not handed: the agent started before they were")
            return []
        command, args, env = self._bridge.command()
        return [
            McpServerStdio(
                name=SERVER_NAME,
                command=command,
                args=args,
                env=[EnvVariable(name=k, value=v) for k, v in env.items()],
            )
        ]

    def begin(self, events: TurnEvents) -> None:
        self.events = events
        self._calls.clear()
        self._unclaimed.clear()
        self._made.clear()

    def end(self) -> None:
        self.events = None

    async def close(self) -> None:
        """The chat let its agent go: the route is gone, and with it the secret."""
        self.events = None
        if self._route is not None:
            await self._route.close()
            self._route = None
        if self._bridge is not None:
            await self._bridge.close()
            self._bridge = None

    def agent_call(self, call_id: str, update: Mapping[str, Any]) -> tuple[ClientTool, bool] | None:
        """The client tool an agent's own tool call is a call to, if it is one, and whether the
        host said that call already under an id of its own (its row is then not started)."""
        if call_id in self._calls:
            return self._calls[call_id], False
        for name in _names(update):
            for listed, tool in self.tools.items():
                if name == listed or name.endswith(f"__{listed}") or name.startswith(f"{listed} "):
                    self._calls[call_id] = tool
                    made = self._made.get(listed)
                    if made:
                        # The agent's row of a call that reached the server first, naming none.
                        made.pop(0)
                        return tool, True
                    self._unclaimed.setdefault(listed, []).append(call_id)
                    return tool, False
        return None

    async def _list(self, ctx: Any, params: Any) -> types.ListToolsResult:
        from mcp import types

        return types.ListToolsResult(
            tools=[listed_tool(name, tool) for name, tool in self.tools.items()]
        )

    def _call_id(self, name: str, meta: Mapping[str, Any]) -> str:
        unclaimed = self._unclaimed.get(name) or []
        named = meta.get(TOOL_USE_ID)
        if isinstance(named, str) and named:
            if named in unclaimed:
                unclaimed.remove(named)
            return named
        if unclaimed:
            return unclaimed.pop(0)
        made = f"client-{uuid.uuid4().hex[:16]}"
        self._made.setdefault(name, []).append(made)
        return made

    async def _call(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = self.tools.get(params.name)
        if tool is None:
            return _error(f"No client of this session provides a tool named {params.name}.")
        events = self.events
        if events is None:
            return _error(f"Tool {tool.name} could not be run: no turn is running.")
        call_id = self._call_id(params.name, params.meta or {})
        self._calls[call_id] = tool
        arguments = json.dumps(params.arguments or {}, ensure_ascii=False)
        result = await events.run_client_tool(
            call_id, tool, title=tool.title or tool.name, tool_input=arguments
        )
        return call_result(result)
