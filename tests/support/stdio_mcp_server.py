"""A small MCP server over stdio, for tests that hand an agent a team's MCP server.

Its one tool, `whereami`, answers with the folder it was started in and whether it was handed
`MCP_TOKEN` (the token's value itself, so a test sees the secret reached it and nothing else).
"""

from __future__ import annotations

import os
from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


async def _list(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(
        tools=[
            types.Tool(
                name="whereami",
                description="Say where the server runs",
                input_schema={"type": "object", "properties": {}},
            )
        ]
    )


async def _call(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    said = f"cwd={os.getcwd()} token={os.environ.get('MCP_TOKEN', 'none')}"
    return types.CallToolResult(content=[types.TextContent(type="text", text=said)])


async def main() -> None:
    server: Server[Any] = Server("whereami", on_list_tools=_list, on_call_tool=_call)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
