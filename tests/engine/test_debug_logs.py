"""The debug-log collections' own rules (hosts/engine/debug_logs.py): a progressToken is held
while its collection runs and free once it settles; an archive is read back in chunks and
only while kept; a collection is removed when its time is up."""

from __future__ import annotations

import asyncio
import base64
import logging
import threading
from pathlib import Path

from hosts.engine import debug_logs
from hosts.engine.debug_logs import DebugLogs


async def test_a_token_is_held_while_its_collection_runs(tmp_path: Path, monkeypatch):
    logs = DebugLogs(tmp_path, ())
    release = threading.Event()
    writing = logs._write

    def slow_write(*args):
        release.wait(10)
        return writing(*args)

    monkeypatch.setattr(logs, "_write", slow_write)
    collecting = asyncio.ensure_future(logs.collect([("a.txt", b"a")], "archive", token="t"))
    await asyncio.sleep(0)
    assert logs.token_in_use("t")
    release.set()
    result = await collecting
    assert not logs.token_in_use("t")
    assert result["entries"] == [{"path": "a.txt", "size": 1}]


async def test_an_archive_is_read_back_in_chunks_while_kept(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(debug_logs, "CHUNK_BYTES", 100)
    logs = DebugLogs(tmp_path, ())
    big = bytes(range(256)) * 40  # does not compress to nothing
    result = await logs.collect([("big.bin", big)], "archive")
    data, position = b"", 0
    while True:
        chunk = logs.chunk(result["resource"], position)
        assert chunk is not None
        piece = base64.b64decode(chunk["data"])
        assert len(piece) <= 100
        data, position = data + piece, position + len(piece)
        if chunk["eof"]:
            break
    assert len(data) == result["size"] == Path(result["resource"][len("file://") :]).stat().st_size
    folder = await logs.collect([("x/y.txt", b"y")], "directory")
    assert logs.chunk(folder["resource"], 0) is None  # a directory is not read back
    # Gone when its time is up, and not read back after.
    logs._remove(result["resource"])
    logs._remove(folder["resource"])
    assert logs.chunk(result["resource"], 0) is None
    assert list(tmp_path.iterdir()) == []


def test_the_hosts_lines_are_kept_newest_last_and_bounded(monkeypatch):
    monkeypatch.setattr(debug_logs, "LINES_KEPT", 3)
    logs = DebugLogs(None, ("ahpd.test-debug-logs",))
    logs.start()
    try:
        logger = logging.getLogger("ahpd.test-debug-logs")
        logger.setLevel(logging.INFO)
        for n in range(5):
            logger.info("line %d", n)
    finally:
        logs.stop()
    logger.info("after")
    lines = logs.lines.text().decode().splitlines()
    assert [line.rsplit(": ", 1)[1] for line in lines] == ["line 2", "line 3", "line 4"]
