"""A transport the engine can write to with no socket: it keeps every frame it was handed."""

from __future__ import annotations

from typing import Any

import orjson


class FakeTransport:
    def __init__(self, held: int = 0) -> None:
        self.sent: list[dict[str, Any]] = []
        self.aborted = False
        self.held = held

    def write_now(self, texts: list[str]) -> bool:
        return False  # through the awaited path, as a transport with no direct socket

    async def send(self, text: str) -> None:
        self.sent.append(orjson.loads(text))

    async def send_batch(self, texts: list[str]) -> None:
        for text in texts:
            await self.send(text)

    async def close(self, code: int, reason: str) -> None:
        self.aborted = True

    async def abort(self) -> None:
        self.aborted = True

    def buffered(self) -> int | None:
        return self.held

    def actions(self) -> list[dict[str, Any]]:
        return [f["params"] for f in self.sent if f.get("method") == "action"]
