"""What every backend shares about the tools a session's clients run: the MCP server named
`client` the host serves an agent (the Claude CLI's in-process one, an ACP agent's), the names
it lists them under, their listing, and a client's ToolCallResult in the words an agent is
told."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from hosts.backends.base import ClientTool

if TYPE_CHECKING:
    # The MCP SDK is a second's import: read by the backends that serve an MCP server.
    from mcp import types

#: The in-process server's name, and so the prefix of every client tool the model sees.
SERVER_NAME = "client"
PREFIX = f"mcp__{SERVER_NAME}__"
#: The key the CLI names a call's tool-use id under in an MCP request's `_meta`.
TOOL_USE_ID = "claudecode/toolUseId"
#: What an MCP tool's name may hold, and how long the whole `mcp__client__...` may be (the
#: Messages API's limit on a tool's name).
_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
MAX_NAME = 64 - len(PREFIX)


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


#: A tool's input schema where its client gave none.
EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def result_words(result: Mapping[str, Any]) -> tuple[bool, str]:
    """Whether the client's call succeeded, and what the agent is told: its text content,
    else its message; a failure's reason."""
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
        return True, body or "The tool ran and returned nothing."
    error = result.get("error")
    reason = error.get("message") if isinstance(error, Mapping) else None
    return False, str(reason or body or "the tool failed")


def call_result(result: Mapping[str, Any]) -> types.CallToolResult:
    """A client's ToolCallResult as the MCP result an agent writes for its model."""
    success, words = result_words(result)
    return text_result(words, error=not success)


def text_result(text: str, *, error: bool = False) -> types.CallToolResult:
    from mcp import types

    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)


def listed(name: str, tool: ClientTool) -> types.Tool:
    """The tool as a served MCP server lists it, under `name`."""
    from mcp import types

    return types.Tool(
        name=name,
        title=tool.title,
        description=(
            f"{tool.description or tool.title or tool.name} "
            f"(run by the person's client {tool.client_id})"
        ),
        input_schema=dict(tool.input_schema) if tool.input_schema else EMPTY_SCHEMA,
    )
