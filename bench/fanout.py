"""Fan-out: N subscribers on ahp-root://, one client dispatching M actions.

Runs ahpd (`manage.py serve`, embedded default unless DATABASE_URL/REDIS_URL are set) and the
minimal `websockets` broadcast server of bench/broadcast_baseline.py, each in its own process,
against the same clients in this process, and prints for each:

- deliveries per second while M actions are sent back to back (N * M / elapsed), and
- p50 / p99 of the time from a dispatch until the last subscriber has its envelope, with the
  actions sent one at a time (the next once every subscriber has the last),

then the ratio ours / baseline. Usage: python bench/fanout.py [--subscribers 100] [--actions 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path

import orjson
import websockets

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.rawws import RawSocket  # noqa: E402
from tests.support.server import TOKEN, ServerProcess  # noqa: E402

ROOT = "ahp-root://"


class Subscriber:
    """One subscriber: when each dispatched action (by its clientSeq) arrived."""

    def __init__(self) -> None:
        self.seen: dict[int, float] = {}  # clientSeq -> arrival time
        self.reply: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self.socket: RawSocket | None = None

    @classmethod
    async def open(cls, url: str, hello: str | None) -> Subscriber:
        sub = cls()
        sub.socket = await RawSocket.open(url, sub.take)
        if hello is not None:
            sub.socket.send_text(hello)
            await sub.reply
        return sub

    def take(self, payload: bytes, now: float) -> None:
        if not self.reply.done() and payload.startswith(b'{"jsonrpc":"2.0","id"'):
            self.reply.set_result(payload)
            return
        params = orjson.loads(payload).get("params")
        if params is not None and "origin" in params:
            self.seen[params["origin"]["clientSeq"]] = now

    def close(self) -> None:
        if self.socket is not None:
            self.socket.close()


async def open_sender(url: str, client_id: str, ahp: bool) -> websockets.ClientConnection:
    ws = await websockets.connect(url, max_size=None, ping_interval=None, max_queue=None)
    if ahp:
        await ws.send(hello(client_id, subscriptions=[]))
        await ws.recv()
    return ws


def hello(client_id: str, subscriptions: list[str]) -> str:
    return orjson.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "channel": ROOT,
                "protocolVersions": ["1.0.0"],
                "clientId": client_id,
                "initialSubscriptions": subscriptions,
            },
        }
    ).decode()


def action_frame(seq: int, run: str) -> str:
    return orjson.dumps(
        {
            "jsonrpc": "2.0",
            "method": "dispatchAction",
            "params": {
                "channel": ROOT,
                "clientSeq": seq,
                "action": {"type": "root/configChanged", "config": {"bench": f"{run}-{seq}"}},
            },
        }
    ).decode()


async def wait_all(subscribers: list[Subscriber], seq: int, timeout: float = 60) -> None:
    deadline = time.perf_counter() + timeout
    while not all(seq in s.seen for s in subscribers):
        if time.perf_counter() > deadline:
            raise TimeoutError(f"not every subscriber got action {seq}")
        await asyncio.sleep(0.0005)


async def measure(url: str, n: int, m: int, paced: int, ahp: bool, label: str) -> dict[str, float]:
    subs = [
        await Subscriber.open(url, hello(f"{label}-sub-{i}", [ROOT]) if ahp else None)
        for i in range(n)
    ]
    sender = await open_sender(url, f"{label}-sender", ahp)
    run = f"{label}-{time.time_ns()}"
    # Warm-up.
    for seq in range(1, 21):
        await sender.send(action_frame(seq, run))
    await wait_all(subs, 20)

    start = time.perf_counter()
    for seq in range(21, 21 + m):
        await sender.send(action_frame(seq, run))
    await wait_all(subs, 20 + m)
    elapsed = time.perf_counter() - start
    deliveries = n * m / elapsed

    latencies = []
    first = 21 + m
    for seq in range(first, first + paced):
        sent = time.perf_counter()
        await sender.send(action_frame(seq, run))
        await wait_all(subs, seq)
        latencies.append(max(s.seen[seq] for s in subs) - sent)
    latencies.sort()
    await sender.close()
    for sub in subs:
        sub.close()
    return {
        "deliveries_per_s": deliveries,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
    }


def start_baseline() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "bench" / "broadcast_baseline.py")],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    return proc, line.split("serving ", 1)[1].strip()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscribers", type=int, default=100)
    parser.add_argument("--actions", type=int, default=1000)
    parser.add_argument("--paced", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    server = ServerProcess().start()
    baseline, baseline_url = start_baseline()
    runs: dict[str, list[dict[str, float]]] = {"ahpd": [], "baseline": []}
    try:
        # Interleaved rounds, medians reported: two cores carry both servers and every client,
        # so one round alone swings with whatever else the machine is doing.
        for _ in range(args.rounds):
            runs["ahpd"].append(
                await measure(
                    f"{server.base}?tkn={TOKEN}",
                    args.subscribers,
                    args.actions,
                    args.paced,
                    True,
                    "ahpd",
                )
            )
            runs["baseline"].append(
                await measure(
                    baseline_url, args.subscribers, args.actions, args.paced, False, "baseline"
                )
            )
    finally:
        server.close()
        baseline.terminate()
    ours, base = (
        {key: statistics.median(r[key] for r in runs[name]) for key in runs[name][0]}
        for name in ("ahpd", "baseline")
    )

    print(
        f"fan-out: {args.subscribers} subscribers, {args.actions} actions back to back, "
        f"{args.paced} one at a time; median of {args.rounds} interleaved rounds"
    )
    print(f"{'':10} {'deliveries/s':>14} {'p50 ms':>8} {'p99 ms':>8}")
    for name, r in (("ahpd", ours), ("baseline", base)):
        print(f"{name:10} {r['deliveries_per_s']:>14,.0f} {r['p50_ms']:>8.2f} {r['p99_ms']:>8.2f}")
    ratio = {key: ours[key] / base[key] for key in ours}
    print(
        f"ratio ours/baseline: deliveries {ratio['deliveries_per_s']:.2f}, "
        f"p50 latency {ratio['p50_ms']:.2f}, p99 latency {ratio['p99_ms']:.2f}"
    )


if __name__ == "__main__":
    asyncio.run(main())
