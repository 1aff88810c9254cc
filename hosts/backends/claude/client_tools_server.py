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

import json
from collections.abc import Iterable
from typing import Any

from mcp import types
from mcp.server.lowlevel import Server

from hosts.backends.base import ClientTool, TurnEvents
from hosts.backends.served_client_tools import (
    PREFIX,
    SERVER_NAME,
    TOOL_USE_ID,
    call_result,
    text_result,
    tool_names,
)
from hosts.backends.served_client_tools import listed as listed_tool


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
            tools=[listed_tool(name, tool) for name, tool in self.tools.items()]
        )

    async def _call(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        meta = params.meta or {}
        call_id = meta.get(TOOL_USE_ID)
        tool = self.tools.get(params.name)
        events = self.events
        if tool is None:
            return text_result(f"No client provides the tool {params.name}.", error=True)
        if not isinstance(call_id, str) or not call_id:
            # A client's answer is keyed by the call: with no id there is nothing to key it by.
            return text_result(
                f"Tool {tool.name} could not be run: the call has no id.", error=True
            )
        if events is None:
            return text_result(
                f"Tool {tool.name} could not be run: no turn is running.", error=True
            )
        arguments = json.dumps(params.arguments or {}, ensure_ascii=False)
        result = await events.run_client_tool(
            call_id, tool, title=tool.title or tool.name, tool_input=arguments
        )
        return call_result(result)
