"""A streamed turn: one 2,000-delta turn to 50 subscribers of its chat.

A local server speaking the chat-completions stream (tests/support/fake_openai.py) sends 2,000
deltas, one a millisecond, each carrying the moment it was sent. ahpd runs the turn with its
OpenAI-compatible backend and says it to 50 subscribers of the chat; the baseline
(bench/relay_baseline.py) relays the same stream, delta by delta, to 50 subscribers with nothing
added. For each it prints the host-added latency p50/p99 (from the model sending a delta until
the last of the subscribers has its text) and deliveries per second (envelopes received by all
subscribers over the turn). ahpd runs twice: with the default 75 ms delta window, and with the
window off. Usage: python bench/turn.py [--subscribers 50] [--deltas 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import orjson
import websockets

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.rawws import RawSocket  # noqa: E402
from tests.support.fake_openai import FakeOpenAi  # noqa: E402
from tests.support.server import TOKEN, ServerProcess  # noqa: E402

ROOT = "ahp-root://"
STAMP = re.compile(rb"@(\d+\.\d+)")


class Listener:
    """One subscriber: the arrival of every stamp, and how many envelopes came."""

    def __init__(self) -> None:
        self.arrivals: dict[float, float] = {}  # stamp -> arrival
        self.envelopes = 0
        self.done = asyncio.get_running_loop().create_future()
        self.reply: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.socket: RawSocket | None = None

    def take(self, payload: bytes, now: float) -> None:
        if not self.reply.done() and b'"id"' in payload[:40]:
            self.reply.set_result(None)
            return
        if (
            b"chat/turnComplete" in payload
            or b"chat/error" in payload
            or payload == b'{"done": true}'
        ):
            if not self.done.done():
                self.done.set_result(now)
            return
        self.envelopes += 1
        for stamp in STAMP.findall(payload):
            self.arrivals.setdefault(float(stamp), now)


def summary(listeners: list[Listener], started: float) -> dict[str, float]:
    stamps = set.intersection(*(set(listener.arrivals) for listener in listeners))
    latencies = sorted(max(x.arrivals[s] for x in listeners) - s for s in stamps)
    finished = max(x.done.result() for x in listeners)
    return {
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[int(len(latencies) * 0.99)] * 1000,
        "deliveries_per_s": sum(x.envelopes for x in listeners) / (finished - started),
        "envelopes_per_subscriber": statistics.mean(x.envelopes for x in listeners),
    }


async def run_ahpd(model: FakeOpenAi, n: int, deltas: int, window_ms: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "agents.json"
        config.write_text(
            json.dumps(
                {
                    "agents": [
                        {
                            "provider": "bench",
                            "kind": "openai",
                            "displayName": "bench",
                            "baseUrl": model.url,
                            "model": "fake",
                            "apiKey": "none",
                        }
                    ]
                }
            )
        )
        server = ServerProcess(
            env_extra={"AHPD_CONFIG": str(config), "AHPD_DELTA_WINDOW_MS": str(window_ms)}
        ).start()
        try:
            url = f"{server.base}?tkn={TOKEN}"
            sender = await websockets.connect(url, max_size=None, ping_interval=None)
            ids = iter(range(1, 1000))

            async def call(method: str, params: dict) -> dict:
                request_id = next(ids)
                await sender.send(
                    orjson.dumps(
                        {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
                    ).decode()
                )
                while True:
                    frame = orjson.loads(await sender.recv())
                    if frame.get("id") == request_id:
                        return frame["result"]

            await call(
                "initialize",
                {"channel": ROOT, "protocolVersions": ["1.0.0"], "clientId": "bench-sender"},
            )
            session = f"ahp-session:/{uuid.uuid4()}"
            await call(
                "createSession",
                {
                    "channel": session,
                    "provider": "bench",
                    "workingDirectories": [Path(tmp).as_uri()],
                },
            )
            chat = (await call("subscribe", {"channel": session}))["snapshot"]["state"][
                "defaultChat"
            ]
            listeners = []
            for i in range(n):
                listener = Listener()
                listener.socket = await RawSocket.open(url, listener.take)
                listener.socket.send_text(
                    orjson.dumps(
                        {
                            "jsonrpc": "2.0",
                            "id": 1,
                            "method": "initialize",
                            "params": {
                                "channel": ROOT,
                                "protocolVersions": ["1.0.0"],
                                "clientId": f"bench-{i}",
                                "initialSubscriptions": [chat],
                            },
                        }
                    ).decode()
                )
                await listener.reply
                listeners.append(listener)
            started = time.perf_counter()
            await sender.send(
                orjson.dumps(
                    {
                        "jsonrpc": "2.0",
                        "method": "dispatchAction",
                        "params": {
                            "channel": chat,
                            "clientSeq": 1,
                            "action": {
                                "type": "chat/turnStarted",
                                "turnId": "bench-turn",
                                "startedAt": "2026-11-30T00:00:00.000Z",
                                "message": {
                                    "text": f"stamped {deltas} 1",
                                    "origin": {"kind": "user"},
                                },
                            },
                        },
                    }
                ).decode()
            )
            await asyncio.wait_for(asyncio.gather(*(listener.done for listener in listeners)), 120)
            result = summary(listeners, started)
            for listener in listeners:
                assert listener.socket is not None
                listener.socket.close()
            await sender.close()
            return result
        finally:
            server.close()


async def run_baseline(model: FakeOpenAi, n: int, deltas: int) -> dict[str, float]:
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "bench" / "relay_baseline.py"), model.url],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split("serving ", 1)[1].strip()
        listeners = []
        for _ in range(n):
            listener = Listener()
            listener.reply.set_result(None)
            listener.socket = await RawSocket.open(url, listener.take)
            listeners.append(listener)
        trigger = await websockets.connect(url)
        started = time.perf_counter()
        await trigger.send(f"go stamped {deltas} 1")
        await asyncio.wait_for(asyncio.gather(*(listener.done for listener in listeners)), 120)
        result = summary(listeners, started)
        for listener in listeners:
            assert listener.socket is not None
            listener.socket.close()
        await trigger.close()
        return result
    finally:
        proc.terminate()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscribers", type=int, default=50)
    parser.add_argument("--deltas", type=int, default=2000)
    args = parser.parse_args()
    model = FakeOpenAi()
    try:
        rows = {
            "ahpd (75 ms window)": await run_ahpd(model, args.subscribers, args.deltas, 75),
            "ahpd (window off)": await run_ahpd(model, args.subscribers, args.deltas, 0),
            "baseline relay": await run_baseline(model, args.subscribers, args.deltas),
        }
    finally:
        model.close()
    print(f"turn: {args.deltas} deltas (one a millisecond) to {args.subscribers} subscribers")
    print(f"{'':22} {'p50 ms':>8} {'p99 ms':>8} {'deliveries/s':>13} {'envelopes each':>15}")
    for name, r in rows.items():
        print(
            f"{name:22} {r['p50_ms']:>8.2f} {r['p99_ms']:>8.2f} {r['deliveries_per_s']:>13,.0f} "
            f"{r['envelopes_per_subscriber']:>15,.0f}"
        )
    base = rows["baseline relay"]
    off = rows["ahpd (window off)"]
    print(
        f"ratio ahpd (window off)/baseline: p50 latency {off['p50_ms'] / base['p50_ms']:.2f}, "
        f"deliveries {off['deliveries_per_s'] / base['deliveries_per_s']:.2f}"
    )


if __name__ == "__main__":
    asyncio.run(main())
