"""The debug logs a VS Code window collects from its host (`vscode/collectAgentHostDebugLogs`)
and reads back (`vscode/readAgentHostDebugLogsChunk`), in the shapes VS Code's own host serves.

A collection packs a session's record (or one chat's) as `events.jsonl` and the host's recent
log lines under `agenthost/`, as a zip archive or as a directory left where it is, in the host's
data directory; either is removed after ten minutes. Under a `progressToken` (the protocol's
opt-in to progress for a request: ProgressParams) it says `root/progress` to the asking client
as each entry is written and once when it settles (progress equal to total). An archive is
read back a megabyte at a time, and only one this host made.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import shutil
import uuid
import zipfile
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger("ahpd.engine")

#: What one read of an archive hands back at most (VS Code's AGENT_HOST_DEBUG_LOGS_CHUNK_BYTES).
CHUNK_BYTES = 1024 * 1024
#: How long a collection is kept for its reader.
KEPT_S = 600.0
#: The host's log lines kept for a collection, newest last.
LINES_KEPT = 5000
#: Where the host's own lines go in a collection (VS Code's collector's name for them).
HOST_LOG = "agenthost/ahpd.log"
EVENTS = "events.jsonl"
KINDS = ("archive", "directory")

#: Told as a collection goes: (entries written, entries in all, the entry's path).
Progress = Callable[[int, int, str], None]


class RecentLines(logging.Handler):
    """The host's last LINES_KEPT log lines, as the console prints them."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: deque[str] = deque(maxlen=LINES_KEPT)
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.lines.append(self.format(record))
        except Exception:
            self.handleError(record)

    def text(self) -> bytes:
        return "".join(f"{line}\n" for line in list(self.lines)).encode()


@dataclass(frozen=True, slots=True)
class Made:
    kind: str
    path: Path


class DebugLogs:
    def __init__(self, folder: Path | None, loggers: tuple[str, ...]) -> None:
        self.folder = folder
        self.loggers = loggers
        self.lines = RecentLines()
        self._made: dict[str, Made] = {}
        self._tokens: set[str] = set()

    def start(self) -> None:
        for name in self.loggers:
            logger = logging.getLogger(name)
            if self.lines not in logger.handlers:
                logger.addHandler(self.lines)

    def stop(self) -> None:
        for name in self.loggers:
            logging.getLogger(name).removeHandler(self.lines)

    def token_in_use(self, token: str) -> bool:
        return token in self._tokens

    async def collect(
        self,
        entries: list[tuple[str, bytes]],
        kind: str,
        *,
        token: str | None = None,
        progress: Progress | None = None,
    ) -> dict[str, Any]:
        """Write `entries` (path, bytes) as an archive or a directory; VS Code's answer."""
        if self.folder is None:
            raise RuntimeError("this host keeps no data directory to collect into")
        if token is not None:
            self._tokens.add(token)
        try:
            made = await asyncio.to_thread(self._write, entries, kind, progress)
        finally:
            if token is not None:
                self._tokens.discard(token)
        resource = made.path.as_uri()
        self._made[resource] = made
        asyncio.get_running_loop().call_later(KEPT_S, self._remove, resource)
        size = (
            made.path.stat().st_size if kind == "archive" else sum(len(data) for _, data in entries)
        )
        return {
            "kind": kind,
            "resource": resource,
            # The backends' own logs (an agent's files) are not collected here.
            "providerLogsIncluded": False,
            "size": size,
            "uncompressedSize": sum(len(data) for _, data in entries),
            "entries": [{"path": path, "size": len(data)} for path, data in entries],
        }

    def _write(
        self, entries: list[tuple[str, bytes]], kind: str, progress: Progress | None
    ) -> Made:
        assert self.folder is not None
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        name = f"ahpd-debug-logs-{uuid.uuid4()}"
        total = len(entries)
        if kind == "archive":
            path = self.folder / f"{name}.zip"
            with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
                for done, (entry, data) in enumerate(entries, 1):
                    archive.writestr(entry, data)
                    if progress is not None:
                        progress(done, total, entry)
        else:
            path = self.folder / name
            for done, (entry, data) in enumerate(entries, 1):
                target = path / entry
                target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                target.write_bytes(data)
                if progress is not None:
                    progress(done, total, entry)
        return Made(kind, path)

    def _remove(self, resource: str) -> None:
        made = self._made.pop(resource, None)
        if made is None:
            return
        try:
            if made.kind == "archive":
                made.path.unlink(missing_ok=True)
            else:
                shutil.rmtree(made.path, ignore_errors=True)
        except OSError as exc:
            log.warning("removing the debug logs %s failed: %s", made.path, exc)

    def chunk(self, resource: str, position: int) -> dict[str, Any] | None:
        """Up to CHUNK_BYTES of an archive this host made, from `position` (None: no such
        archive, or it is gone)."""
        made = self._made.get(resource)
        if made is None or made.kind != "archive":
            return None
        try:
            with made.path.open("rb") as archive:
                archive.seek(position)
                data = archive.read(CHUNK_BYTES)
                eof = archive.tell() >= made.path.stat().st_size
        except OSError:
            return None
        return {"data": base64.b64encode(data).decode(), "eof": eof}
