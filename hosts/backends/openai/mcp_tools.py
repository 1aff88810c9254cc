"""The tools of the session's ready MCP servers, as one model call is offered them: each under a
function name the API accepts (`[a-zA-Z0-9_-]{1,64}`), `<server>__<tool>`, made unique, and
asked about before it runs in the `default` permission mode unless its annotations say it only
reads (readOnlyHint)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

from openai.types.chat import ChatCompletionFunctionToolParam

from hosts.backends.base import McpServers, McpTool, PermissionOption, TurnEvents

from .tools import TOOLS, ToolError, parse_arguments

#: The permission modes a person is asked in before an MCP tool that may change things runs.
ASKS_IN = frozenset({"default"})
_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]+")
_LIMIT = 64


def function_name(tool: McpTool) -> str:
    """`<server>__<tool>`, cut to what the API takes (a digest keeps cut names apart)."""
    name = f"{_clean(tool.server_name)}__{_clean(tool.name)}"
    if len(name) <= _LIMIT:
        return name
    digest = hashlib.sha256(f"{tool.server_id}\0{tool.name}".encode()).hexdigest()[:8]
    return f"{name[: _LIMIT - 9]}_{digest}"


def _clean(text: str) -> str:
    return _UNSAFE.sub("_", text).strip("_") or "tool"


class McpOffer:
    """The MCP tools of one model call, by the function name the model calls them by."""

    def __init__(self, tools: Iterable[McpTool]) -> None:
        self.by_name: dict[str, McpTool] = {}
        for tool in sorted(tools, key=lambda t: (t.server_name, t.name)):
            name = function_name(tool)
            n = 2
            # Never the name of one of the host's own tools, nor of another MCP tool.
            while name in self.by_name or name in TOOLS:
                suffix = f"_{n}"
                name = function_name(tool)[: _LIMIT - len(suffix)] + suffix
                n += 1
            self.by_name[name] = tool

    def get(self, name: str) -> McpTool | None:
        return self.by_name.get(name)

    def params(self) -> list[ChatCompletionFunctionToolParam]:
        return [
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": _description(tool),
                    "parameters": _parameters(tool.input_schema),
                },
            }
            for name, tool in self.by_name.items()
        ]


def title_of(tool: McpTool) -> str:
    return f"{tool.server_name}: {tool.title or tool.name}"


def contributor(tool: McpTool) -> dict[str, str]:
    """The protocol's ToolCallMcpContributor of a call to the tool."""
    return {"kind": "mcp", "customizationId": tool.server_id}


def _description(tool: McpTool) -> str:
    said = tool.description or tool.title or tool.name
    return f"{said} (tool {tool.name!r} of the MCP server {tool.server_name!r})"[:1024]


def _parameters(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The tool's input schema as a function's parameters: an object schema, always."""
    parameters = dict(schema)
    if parameters.get("type") != "object":
        return {"type": "object", "properties": {}}
    parameters.setdefault("properties", {})
    return parameters


async def run_mcp_call(
    servers: McpServers,
    tool: McpTool,
    call_id: str,
    arguments: str,
    events: TurnEvents,
    permission_mode: str,
) -> str:
    """Run one call to an MCP tool through the confirmation path, as the host's own tools run;
    what the model is told (its result's text, or why it failed or did not run)."""
    shown = title_of(tool)
    tool_input = arguments or "{}"
    try:
        args = parse_arguments(arguments)
    except ToolError as err:
        events.tool_running(call_id, title=shown, tool_input=tool_input)
        events.tool_result(call_id, success=False, message=f"{shown}: failed", error=str(err))
        return f"Error: {err}"
    if not tool.read_only and permission_mode in ASKS_IN:
        answer = await events.permission(
            call_id,
            title=shown,
            tool_input=tool_input,
            options=(
                PermissionOption("allow", "Allow", "approve"),
                PermissionOption("deny", "Deny", "deny"),
            ),
        )
        if not answer.approved:
            events.tool_result(
                call_id, success=False, message=f"{shown}: denied", error="denied by the user"
            )
            return "The user denied this tool call, so it did not run. Do not retry it."
    else:
        events.tool_running(call_id, title=shown, tool_input=tool_input)
    outcome = await servers.call(tool, args, events)
    if outcome.auth is not None:
        # The server asked for a sign-in mid-call: the call waits for a person to give one
        # (authenticate), and runs again once the server is back.
        events.tool_auth_required(call_id, outcome.auth)
        if await servers.until_signed_in(tool.server_id):
            events.tool_auth_resolved(call_id)
            outcome = await servers.call(tool, args, events)
    if outcome.success:
        events.tool_result(call_id, success=True, message=f"Ran {shown}", output=outcome.text)
        return outcome.text
    events.tool_result(
        call_id, success=False, message=f"{shown}: failed", error=outcome.text or "failed"
    )
    return f"Error: {outcome.text}"
