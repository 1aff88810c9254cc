"""Many clients at once, some never reading, over loopback: what all their queues hold together
is bounded (AHPD_CLIENT_QUEUES_TOTAL_BYTES), the server's memory stays near that bound and comes
back down once they are gone, and everyone else is served throughout.

Bounded in count (60 clients, 200 actions of 64 KiB) and in time (some seconds)."""

from __future__ import annotations

import asyncio
import itertools
import os
import socket
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit

import orjson
import pytest
import websockets

from tests.support.client import Client
from tests.support.server import TOKEN, ServerProcess

ROOT = "ahp-root://"
MIB = 1024 * 1024
TOTAL_BOUND = 8 * MIB
CLIENTS = 60
NEVER_READING = 10
#: Clients that read one envelope for every SLOWER the writer sends: slower than the stream.
SLOW_READING = 20
SLOWER = 4
ACTIONS = 200
#: Actions pushed before the crowd comes, so what any traffic fills is full.
WARM_UP = 40
#: What the server may hold past the bound while it runs: the encoded-frame cache (4 MiB),
#: the replay ring (1 MiB here), and what the allocator keeps for itself.
MARGIN = 40 * MIB
#: What the server may keep, once the clients are gone, over what it held before they came.
KEPT = 16 * MIB


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    process = ServerProcess(
        env_extra={
            "AHPD_CLIENT_QUEUES_TOTAL_BYTES": str(TOTAL_BOUND),
            "AHPD_REPLAY_BYTES": str(MIB),
        }
    ).start()
    yield process
    process.close()


def resident(pid: int) -> int:
    """A process's VmRSS, in bytes."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


class Pace:
    """How many actions the writer has sent: what slow readers read by."""

    def __init__(self) -> None:
        self.sent = 0
        self._moved = asyncio.Condition()

    async def one_more(self) -> None:
        async with self._moved:
            self.sent += 1
            self._moved.notify_all()

    async def past(self, count: int) -> None:
        async with self._moved:
            await self._moved.wait_for(lambda: self.sent >= count)


class Bare:
    """A client on a bare socket that says initialize and then reads, or never reads again; a
    reader keeps the serverSeqs of the flood it was sent, and nothing else."""

    def __init__(self, ws: websockets.ClientConnection) -> None:
        self.ws = ws
        self.seqs: list[int] = []
        self._took = asyncio.Condition()
        #: Whether its connection closed.
        self.ended = False
        self._reader: asyncio.Task[None] | None = None

    @classmethod
    async def joined(cls, url: str, reading: bool, pace: Pace | None = None) -> Bare:
        parts = urlsplit(url)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if not reading or pace is not None:
            # A small receive window, set before the connection is made (the window scale is
            # agreed then): what the server sends it stays in the server, not in the kernel's
            # buffers on the way, where a few MiB per socket would hide it.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect((parts.hostname, parts.port))
        sock.setblocking(False)
        ws = await websockets.connect(
            f"{url.split('?', 1)[0]}?tkn={TOKEN}", sock=sock, max_size=None, ping_interval=None
        )
        bare = cls(ws)
        await ws.send(
            orjson.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "channel": ROOT,
                        "protocolVersions": ["1.0.0"],
                        "clientId": f"bare-{uuid.uuid4().hex[:8]}",
                        "initialSubscriptions": [ROOT],
                    },
                }
            ).decode()
        )
        answer = orjson.loads(await ws.recv())
        assert "result" in answer, answer
        if pace is not None:
            bare._reader = asyncio.create_task(bare._read_slowly(pace))
        elif reading:
            bare._reader = asyncio.create_task(bare._read())
        else:
            # Its socket's receive window fills, then the server's buffers for it.
            ws.transport.pause_reading()
        return bare

    async def _read(self) -> None:
        try:
            async for text in self.ws:
                frame = orjson.loads(text)
                if frame.get("method") == "action":
                    action = frame["params"]["action"]
                    if action.get("type") == "root/configChanged" and "x-flood" in action.get(
                        "config", {}
                    ):
                        self.seqs.append(frame["params"]["serverSeq"])
                        async with self._took:
                            self._took.notify_all()
        except websockets.ConnectionClosed:
            pass
        finally:
            self.ended = True
            async with self._took:
                self._took.notify_all()

    async def took(self, count: int) -> None:
        """Wait until it has read `count` envelopes of the flood; fail once it is closed."""
        async with self._took:
            await self._took.wait_for(lambda: len(self.seqs) >= count or self.ended)
        assert len(self.seqs) >= count, f"closed after {len(self.seqs)} of {count}"

    async def _read_slowly(self, pace: Pace) -> None:
        # websockets holds a few messages and then stops reading the socket, so the server
        # holds the rest, and its socket is written to as often as this reads one.
        try:
            for number in itertools.count(1):
                await pace.past(number * SLOWER)
                await self.ws.recv()
        except websockets.ConnectionClosed:
            pass

    async def close(self) -> None:
        self.ws.transport.resume_reading()
        self.ws.transport.abort()
        if self._reader is not None:
            self._reader.cancel()


async def crowd(url: str, pace: Pace) -> list[Bare]:
    """Everyone but the writer: some never reading, some reading slower than the stream, the
    rest reading all of it."""
    bares = [await Bare.joined(url, reading=False) for _ in range(NEVER_READING)]
    bares += [await Bare.joined(url, True, pace) for _ in range(SLOW_READING)]
    bares += [
        await Bare.joined(url, reading=True)
        for _ in range(CLIENTS - 1 - NEVER_READING - SLOW_READING)
    ]
    return bares


async def flood(writer: Client, count: int, pace: Pace | None = None) -> list[int]:
    """Push `count` root config values of 64 KiB, each unlike any before; their serverSeqs."""
    seqs = []
    for number in range(count):
        value = f"{number}-{os.urandom(32 * 1024).hex()}"
        echo = await writer.dispatch_and_wait(
            ROOT, {"type": "root/configChanged", "config": {"x-flood": value}}
        )
        assert "rejectionReason" not in echo
        seqs.append(echo["serverSeq"])
        if pace is not None:
            await pace.one_more()
    return seqs


async def test_slow_readers_together_are_bounded_and_everyone_else_is_served(server, connect):
    writer = await connect(server.url)
    await writer.initialize()
    # Where it started: once what any traffic fills (the replay ring, the encoded frames, the
    # database's caches) is full.
    await flood(writer, WARM_UP)
    before = resident(server.pid)
    pace = Pace()
    bares = await crowd(server.url, pace)
    try:
        peak = before
        flooded: list[int] = []
        for _ in range(ACTIONS // 10):
            flooded += await flood(writer, 10, pace)
            peak = max(peak, resident(server.pid))
        # Every reader is sent every envelope of the flood, in order.
        for reader in bares[NEVER_READING + SLOW_READING :]:
            await asyncio.wait_for(reader.took(ACTIONS), 30)
            assert reader.seqs == flooded
    finally:
        for bare in bares:
            await bare.close()
    # The slow readers were closed as their queues together passed the bound, not each its own.
    assert server.wait_output(lambda line: "AHPD_CLIENT_QUEUES_TOTAL_BYTES" in line)
    assert "past clientQueueBytes" not in server.log_text()
    assert peak < before + TOTAL_BOUND + MARGIN, (before // MIB, peak // MIB)
    # A client that comes now is served.
    late = await connect(server.url)
    await late.initialize()
    assert "items" in await late.request("listSessions", {"channel": ROOT})
    # They are gone: the memory they took is given back.
    await wait_resident_below(server.pid, before + KEPT)
    assert "Traceback" not in server.log_text()


async def wait_resident_below(pid: int, bound: int, timeout: float = 30.0) -> None:
    """Wait for a process's resident memory to fall below `bound`: the server trims its heap a
    few seconds apart at most, and says nothing a client could wait on."""
    deadline = asyncio.get_running_loop().time() + timeout
    while resident(pid) >= bound:
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"VmRSS {resident(pid) // MIB} MiB, not below {bound // MIB} MiB")
        await asyncio.sleep(0.2)
