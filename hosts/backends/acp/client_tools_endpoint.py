"""The host's loopback HTTP endpoint that serves each ACP session its clients' tools over MCP.

One uvicorn server on 127.0.0.1 (a port of the kernel's choosing) per host process, started the
first time a session is served. Each served session is a route of its own,
`/<secret>/mcp`, where `<secret>` is 32 random bytes made for that session and handed only in
its session/new or session/load: nothing lists the routes, a path that names no served session
(no secret, another's, a stale one) is answered 404 with the same words whatever it named, and a
route is gone the moment its session lets it go (its chat closed, its agent let go).

The routes are looked up by a digest of the secret, so how long a lookup takes says nothing of
how much of a guessed secret was right.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import secrets
import socket
from collections.abc import Iterator
from typing import Any

import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.types import Receive, Scope, Send

log = logging.getLogger(__name__)

#: Where the endpoint listens: the host's own loopback, never another interface.
HOST = "127.0.0.1"
#: Said to any request that names no served session.
NOT_FOUND = b"No such MCP endpoint."


def _key(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).digest()


class _Quiet(uvicorn.Server):
    """uvicorn inside the host's own loop: it must not take the process's signals (the host
    shuts itself down, and this server with it)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class Route:
    """One session's route: its MCP server behind a secret path, served until `close`."""

    def __init__(self, endpoint: ClientToolsEndpoint, server: Server[Any]) -> None:
        self._endpoint = endpoint
        self.secret = secrets.token_urlsafe(32)
        self.manager = StreamableHTTPSessionManager(app=server, stateless=True, json_response=True)
        self._running = asyncio.Event()
        self._closed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self._endpoint.port}/{self.secret}/mcp"

    async def open(self) -> None:
        self._task = asyncio.create_task(self._serve(), name="client tools route")
        running = asyncio.ensure_future(self._running.wait())
        await asyncio.wait({running, self._task}, return_when=asyncio.FIRST_COMPLETED)
        running.cancel()
        if self._task.done():
            self._task.result()  # raises what stopped it
        self._endpoint.routes[_key(self.secret)] = self

    async def _serve(self) -> None:
        async with self.manager.run():
            self._running.set()
            await self._closed.wait()

    async def close(self) -> None:
        """Take the route down: from now on its path is answered 404; calls in flight end."""
        self._endpoint.routes.pop(_key(self.secret), None)
        self._closed.set()
        if self._task is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await self._task
            self._task = None


class ClientToolsEndpoint:
    """The loopback server and the routes it serves now."""

    def __init__(self) -> None:
        self.routes: dict[bytes, Route] = {}
        self.port = 0
        self._server: _Quiet | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, 0))
        sock.listen(128)
        sock.setblocking(False)
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self._app,
            interface="asgi3",
            lifespan="off",
            log_level="warning",
            access_log=False,
            server_header=False,
            proxy_headers=False,
        )
        self._server = _Quiet(config)
        # The socket listens already: a request made before the server runs waits in its
        # backlog rather than being refused.
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]), name="client tools")
        log.info("client tools served to ACP agents on %s:%d", HOST, self.port)

    async def route(self, server: Server[Any]) -> Route:
        """A new route for one session's MCP server, served from now until it is closed."""
        route = Route(self, server)
        await route.open()
        return route

    async def _app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path: str = scope.get("path", "")
        secret, _, rest = path.lstrip("/").partition("/")
        route = self.routes.get(_key(secret)) if secret and rest == "mcp" else None
        if route is None:
            await send(
                {
                    "type": "http.response.start",
                    "status": 404,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8")],
                }
            )
            await send({"type": "http.response.body", "body": NOT_FOUND})
            return
        await route.manager.handle_request(scope, receive, send)

    async def stop(self) -> None:
        for route in list(self.routes.values()):
            await route.close()
        if self._server is not None:
            self._server.should_exit = True
        if self._task is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await self._task


_endpoints: dict[asyncio.AbstractEventLoop, ClientToolsEndpoint] = {}


async def shared_endpoint() -> ClientToolsEndpoint:
    """The endpoint of the running loop, started on first use (one per host process)."""
    loop = asyncio.get_running_loop()
    endpoint = _endpoints.get(loop)
    if endpoint is None:
        endpoint = _endpoints[loop] = ClientToolsEndpoint()
        try:
            await endpoint.start()
        except BaseException:
            _endpoints.pop(loop, None)
            raise
    return endpoint
