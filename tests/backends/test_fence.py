"""The backends' file work inside the folder fence, against a person who makes named pipes and
swaps folders for links out while the agent's files are read and written."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import pytest
from acp import RequestError

from hosts.backends.acp.files import read_text, write_text
from hosts.backends.fence import Fence
from hosts.backends.openai.sandbox import Sandbox
from hosts.backends.openai.tools import ToolError
from tests.support.swaps import link_swapping

ATTEMPTS = 1500


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path.resolve()


@pytest.fixture
def outside() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ahpd-outside-", dir="/var/tmp") as path:
        folder = Path(path).resolve()
        (folder / "f.txt").write_text("outside")
        yield folder


async def test_an_agents_read_or_write_of_a_named_pipe_is_refused_at_once(folder):
    os.mkfifo(folder / "pipe")
    fence = Fence([folder])

    for attempt in (read_text(fence, "pipe", None, None), write_text(fence, "pipe", "x")):
        with pytest.raises(RequestError) as refused:
            await attempt
        assert refused.value.code == -32602
        assert "pipe: it is a named pipe (FIFO), not a regular file" in str(refused.value)


def test_the_models_file_tools_refuse_a_named_pipe_and_list_no_link_out(folder, outside):
    os.mkfifo(folder / "pipe")
    (folder / "way-out").symlink_to(outside)
    (folder / "sub").mkdir()
    (folder / "to-sub").symlink_to("sub")
    sandbox = Sandbox(Fence([folder]))

    for call in (lambda: sandbox._read_file("pipe"), lambda: sandbox._write_file("pipe", "x")):
        with pytest.raises(ToolError, match=r"pipe is a named pipe \(FIFO\)"):
            call()
    listed = sandbox._list_directory(".").output.splitlines()
    assert listed == ["pipe", "sub/", "to-sub/"]
    written = sandbox._write_file("new/deep/file.txt", "made")
    assert written.success and (folder / "new" / "deep" / "file.txt").read_text() == "made"


async def test_an_agents_reads_and_writes_never_reach_outside_while_a_folder_is_swapped(
    folder, outside
):
    sub = folder / "sub"
    sub.mkdir()
    (sub / "f.txt").write_text("inside")
    fence = Fence([folder])
    read, refusals = [], set()
    swapping = link_swapping(sub, outside).start()
    try:
        for n in range(ATTEMPTS):
            for attempt in (
                read_text(fence, "sub/f.txt", None, None),
                write_text(fence, f"sub/w{n}.txt", "w"),
            ):
                try:
                    answer = await attempt
                except RequestError as error:
                    refusals.add(str(error).split(":")[0])
                    continue
                read.append(getattr(answer, "content", None))
    finally:
        swapping.stop()

    assert "outside" not in read
    assert sorted(p.name for p in outside.iterdir()) == ["f.txt"]
    assert refusals <= {"Access denied", "Resource not found"}
    assert "Access denied" in refusals


def test_the_models_reads_and_writes_never_reach_outside_while_a_folder_is_swapped(folder, outside):
    sub = folder / "sub"
    sub.mkdir()
    (sub / "f.txt").write_text("inside")
    sandbox = Sandbox(Fence([folder]))
    read = []
    swapping = link_swapping(sub, outside).start()
    try:
        for n in range(ATTEMPTS):
            with suppress(ToolError):
                read.append(sandbox._read_file("sub/f.txt").output)
            with suppress(ToolError):
                sandbox._write_file(f"sub/w{n}.txt", "w")
    finally:
        swapping.stop()

    assert "outside" not in read
    assert sorted(p.name for p in outside.iterdir()) == ["f.txt"]
