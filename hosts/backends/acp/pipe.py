"""The agent's stdio as the SDK's message transport (an `acp` `Transport`).

The SDK's connection runs on this transport rather than the SDK's own stdio streams, for three
reasons:

* `session/update` notifications are taken out here, as raw JSON, synchronously and in wire
  order, instead of going to the typed `session_update` callback: the SDK runs each callback in a
  task of its own and drops (with a logged traceback) any notification its pydantic models reject,
  such as the `usage_update` with `"used": null` that a real agent sends. So chunk order is exact,
  a sloppy update is still reported, and every update that came before the `session/prompt`
  answer has been reported when the turn ends.
* The raw results of `session/new` and `session/load` are read here too, because the SDK's
  typed responses drop fields it does not know, such as the `models` some agents report.
* Writing to a dead agent raises `ConnectionError` at once; the SDK's own stdio sender would
  leave later requests waiting forever once one write had failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


class AgentPipe:
    """Newline-delimited JSON-RPC over the agent's stdin and stdout (an `acp` `Transport`).

    `receive` hands `session/update` notifications to `on_update` right where they are read,
    and the raw results of `session/new` and `session/load` to `on_session`, before passing
    everything else on to the SDK's connection.
    """

    _SESSION_METHODS = ("session/new", "session/load")

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        on_update: Callable[[Any], None],
        on_session: Callable[[Any], None],
    ) -> None:
        assert process.stdin is not None and process.stdout is not None
        self._stdin = process.stdin
        self._stdout = process.stdout
        self._on_update = on_update
        self._on_session = on_session
        #: Ids of our session/new and session/load requests, whose results are read here.
        self._session_requests: set[Any] = set()

    async def send(self, message: dict[str, Any]) -> None:
        """Write one message; `ConnectionError` when the agent can no longer be written to."""
        if self._stdin.is_closing():
            raise ConnectionError("the agent's stdin is closed")
        if message.get("method") in self._SESSION_METHODS and "id" in message:
            self._session_requests.add(message["id"])
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"
        try:
            self._stdin.write(line.encode("utf-8"))
            await self._stdin.drain()
        except (OSError, RuntimeError) as error:
            raise ConnectionError(f"cannot write to the agent: {error}") from error

    async def receive(self) -> dict[str, Any] | None:
        """The next message for the SDK, after the updates read before it; None at the end."""
        while True:
            line = await self._read_line()
            if not line:
                return None
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                log.warning("not JSON-RPC from the agent, ignored: %.200r", line)
                continue
            if not isinstance(message, dict):
                continue
            if message.get("method") == "session/update" and "id" not in message:
                try:
                    self._on_update(message.get("params"))
                except Exception:
                    log.exception("cannot report an update from the agent")
                continue
            if "method" not in message and message.get("id") in self._session_requests:
                self._session_requests.discard(message["id"])
                self._on_session(message.get("result"))
            return message

    async def _read_line(self) -> bytes:
        chunks: list[bytes] = []
        try:
            while True:
                try:
                    chunks.append(await self._stdout.readuntil(b"\n"))
                    return b"".join(chunks)
                except asyncio.LimitOverrunError as overrun:
                    # Longer than the buffer limit: take it in pieces rather than fail.
                    chunks.append(await self._stdout.readexactly(overrun.consumed))
        except asyncio.IncompleteReadError as eof:
            chunks.append(eof.partial)
        except (OSError, ValueError):
            pass
        return b"".join(chunks)

    async def close(self) -> None:
        """Close the agent's stdin, which tells it to exit."""
        if not self._stdin.is_closing():
            with contextlib.suppress(OSError, RuntimeError, AttributeError):
                self._stdin.write_eof()
