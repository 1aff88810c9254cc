"""The agent's `fs/read_text_file` and `fs/write_text_file`, served inside the folder fence.

Each walks its path inside the fence and works on what the walk opened (fence_walk.py): a
folder swapped for a link out mid-call is refused, and only a regular file is read or
written, opened without waiting, so a named pipe holds up no thread of the host's.
"""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path

from acp import RequestError
from acp.schema import ReadTextFileResponse, WriteTextFileResponse

from hosts.backends.fence import Fence
from hosts.backends.fence_walk import (
    NotRegular,
    Outside,
    kind_of,
    read_regular,
    replace,
    write_all,
)


def denied(path: str) -> RequestError:
    return RequestError(
        -32602,
        f"Access denied: {path} is outside the chat's working directories",
        {"path": path},
    )


def confine(fence: Fence, path: str) -> Path:
    """The real path of `path`, or an error the agent sees when it lies outside the fence."""
    real = fence.admit(path)
    if real is None:
        raise denied(path)
    return real


def not_regular(path: str, kind: str) -> RequestError:
    return RequestError(
        -32602, f"Cannot use {path}: it is {kind}, not a regular file", {"path": path}
    )


async def read_text(
    fence: Fence, path: str, line: int | None, limit: int | None
) -> ReadTextFileResponse:
    """A file's text, or its `limit` lines from line `line` (1-based) when the agent asks so."""
    confine(fence, path)

    def read() -> str:
        with fence.place(path) as place:
            return read_regular(place).decode("utf-8")

    try:
        text = await asyncio.to_thread(read)
    except Outside:
        raise denied(path) from None
    except NotRegular as error:
        raise not_regular(path, error.kind) from None
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
    """Write a file (and the folders it needs) inside the fence, whole or not at all."""
    confine(fence, path)
    data = content.encode("utf-8")

    def fill(descriptor: int) -> int:
        write_all(descriptor, data, 0)
        return len(data)

    def write() -> None:
        with fence.place(path, making=lambda real: None) as place:
            was = place.found
            if was is not None and not stat.S_ISREG(was.st_mode):
                raise NotRegular(kind_of(was.st_mode), place.real)
            replace(place, fill, stat.S_IMODE(was.st_mode) if was is not None else 0o644)

    try:
        await asyncio.to_thread(write)
    except Outside:
        raise denied(path) from None
    except NotRegular as error:
        raise not_regular(path, error.kind) from None
    except OSError as error:
        raise RequestError(-32603, f"Cannot write {path}: {error}", {"path": path}) from None
    return WriteTextFileResponse()
