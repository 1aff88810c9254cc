"""One MCP server a session's agent loop reaches: connected, its tools listed, called one call at
a time, its state said in the protocol's words, stopped and started again.

A stdio server is started in the session owner's sandbox (the Jail), in its `cwd` (else the
session's first folder), with the plain host variables, the person's HOME, and its own `env`.
An http server is reached over streamable HTTP with its `headers`; `auth` is where a sign-in
hands a bearer token later (an httpx2.Auth that adds it to each request).

The connection runs in a task of its own: the SDK's client is entered and left there (anyio
wants that), and a call, made from the turn's task, goes through it. Calls to one server are one
at a time, so a question the server asks (elicitation, as `elicitation/create` or, on
2026-07-28, inside the call's input-required result) belongs to the call in flight and is asked
through that call's `events.ask`.

`env` and `headers` values are secrets: never logged, and cut out of every message a client may
read (an error, the server's own stderr).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import (
    CallToolResult,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    ErrorData,
    Implementation,
)

from hosts.backends.base import McpCallOutcome, McpServerSpec, McpTool, TurnEvents
from hosts.backends.process import host_env
from hosts.backends.sandbox import Jail

from .elicitation import elicit_result, input_request
from .sign_in import ResourceBearer, TokenFor, discover, requirement

log = logging.getLogger("ahpd.backends.mcp")

#: Host variables a stdio server gets; what else it needs is in its own `env`.
INHERITED_ENV = ("PATH", "LANG", "TERM")
#: How long connecting and listing the tools may take before the server is said failed.
START_TIMEOUT_S = 30.0
#: The server's stderr kept for an error message (its last characters).
STDERR_TAIL = 600
#: What stands for a secret in a message a client may read.
HIDDEN = "<set>"

State = dict[str, Any]
OnState = Callable[[str, State], None]

STARTING: State = {"kind": "starting"}
READY: State = {"kind": "ready"}
STOPPED: State = {"kind": "stopped"}


def error_state(message: str, error_type: str = "mcp-server-start-failed") -> State:
    return {"kind": "error", "error": {"errorType": error_type, "message": message}}


class McpServerConnection:
    def __init__(
        self,
        spec: McpServerSpec,
        *,
        folder: Path | None,
        on_state: OnState,
        jail: Jail | None = None,
        token_for: TokenFor | None = None,
        mode: str = "auto",
    ) -> None:
        """`token_for`: the bearer token a person pushed for a protected resource (an http
        server's sign-in, sign_in.py); `mode`: how the protocol version is agreed (the SDK's:
        `auto` asks the server what it speaks, 2026-07-28 or older; `legacy` uses the
        initialize handshake of before)."""
        self.spec = spec
        self._mode = mode
        self._folder = folder
        self._on_state = on_state
        self._jail = jail
        self._bearer = ResourceBearer(token_for) if token_for is not None else None
        self.state: State = dict(STOPPED)
        self.tools: list[McpTool] = []
        self._client: Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._settled = asyncio.Event()
        self._settled.set()
        #: A start asked for while it was being stopped.
        self._start_after_stop = False
        self._lock = asyncio.Lock()
        #: The events of the call in flight, whose person a question goes to.
        self._events: TurnEvents | None = None
        self._errlog: StderrTail | None = None
        #: The WWW-Authenticate challenge of an http server that answered 401 (the resource
        #: metadata a sign-in starts from); None: none was seen.
        self.challenge: str | None = None
        self._refused_status: int | None = None
        #: Told each time its state moves (a call waiting on a sign-in waits on it).
        self._moved = asyncio.Event()

    @property
    def ready(self) -> bool:
        """Connected, and not being stopped: its tools may be offered and called."""
        return self.state.get("kind") == "ready" and not self._stop.is_set()

    @property
    def running(self) -> bool:
        """Starting, ready or being stopped: its task is alive."""
        return self._task is not None and not self._task.done()

    @property
    def stopping(self) -> bool:
        return self.running and self._stop.is_set()

    def start(self) -> None:
        """Connect, unless it is connecting or connected already; one being stopped is
        connected again once it has stopped."""
        if self.stopping:
            self._start_after_stop = True
            return
        if self.running:
            return
        self._stop = asyncio.Event()
        self._settled = asyncio.Event()
        self._say(STARTING)
        self._task = asyncio.create_task(self._run(), name=f"mcp {self.spec.name}")

    async def stop(self) -> None:
        """Disconnect (a stdio server is stopped) and say it stopped."""
        self._start_after_stop = False
        task = self._task
        if task is not None and not task.done():
            self._stop.set()
            try:
                await asyncio.wait_for(asyncio.shield(task), START_TIMEOUT_S)
            except TimeoutError:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        self._say(STOPPED)
        if self._start_after_stop:
            self._start_after_stop = False
            self.start()

    async def settled(self) -> None:
        """Wait until it is no longer starting."""
        await self._settled.wait()

    async def call(
        self, tool: str, arguments: Mapping[str, Any], events: TurnEvents
    ) -> McpCallOutcome:
        """Call one of its tools; a failure is an outcome (success False), never raised."""
        async with self._lock:
            client = self._client
            if client is None or not self.ready:
                return McpCallOutcome(False, f"The MCP server {self.spec.name} is not running.")
            self._events = events
            self._refused_status = None
            try:
                result = await client.call_tool(tool, dict(arguments))
            except Exception as error:
                # A 401 under whatever the SDK raised for it: the call waits for a sign-in.
                if (needed := await self._signed_out()) is not None:
                    return McpCallOutcome(False, self._signed_out_words(), auth=needed)
                if not isinstance(error, MCPError):
                    log.warning("MCP server %s: call to %s failed: %s", self.spec.name, tool, error)
                    return McpCallOutcome(False, self._hide(f"{self.spec.name}: {describe(error)}"))
                if error.code == -32000:  # CONNECTION_CLOSED: the server went away
                    self._fail(f"The MCP server {self.spec.name} closed the connection.")
                return McpCallOutcome(False, self._hide(f"{self.spec.name}: {error.error.message}"))
            finally:
                self._events = None
        return McpCallOutcome(not result.is_error, result_text(result))

    async def until_signed_in(self) -> bool:
        """Wait while it waits for a sign-in: True once it is ready again, False once it is
        stopped or failed instead."""
        while True:
            kind = self.state.get("kind")
            if kind == "ready" and not self._stop.is_set():
                return True
            if kind in ("stopped", "error"):
                return False
            moved = self._moved
            await moved.wait()

    def signed_in(self, resource: str) -> bool:
        """A token was pushed for `resource`: connected again where it waits for that sign-in
        (whether it is about this server's resource)."""
        if (
            self._bearer is None
            or self._bearer.resource != resource
            or self.state.get("kind") != "authRequired"
        ):
            return False
        task = self._task
        if task is not None and not task.done():
            # Still letting the refused connection go: connected again once it has.
            task.add_done_callback(lambda _: self.start())
        else:
            self.start()
        return True

    async def _signed_out(self) -> dict[str, Any] | None:
        """After a request failed: where the server answered 401, what a sign-in needs (the
        server is then said waiting for it and let go); else None."""
        if self._refused_status != 401 or self.spec.transport != "http":
            return None
        needed = await self._requirement()
        if needed is None:
            return None
        self._say({"kind": "authRequired", **needed})
        self._stop.set()
        return needed

    def _signed_out_words(self) -> str:
        return f"The MCP server {self.spec.name} needs a sign-in before this call can run."

    async def _requirement(self) -> dict[str, Any] | None:
        """The McpAuthRequirement of the server's last 401: its protected-resource metadata
        found (then kept as the resource the pushed token is for), or None."""
        metadata = await discover(self.spec.url, self.challenge, dict(self.spec.headers))
        if metadata is None:
            return None
        expired = False
        if self._bearer is not None:
            expired = self._bearer.sent_token
            self._bearer.resource = str(metadata["resource"])
        return requirement(metadata, self.challenge, expired=expired)

    # -- the connection's task ----------------------------------------------------------------

    async def _run(self) -> None:
        timer = asyncio.get_running_loop().call_later(START_TIMEOUT_S, self._too_slow)
        try:
            async with AsyncExitStack() as stack:
                client = Client(
                    _watched(await self._transport(stack), self._ended),
                    elicitation_callback=self._elicit,
                    client_info=Implementation(name="ahpd", version="1"),
                    cache=None,
                    mode=self._mode,
                )
                await stack.enter_async_context(client)
                self.tools = await self._list_tools(client)
                timer.cancel()
                self._client = client
                self._say(READY)
                self._settled.set()
                await self._stop.wait()
        except asyncio.CancelledError:
            if self.state.get("kind") == "starting":
                self._say(
                    error_state(f"{self.spec.name} did not start within {START_TIMEOUT_S:g} s.")
                )
            raise
        except Exception as error:
            if self.state.get("kind") in ("starting", "ready"):
                needed = await self._requirement() if self._refused_status == 401 else None
                if needed is not None:
                    self._say({"kind": "authRequired", **needed})
                else:
                    self._say(error_state(self._why(error)))
            log.info("MCP server %s stopped: %s", self.spec.name, self._hide(describe(error)))
        finally:
            timer.cancel()
            self._client = None
            self.tools = []
            self._settled.set()
            if self._errlog is not None:
                self._errlog.close()
                self._errlog = None

    def _too_slow(self) -> None:
        if self._task is not None and self.state.get("kind") == "starting":
            self._task.cancel()

    def _ended(self) -> None:
        """The server's side of the connection ended (a stdio server exited) without being
        asked to: said failed at once, not at the next call."""
        if not self._stop.is_set() and self.state.get("kind") == "ready":
            self._fail(f"The MCP server {self.spec.name} exited.")

    def _fail(self, message: str) -> None:
        """The server failed while connected: said, and the connection let go."""
        self._say(error_state(message, "mcp-server-failed"))
        self._stop.set()

    async def _transport(self, stack: AsyncExitStack) -> Any:
        spec = self.spec
        if spec.transport == "http":
            self.challenge = self._refused_status = None
            http = httpx2.AsyncClient(
                headers=dict(spec.headers),
                timeout=httpx2.Timeout(30.0, read=300.0),
                auth=self._bearer,
                event_hooks={"response": [self._saw_response]},
            )
            await stack.enter_async_context(http)
            return streamable_http_client(spec.url, http_client=http)
        cwd = spec.cwd or (str(self._folder) if self._folder is not None else ".")
        jail = self._jail
        env = {**host_env(INHERITED_ENV), **(jail.home_env() if jail else {}), **spec.env}
        argv = [spec.command, *spec.args]
        if jail is not None:
            # What it names (a script, its folder) is bound read-only where it lies.
            argv, env = jail.wrap(argv, cwd=cwd, env=env, needs=(*spec.args, cwd))
        self._errlog = StderrTail(STDERR_TAIL)
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=cwd)
        return stdio_client(params, errlog=self._errlog.file)

    async def _saw_response(self, response: httpx2.Response) -> None:
        """Keep a refusal the SDK reports only as an error response: its status, and the
        challenge a sign-in needs (authRequired is said from it once sign-in lands)."""
        if response.status_code in (401, 403):
            self._refused_status = response.status_code
            self.challenge = response.headers.get("www-authenticate")

    async def _list_tools(self, client: Client) -> list[McpTool]:
        tools: list[McpTool] = []
        cursor: str | None = None
        for _ in range(100):
            page = await client.list_tools(cursor=cursor)
            for tool in page.tools:
                annotations = tool.annotations
                tools.append(
                    McpTool(
                        server_id=self.spec.id,
                        server_name=self.spec.name,
                        name=tool.name,
                        title=tool.title or (annotations.title if annotations else None),
                        description=tool.description or "",
                        input_schema=dict(tool.input_schema),
                        read_only=bool(annotations and annotations.read_only_hint),
                    )
                )
            cursor = page.next_cursor
            if cursor is None:
                break
        return tools

    async def _elicit(
        self,
        context: ClientRequestContext,
        params: ElicitRequestFormParams | ElicitRequestURLParams,
    ) -> ElicitResult | ErrorData:
        """A question the server asks: the person of the call in flight is asked; with no call
        in flight nobody is there to answer, and it is declined."""
        events = self._events
        if events is None:
            return ElicitResult(action="decline")
        try:
            answer = await events.ask(input_request(params))
        except Exception:
            log.exception("MCP server %s: asking the person failed", self.spec.name)
            return ElicitResult(action="cancel")
        return elicit_result(answer, params)

    # -- what is said -------------------------------------------------------------------------

    def _say(self, state: State) -> None:
        self.state = dict(state)
        self._moved.set()
        self._moved = asyncio.Event()
        self._on_state(self.spec.id, dict(state))

    def _why(self, error: BaseException) -> str:
        """Why it failed, for the person: the error, and a stdio server's last words."""
        said = f"{self.spec.name}: {describe(error)}"
        if self._refused_status == 401:
            said = f"{self.spec.name}: {self.spec.url} answered HTTP 401: it needs a sign-in."
        elif self._refused_status == 403:
            said = f"{self.spec.name}: {self.spec.url} answered HTTP 403: access is refused."
        tail = self._stderr_tail()
        if tail:
            said += f"\n{tail}"
        return self._hide(said)

    def _stderr_tail(self) -> str:
        return self._errlog.text() if self._errlog is not None else ""

    def _hide(self, text: str) -> str:
        """The text with every secret of the spec (env and header values) cut out."""
        for secret in (*self.spec.env.values(), *self.spec.headers.values()):
            if len(secret) >= 4:
                text = text.replace(secret, HIDDEN)
                # A bearer header's token alone is as secret as the header.
                _, _, token = secret.partition(" ")
                if len(token) >= 4:
                    text = text.replace(token, HIDDEN)
        return text


@asynccontextmanager
async def _watched(
    transport: AbstractAsyncContextManager[Any], on_end: Callable[[], None]
) -> AsyncIterator[Any]:
    """The transport, with `on_end` told when what the server sends ends (its process exited,
    its stream closed), through a stream of our own in front of the transport's."""
    async with transport as (read, write):
        send, receive = anyio.create_memory_object_stream[Any](0)

        async def pump() -> None:
            async with send:
                with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                    async for item in read:
                        await send.send(item)
            on_end()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(pump)
            try:
                async with receive:
                    yield receive, write
            finally:
                tasks.cancel_scope.cancel()


class StderrTail:
    """A stdio server's stderr, of which only the last `limit` characters are kept (a chatty
    server fills neither memory nor disk)."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        read, write = os.pipe()
        os.set_blocking(read, False)
        self._read = read
        #: What the server's stderr is (its write end, handed to the process).
        self.file = os.fdopen(write, "w")
        self._kept = bytearray()
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(read, self._take)

    def _take(self) -> None:
        try:
            chunk = os.read(self._read, 65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._loop.remove_reader(self._read)
            return
        self._kept += chunk
        del self._kept[: -self._limit * 4]

    def text(self) -> str:
        """What it said last, on its last lines."""
        if self._read >= 0:
            self._take()
        said = self._kept.decode("utf-8", errors="replace")
        return said[-self._limit :].strip()

    def close(self) -> None:
        if self._read < 0:
            return
        self._loop.remove_reader(self._read)
        with contextlib.suppress(OSError):
            self.file.close()
        with contextlib.suppress(OSError):
            os.close(self._read)
        self._read = -1


def describe(error: BaseException) -> str:
    """A failure in a person's words: the innermost errors of a group, an HTTP status, a
    program that is not there."""
    leaves = list(_leaves(error))
    parts = []
    for leaf in leaves or [error]:
        if isinstance(leaf, FileNotFoundError):
            parts.append(f"cannot start {leaf.filename or 'the command'}: not found")
        elif isinstance(leaf, httpx2.HTTPStatusError):
            response = leaf.response
            parts.append(f"{response.request.url} answered HTTP {response.status_code}")
        elif isinstance(leaf, httpx2.ConnectError):
            parts.append(f"cannot connect: {leaf}")
        elif isinstance(leaf, MCPError):
            parts.append(leaf.error.message)
        else:
            parts.append(str(leaf) or type(leaf).__name__)
    return "; ".join(dict.fromkeys(parts))[:1000]


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        found: list[BaseException] = []
        for inner in error.exceptions:
            found.extend(_leaves(inner))
        return found
    if isinstance(error, asyncio.CancelledError):
        return []
    return [error]


def result_text(result: CallToolResult) -> str:
    """A tool's result as the model reads it: its text blocks, what else it holds named, and
    its structured content where it gave no text."""
    pieces: list[str] = []
    for block in result.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            pieces.append(getattr(block, "text", ""))
        elif kind == "resource":
            resource = getattr(block, "resource", None)
            text = getattr(resource, "text", None)
            pieces.append(text if isinstance(text, str) else f"[resource {resource}]")
        elif kind == "resource_link":
            pieces.append(f"[resource {getattr(block, 'uri', '')}]")
        else:
            pieces.append(f"[{kind} {getattr(block, 'mime_type', '') or ''}]".strip())
    if not pieces and result.structured_content is not None:
        pieces.append(json.dumps(result.structured_content))
    return "\n".join(pieces)
