"""The clients' tools for an agent that cannot reach the host's loopback over HTTP: a stdio MCP
server the agent runs itself, which relays its stdin and stdout to the host over a unix socket.

Used where the agent does not say mcpCapabilities.http, or where its sandbox has no network
(AHPD_SANDBOX_NETWORK=none: 127.0.0.1 inside is not the host's). The relay is a few lines of
the standard library run by the host's own Python (`-c`, so no file of the server's checkout
needs to be in the sandbox); the socket lies in a 0700 folder of its own, bound into the agent's
sandbox alone, read-only (a unix socket is connected to through a read-only mount all the
same). The relay's first line is the chat's secret, handed to the agent only in the stdio
server's `env` in session/new or session/load; a connection that does not open with it is
closed unanswered. Everything after is MCP, served by the chat's own server.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
import secrets
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from hosts.backends.sandbox import needs_of

log = logging.getLogger(__name__)

#: The environment variable the relay reads the chat's secret from.
SECRET_ENV = "AHPD_CLIENT_TOOLS_SECRET"
#: How long a connection may take to say the secret.
HELLO_TIMEOUT_S = 10.0
#: The relay: argv[1] the socket; the secret first, then stdin up and the socket down.
RELAY = """\
import os, socket, sys, threading
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendall(os.environ.pop("AHPD_CLIENT_TOOLS_SECRET", "").encode() + b"\\n")
def up():
    while True:
        data = os.read(0, 65536)
        if not data:
            break
        s.sendall(data)
    s.shutdown(socket.SHUT_WR)
threading.Thread(target=up, daemon=True).start()
out = sys.stdout.buffer
while True:
    data = s.recv(65536)
    if not data:
        break
    out.write(data)
    out.flush()
"""


class _Lines:
    """A socket's two halves as the text files `stdio_server` reads lines from and writes to."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    async def __aiter__(self) -> AsyncIterator[str]:
        while line := await self._reader.readline():
            yield line.decode("utf-8", errors="replace")

    async def write(self, text: str) -> None:
        self._writer.write(text.encode())

    async def flush(self) -> None:
        await self._writer.drain()


class StdioBridge:
    """One chat's unix socket, served to its agent's relay until `close`."""

    def __init__(self, server: Server[Any]) -> None:
        self._mcp = server
        self.secret = secrets.token_urlsafe(32)
        self._folder = Path(tempfile.mkdtemp(prefix="ahpd-client-tools-"))
        self.path = str(self._folder / "mcp.sock")
        self._listener: asyncio.Server | None = None
        self._connections: set[asyncio.Task[Any]] = set()

    async def open(self) -> None:
        self._listener = await asyncio.start_unix_server(self._serve, path=self.path)
        os.chmod(self.path, 0o600)

    def needs(self) -> list[str]:
        """What the agent's sandbox must hold for the relay: the socket, and the Python that
        runs it (its virtualenv and base, where it has them)."""
        return [self.path, *(str(p) for p in needs_of(sys.executable, os.environ.get("PATH")))]

    def command(self) -> tuple[str, list[str], dict[str, str]]:
        """The stdio server as the agent is handed it: command, args, env."""
        return sys.executable, ["-c", RELAY, self.path], {SECRET_ENV: self.secret}

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
        try:
            try:
                hello = await asyncio.wait_for(reader.readline(), HELLO_TIMEOUT_S)
            except (TimeoutError, ValueError):
                return
            said = hello.rstrip(b"\n")
            if not hmac.compare_digest(said, self.secret.encode()):
                log.warning("a connection to the client tools socket without its secret")
                return
            lines = cast(Any, _Lines(reader, writer))
            async with stdio_server(stdin=lines, stdout=lines) as (read, write):
                await self._mcp.run(read, write, self._mcp.create_initialization_options())
        except (ConnectionError, OSError) as error:
            log.debug("client tools relay went: %s", error)
        finally:
            writer.close()
            if task is not None:
                self._connections.discard(task)

    async def close(self) -> None:
        """No more connections; those open end; the socket and its folder are removed."""
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        for task in list(self._connections):
            task.cancel()
        for task in list(self._connections):
            with contextlib.suppress(BaseException):
                await task
        shutil.rmtree(self._folder, ignore_errors=True)
