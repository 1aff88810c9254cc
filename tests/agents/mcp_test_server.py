"""A real MCP server for the tests, made with the mcp SDK, run over stdio or streamable HTTP.

    python tests/agents/mcp_test_server.py                      # stdio
    python tests/agents/mcp_test_server.py --http PORT          # http://127.0.0.1:PORT/mcp
    python tests/agents/mcp_test_server.py --http PORT --token T
        # every request without `Authorization: Bearer T` is answered 401 with the
        # protected-resource metadata a client signs in from (RFC 9728)

Its tools:
- `add(a, b)`: the sum, read-only (annotations.readOnlyHint);
- `pick_color()`: asks the person through elicitation (a color from a list, a count, a note,
  whether to shout) and says what was answered, declined or cancelled;
- `where()`: what the process sees of itself: its HOME, its working folder, its pid, the
  environment variable MCP_TEST_SECRET's length (never its value) and whether the path named by
  MCP_TEST_PROBE exists, so a test can prove the server runs in a sandbox;
- `fail()`: a tool error (isError), for the failed-result path.
"""

from __future__ import annotations

import argparse
import os
from typing import Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import (
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
    ToolAnnotations,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field

server = MCPServer("mcp-test-server")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def add(a: float, b: float) -> str:
    """Add two numbers."""
    total = a + b
    return str(int(total)) if total == int(total) else str(total)


QUESTION = "Pick a color for the test"


class Choice(BaseModel):
    color: Literal["red", "green", "blue"] = Field(description="Which color")
    count: int = Field(description="How many")
    note: str = Field(default="", description="Anything to add")
    shout: bool = Field(default=False, description="Say it loud")


@server.tool()
async def pick_color(ctx: Context) -> str | InputRequiredResult:
    """Ask the person to pick a color."""
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        # 2026-07-28 has no server-to-client request: the question rides on the result, and
        # the client calls again with the answer (`elicitation/create` before it).
        responses = ctx.input_responses or {}
        if "choice" not in responses:
            schema = Choice.model_json_schema()
            request = ElicitRequest(
                params=ElicitRequestFormParams(message=QUESTION, requested_schema=schema)
            )
            return InputRequiredResult(input_requests={"choice": request})
        given = responses["choice"]
        assert isinstance(given, ElicitResult)
        if given.action != "accept":
            return f"the person chose to {given.action}"
        return _said(Choice.model_validate(given.content or {}))
    answer = await ctx.elicit(QUESTION, Choice)
    if answer.action != "accept":
        return f"the person chose to {answer.action}"
    return _said(answer.data)


def _said(data: Choice) -> str:
    said = f"{data.count} x {data.color}" + (f" ({data.note})" if data.note else "")
    return said.upper() if data.shout else said


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def where() -> str:
    """Where this server runs."""
    probe = os.environ.get("MCP_TEST_PROBE", "")
    facts = {
        "home": os.environ.get("HOME", ""),
        "cwd": os.getcwd(),
        "pid": str(os.getpid()),
        "secret_length": str(len(os.environ.get("MCP_TEST_SECRET", ""))),
        "probe_exists": str(bool(probe) and os.path.exists(probe)),
    }
    return " ".join(f"{key}={value}" for key, value in facts.items())


@server.tool()
def fail() -> str:
    """Always fails."""
    raise ToolError("the test tool failed on purpose")


def _http(port: int, token: str | None) -> None:
    import uvicorn
    from starlette.types import ASGIApp, Receive, Scope, Send

    app: ASGIApp = server.streamable_http_app()
    base = f"http://127.0.0.1:{port}"

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or token is None:
            await app(scope, receive, send)
            return
        if scope["path"] == "/.well-known/oauth-protected-resource":
            body = (
                f'{{"resource": "{base}/mcp", "authorization_servers": ["{base}/auth"],'
                ' "bearer_methods_supported": ["header"]}'
            ).encode()
            await _answer(send, 200, body, [(b"content-type", b"application/json")])
            return
        headers = dict(scope.get("headers") or [])
        if headers.get(b"authorization", b"").decode() != f"Bearer {token}":
            challenge = f'Bearer resource_metadata="{base}/.well-known/oauth-protected-resource"'
            await _answer(send, 401, b"sign in first", [(b"www-authenticate", challenge.encode())])
            return
        await app(scope, receive, send)

    uvicorn.run(guarded, host="127.0.0.1", port=port, log_level="warning")


async def _answer(
    send: object, status: int, body: bytes, headers: list[tuple[bytes, bytes]]
) -> None:
    await send(  # type: ignore[operator]
        {"type": "http.response.start", "status": status, "headers": headers}
    )
    await send({"type": "http.response.body", "body": body})  # type: ignore[operator]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, default=None, help="serve HTTP on this port")
    parser.add_argument("--token", default=None, help="require this bearer token")
    options = parser.parse_args()
    if options.http is None:
        server.run("stdio")
    else:
        _http(options.http, options.token)


if __name__ == "__main__":
    main()
