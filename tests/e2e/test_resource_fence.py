"""The file methods over the socket against what one person can do to all the others:
swap a folder for a link out, rename files while they are used, make a named pipe, append to
a huge file, or write inside a `.git` folder (issues 22 and 23)."""

from __future__ import annotations

import asyncio
import os
import stat
import tempfile
import threading
import uuid
from pathlib import Path

import pytest

from tests.e2e.test_grants import cli
from tests.support.client import Client, RpcError
from tests.support.server import ServerProcess
from tests.support.swaps import Swapping, link_swapping

ROOT = "ahp-root://"
READ_LIMIT = 4096
GIB = 1024**3
MIB = 1024**2


@pytest.fixture(scope="module")
def served():
    with tempfile.TemporaryDirectory(prefix="ahpd-served-") as path:
        yield Path(path).resolve()


@pytest.fixture(scope="module")
def server(served):
    process = ServerProcess(
        env_extra={"AHPD_PATHS": str(served), "AHPD_RESOURCE_READ_LIMIT_BYTES": str(READ_LIMIT)}
    ).start()
    yield process
    process.close()


@pytest.fixture(scope="module")
def member_token(server) -> str:
    cli(server, "user", "add", "mia", "--role", "member")
    return cli(server, "user", "token", "mia")["token"]


@pytest.fixture
async def client(server, connect) -> Client:
    client = await connect(server.url)
    await client.initialize()
    return client


@pytest.fixture
def folder(served) -> Path:
    path = served / uuid.uuid4().hex[:8]
    path.mkdir()
    return path


@pytest.fixture
def outside():
    with tempfile.TemporaryDirectory(prefix="ahpd-outside-", dir="/var/tmp") as path:
        yield Path(path).resolve()


async def ask(client: Client, method: str, **params):
    return await client.request(method, {"channel": ROOT, **params})


async def answer(client: Client, method: str, **params) -> object:
    """The result, or the refusal it was answered with."""
    try:
        return await ask(client, method, **params)
    except RpcError as error:
        return error


async def refused(client: Client, method: str, **params) -> RpcError:
    with pytest.raises(RpcError) as error:
        await ask(client, method, **params)
    return error.value


def utf8(text: str) -> dict[str, str]:
    return {"data": text, "encoding": "utf-8"}


def peak_memory(pid: int) -> int:
    """The process's peak resident memory so far, in bytes (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


async def test_a_folder_swapped_for_a_link_out_gives_nothing_from_outside_and_takes_nothing_there(
    client, folder, outside
):
    (outside / "f.txt").write_text("outside")
    sub = folder / "sub"
    sub.mkdir()
    (sub / "f.txt").write_text("inside")
    read = (sub / "f.txt").as_uri()
    swapping = link_swapping(sub, outside).start()
    try:
        answers = []
        for n in range(300):
            answers += await asyncio.gather(
                answer(client, "resourceRead", uri=read),
                answer(client, "resourceWrite", uri=(sub / f"w{n}").as_uri(), **utf8("w")),
            )
    finally:
        swapping.stop()

    reads = [a["data"] for a in answers if isinstance(a, dict) and "data" in a]
    assert "outside" not in reads
    assert sorted(p.name for p in outside.iterdir()) == ["f.txt"]
    assert {a.code for a in answers if isinstance(a, RpcError)} <= {-32008, -32009}


async def test_files_renamed_and_changing_kind_while_used_answer_in_the_protocols_codes(
    server, client, folder
):
    (folder / "a.txt").write_text("a")
    (folder / "kind").write_text("a file")
    (folder / "kind.other").mkdir()
    (folder / "kind.other" / "inner.txt").write_text("in a folder")
    stop = threading.Event()

    def renaming() -> None:
        while not stop.is_set():
            for old, new in (("a.txt", "b.txt"), ("b.txt", "a.txt")):
                os.rename(folder / old, folder / new)

    kinds = Swapping(folder / "kind", folder / "kind.other").start()
    renamer = threading.Thread(target=renaming, daemon=True)
    renamer.start()
    a, kind = (folder / "a.txt").as_uri(), (folder / "kind").as_uri()
    try:
        answers = []
        for _ in range(100):
            answers += await asyncio.gather(
                answer(client, "resourceRead", uri=a),
                answer(client, "resourceWrite", uri=a, mode="append", **utf8("+")),
                answer(client, "resourceResolve", uri=a),
                answer(client, "resourceCopy", source=a, destination=(folder / "c").as_uri()),
                answer(client, "resourceRead", uri=kind),
                answer(client, "resourceWrite", uri=kind, mode="insert", **utf8("-")),
                answer(client, "resourceList", uri=kind),
                answer(client, "resourceList", uri=folder.as_uri()),
                answer(client, "resourceCopy", source=kind, destination=(folder / "k").as_uri()),
                answer(client, "resourceDelete", uri=(folder / "c").as_uri()),
            )
    finally:
        stop.set()
        renamer.join()
        kinds.stop()

    codes = {a.code for a in answers if isinstance(a, RpcError)}
    assert -32603 not in codes, [a.message for a in answers if isinstance(a, RpcError)]
    # Not found, already exists (a write over the folder it became), the wrong kind (a read of
    # the folder, a list of the file) and a conflict (a file that kept changing while an
    # append copied it): the protocol's words for each, and nothing internal.
    assert codes <= {-32008, -32010, -32011, -32602}
    assert "Traceback" not in server.log_text()


async def test_reads_of_a_named_pipe_are_refused_at_once_and_hold_up_nobody(client, folder):
    pipe = folder / "pipe"
    os.mkfifo(pipe)
    (folder / "plain.txt").write_text("plain")
    pipes = [answer(client, "resourceRead", uri=pipe.as_uri()) for _ in range(12)]
    others = [
        answer(client, "resourceRead", uri=(folder / "plain.txt").as_uri()),
        answer(client, "resourceList", uri=folder.as_uri()),
        answer(client, "resourceWrite", uri=(folder / "new.txt").as_uri(), **utf8("new")),
    ]

    answers = await asyncio.gather(*pipes, *others)

    for refusal in answers[: len(pipes)]:
        assert isinstance(refusal, RpcError) and refusal.code == -32602
        assert refusal.message == (
            f"resourceRead: {pipe.as_uri()} is a named pipe (FIFO); only regular files and "
            "directories are read or written here"
        )
    read, listed, written = answers[len(pipes) :]
    assert read["data"] == "plain" and written == {}
    assert {"name": "pipe", "type": "file"} in listed["entries"]


async def test_a_write_or_copy_of_a_named_pipe_is_refused_and_leaves_it_be(client, folder):
    pipe = folder / "pipe"
    os.mkfifo(pipe)
    for mode in ("truncate", "append"):
        error = await refused(client, "resourceWrite", uri=pipe.as_uri(), mode=mode, **utf8("x"))
        assert error.code == -32602 and "named pipe (FIFO)" in error.message
    error = await refused(
        client, "resourceCopy", source=folder.as_uri(), destination=(folder.parent / "c").as_uri()
    )
    assert error.code == -32602 and f"{pipe.as_uri()} is a named pipe (FIFO)" in error.message
    assert stat.S_ISFIFO(pipe.lstat().st_mode)
    assert not (folder.parent / "c").exists()
    assert sorted(p.name for p in folder.parent.iterdir() if p.name.startswith(".")) == []


async def test_an_append_to_a_huge_sparse_file_never_holds_it_whole(server, client, folder):
    huge = folder / "huge.bin"
    with huge.open("wb") as file:
        file.truncate(2 * GIB)
    uri = huge.as_uri()
    before = peak_memory(server.pid)
    etag = (await ask(client, "resourceResolve", uri=uri))["etag"]

    await ask(
        client,
        "resourceWrite",
        uri=uri,
        mode="append",
        ifMatch=etag,
        data="IQ==",
        encoding="base64",
    )
    await ask(client, "resourceWrite", uri=uri, mode="insert", position=GIB, **utf8("mid"))

    assert peak_memory(server.pid) - before < 256 * MIB
    assert huge.stat().st_size == 2 * GIB + 4
    assert huge.stat().st_blocks * 512 < 64 * MIB, "the holes are kept holes"
    with huge.open("rb") as file:
        file.seek(GIB)
        assert file.read(3) == b"mid"
        file.seek(2 * GIB + 3)
        assert file.read() == b"!"
    stale = await refused(
        client,
        "resourceWrite",
        uri=uri,
        mode="append",
        ifMatch=etag,
        data="IQ==",
        encoding="base64",
    )
    assert stale.code == -32011
    assert huge.stat().st_size == 2 * GIB + 4
    too_big = await refused(client, "resourceRead", uri=uri)
    assert too_big.code == -32602 and "AHPD_RESOURCE_READ_LIMIT_BYTES" in too_big.message


async def test_a_member_may_read_a_git_folder_but_not_write_copy_move_make_or_delete_in_it(
    server, connect, client, member_token, folder
):
    repo = folder / "repo"
    (repo / ".git" / "hooks").mkdir(parents=True)
    (repo / ".git" / "config").write_text("[core]\n")
    (repo / "sample").write_text("#!/bin/sh\necho owned\n")
    (repo / "cfg").symlink_to(".git/config")
    member = await connect(server.url, token=member_token)
    await member.initialize()
    config = (repo / ".git" / "config").as_uri()
    hook = (repo / ".git" / "hooks" / "pre-commit").as_uri()
    sample = (repo / "sample").as_uri()
    attempts = [
        ("resourceWrite", config, {"uri": config, "mode": "append", **utf8("fsmonitor = x\n")}),
        ("resourceWrite", (repo / "cfg").as_uri(), {"uri": (repo / "cfg").as_uri(), **utf8("")}),
        ("resourceCopy", hook, {"source": sample, "destination": hook}),
        ("resourceMove", hook, {"source": sample, "destination": hook}),
        ("resourceCopy", config, {"source": config, "destination": (repo / "c").as_uri()}),
        ("resourceMkdir", hook, {"uri": hook}),
        ("resourceMkdir", (repo / ".GIT" / "x").as_uri(), {"uri": (repo / ".GIT" / "x").as_uri()}),
        ("resourceDelete", config, {"uri": config}),
    ]
    for method, named, params in attempts:
        error = await refused(member, method, **params)
        assert (error.code, error.message) == (
            -32009,
            f"Writing inside a .git folder is for a host-wide admin: {named}",
        ), method

    assert (repo / ".git" / "config").read_text() == "[core]\n"
    assert sorted(p.name for p in repo.iterdir()) == [".git", "cfg", "sample"]
    assert list((repo / ".git" / "hooks").iterdir()) == []
    assert (await ask(member, "resourceRead", uri=config))["data"] == "[core]\n"
    listed = await ask(member, "resourceList", uri=(repo / ".git").as_uri())
    assert [e["name"] for e in listed["entries"]] == ["config", "hooks"]
    # The host-wide admin (here the deployment's own token) may.
    await ask(client, "resourceWrite", uri=config, mode="append", **utf8("\tbare = false\n"))
    assert (repo / ".git" / "config").read_text() == "[core]\n\tbare = false\n"
