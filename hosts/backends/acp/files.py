"""The agent's `fs/read_text_file` and `fs/write_text_file`, served inside the folder fence."""

from __future__ import annotations

import asyncio
from pathlib import Path

from acp import RequestError
from acp.schema import ReadTextFileResponse, WriteTextFileResponse

from hosts.backends.fence import Fence


def confine(fence: Fence, path: str) -> Path:
    """The real path of `path`, or an error the agent sees when it lies outside the fence."""
    real = fence.admit(path)
    if real is None:
        raise RequestError(
            -32602,
            f"Access denied: {path} is outside the chat's working directories",
            {"path": path},
        )
    return real


async def read_text(
    fence: Fence, path: str, line: int | None, limit: int | None
) -> ReadTextFileResponse:
    """A file's text, or its `limit` lines from line `line` (1-based) when the agent asks so."""
    target = confine(fence, path)
    try:
        text = await asyncio.to_thread(target.read_text, encoding="utf-8")
    except FileNotFoundError:
        raise RequestError.resource_not_found(path) from None
    except (OSError, UnicodeDecodeError) as error:
        raise RequestError(-32603, f"Cannot read {path}: {error}", {"path": path}) from None
    if line is not None or limit is not None:
        lines = text.splitlines(keepends=True)
        start = max((line or 1) - 1, 0)
        text = "".join(lines[start : None if limit is None else start + limit])
    return ReadTextFileResponse(content=text)


async def write_text(fence: Fence, path: str, content: str) -> WriteTextFileResponse:
    """Write a file (and the folders it needs) inside the fence."""
    target = confine(fence, path)

    def write() -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")

    try:
        await asyncio.to_thread(write)
    except OSError as error:
        raise RequestError(-32603, f"Cannot write {path}: {error}", {"path": path}) from None
    return WriteTextFileResponse()
