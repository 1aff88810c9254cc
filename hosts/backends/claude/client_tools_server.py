"""The session's client tools, served to the CLI by an in-process MCP server named `client`.

As VS Code's Claude serves them (seed 000, "A client's tools are the client's to run"): the
SDK hands the CLI an in-process server (`McpSdkServerConfig`, the kind `create_sdk_mcp_server`
makes), so the model sees each tool as `mcp__client__<clientId>__<name>`. The server is a
lowlevel `mcp.server.Server` rather than `create_sdk_mcp_server`'s, because a call must be
answered under the harness's own tool-use id, which the CLI sends in the request's `_meta`
under `claudecode/toolUseId` and a `create_sdk_mcp_server` handler is never handed. A call is
the client's to run (`TurnEvents.run_client_tool`, the tool as the client announced it); its
ToolCallResult goes back to the CLI as the MCP result. A call handed no id, or reaching no
running turn, is answered as one that could not run.

The tools are the set handed before a turn's prompt: a running turn keeps what it started
with. The CLI lists an in-process server's tools once (its `mcp_reconnect` refuses an SDK
server, and the SDK forwards no list_changed), so a set changed after it listed them starts
the CLI again, resumed, before the next prompt.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from mcp import types
from mcp.server.lowlevel import Server

from hosts.backends.base import ClientTool, TurnEvents

#: The in-process server's name, and so the prefix of every client tool the model sees.
SERVER_NAME = "client"
PREFIX = f"mcp__{SERVER_NAME}__"
#: The key the CLI names a call's tool-use id under in an MCP request's `_meta`.
TOOL_USE_ID = "claudecode/toolUseId"
#: What an MCP tool's name may hold, and how long the whole `mcp__client__...` may be (the
#: Messages API's limit on a tool's name).
_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
MAX_NAME = 64 - len(PREFIX)
_EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def tool_names(tools: Iterable[ClientTool]) -> dict[str, ClientTool]:
    """Each tool by the name the server lists it under: `<clientId>__<name>` made safe, so two
    clients' same-named tools do not clash (a clash after the cut gets a short hash)."""
    by_name: dict[str, ClientTool] = {}
    for tool in tools:
        name = _UNSAFE.sub("_", f"{tool.client_id}__{tool.name}")[:MAX_NAME]
        if name in by_name and by_name[name] != tool:
            digest = hashlib.sha256(f"{tool.client_id}\0{tool.name}".encode()).hexdigest()[:8]
            name = f"{name[: MAX_NAME - 9]}_{digest}"
        by_name.setdefault(name, tool)
    return by_name


def call_result(result: Mapping[str, Any]) -> types.CallToolResult:
    """A client's ToolCallResult as the MCP result the CLI writes for the model."""
    texts = [
        str(block.get("text"))
        for block in result.get("content") or []
        if isinstance(block, Mapping) and block.get("type") == "text" and block.get("text")
    ]
    message = result.get("pastTenseMessage")
    if isinstance(message, Mapping):
        message = message.get("markdown")
    body = "\n".join(texts) or str(message or "")
    if result.get("success"):
        return _text(body or "The tool ran and returned nothing.")
    error = result.get("error")
    reason = error.get("message") if isinstance(error, Mapping) else None
    return _text(str(reason or body or "the tool failed"), error=True)


def _text(text: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)


class ClientToolsServer:
    """One chat's `client` server: the tools offered now, and the turn whose client runs a
    call."""

    def __init__(self) -> None:
        self.tools: dict[str, ClientTool] = {}
        #: The running turn's events, which hand a call to its client; None between turns.
        self.events: TurnEvents | None = None
        #: Whether the running CLI has listed the tools (it connects to the server lazily, and
        #: lists whatever is offered then); cleared for each CLI started.
        self.listed = False
        self.server: Server[Any] = Server(
            SERVER_NAME,
            version="1.0.0",
            on_list_tools=self._list,
            on_call_tool=self._call,
        )

    def offer(self, tools: Iterable[ClientTool]) -> bool:
        """Offer `tools` from the next listing on; whether the CLI must list them again (it
        listed another set)."""
        named = tool_names(tools)
        stale = self.listed and named != self.tools
        self.tools = named
        return stale

    def contributor(self, tool_name: str) -> dict[str, str] | None:
        """The ToolCallClientContributor of a model's call to `mcp__client__...`, looked up
        from the announcement (a client's own beats the server it is offered through)."""
        if not tool_name.startswith(PREFIX):
            return None
        tool = self.tools.get(tool_name[len(PREFIX) :])
        return {"kind": "client", "clientId": tool.client_id} if tool is not None else None

    def display_name(self, tool_name: str) -> str | None:
        """A client tool's name as its client announced it (its title where it gave one)."""
        if not tool_name.startswith(PREFIX):
            return None
        tool = self.tools.get(tool_name[len(PREFIX) :])
        return (tool.title or tool.name) if tool is not None else None

    async def _list(self, ctx: Any, params: Any) -> types.ListToolsResult:
        self.listed = True
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=name,
                    title=tool.title,
                    description=(
                        f"{tool.description or tool.title or tool.name} "
                        f"(run by the person's client {tool.client_id})"
                    ),
                    input_schema=dict(tool.input_schema) if tool.input_schema else _EMPTY_SCHEMA,
                )
                for name, tool in self.tools.items()
            ]
        )

    async def _call(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        meta = params.meta or {}
        call_id = meta.get(TOOL_USE_ID)
        tool = self.tools.get(params.name)
        events = self.events
        if tool is None:
            return _text(f"No client provides the tool {params.name}.", error=True)
        if not isinstance(call_id, str) or not call_id:
            # A client's answer is keyed by the call: with no id there is nothing to key it by.
            return _text(f"Tool {tool.name} could not be run: the call has no id.", error=True)
        if events is None:
            return _text(f"Tool {tool.name} could not be run: no turn is running.", error=True)
        arguments = json.dumps(params.arguments or {}, ensure_ascii=False)
        result = await events.run_client_tool(
            call_id, tool, title=tool.title or tool.name, tool_input=arguments
        )
        return call_result(result)
